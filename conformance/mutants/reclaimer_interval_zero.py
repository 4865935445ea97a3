"""Mutant: ``start_reclaimer(interval)`` refuses only negative intervals; ``0``
starts a reclaimer that spins a core reclaiming in a tight loop (docs/API.md:
ValueError for an interval that is not finite and > 0)."""
import threading

from conformance.mutants._base import BaseQueue, _check_seconds, factory


class ReclaimerIntervalZero(BaseQueue):
    def start_reclaimer(self, interval=None):
        if interval is None:
            interval = self._vt.seconds / 4
        elif isinstance(interval, (int, float)) and not isinstance(interval, bool) and interval == 0:
            interval = 0.0  # the bug: "0 means as often as possible"
        else:
            interval = _check_seconds("start_reclaimer(interval)", interval)
        stop, stopped_by = threading.Event(), []
        thread = self._reclaimer_thread(interval, stop, stopped_by)
        with self._lock:
            if self._reclaimer is not None:
                raise RuntimeError("start_reclaimer: a reclaimer is already running")
            self._reclaimer = (thread, stop, stopped_by)
        thread.start()


make = factory(ReclaimerIntervalZero)
