"""Mutant: ``with queue:`` starts the background reclaimer on entry, as a
convenience, so a user who reclaims from their own loop runs a second,
unasked-for reclaimer, and their own ``start_reclaimer(interval)`` in the
block raises ``RuntimeError`` (docs/API.md: ``with queue:`` starts nothing
on entry)."""

from conformance.mutants._base import BaseQueue, factory


class WithStartsReclaimer(BaseQueue):
    def __enter__(self) -> "WithStartsReclaimer":
        self.start_reclaimer()  # the bug
        return self


make = factory(WithStartsReclaimer)
