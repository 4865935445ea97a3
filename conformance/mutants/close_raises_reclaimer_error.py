"""Mutant: ``close()`` of a drained queue stops its reclaimer through
``stop_reclaimer()``, so the error that stopped the reclaimer early (a
reclaim whose dead-letter scrub raised) comes out of ``close()``, and the
next ``stop_reclaimer()`` no longer reports it (docs/API.md: the error is
raised by the next ``stop_reclaimer()``; ``close()`` never raises it)."""

from conformance.mutants._base import BaseQueue, factory


class CloseRaisesReclaimerError(BaseQueue):
    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._ready.notify_all()
            self._wake_producers("close")
            drained = self._drained()
        if drained:
            self.stop_reclaimer()  # the bug: raises the kept error out of close()


make = factory(CloseRaisesReclaimerError)
