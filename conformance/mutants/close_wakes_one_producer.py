"""Mutant: ``close`` wakes one blocked producer, not all of them.

Every producer blocked in ``put_blocks_until_below`` should raise
``QueueClosed`` at once when the queue closes; this queue calls ``notify()``
on the producers' condition where ``notify_all()`` is needed, so with
several producers paused at high all but one sleep through their poll
interval and a shutdown hangs that long (D8: close wakes the blocked
producers).
"""

from conformance.mutants._base import BaseQueue, factory


class CloseWakesOneProducer(BaseQueue):
    def _wake_producers(self, why):
        if why != "close":
            super()._wake_producers(why)
            return
        self._room_changes += 1
        self._room.notify()  # the bug: one producer, not all


make = factory(CloseWakesOneProducer)
