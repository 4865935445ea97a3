"""Mutant: ``stop_reclaimer`` forgets the reclaimer instead of stopping it.

The handle is dropped (so a new one may be started) but the thread is
never told to stop: it keeps reclaiming every interval after
``stop_reclaimer()`` returned, behind the back of code that stopped it to
reclaim by hand or to shut down.
"""

from conformance.mutants._base import BaseQueue, factory


class ReclaimerUnstoppable(BaseQueue):
    def stop_reclaimer(self):
        with self._lock:
            self._reclaimer = None  # ... and the thread runs on


make = factory(ReclaimerUnstoppable)
