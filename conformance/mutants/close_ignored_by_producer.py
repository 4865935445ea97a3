"""Mutant: a producer blocked in ``put_blocks_until_below`` does not notice
``close()``.

``close`` wakes the consumers but not the producers waiting for room, so a
producer paused at high stays blocked until its poll interval runs out (or
forever, with a long one) instead of raising ``QueueClosed`` at once:
shutting a pipeline down hangs on its producers.
"""

from conformance.mutants._base import BaseQueue, factory


class CloseIgnoredByProducer(BaseQueue):
    def close(self):
        with self._lock:
            self._closed = True
            self._ready.notify_all()  # ... and the producers waiting on _room are left asleep


make = factory(CloseIgnoredByProducer)
