"""Mutant: leases of another queue are not refused.

The epoch is never compared, so a lease from another process's queue (or a
restarted one) is answered as a stale lease of this one instead of raising
``ForeignLease``, and a colliding ``lease_id`` could ack the wrong delivery (D1).
"""

from conformance.mutants._base import BaseQueue, Lease, factory


class ForeignAccepted(BaseQueue):
    def _check_lease(self, call: str, lease: object) -> None:
        if not isinstance(lease, Lease):
            raise TypeError(f"{call} needs a Lease, got {type(lease).__name__}")


make = factory(ForeignAccepted)
