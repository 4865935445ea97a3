"""``Reclaimer``: a background thread that calls a queue's ``reclaim_expired``.

Nothing else reclaims orphaned leases in a running pipeline, so a production
queue wants one.  The thread wakes every ``interval`` seconds of real time
(``Event.wait`` as a timer: the period of a periodic job, not a stand-in for
synchronisation) and calls ``reclaim``; ``stop`` sets the event and joins.

A reclaim that raises stops the thread; the exception is kept in ``error``
and re-raised (wrapped in ``RuntimeError``) by ``stop``, so it is never lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["Reclaimer"]

logger = logging.getLogger("refqueue.queue")


class Reclaimer:
    """Calls ``reclaim()`` every ``interval`` seconds until ``stop()``."""

    def __init__(self, reclaim: Callable[[], int], interval: float, name: str) -> None:
        self.interval = interval
        self.reclaimed = 0  # leases taken back so far (written by the thread only)
        self.error: BaseException | None = None  # what stopped the thread, if anything
        self._reclaim = reclaim
        self._stop = threading.Event()  # set by stop(): the thread leaves its loop
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.reclaimed += self._reclaim()
            except BaseException as exc:  # kept for stop(), which re-raises it
                self.error = exc
                logger.exception("the background reclaimer stopped: reclaim_expired raised")
                return

    def stop(self) -> None:
        """Stop the thread and wait for it; re-raise what stopped it early, if anything."""
        self._stop.set()
        if self._thread.ident is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self.error is not None:
            raise RuntimeError(
                f"the background reclaimer stopped early because reclaim_expired raised "
                f"{self.error!r}; fix the cause (a closed store?) and start a new one"
            ) from self.error
