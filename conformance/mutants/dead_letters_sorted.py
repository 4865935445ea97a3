"""Mutant: ``dead_letters()`` lists the dead letters sorted by sample id
instead of in dead-letter order."""

from conformance.mutants._base import BaseQueue, DeadLetter, factory


class DeadLettersSorted(BaseQueue):
    def dead_letters(self) -> list[DeadLetter]:
        return sorted(super().dead_letters(), key=lambda d: d.ref.sample_id)


make = factory(DeadLettersSorted)
