"""Mutant: ``reclaim_expired`` requeues the expired leases in order of sample
id, not of deadline.

Leases due at the same instant may come back in any order, but a lease due
earlier must come back first (docs/API.md); this backend puts ``s1`` (due
at 1) behind ``s0`` (due at 2) when both expired by the time of the reclaim.
"""

from conformance.mutants._base import BaseQueue, _Entry, factory


class ReclaimById(BaseQueue):
    def _expired(self, now: float) -> list[_Entry]:
        hits = [e for e in self._entries.values() if e.deadline is not None and e.deadline <= now]
        return sorted(hits, key=lambda e: e.ref.sample_id)


make = factory(ReclaimById)
