"""Mutant: the dead letter made at ``max_deliveries`` wakes nobody.

A fail or reclaim at the delivery cap finishes the sample by its own path,
without the notifications of an ack or a ``dead_letter``: consumers waiting for
a closed queue to drain (D3) and producers waiting for room (D8) sleep on,
and ``acquire(math.inf)`` never returns.
"""

from conformance.mutants._base import BaseQueue, DeadLetter, factory


class CapDeadLetterNoWake(BaseQueue):
    def _requeue(self, entry):
        if self._max_deliveries is None or entry.deliveries < self._max_deliveries:
            super()._requeue(entry)
            return
        self._store.scrub(entry.ref)
        del self._entries[entry.ref.sample_id]
        self._dead.append(DeadLetter(entry.ref, "max_deliveries", entry.deliveries))
        self._keep_dead()
        self._remember(entry.ref.sample_id)
        entry.lease, entry.deadline = None, None
        entry.redeliveries += 1  # (no wakeup)


make = factory(CapDeadLetterNoWake)
