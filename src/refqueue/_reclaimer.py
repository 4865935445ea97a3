"""``Reclaimer``: a background thread that calls a queue's ``reclaim_expired``.

Nothing else reclaims orphaned leases in a running pipeline, so a production
queue wants one.  The thread wakes every ``interval`` seconds of real time
(``Event.wait`` as a timer: the period of a periodic job, not a stand-in for
synchronisation) and calls ``reclaim_expired``; ``stop`` sets the event and
joins.

The thread never keeps its queue alive: it holds a weak reference, and a
strong one only for the length of one reclaim.  When the queue is collected
the weak reference's callback sets the event, and the thread ends at once.
It also ends by itself once the queue is closed and drained (D3): no lease
is left to reclaim, and none can come, since a closed queue takes no puts.

Errors of the kinds in ``retry_on`` (for a queue on a server: a lost
connection, ``RedisUnavailable``) never stop the thread: it notes them
(``errors``, ``consecutive_errors``, ``last_error`` and when) and tries
again after a capped backoff, 50 ms doubling up to ``interval``, then every
``interval`` until a call succeeds.  ``status()`` reports all of it.
Anything else that stops the thread early (a reclaim that raises, a wait
that fails) is kept in ``error`` and re-raised, wrapped in
``RuntimeError``, by ``stop(report=True)``, so it is never lost.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
import weakref
from typing import Any

__all__ = ["Reclaimer", "BACKOFF_FIRST", "reclaimer_gauges"]

# The first wait after a retried error (seconds); each further error doubles
# it, up to the reclaimer's interval.
BACKOFF_FIRST = 0.05

logger = logging.getLogger("refqueue.queue")


class Reclaimer:
    """Calls ``queue.reclaim_expired()`` every ``interval`` seconds until
    ``stop()``, until the queue is closed and drained, or until it is
    collected."""

    def __init__(
        self, queue: Any, interval: float, name: str, *, retry_on: tuple[type[BaseException], ...] = ()
    ) -> None:
        self.interval = interval
        self.reclaimed = 0  # leases taken back so far (written by the thread only)
        self.error: BaseException | None = None  # what stopped the thread early, if anything
        # Errors survived (retry_on), written by the thread only: how many in all and
        # in a row, the last one's repr and wall-clock time, the last good pass.
        self._retry_on = retry_on
        self.errors = 0
        self.consecutive_errors = 0
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self.last_success_at: float | None = None
        # Set by stop(), and by the queue's collection: the thread leaves its loop.
        stop = self._stop = threading.Event()
        # The callback holds the event only, never the queue nor this object.
        self._queue = weakref.ref(queue, lambda _ref: stop.set())
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the thread to end; True when it has."""
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def status(self) -> dict[str, Any]:
        """What the thread is doing and has survived, for operators and metrics."""
        return {
            "running": self.running,
            "interval": self.interval,
            "reclaimed": self.reclaimed,
            "errors": self.errors,
            "consecutive_errors": self.consecutive_errors,
            "last_error": self.last_error,
            "last_error_at": self.last_error_at,
            "last_success_at": self.last_success_at,
            "stopped_by": None if self.error is None else repr(self.error),
        }

    def _run(self) -> None:
        try:
            delay = self.interval
            while self._survive(self._queue_needs_it, True) and not self._stop.wait(delay):
                if self._survive(self._reclaim_once, False):
                    delay = self.interval
                else:
                    delay = min(self.interval, BACKOFF_FIRST * 2 ** min(self.consecutive_errors - 1, 30))
        except BaseException as exc:  # kept for stop(), which re-raises it
            logger.exception("the background reclaimer stopped: %r", exc)
            # The traceback's frames would hold the queue (a cycle through
            # queue._reclaimer); keep the lines, drop the locals.
            traceback.clear_frames(exc.__traceback__)
            self.error = exc

    def _survive(self, step: Any, on_error: bool) -> bool:
        """``step()``'s answer (True for a step that answers nothing); an error
        of ``retry_on`` is noted and answers ``on_error``."""
        try:
            answer = step()
        except self._retry_on as exc:
            self.errors += 1
            self.consecutive_errors += 1
            self.last_error, self.last_error_at = repr(exc), time.time()
            if self.consecutive_errors & (self.consecutive_errors - 1) == 0:  # 1, 2, 4, 8, ...: no log flood
                logger.warning("the background reclaimer will try again (%d errors in a row): %r",
                               self.consecutive_errors, exc)
            return on_error
        if answer is None:
            self.consecutive_errors = 0
            self.last_success_at = time.time()
            return True
        return bool(answer)

    # Each helper holds the queue only while it runs: between ticks the thread
    # holds no strong reference, so a forgotten queue is collected.

    def _queue_needs_it(self) -> bool:
        queue = self._queue()
        return queue is not None and not queue.is_drained

    def _reclaim_once(self) -> None:
        queue = self._queue()
        if queue is not None:
            self.reclaimed += queue.reclaim_expired()

    def stop(self, *, report: bool = True) -> None:
        """Stop the thread and wait for it (unless called from it); with
        ``report``, re-raise what stopped it early, if anything."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self.join()
        if report and self.error is not None:
            raise RuntimeError(
                f"the background reclaimer stopped early because reclaim_expired raised "
                f"{self.error!r}; fix the cause (a closed store?) and start a new one"
            ) from self.error


def reclaimer_gauges(status: dict[str, Any]) -> dict[str, Any]:
    """The ``reclaimer_*`` gauges of ``metrics()`` from a queue's
    ``reclaimer_status()`` (the in-process and the Redis queue report the same)."""
    return {
        "reclaimer_running": status["running"],
        "reclaimer_interval": status.get("interval"),
        "reclaimer_errors": status.get("errors", 0),
        "reclaimer_consecutive_errors": status.get("consecutive_errors", 0),
        "reclaimer_last_error": status.get("stopped_by") or status.get("last_error"),
    }
