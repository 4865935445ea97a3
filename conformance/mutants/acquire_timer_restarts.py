"""Mutant: ``acquire(poll_interval)`` starts its whole interval again after every
wakeup that brought it nothing.

Its wait is ``Condition.wait(poll_interval)`` in a loop, with no deadline
kept across the loop: a consumer woken by a put whose ref another consumer
took first (or by a requeue another took) waits a whole interval again.  On
an idle queue it returns after its interval, so ``acquire-times-out``
passes, and every wakeup that brings a ref is on time; under steady traffic
an idle consumer waits far past its interval, for ever on a busy queue
(docs/API.md: it waits up to ``poll_interval`` for a ref).  The blocking
phase's ``acquire-times-out-busy`` puts a ref half way through a consumer's
interval and takes it back at once: this consumer returns half an interval
late.
"""

import math

from conformance.mutants._base import BaseQueue, _check_poll, factory


class AcquireTimerRestarts(BaseQueue):
    def acquire(self, poll_interval=0.05):
        _check_poll("poll_interval", poll_interval)
        with self._lock:
            while True:
                lease = self._acquire_nowait()
                if lease is not None or self._drained():
                    return lease
                # the bug: each wait is a whole interval, from the last wakeup
                if not self._ready.wait(None if poll_interval == math.inf else poll_interval):
                    return self._acquire_nowait()


make = factory(AcquireTimerRestarts)
