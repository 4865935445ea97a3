"""Mutant: a blocking put unparks its ref on any ``Exception``, but a
``KeyboardInterrupt`` (a ``BaseException``: a Ctrl-C, or raised by
``abort_when``) leaves its bytes in ``parked_bytes`` for ever.  docs/API.md
(D8): a ref stays parked until its call returns or raises for any reason,
``KeyboardInterrupt`` included.
"""

from conformance.mutants._base import BaseQueue, _check_poll, _Parked, factory


class InterruptStaysParked(BaseQueue):
    def put_blocks_until_below(self, ref, poll_interval=0.05, abort_when=None):
        _check_poll("poll_interval", poll_interval)
        parked = _Parked(getattr(ref, "estimated_bytes", 0))
        try:
            self._step_until_enqueued(ref, parked, poll_interval, abort_when)
        except Exception:  # (a KeyboardInterrupt is no Exception: it leaves the ref parked)
            with self._lock:
                self._unpark(parked)
            raise
        with self._lock:
            self._unpark(parked)


make = factory(InterruptStaysParked)
