"""Mutant: the reclaimer runs until ``stop_reclaimer()``, whatever becomes of
its queue: ``close()`` of a drained queue leaves it running, and a closed
queue's drain does not end it, so code that closes its queues and never calls
``stop_reclaimer()`` leaks a thread per queue (docs/API.md: close() stops
the reclaimer of a drained queue at once, and it ends by itself on its first
tick after the closed queue drained)."""

from conformance.mutants._base import BaseQueue, factory


class ReclaimerOutlivesDrain(BaseQueue):
    def close(self):
        with self._lock:
            self._closed = True
            self._ready.notify_all()
            self._wake_producers("close")

    def _reclaim_tick(self):
        self.reclaim_expired()
        return True


make = factory(ReclaimerOutlivesDrain)
