"""Mutant: ``dead_letter`` checks only that the reason is truthy, so ``42``,
``b"poison"`` or ``["x"]`` are accepted and stored as the dead letter's reason
(docs/API.md: TypeError/ValueError for a reason that is not a non-empty str)."""
from conformance.mutants._base import BaseQueue, factory


class DeadLetterReasonAny(BaseQueue):
    def dead_letter(self, lease, reason):
        with self._lock:
            self._check_lease("dead_letter", lease)
            if not reason:
                raise ValueError(f"dead_letter needs a non-empty reason, got {reason!r}")
            entry = self._live(lease)
            if entry is None:
                return False
            self._finish(entry, reason)
            entry.lease, entry.deadline = None, None
            return True


make = factory(DeadLetterReasonAny)
