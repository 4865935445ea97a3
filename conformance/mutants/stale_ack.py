"""Mutant: a stale ack pops the live lease.

``ack`` finds the sample's entry by ``sample_id`` alone and never compares
the lease id, so a consumer whose lease was reclaimed (and re-leased to
another consumer) acks the *new* consumer's delivery (D1).
"""

from conformance.mutants._base import BaseQueue, Lease, factory


class StaleAck(BaseQueue):
    def ack(self, lease: Lease) -> bool:
        with self._lock:
            self._check_lease("ack", lease)
            entry = self._entries.get(lease.ref.sample_id)
            if entry is None or entry.lease is None:
                return False
            self._finish(entry, None)
            return True


make = factory(StaleAck)
