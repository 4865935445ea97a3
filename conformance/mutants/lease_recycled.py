"""Mutant: lease ids are recycled: each delivery's id is the sample's delivery count.

Two samples each delivered once hold leases with the same ``(epoch, lease_id)``,
so an ack of one could settle the other.
"""

from conformance.mutants._base import BaseQueue, Lease, factory


class LeaseRecycled(BaseQueue):
    def _acquire_nowait(self) -> Lease | None:
        if not self._pending:
            return None
        now = self._clock.now()  # (first, as the base: a clock that raises leaves the ref pending)
        entry = self._entries[self._pending.popleft()]
        entry.deliveries += 1
        entry.deadline = now + self._vt.seconds
        entry.lease = Lease(entry.ref, entry.deadline, self._vt, entry.redeliveries, entry.deliveries, self._epoch)
        return entry.lease


make = factory(LeaseRecycled)
