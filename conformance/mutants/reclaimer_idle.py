"""Mutant: ``start_reclaimer`` starts a thread that never reclaims.

The reclaimer thread is started and stopped as it should be, but its loop
only waits for the stop signal: expired leases of crashed consumers are
never taken back unless someone calls ``reclaim_expired`` by hand.
"""

from conformance.mutants._base import BaseQueue, factory


class ReclaimerIdle(BaseQueue):
    def _reclaim_every(self, interval, stop, stopped_by):
        stop.wait()  # ... and never a reclaim_expired()


make = factory(ReclaimerIdle)
