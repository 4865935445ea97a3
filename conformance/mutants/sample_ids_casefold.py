"""Mutant: sample ids are compared without regard to case, as a SQL table
keyed by a column with a case-insensitive collation compares them (MySQL's
default).  ``put("sample-a")`` while ``"Sample-A"`` is pending raises
``DuplicateSample``: a producer whose ids differ only in case loses samples
(docs/API.md: a duplicate is the same id pending or leased)."""
from conformance.mutants._base import BaseQueue, factory


class SampleIdsCasefold(BaseQueue):
    def _duplicate(self, sample_id):
        folded = sample_id.casefold()
        return any(held.casefold() == folded for held in self._entries)


make = factory(SampleIdsCasefold)
