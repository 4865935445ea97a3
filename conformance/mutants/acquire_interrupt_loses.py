"""Mutant: ``acquire`` takes the ref off pending, reads the clock, and puts the
ref back on ``except Exception`` only: a ``KeyboardInterrupt`` raised in the
clock read (a Ctrl-C) loses the sample, neither pending nor leased.
docs/API.md: an asynchronous exception leaves the sample pending, or leased,
never neither.
"""

from conformance.mutants._base import BaseQueue, Lease, factory


class AcquireInterruptLoses(BaseQueue):
    def _acquire_nowait(self):
        if not self._pending:
            return None
        sample_id = self._pending.popleft()
        try:
            now = self._clock.now()
        except Exception:  # (a KeyboardInterrupt is no Exception)
            self._pending.appendleft(sample_id)
            raise
        entry = self._entries[sample_id]
        entry.deliveries += 1
        entry.deadline = now + self._vt.seconds
        entry.lease = Lease(entry.ref, entry.deadline, self._vt, entry.redeliveries, next(self._ids), self._epoch)
        return entry.lease


make = factory(AcquireInterruptLoses)
