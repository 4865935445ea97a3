"""``Monitor(queue)``: check a queue's events against the model as they happen.

The monitor is a sink of the queue's ``EventLog``: each record is replayed
(``TraceChecker``) under the log's lock, in sequence order, as it is
emitted.  On the first record the model does not allow it logs the
violation (logger ``refqueue.trace_check``) and keeps it (``violation``);
with ``on_violation="raise"`` it also raises ``TraceViolation`` out of the
queue call that emitted the record, after that call's state change
committed.  A refused record emitted in the middle of a queue step
(``pause``, ``resume``, ``unpark``) or by the store raises at the next
queue record instead (for a store record that may be another thread's
call), so neither the queue nor the store is ever left half-changed.
``check()`` raises the kept violation, if any.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from refqueue.events import LOADER_EVENTS
from refqueue.trace_check.check import TraceChecker, printable

__all__ = ["Monitor", "TraceViolation"]

logger = logging.getLogger("refqueue.trace_check")

# Records emitted before their step finished: raising there would cut the step short.
# (and the loader's records, which change no queue state: an owed violation waits for a queue step)
_MID_STEP = frozenset({"pause", "resume", "unpark", "scrub", "store_put", "get", "release", *LOADER_EVENTS})


class TraceViolation(AssertionError):
    """The queue did something the reference model does not allow."""


class Monitor:
    """Attach to ``queue`` (a ``SampleRefQueue`` built with ``events=``)
    before it is used; the queue's store's records are checked too when the
    store logs to the same ``EventLog``."""

    # An EventLog raises this sink's exception (TraceViolation) out of the queue
    # call that emitted the record, where it swallows other sinks' failures.
    propagate_errors = True

    def __init__(self, queue: Any, on_violation: str = "log") -> None:
        if on_violation not in ("log", "raise"):
            raise ValueError(f"Monitor(on_violation) must be 'log' or 'raise', got {on_violation!r}")
        log = getattr(queue, "event_log", None)
        if log is None:
            raise ValueError(
                f"Monitor({queue!r}): the queue records no events; build it with "
                f"SampleRefQueue(store, events=EventLog(...))"
            )
        opened = log.opened()
        if log.seq != len(opened):
            raise ValueError(
                f"Monitor: the queue's event log already holds {log.seq - len(opened)} records past the open "
                f"records; attach the Monitor before the queue is used"
            )
        self.on_violation = on_violation
        self.violation: str | None = None
        self.checked = 0
        self._owed: str | None = None  # a violation found mid-step, raised at the step's end
        self._lock = threading.Lock()
        self._checker = TraceChecker()
        for record in opened:
            self._checker.feed(record)
        log.add_sink(self)

    def write(self, record: dict[str, Any]) -> None:
        with self._lock:
            if self.violation is not None:
                owed, self._owed = self._owed, None
                if owed is not None and record.get("ev") not in _MID_STEP:
                    raise TraceViolation(owed)
                return
            self.checked += 1
            problem = self._checker.feed(record)
            if problem is None:
                return
            message = printable(f"seq {record.get('seq')} {record.get('ev')} {record.get('sample', '')}: {problem}\n"
                                f"model state before it:\n{self._state_before(record)}")
            self.violation = message
            logger.error("trace violation: %s", message)
            if self.on_violation == "raise":
                if record.get("ev") in _MID_STEP:
                    self._owed = message
                else:
                    raise TraceViolation(message)

    def _state_before(self, record: dict[str, Any]) -> str:
        # The replay stopped at the refused record, so its state is the state before it.
        return self._checker.current_state(record)

    def check(self) -> None:
        """Raise ``TraceViolation`` if any record was refused."""
        if self.violation is not None:
            raise TraceViolation(self.violation)
