"""Mutant: ``acquire`` takes the ref off pending before it reads the clock.

With a clock that raises (an NTP client's clock source gone, a remote time
service down), the acquire raises after the ref left pending and before a
lease was recorded: the sample is neither pending nor leased, and no reclaim
ever finds it (docs/API.md: a clock that raises in ``acquire`` leaves the ref
pending).
"""

from conformance.mutants._base import BaseQueue, Lease, factory


class AcquireClockLoses(BaseQueue):
    def _acquire_nowait(self):
        if not self._pending:
            return None
        entry = self._entries[self._pending.popleft()]
        deadline = self._clock.now() + self._vt.seconds  # (after the pop)
        entry.deliveries += 1
        entry.deadline = deadline
        entry.lease = Lease(entry.ref, entry.deadline, self._vt, entry.redeliveries, next(self._ids), self._epoch)
        return entry.lease


make = factory(AcquireClockLoses)
