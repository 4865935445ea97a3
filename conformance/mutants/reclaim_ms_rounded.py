"""Mutant: a reclaim compares deadlines and now in whole milliseconds (as a
store keeping integer-millisecond scores would), so a lease is taken back up
to half a millisecond before its deadline.  docs/API.md: ``reclaim_expired``
takes back the leases with ``deadline <= now``.
"""

from conformance.mutants._base import BaseQueue, factory


class ReclaimMsRounded(BaseQueue):
    def _expired(self, now):
        hits = [e for e in self._entries.values() if e.deadline is not None and round(e.deadline * 1000) <= round(now * 1000)]
        return sorted(hits, key=lambda e: (e.deadline, e.ref.sample_id))


make = factory(ReclaimMsRounded)
