"""Mutant: a full dead-letter list keeps what it has and drops the new dead
letter instead (a bounded list that stops appending), so past
``dead_letter_limit`` an operator sees the oldest failures and never the
ones happening now; ``dead_letters_dropped`` still counts each drop."""
from conformance.mutants._base import BaseQueue, factory


class DeadLetterLimitDropsNewest(BaseQueue):
    def _keep_dead(self):
        if len(self._dead) > self._dead_limit:
            self._dead.pop()
            self._dead_dropped += 1


make = factory(DeadLetterLimitDropsNewest)
