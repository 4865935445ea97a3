"""Mutant: ``extend`` takes any finite number of seconds.

docs/API.md (Durations): every number of seconds a queue takes is at most
``threading.TIMEOUT_MAX``; above it, ``ValueError`` names the value and the
maximum.  This queue's ``extend`` checks only that seconds are finite and
> 0, so ``extend(lease, 1e300)`` succeeds and the lease never expires
(issue 26: an outside backend accepted ``1e300``).
"""

import math

from conformance.mutants._base import BaseQueue, factory


class ExtendUnbounded(BaseQueue):
    def extend(self, lease, seconds=None):
        with self._lock:
            self._check_lease("extend", lease)
            if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))):
                raise TypeError(f"extend(seconds) must be a number, got {seconds!r}")
            if seconds is not None and (not math.isfinite(seconds) or seconds <= 0):
                raise ValueError(f"extend(seconds) must be finite and > 0, got {seconds!r}")
            seconds = self._vt.seconds if seconds is None else float(seconds)  # ... no maximum
            entry = self._live(lease)
            if entry is None:
                return False
            entry.deadline = self._clock.now() + seconds
            return True


make = factory(ExtendUnbounded)
