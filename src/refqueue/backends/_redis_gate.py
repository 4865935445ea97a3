"""One client's gate: a shared/exclusive lock over the calls of one
``RedisSampleRefQueue`` (issue 27, D2).

Why.  A completion (ack, dead-letter, a fail or reclaim at max_deliveries)
is two steps in a deployment: a script commits it, with its scrub intent, and
the store scrubs the data afterwards.  The contract a process sees of its own
queue is the one-step queue of docs/API.md (D2: the data leaves when the ack
commits): none of this client's threads may see the completion (outstanding
0, a stale answer, "acked", drained) while the data is still in the store.
So a completion holds the gate *exclusively* from its commit to its scrub (or
undo), and every other call of the client holds it *shared* around its
script: those run concurrently with each other, never inside a completion's
window.  Other clients (processes) do see the window; docs/REDIS.md says
what they see there.

With an injected clock the queue uses one plain lock for everything instead
(the clock read and the script that uses it are one step), so this gate is
for ``clock=None`` only.

The rule, stated once: ``_lock`` guards ``_readers`` and ``_writing``;
``_changed`` is notified whenever either drops (the last reader leaves, a
writer leaves), which is when a waiting writer or waiting readers may go on.
Writers go first: a reader that arrives while a writer waits, waits too, so
a steady stream of reads never starves a completion.  Not reentrant: no call
holds the gate and asks for it again (with an injected clock the same calls
run under one plain ``threading.Lock``, which would deadlock).
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["Gate"]


class Gate:
    """Shared/exclusive lock, writers first; ``shared`` and ``exclusive`` are
    context managers (reusable from any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Notified when _readers drops to 0 or a writer leaves.
        self._changed = threading.Condition(self._lock)
        # Invariants: _writing implies _readers == 0; _writers_waiting >= 0.
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0
        self.shared = _Side(self._enter_shared, self._leave_shared)
        self.exclusive = _Side(self._enter_exclusive, self._leave_exclusive)

    def _enter_shared(self) -> None:
        with self._lock:
            while self._writing or self._writers_waiting:
                self._changed.wait()
            self._readers += 1

    def _leave_shared(self) -> None:
        with self._lock:
            assert self._readers > 0 and not self._writing
            self._readers -= 1
            if self._readers == 0:
                self._changed.notify_all()

    def _enter_exclusive(self) -> None:
        with self._lock:
            self._writers_waiting += 1
            entered = False
            try:
                while self._writing or self._readers:
                    self._changed.wait()
                entered = True
            finally:
                self._writers_waiting -= 1
                if not entered:  # interrupted while waiting: the readers it held back may go on
                    self._changed.notify_all()
            self._writing = True

    def _leave_exclusive(self) -> None:
        with self._lock:
            assert self._writing and self._readers == 0
            self._writing = False
            self._changed.notify_all()


class _Side:
    """One side of a ``Gate`` as a context manager."""

    __slots__ = ("_enter", "_leave")

    def __init__(self, enter: Any, leave: Any) -> None:
        self._enter = enter
        self._leave = leave

    def __enter__(self) -> None:
        self._enter()

    def __exit__(self, *exc_info: object) -> None:
        self._leave()
