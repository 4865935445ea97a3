"""Mutant: the dedup memory is capped at 256 ids whatever ``dedup_window``
asks (a fixed-size ring, or a Redis list trimmed to a constant), so with
``dedup_window=600`` a restarted producer's replay of the 300th most
recently completed sample is accepted and trained on twice (D5: the last N
completed ids are remembered)."""
from collections import deque

from conformance.mutants._base import BaseQueue, factory


class DedupWindowCapped(BaseQueue):
    def _window(self, size):
        return deque(maxlen=min(size, 256))


make = factory(DedupWindowCapped)
