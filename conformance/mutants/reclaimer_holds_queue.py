"""Mutant: the reclaimer's thread runs a bound method of its queue, so it
holds the queue strongly: a queue dropped without ``close()`` is never
collected, and its thread reclaims for ever, one leaked thread (and queue,
with everything it holds) per queue a long-lived process makes and forgets
(docs/API.md: the thread holds its queue by a weak reference only)."""

import threading

from conformance.mutants._base import BaseQueue, factory


class ReclaimerHoldsQueue(BaseQueue):
    def _reclaimer_thread(self, interval, stop, stopped_by):
        return threading.Thread(target=self._run_reclaimer, args=(interval, stop, stopped_by), daemon=True)

    def _run_reclaimer(self, interval, stop, stopped_by):
        try:
            while not stop.wait(interval):
                if not self._reclaim_tick():
                    return
        except Exception as exc:
            stopped_by.append(exc)


make = factory(ReclaimerHoldsQueue)
