"""Mutant: when ``on_pause``/``on_resume`` raises, the queue drops the callbacks
still queued behind it.

Callbacks run one at a time, in order; a change made while one runs is
queued for the thread inside it.  Treating the queue of callbacks as stale
once one of them failed, this backend clears it before the exception
propagates, so the report of a change another producer made meanwhile is
lost: a handler that tracks the pause state stays "paused" while the queue
has resumed (docs/API.md: each change calls its callback exactly once).
With a single change at a time nothing is queued behind a failing callback,
so ``callback-errors-propagate`` passes; the blocking phase's
``callbacks-after-an-error`` resumes the queue while ``on_pause`` is held
open, then lets it raise.
"""

from conformance.mutants._base import BaseQueue, factory


class CallbacksDroppedOnError(BaseQueue):
    def _fire(self):
        try:
            super()._fire()
        except BaseException:
            with self._lock:
                self._callbacks.clear()  # the bug: the reports queued behind the failing one are lost
            raise


make = factory(CallbacksDroppedOnError)
