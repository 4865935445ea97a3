"""Mutant: a producer's wakeup that lands between its step and its wait is lost.

``put_blocks_until_below`` takes its snapshot of the room changes when it
goes to wait, not when its step looked at the queue: an ack, a dead-letter,
a resume or ``close`` made after the step released the lock (while the
producer ran its callbacks or consulted ``abort_when``) is not news to it.
With a finite ``poll_interval`` it steps again when the interval runs out;
with ``poll_interval=math.inf`` it stays blocked on a queue that has room,
or is closed, for ever (issue 26: the bug an outside backend was certified
with).
"""

import time

from conformance.mutants._base import BaseQueue, _check_poll, _Parked, _wait, factory
from refqueue.errors import PutAborted


class PutLostWakeup(BaseQueue):
    def put_blocks_until_below(self, ref, poll_interval=0.05, abort_when=None):
        _check_poll("poll_interval", poll_interval)
        parked = _Parked(getattr(ref, "estimated_bytes", 0))
        try:
            while True:
                enqueued, _ = self._try_put_nowait(ref, parked)
                self._fire()
                if enqueued:
                    return
                if abort_when is not None and abort_when():
                    raise PutAborted(f"put_blocks_until_below({ref.sample_id!r}): abort_when() is true")
                deadline = time.monotonic() + poll_interval
                with self._lock:
                    if not parked.counted:
                        self._park(parked)
                    seen = self._room_changes  # ... not the count the step saw
                    while self._room_changes == seen and (remaining := deadline - time.monotonic()) > 0:
                        _wait(self._room, remaining)
        finally:
            with self._lock:
                self._unpark(parked)


make = factory(PutLostWakeup)
