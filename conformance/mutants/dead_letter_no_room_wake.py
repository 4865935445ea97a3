"""Mutant: a dead-letter frees the sample's bytes but wakes no blocked producer.

The ack path wakes the producers waiting in ``put_blocks_until_below``
(their residency just dropped); the dead-letter path (``dead_letter``, or a
fail or reclaim at ``max_deliveries``) scrubs the data the same way but was
written without the wakeup, so a producer paused at high sleeps through its
poll interval although the room it waited for is there (docs/API.md: acks
and dead-letters wake them).
"""

from conformance.mutants._base import BaseQueue, factory


class DeadLetterNoRoomWake(BaseQueue):
    def _wake_producers(self, why):
        if why != "dead_letter":  # the bug: a dead-letter tells no producer
            super()._wake_producers(why)


make = factory(DeadLetterNoRoomWake)
