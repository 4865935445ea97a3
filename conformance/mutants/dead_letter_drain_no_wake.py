"""Mutant: the dead-letter that drains a closed queue does not wake the
consumers blocked in ``acquire``.

The ack that finishes the last sample of a closed queue wakes the waiting
consumers with their terminal None; the dead-letter path (``dead_letter``,
or a fail or reclaim at ``max_deliveries``) was written without it, so when
the last sample of a run is dead-lettered every idle consumer sleeps
through its poll interval before it stops (D3: acquire returns None at once
when the queue is drained).
"""

from conformance.mutants._base import BaseQueue, factory


class DeadLetterDrainNoWake(BaseQueue):
    def _wake_if_drained(self, why):
        if why != "dead_letter":  # the bug: a dead-letter's drain tells no consumer
            super()._wake_if_drained(why)


make = factory(DeadLetterDrainNoWake)
