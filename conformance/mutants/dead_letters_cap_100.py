"""Mutant: the queue keeps only the newest 100 dead letters (a hard-coded ring),
whatever ``dead_letter_limit`` (default 10,000) says; older ones vanish undrained."""
from conformance.mutants._base import BaseQueue, factory


class DeadLettersCap100(BaseQueue):
    def _finish(self, entry, reason):
        super()._finish(entry, reason)
        if len(self._dead) > 100:
            del self._dead[0]


make = factory(DeadLettersCap100)
