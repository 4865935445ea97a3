"""Mutant: ``reclaim_expired`` requeues expired leases without waking a
blocked consumer.

The reclaimed refs are pending again, but a consumer already waiting in
``acquire(poll_interval=...)`` is not notified and waits out its interval
(D6: every requeue, reclaim included, wakes a waiting consumer at once).
"""

from conformance.mutants._base import BaseQueue, factory
from conformance.mutants.fail_no_wake import FailNoWake


class ReclaimNoWake(BaseQueue):
    _requeue_quietly = FailNoWake._requeue_quietly  # fail wakes as it should; only reclaim is broken

    def reclaim_expired(self):
        with self._lock:
            hits = self._expired(self._clock.now())
            for entry in hits:
                self._requeue_quietly(entry)
            return len(hits)


make = factory(ReclaimNoWake)
