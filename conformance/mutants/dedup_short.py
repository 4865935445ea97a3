"""Mutant: the dedup window remembers one completed id too few.

With ``dedup_window=N`` a restarted producer's replay of the N-th most
recently completed sample is accepted (D5).
"""

from collections import deque

from conformance.mutants._base import BaseQueue, factory


class DedupShort(BaseQueue):
    def _window(self, size: int) -> deque[str]:
        return deque(maxlen=max(size - 1, 0))


make = factory(DedupShort)
