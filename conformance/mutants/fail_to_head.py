"""Mutant: ``fail`` and reclaim requeue at the head of pending, not the tail.

A poison sample is retried before everything that waited behind it (the
model appends at the tail: FIFO over redeliveries too).
"""

from conformance.mutants._base import BaseQueue, _Entry, factory


class FailToHead(BaseQueue):
    def _requeue(self, entry: _Entry) -> None:
        entry.lease, entry.deadline = None, None
        entry.redeliveries += 1
        if self._max_deliveries is not None and entry.deliveries >= self._max_deliveries:
            self._finish(entry, "max_deliveries")
            return
        self._pending.appendleft(entry.ref.sample_id)
        self._ready.notify()


make = factory(FailToHead)
