"""Mutant: ``Lease.to_json`` leaves out ``redelivery_count`` (``from_json``
restores 0), and leases compare equal by ``(epoch, lease_id)`` only, so a
copy check with ``==`` cannot see it; a comparison field by field does."""

import json

from conformance.mutants._base import BaseQueue, Lease, factory


class ThinLease(Lease):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lease) and (self.epoch, self.lease_id) == (other.epoch, other.lease_id)

    def __hash__(self) -> int:
        return hash((self.epoch, self.lease_id))

    def to_json(self) -> str:
        data = json.loads(super().to_json())
        del data["redelivery_count"]
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> "ThinLease":
        data = json.loads(text)
        base = Lease.from_json(json.dumps({**data, "redelivery_count": data.get("redelivery_count", 0)}))
        return cls(base.ref, base.deadline, base.visibility_timeout, base.redelivery_count, base.lease_id, base.epoch)


class JsonDropsRedelivery(BaseQueue):
    def _acquire_nowait(self) -> Lease | None:
        lease = super()._acquire_nowait()
        if lease is None:
            return None
        entry = self._entries[lease.ref.sample_id]
        entry.lease = ThinLease(lease.ref, lease.deadline, lease.visibility_timeout, lease.redelivery_count, lease.lease_id, lease.epoch)
        return entry.lease


make = factory(JsonDropsRedelivery)
