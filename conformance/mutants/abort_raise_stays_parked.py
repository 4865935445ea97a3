"""Mutant: a blocking put unparks its ref when it returns, raises
``PutAborted`` or ``QueueClosed``, but not when ``abort_when`` raises: the
ref's bytes stay in ``parked_bytes`` for ever, and the hysteresis judges a
residency that much too low from then on.  docs/API.md (D8): a ref stays
parked until its call returns or raises for any reason.
"""

import time

from conformance.mutants._base import BaseQueue, PutAborted, QueueClosed, _check_poll, _Parked, _wait, factory


class AbortRaiseStaysParked(BaseQueue):
    def put_blocks_until_below(self, ref, poll_interval=0.05, abort_when=None):
        _check_poll("poll_interval", poll_interval)
        parked = _Parked(getattr(ref, "estimated_bytes", 0))
        try:
            while True:
                enqueued, seen = self._try_put_nowait(ref, parked)
                self._fire()
                if enqueued:
                    break
                if abort_when is not None and abort_when():  # (an exception here skips the unpark below)
                    raise PutAborted(f"put_blocks_until_below({ref.sample_id!r}): abort_when() is true")
                deadline = time.monotonic() + poll_interval
                with self._lock:
                    if not parked.counted:
                        news = self._room_changes != seen
                        self._park(parked)
                        if not news:
                            seen = self._room_changes
                    while self._room_changes == seen and (remaining := deadline - time.monotonic()) > 0:
                        _wait(self._room, remaining)
        except (PutAborted, QueueClosed):
            with self._lock:
                self._unpark(parked)
            raise
        with self._lock:
            self._unpark(parked)


make = factory(AbortRaiseStaysParked)
