"""Mutant: ``dead_letters()`` returns the queue's own list.

Cheaper than a copy, and every reader that only reads sees the right
answer; a caller that sorts, trims or clears the list it was given (a
dashboard dropping the ones it has shown) changes the queue's dead letters.
Only the deep profile's walks used to reach a caller's mutation.
"""

from conformance.mutants._base import BaseQueue, factory


class DeadLettersOwnList(BaseQueue):
    def dead_letters(self):
        with self._lock:
            return self._dead  # the bug: not list(self._dead)


make = factory(DeadLettersOwnList)
