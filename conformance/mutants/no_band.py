"""Mutant: hysteresis without a band.

The producer resumes as soon as residency drops below the *high* watermark
instead of waiting for the low one, so it flaps around the high watermark (D4).
"""

from conformance.mutants._base import BaseQueue, factory


class NoBand(BaseQueue):
    def _next_paused(self, resident: int) -> bool:
        if self._high is None:
            return False
        return resident >= self._high


make = factory(NoBand)
