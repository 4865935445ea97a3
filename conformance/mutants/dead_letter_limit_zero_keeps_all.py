"""Mutant: ``dead_letter_limit=0`` keeps every dead letter instead of none.

The limit is applied as ``limit or None`` (the way ``deque(maxlen=...)`` is
often fed), so 0, which docs/API.md says keeps none, means no limit at all: a
queue configured to keep no dead letters grows its list without bound.
"""

from conformance.mutants._base import BaseQueue, factory


class DeadLetterLimitZeroKeepsAll(BaseQueue):
    def _keep_dead(self):
        if self._dead_limit and len(self._dead) > self._dead_limit:
            del self._dead[0]
            self._dead_dropped += 1


make = factory(DeadLetterLimitZeroKeepsAll)
