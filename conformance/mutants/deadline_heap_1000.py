"""Mutant: the deadline index holds at most 1,000 leases; past that, the
leases acquired later are never found by ``reclaim_expired`` (a fixed-size
heap that drops what does not fit).  Only a queue with more than a thousand
leases outstanding shows it."""

from conformance.mutants._base import BaseQueue, _Entry, factory

LIMIT = 1000


class DeadlineHeap1000(BaseQueue):
    def _expired(self, now: float) -> list[_Entry]:
        leased = [e for e in self._entries.values() if e.lease is not None]
        indexed = sorted(leased, key=lambda e: e.lease.lease_id)[:LIMIT]  # type: ignore[union-attr]
        hits = [e for e in indexed if e.deadline is not None and e.deadline <= now]
        return sorted(hits, key=lambda e: (e.deadline, e.ref.sample_id))


make = factory(DeadlineHeap1000)
