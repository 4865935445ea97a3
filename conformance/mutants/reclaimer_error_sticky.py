"""Mutant: the error that stopped the reclaimer is raised by every later
``stop_reclaimer()``, even of a new reclaimer that met no error.
docs/API.md: it is raised by the *next* ``stop_reclaimer()``.
"""

from conformance.mutants._base import BaseQueue, factory


class ReclaimerErrorSticky(BaseQueue):
    _sticky = None

    def stop_reclaimer(self):
        with self._lock:
            reclaimer, self._reclaimer = self._reclaimer, None
        if reclaimer is not None:
            thread, stop, stopped_by = reclaimer
            stop.set()
            thread.join()
            if stopped_by:
                self._sticky = stopped_by[0]
        if self._sticky is not None:
            raise RuntimeError(f"the reclaimer stopped early: {self._sticky!r}") from self._sticky


make = factory(ReclaimerErrorSticky)
