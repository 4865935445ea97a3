"""Legal: leases due at the same instant are reclaimed in acquire order (``make``)
or newest first (``make_newest_first``), not by sample id as the reference
model lists them.  The contract leaves the order of ties free."""

from conformance.mutants._base import BaseQueue, _Entry, factory


class TieAcquireOrder(BaseQueue):
    def _expired(self, now: float) -> list[_Entry]:
        hits = [e for e in self._entries.values() if e.deadline is not None and e.deadline <= now]
        return sorted(hits, key=lambda e: (e.deadline, e.lease.lease_id))


class TieNewestFirst(BaseQueue):
    def _expired(self, now: float) -> list[_Entry]:
        hits = [e for e in self._entries.values() if e.deadline is not None and e.deadline <= now]
        return sorted(hits, key=lambda e: (e.deadline, -e.lease.lease_id))


make = factory(TieAcquireOrder)
make_newest_first = factory(TieNewestFirst)
