"""Mutant: ``start_reclaimer()`` with no interval runs once per visibility timeout.

The default reads the visibility timeout and forgets to divide it, so an
expired lease comes back up to a whole timeout after its deadline instead of
a quarter (docs/API.md: the interval defaults to a quarter of the visibility
timeout).  Every check that passes an interval (``reclaimer-reclaims``,
``reclaimer-stops``) passes; the blocking phase's
``reclaimer-default-interval`` starts one with none and times its reclaims.
"""

from conformance.mutants._base import BaseQueue, factory


class ReclaimerDefaultInterval(BaseQueue):
    def start_reclaimer(self, interval=None):
        super().start_reclaimer(self._vt.seconds if interval is None else interval)  # the bug: not / 4


make = factory(ReclaimerDefaultInterval)
