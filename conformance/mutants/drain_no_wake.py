"""Mutant: the ack that drains a closed queue does not wake the consumers
blocked in ``acquire``.

The queue was closed with a lease outstanding, so a consumer waiting in
``acquire(poll_interval=...)`` had to stay (the lease might come back); the
last ack drains the queue, but nobody tells the waiter, which returns its
terminal None only when its interval runs out.  A trainer's shutdown then
takes a whole poll interval per idle consumer (D3: acquire returns None at
once when the queue is drained).
"""

from conformance.mutants._base import BaseQueue, factory


class DrainNoWake(BaseQueue):
    def _wake_if_drained(self, why):
        pass  # the bug: drained, and the waiting consumers are not told


make = factory(DrainNoWake)
