"""Mutant: the background reclaimer ends quietly when a reclaim raises (a
dead-letter whose scrub failed): nobody reclaims any more, and
``stop_reclaimer()`` returns as if all had been well.  docs/API.md: the
error that stopped the reclaimer early is raised by the next
``stop_reclaimer()`` as ``RuntimeError``.
"""

from conformance.mutants._base import BaseQueue, factory


class ReclaimerErrorLost(BaseQueue):
    def _reclaim_tick(self):
        try:
            return super()._reclaim_tick()
        except Exception:
            return False  # ... the thread ends, and stop_reclaimer is never told


make = factory(ReclaimerErrorLost)
