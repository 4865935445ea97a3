"""Mutant: ``fail`` does not count a redelivery.

The sample goes back to pending with the same ``redelivery_count``, so the
next lease reports fewer deliveries than happened and ``max_deliveries``
never triggers for failed samples (RedeliveryCountsDeliveries).
"""

from conformance.mutants._base import BaseQueue, Lease, factory


class FailUncounted(BaseQueue):
    def fail(self, lease: Lease) -> bool:
        with self._lock:
            self._check_lease("fail", lease)
            entry = self._live(lease)
            if entry is None:
                return False
            entry.lease, entry.deadline = None, None
            entry.deliveries -= 1  # "it was not really delivered"
            self._pending.append(entry.ref.sample_id)
            self._ready.notify()
            return True


make = factory(FailUncounted)
