"""Mutant: dead-lettering one delivery late.

The requeue compares ``deliveries > max_deliveries`` instead of ``>=``, so
a poison sample is delivered ``max_deliveries + 1`` times (D7).
"""

from conformance.mutants._base import BaseQueue, _Entry, factory


class DeadLetterLate(BaseQueue):
    def _requeue(self, entry: _Entry) -> None:
        entry.lease, entry.deadline = None, None
        entry.redeliveries += 1
        if self._max_deliveries is not None and entry.deliveries > self._max_deliveries:
            self._finish(entry, "max_deliveries")
            return
        self._pending.append(entry.ref.sample_id)
        self._ready.notify()


make = factory(DeadLetterLate)
