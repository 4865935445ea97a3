"""Mutant: a live ``fail`` requeues the ref without waking a blocked consumer.

The failed ref is back at the tail of pending, but a consumer waiting in
``acquire(poll_interval=...)`` is not notified and waits out its interval
(D6: every requeue wakes a waiting consumer at once).
"""

from conformance.mutants._base import BaseQueue, factory


class FailNoWake(BaseQueue):
    def fail(self, lease):
        with self._lock:
            self._check_lease("fail", lease)
            entry = self._live(lease)
            if entry is None:
                return False
            self._requeue_quietly(entry)
            return True

    def _requeue_quietly(self, entry):
        """``_requeue`` without the notification (the cap's dead letter as the base makes it, scrub first)."""
        if self._max_deliveries is not None and entry.deliveries >= self._max_deliveries:
            self._finish(entry, "max_deliveries")
            entry.lease, entry.deadline = None, None
            entry.redeliveries += 1
            return
        entry.lease, entry.deadline = None, None
        entry.redeliveries += 1
        self._pending.append(entry.ref.sample_id)


make = factory(FailNoWake)
