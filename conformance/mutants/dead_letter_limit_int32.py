"""Mutant: ``dead_letter_limit`` is kept in a signed 32-bit field, so a limit
above 2**31 - 1 is refused with ``ValueError``.  docs/API.md: an int from 0
(which keeps none) to ``sys.maxsize``.
"""

from conformance.mutants._base import BaseQueue, factory


class DeadLetterLimitInt32(BaseQueue):
    def __init__(self, store, clock, **config):
        limit = config.get("dead_letter_limit", 10_000)
        if type(limit) is int and limit > 2**31 - 1:
            raise ValueError(f"dead_letter_limit must be at most 2**31 - 1, got {limit!r}")
        super().__init__(store, clock, **config)


make = factory(DeadLetterLimitInt32)
