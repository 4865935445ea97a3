"""Mutant: ``start_reclaimer`` checks that none runs and records its own in
two lock sections, starting the thread in between: two threads starting at
once both start one, and ``stop_reclaimer`` stops only the one recorded; the
other reclaims for ever.  docs/API.md: ``start_reclaimer`` is atomic (a
second raises ``RuntimeError``).
"""

import threading

from conformance.mutants._base import BaseQueue, _check_seconds, factory


class ReclaimerStartRace(BaseQueue):
    def start_reclaimer(self, interval=None):
        interval = self._vt.seconds / 4 if interval is None else _check_seconds("start_reclaimer(interval)", interval)
        stop, stopped_by = threading.Event(), []
        thread = self._reclaimer_thread(interval, stop, stopped_by)
        with self._lock:
            if self._reclaimer is not None:
                raise RuntimeError("start_reclaimer: a reclaimer is already running; call stop_reclaimer() first")
        thread.start()
        with self._lock:
            self._reclaimer = (thread, stop, stopped_by)


make = factory(ReclaimerStartRace)
