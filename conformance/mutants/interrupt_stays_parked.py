"""Mutant: a blocking put unparks its ref on any ``Exception``, but a
``KeyboardInterrupt`` (a ``BaseException``: a Ctrl-C, or raised by
``abort_when``) leaves its bytes in ``parked_bytes`` for ever.  docs/API.md
(D8): a ref stays parked until its call returns or raises for any reason,
``KeyboardInterrupt`` included.
"""

import time

from conformance.mutants._base import BaseQueue, PutAborted, _check_poll, _Parked, _wait, factory


class InterruptStaysParked(BaseQueue):
    def put_blocks_until_below(self, ref, poll_interval=0.05, abort_when=None):
        _check_poll("poll_interval", poll_interval)
        parked = _Parked(getattr(ref, "estimated_bytes", 0))
        try:
            while True:
                enqueued, seen = self._try_put_nowait(ref, parked)
                self._fire()
                if enqueued:
                    break
                if abort_when is not None and abort_when():
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
        except Exception:  # (a KeyboardInterrupt is no Exception: it leaves the ref parked)
            with self._lock:
                self._unpark(parked)
            raise
        with self._lock:
            self._unpark(parked)


make = factory(InterruptStaysParked)
