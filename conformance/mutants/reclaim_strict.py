"""Mutant: reclaim compares ``deadline < now`` instead of ``deadline <= now``.

A lease whose deadline is exactly now is left alone, one tick late.
"""

from conformance.mutants._base import BaseQueue, _Entry, factory


class ReclaimStrict(BaseQueue):
    def _expired(self, now: float) -> list[_Entry]:
        hits = [e for e in self._entries.values() if e.deadline is not None and e.deadline < now]
        return sorted(hits, key=lambda e: (e.deadline, e.ref.sample_id))


make = factory(ReclaimStrict)
