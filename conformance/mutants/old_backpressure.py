"""Mutant: the pre-D8 backpressure rule.

The hysteresis compares the store's whole residency, the bytes of refs whose
producers are blocked in ``put_blocks_until_below`` included, and a blocked
producer is never admitted while the queue is paused, even when nothing is
pending or leased.  Two producers that each stored one sample with
``high = 2b`` pause each other forever with no work a consumer could free
(the three deadlocks of the old rule, D8).
"""

from conformance.mutants._base import BaseQueue, factory


class OldBackpressure(BaseQueue):
    def _effective(self, resident: int, own: int) -> int:
        return resident

    def _admits(self, paused: bool) -> bool:
        return not paused


make = factory(OldBackpressure)
