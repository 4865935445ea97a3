"""Mutant: ``acquire`` rounds its poll interval up to whole seconds.

As a backend that hands the interval to a server call taking integer
seconds (an old ``BLPOP``, say) would: ``acquire(poll_interval=0.2)`` on an
empty queue returns None after a whole second.  Wakeups still come at once,
so every check that wakes a consumer passes; a consumer loop that checks a
stop flag between polls reacts five times slower than it asked for.
"""

import math

from conformance.mutants._base import BaseQueue, factory


class AcquirePollRoundedUp(BaseQueue):
    def acquire(self, poll_interval=0.05):
        if math.isfinite(poll_interval):
            poll_interval = float(math.ceil(poll_interval))  # the bug
        return super().acquire(poll_interval=poll_interval)


make = factory(AcquirePollRoundedUp)
