"""Mutant: a resume wakes one blocked producer, not all of them.

When a step resumes the queue, every producer blocked in
``put_blocks_until_below`` may be admitted now (docs/API.md: a resume
wakes every blocked producer); this queue calls ``notify()`` where
``notify_all()`` is needed.  Acks wake them all as before, so the bug shows
only when the resume comes from another producer's step (a scrubbed orphan
made room): then all but one blocked producer sleep through their poll
interval while the queue is not paused.
"""

from conformance.mutants._base import BaseQueue, factory


class ResumeWakesOne(BaseQueue):
    def _wake_producers(self, why):
        if why != "resume":
            super()._wake_producers(why)
            return
        self._room_changes += 1
        self._room.notify()  # the bug: one producer, not all


make = factory(ResumeWakesOne)
