"""``on_pause``/``on_resume`` delivered one at a time, in the order of the
changes they report (docs/API.md, D4).

A queue ``add``s a callback in the critical section that commits the change
it reports, so the order of ``add`` is the order of the changes; after
letting go of its locks the caller ``deliver``s.  One thread at a time
calls callbacks: a thread that finds another one calling them returns at
once, and that thread calls the new ones too, after the one it is in.  So
two callbacks never overlap, and a handler that tracks the pause state
(``paused = True`` / ``False``) always ends on the queue's.

An exception raised by a callback propagates out of ``deliver`` (to the
call that delivered it); the callbacks after it stay queued for the next
``deliver``.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["OrderedCallbacks"]


class OrderedCallbacks:
    """A FIFO of callbacks with their argument, called one at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # a leaf: held only for a deque operation and the flag
        self._waiting: deque[tuple[Callable[[Any], Any], Any]] = deque()
        self._calling = False  # a thread is in deliver's loop

    def add(self, callback: Callable[[Any], Any] | None, argument: Any) -> None:
        """Queue ``callback(argument)`` (nothing for None); call it with the
        lock held that commits the change it reports."""
        if callback is not None:
            with self._lock:
                self._waiting.append((callback, argument))

    def deliver(self) -> None:
        """Call the queued callbacks, oldest first, unless another thread is
        calling them; call it with no lock held."""
        with self._lock:
            if self._calling or not self._waiting:
                return
            self._calling = True
        try:
            while True:
                with self._lock:
                    if not self._waiting:
                        self._calling = False
                        return
                    callback, argument = self._waiting.popleft()
                callback(argument)
        except BaseException:
            with self._lock:
                self._calling = False
            raise
