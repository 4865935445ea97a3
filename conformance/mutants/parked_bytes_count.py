"""Mutant: ``parked_bytes`` reports how many producers are parked, not their refs' bytes.

The queue keeps the right sum for its own hysteresis, but the property an
operator reads (and a dashboard plots) counts the parked producers: one
counter for a gauge named after the wrong unit.  Backpressure itself is
unharmed, so every wakeup and every step is right; 0 when nobody is parked,
so the check that reads it after ``PutAborted`` passes too.  The blocking
phase's ``put-abort-when`` reads it while two producers are parked
(docs/API.md: the bytes of the refs whose producers are inside
``put_blocks_until_below``, D8).
"""

from conformance.mutants._base import BaseQueue, factory


class ParkedBytesCount(BaseQueue):
    _parked_n = 0  # producers parked now

    def _park(self, parked):
        super()._park(parked)
        self._parked_n += 1

    def _unpark(self, parked):
        if parked.counted:
            self._parked_n -= 1
        super()._unpark(parked)

    @property
    def parked_bytes(self):
        with self._lock:
            return self._parked_n  # the bug: a count of producers, not bytes


make = factory(ParkedBytesCount)
