"""Mutant: a dead-letter frees the sample's bytes but wakes no blocked producer.

The ack path wakes the producers waiting in ``put_blocks_until_below``
(their residency just dropped); the dead-letter path (``dead_letter``, or a
fail or reclaim at ``max_deliveries``) scrubs the data the same way but was
written without the wakeup, so a producer paused at high sleeps through its
poll interval although the room it waited for is there (docs/API.md: acks
and dead-letters wake them).
"""

from conformance.mutants._base import BaseQueue, DeadLetter, factory


class DeadLetterNoRoomWake(BaseQueue):
    def _finish(self, entry, reason):
        if reason is None:
            super()._finish(entry, reason)
            return
        self._store.scrub(entry.ref)
        del self._entries[entry.ref.sample_id]
        self._dead.append(DeadLetter(entry.ref, reason, entry.deliveries))
        self._remember(entry.ref.sample_id)
        self._wake_if_drained()  # ... and the bug: no _room_changes, no _room.notify_all()


make = factory(DeadLetterNoRoomWake)
