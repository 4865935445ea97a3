"""Mutant: ``put_blocks_until_below`` applies backpressure only when
``abort_when`` is given.

Without ``abort_when`` the call takes one step for the hysteresis (so
``on_pause``/``on_resume`` and ``is_paused`` look right) and then enqueues
the ref whatever the step decided: a producer that never passes
``abort_when`` (the README's) is never held back.  Every other phase makes
its blocking puts with ``abort_when=lambda: True``, so none notices.
"""

from conformance.mutants._base import BaseQueue, factory
from refqueue.errors import PutAborted


class BackpressureNeedsAbortWhen(BaseQueue):
    def put_blocks_until_below(self, ref, poll_interval=0.05, abort_when=None):
        if abort_when is not None:
            return super().put_blocks_until_below(ref, poll_interval, abort_when)
        try:
            super().put_blocks_until_below(ref, poll_interval, abort_when=lambda: True)
        except PutAborted:
            self.put(ref)  # paused: enqueued anyway


make = factory(BackpressureNeedsAbortWhen)
