"""Mutant: a requeue wakes a blocked consumer only when pending was empty.

A live ``fail`` (or a reclaim) notifies a waiting ``acquire`` only if nothing
was pending before it, as if a consumer already awake would take the rest:
two fails back to back wake one of two waiting consumers, and the other sleeps
out its poll interval with a ref pending (D6).
"""

from conformance.mutants._base import BaseQueue, factory


class RequeueWakesIfEmpty(BaseQueue):
    def _requeue(self, entry):
        if self._max_deliveries is not None and entry.deliveries >= self._max_deliveries:
            super()._requeue(entry)
            return
        was_empty = not self._pending
        entry.lease, entry.deadline = None, None
        entry.redeliveries += 1
        self._pending.append(entry.ref.sample_id)
        if was_empty:
            self._ready.notify()


make = factory(RequeueWakesIfEmpty)
