"""Mutant: the dedup window never forgets: with ``dedup_window=N`` a re-put
of an id that completed more than N completions ago is refused as a replay
(D5 says it is a new incarnation)."""

from collections import deque

from conformance.mutants._base import BaseQueue, factory


class DedupForever(BaseQueue):
    def _window(self, size: int) -> deque[str]:
        return deque()


make = factory(DedupForever)
