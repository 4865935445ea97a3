"""Mutant: ``acquire`` polls every 200 ms and is never woken.

A waiting consumer looks for work every 200 ms (``conformance.mutants._polling``)
instead of waiting to be notified: a put, fail, reclaim, close or drain
reaches it up to 200 ms late, past the 50 ms wake bound whenever the waking
call returns early in a period (D6: no poll latency).  Made a fixed 50 ms
after the consumer blocked, as the kit used to, every waking call landed at
one phase of the period: the 60 ms poll showed 10 ms of delay and passed.
"""

from conformance.mutants._base import factory
from conformance.mutants._polling import polling

make = factory(polling(200 / 1000))
