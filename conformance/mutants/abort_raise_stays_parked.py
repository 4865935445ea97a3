"""Mutant: a blocking put unparks its ref when it returns, raises
``PutAborted`` or ``QueueClosed``, but not when ``abort_when`` raises: the
ref's bytes stay in ``parked_bytes`` for ever, and the hysteresis judges a
residency that much too low from then on.  docs/API.md (D8): a ref stays
parked until its call returns or raises for any reason.
"""

from conformance.mutants._base import BaseQueue, PutAborted, QueueClosed, _check_poll, _Parked, factory


class AbortRaiseStaysParked(BaseQueue):
    def put_blocks_until_below(self, ref, poll_interval=0.05, abort_when=None):
        _check_poll("poll_interval", poll_interval)
        parked = _Parked(getattr(ref, "estimated_bytes", 0))
        try:
            self._step_until_enqueued(ref, parked, poll_interval, abort_when)
        except (PutAborted, QueueClosed):  # (an exception from abort_when skips the unpark)
            with self._lock:
                self._unpark(parked)
            raise
        with self._lock:
            self._unpark(parked)


make = factory(AbortRaiseStaysParked)
