"""Mutant: a reclaim takes back at most 1,000 leases ("to bound the time the
lock is held"); the rest stay expired until a later call.  docs/API.md:
``reclaim_expired`` takes back every lease with ``deadline <= now``.
"""

from conformance.mutants._base import BaseQueue, factory


class ReclaimBatch1000(BaseQueue):
    def _expired(self, now):
        return super()._expired(now)[:1000]


make = factory(ReclaimBatch1000)
