"""Mutant: pending is a ring of 4,096 refs.

``_pending`` is a ``deque(maxlen=4096)``: a put past 4,096 pending refs
silently pushes out the oldest, which is never delivered (its record stays,
so its id is a duplicate for ever).  docs/API.md: every ref put is
delivered, oldest first.
"""

from collections import deque

from conformance.mutants._base import BaseQueue, factory


class PendingCapped(BaseQueue):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._pending = deque(maxlen=4096)


make = factory(PendingCapped)
