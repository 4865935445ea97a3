"""Mutant: a reclaim that dead-letters swallows a scrub that raised.

"The reclaimer must never die": at ``max_deliveries`` the reclaim logs the
store's error and dead-letters the sample anyway, so the sample is finished
while its data stays resident for ever, counted against the watermarks (D2:
data leaves the store when the sample finishes; a scrub that raises commits
nothing).
"""

from conformance.mutants._base import BaseQueue, DeadLetter, factory


class ReclaimScrubSwallowed(BaseQueue):
    def reclaim_expired(self):
        with self._lock:
            hits = self._expired(self._clock.now())
            for entry in hits:
                if self._max_deliveries is None or entry.deliveries < self._max_deliveries:
                    self._requeue(entry)
                    continue
                try:
                    self._store.scrub(entry.ref)
                except Exception:  # noqa: BLE001 - the mutant's bug
                    pass
                del self._entries[entry.ref.sample_id]
                self._dead.append(DeadLetter(entry.ref, "max_deliveries", entry.deliveries))
                self._keep_dead()
                self._remember(entry.ref.sample_id)
                entry.lease, entry.deadline = None, None
                entry.redeliveries += 1
                self._wake_producers("dead_letter")
                self._wake_if_drained("dead_letter")
            return len(hits)


make = factory(ReclaimScrubSwallowed)
