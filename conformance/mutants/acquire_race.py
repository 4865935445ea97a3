"""Mutant: acquire reads the head of pending, lets go of the lock, then pops.

A check-then-act race that only concurrency shows: ``acquire`` looks at the
head of pending under the lock, releases the lock for a moment (as code that
calls out to a metrics hook or the store between the two steps would), takes
it again and pops the head, leasing the sample it *looked at*.  Two consumers
that look at the same head both lease that sample (two live leases on one
sample), and the sample behind it is popped and lost.  One thread alone
never notices: every single-threaded phase of the kit certifies it.
"""

import time

from conformance.mutants._base import BaseQueue, Lease, factory


class AcquireRace(BaseQueue):
    def _acquire_nowait(self) -> Lease | None:
        if not self._pending:
            return None
        sample_id = self._pending[0]  # check ...
        self._lock.release()
        try:
            time.sleep(0)  # ... let another thread run ...
        finally:
            self._lock.acquire()
        now = self._clock.now()  # (before the pop, as the base: a clock that raises leaves the ref pending)
        if self._pending:
            self._pending.popleft()  # ... act: pop whatever is the head now
        entry = self._entries[sample_id]
        entry.deliveries += 1
        entry.deadline = now + self._vt.seconds
        entry.lease = Lease(entry.ref, entry.deadline, self._vt, entry.redeliveries, next(self._ids), self._epoch)
        return entry.lease


make = factory(AcquireRace)
