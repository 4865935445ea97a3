"""Clocks: where a queue reads "now" for lease deadlines.

A ``Clock`` is anything with ``now() -> float`` in seconds that never goes
backwards.  The production queue defaults to ``MonotonicClock``; tests and the
conformance kit inject a ``ManualClock``, which moves only when told, so that
a deadline is crossed by a step of the test and never by the machine.  (The
reference model has no clock object at all: time is a field of its state.)
"""

from __future__ import annotations

import math
import threading
import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "ManualClock", "MonotonicClock"]


@runtime_checkable
class Clock(Protocol):
    """Seconds on a clock that never goes backwards."""

    def now(self) -> float: ...


class MonotonicClock:
    """``time.monotonic()``: the default clock of every queue."""

    __slots__ = ()

    def now(self) -> float:
        return time.monotonic()

    def __repr__(self) -> str:
        return "MonotonicClock()"


class ManualClock:
    """A clock that moves only by ``advance(seconds)`` or ``set(t)``.

    Thread-safe: a test thread may advance it while queue threads read it.
    """

    __slots__ = ("_now", "_lock")

    def __init__(self, start: float = 0.0) -> None:
        _check_time("ManualClock(start)", start)
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` (>= 0); returns the new time."""
        _check_time("ManualClock.advance(seconds)", seconds)
        with self._lock:
            self._now += float(seconds)
            return self._now

    def set(self, t: float) -> float:
        """Move the clock to ``t``, which must not be earlier than now."""
        _check_time("ManualClock.set(t)", t)
        with self._lock:
            if t < self._now:
                raise ValueError(
                    f"ManualClock.set(t) got t={t!r}, earlier than now={self._now!r}; "
                    f"a clock never goes backwards"
                )
            self._now = float(t)
            return self._now

    def __repr__(self) -> str:
        return f"ManualClock(now={self._now!r})"


def _check_time(what: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {value!r} ({type(value).__name__})")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be finite and >= 0, got {value!r}")
