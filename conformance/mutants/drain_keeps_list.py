"""Mutant: ``drain_dead_letters()`` hands out the queue's own list and empties it later.

To make a drain O(1) it returns the list it keeps, marks it drained and
clears it only when the next dead letter comes (``dead_letters()`` reads an
empty list meanwhile, and copies).  A caller that keeps the batch it drained
(to retry those samples, to log them) finds it emptied, and holding the new
letter instead, at the queue's next dead letter.  ``dead_letters()`` is a
copy, so the calls phase's ``dead-letters-copied`` passes.
"""

from typing import Any

from conformance.mutants._base import BaseQueue, DeadLetter, _Entry, factory


class DrainKeepsList(BaseQueue):
    _handed_out = False  # the kept list was handed out by a drain; cleared at the next dead letter

    def drain_dead_letters(self) -> list[DeadLetter]:
        with self._lock:
            self._handed_out = True
            return self._dead  # the bug: the queue's own list, not a copy or a fresh one

    def dead_letters(self) -> list[DeadLetter]:
        with self._lock:
            return [] if self._handed_out else list(self._dead)

    def _finish(self, entry: _Entry, reason: Any) -> None:
        super()._finish(entry, reason)  # the scrub first: one that raises changes nothing
        if reason is not None and self._handed_out:
            del self._dead[:-1]  # the deferred part of the drain: only the new letter stays
            self._handed_out = False


make = factory(DrainKeepsList)
