"""Mutant: ``drain_dead_letters()`` reads the list in one step and empties it in another.

To keep its lock short, the drain copies the dead letters under the lock,
writes them to an audit log outside it, then takes the lock again and
clears the list.  A dead letter another thread makes in between is cleared
without ever being drained: the sample is gone from the queue and from
every drain (the calls phase's ``drain-concurrent``).  Sequentially nothing
is wrong, so ``dead-letters-drained-copied`` passes.
"""

import json
import os

from conformance.mutants._base import BaseQueue, DeadLetter, factory


class DrainTorn(BaseQueue):
    def drain_dead_letters(self) -> list[DeadLetter]:
        with self._lock:
            drained = list(self._dead)
        with open(os.devnull, "w") as audit:  # the audit log, written outside the lock
            for letter in drained:
                audit.write(json.dumps({"sample_id": letter.ref.sample_id, "reason": letter.reason}) + "\n")
        with self._lock:
            self._dead = []  # the bug: clears what was dead-lettered since the copy too
        return drained


make = factory(DrainTorn)
