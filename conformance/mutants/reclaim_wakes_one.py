"""Mutant: a reclaim that takes back several leases wakes one blocked consumer.

``reclaim_expired`` requeues every expired lease but notifies once for the
whole batch, so with two refs back in pending a second waiting consumer sleeps
out its poll interval (D6: every requeue wakes a waiting consumer at once).
"""

from conformance.mutants._base import BaseQueue, factory


class ReclaimWakesOne(BaseQueue):
    def reclaim_expired(self):
        with self._lock:
            hits = self._expired(self._clock.now())
            for entry in hits:
                if self._max_deliveries is not None and entry.deliveries >= self._max_deliveries:
                    self._requeue(entry)  # (the cap's dead letter as the base makes it)
                    continue
                entry.lease, entry.deadline = None, None
                entry.redeliveries += 1
                self._pending.append(entry.ref.sample_id)
            if hits:
                self._ready.notify()  # one wakeup for the batch
            return len(hits)


make = factory(ReclaimWakesOne)
