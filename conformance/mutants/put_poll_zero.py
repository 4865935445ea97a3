"""Mutant: ``put_blocks_until_below(ref, poll_interval=0)`` is accepted and steps
in a busy loop, holding the lock in turn with every other caller (docs/API.md:
ValueError for an interval that is not > 0)."""

from conformance.mutants._base import BaseQueue, factory


class PutPollZero(BaseQueue):
    def put_blocks_until_below(self, ref, poll_interval=0.05, abort_when=None):
        if isinstance(poll_interval, (int, float)) and not isinstance(poll_interval, bool) and poll_interval == 0:
            poll_interval = 1e-9  # the bug: 0 taken as "poll continuously"
        return super().put_blocks_until_below(ref, poll_interval, abort_when)


make = factory(PutPollZero)
