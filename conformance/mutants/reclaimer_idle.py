"""Mutant: ``start_reclaimer`` starts a thread that never reclaims.

The reclaimer thread is started and stopped as it should be (and ends at a
closed queue's drain), but its tick never reclaims: expired leases of
crashed consumers are never taken back unless someone calls
``reclaim_expired`` by hand.
"""

from conformance.mutants._base import BaseQueue, factory


class ReclaimerIdle(BaseQueue):
    def _reclaim_tick(self):
        with self._lock:
            return not self._drained()  # ... and never a reclaim_expired()


make = factory(ReclaimerIdle)
