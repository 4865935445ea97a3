"""Mutant: reclaim also takes back leases due within half a second (not yet due).

Ties may be reclaimed in any order, but only leases whose deadline has passed
(``deadline <= now``) may be reclaimed at all.
"""

from conformance.mutants._base import BaseQueue, _Entry, factory


class ReclaimEarly(BaseQueue):
    def _expired(self, now: float) -> list[_Entry]:
        hits = [e for e in self._entries.values() if e.deadline is not None and e.deadline <= now + 0.5]
        return sorted(hits, key=lambda e: (e.deadline, e.ref.sample_id))


make = factory(ReclaimEarly)
