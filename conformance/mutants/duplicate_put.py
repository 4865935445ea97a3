"""Mutant: a put of a sample that is already pending or leased is accepted.

The queue forgets to look the id up before inserting it, so the new entry
replaces the one it had: a leased sample becomes pending again and its
consumer's lease goes stale (DuplicateSample must refuse the put).
"""

from conformance.mutants._base import BaseQueue, factory


class DuplicatePut(BaseQueue):
    def _duplicate(self, sample_id: str) -> bool:
        return False


make = factory(DuplicatePut)
