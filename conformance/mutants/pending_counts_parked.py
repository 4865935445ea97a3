"""Mutant: ``pending_count()`` counts the refs parked in blocking puts as
pending, though they are not enqueued (a monitor sees work no consumer can
acquire).  docs/API.md (D8): a parked ref is not enqueued until its producer
is admitted.
"""

from conformance.mutants._base import BaseQueue, factory


class PendingCountsParked(BaseQueue):
    _parked_n = 0

    def _park(self, parked):
        super()._park(parked)
        self._parked_n += 1

    def _unpark(self, parked):
        if parked.counted:
            self._parked_n -= 1
        super()._unpark(parked)

    def pending_count(self):
        with self._lock:
            return len(self._pending) + self._parked_n


make = factory(PendingCountsParked)
