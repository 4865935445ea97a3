"""Mutant: reclaim takes a snapshot of the expired leases, lets go of the
lock, then requeues the snapshot without looking again.

A check-then-act race that only concurrency shows: ``reclaim_expired``
collects the expired leases under the lock, releases the lock for a moment
(as a reclaimer that logs or calls out between the two steps would), takes
it again and requeues every entry of its snapshot.  Two reclaims that run
at once both take back the same leases (each says it reclaimed them, and
the samples are queued twice); a consumer that acks or fails one of those
leases in the gap is overruled (an acked sample is delivered again).  One
thread alone never notices: every single-threaded phase of the kit
certifies it.
"""

import time

from conformance.mutants._base import BaseQueue, factory


class ReclaimSnapshot(BaseQueue):
    def reclaim_expired(self) -> int:
        with self._lock:
            hits = self._expired(self._clock.now())  # check ...
            self._lock.release()
            try:
                time.sleep(0)  # ... let another thread run ...
            finally:
                self._lock.acquire()
            for entry in hits:  # ... act on what was seen
                if entry.ref.sample_id not in self._entries:
                    self._entries[entry.ref.sample_id] = entry  # an acked sample comes back
                self._requeue(entry)
            return len(hits)


make = factory(ReclaimSnapshot)
