"""Mutant: ``extend(lease, seconds)`` moves the deadline to ``old deadline +
seconds`` instead of ``now + seconds``.

Extending by the visibility timeout where the world does (at the deadline)
gives the same instant; extending by another amount earlier does not.
"""

from conformance.mutants._base import BaseQueue, Lease, _check_seconds, factory


class ExtendFromDeadline(BaseQueue):
    def extend(self, lease: Lease, seconds: float | None = None) -> bool:
        with self._lock:
            self._check_lease("extend", lease)
            seconds = self._vt.seconds if seconds is None else _check_seconds("extend(seconds)", seconds)
            entry = self._live(lease)
            if entry is None:
                return False
            entry.deadline = entry.deadline + seconds  # type: ignore[operator]
            return True


make = factory(ExtendFromDeadline)
