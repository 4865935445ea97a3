"""Mutant: the lease-id guard uses ``isinstance(lease_id, int)``, so a lease altered
to carry ``lease_id=True`` (a bool, an int subclass) is taken for lease 1 and acks,
fails, extends or dead-letters it (docs/API.md: TypeError for an id that is not
exactly an int: a bool, a float, an int subclass; nothing changes)."""
from conformance.mutants._base import BaseQueue, Lease, factory
from refqueue.errors import ForeignLease


class LeaseIdIsinstance(BaseQueue):
    def _check_lease(self, call, lease):
        if not isinstance(lease, Lease):
            raise TypeError(f"{call} needs a Lease, got {type(lease).__name__}")
        if not isinstance(lease.lease_id, int):
            raise TypeError(f"{call}: lease_id {lease.lease_id!r} is not an int")
        if lease.lease_id < 1:
            raise ValueError(f"{call}: lease_id {lease.lease_id} is below 1")
        if lease.epoch != self._epoch:
            raise ForeignLease(f"{call}: lease of epoch {lease.epoch!r}, this queue is {self._epoch!r}")


make = factory(LeaseIdIsinstance)
