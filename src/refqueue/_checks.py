"""Argument checks of the production queue: each names the value, what is
wrong with it and how to fix it, and raises before anything changes.

Plain ``TypeError``/``ValueError`` (the model's rejection kind ``invalid``).
A bool is never accepted where a number is expected.

Durations: every number of seconds the queue takes is at most
``threading.TIMEOUT_MAX`` (about 9.2e9 s on 64-bit Linux), the longest wait
``threading`` accepts; a longer one would pass here and fail later, in a wait
(``OverflowError``) or in a background thread.  Poll intervals (the longest
a blocking call waits before it looks again) may also be ``math.inf``: wait
with no timeout, for the queue's own signal.
"""

from __future__ import annotations

import math
import threading

__all__ = [
    "MAX_SECONDS",
    "check_seconds",
    "check_poll_interval",
    "check_count",
    "check_optional_count",
    "check_optional_callable",
    "describe",
]

# The longest duration any call takes: the longest wait threading accepts.
MAX_SECONDS: float = threading.TIMEOUT_MAX


def describe(value: object) -> str:
    """``value!r (type)``, the way every message shows a rejected value."""
    return f"{value!r} ({type(value).__name__})"


def check_seconds(what: str, value: object) -> float:
    """A finite number of seconds, > 0 and <= ``MAX_SECONDS``; returns it as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {describe(value)}; pass e.g. 0.05")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be finite and > 0, got {value!r}; pass a positive number of seconds")
    if value > MAX_SECONDS:
        raise ValueError(
            f"{what} must be at most threading.TIMEOUT_MAX = {MAX_SECONDS!r} s, got {value!r}; "
            f"pass a number of seconds no larger than that"
        )
    return float(value)


def check_poll_interval(what: str, value: object) -> float:
    """A number of seconds > 0 and <= ``MAX_SECONDS``, or ``math.inf`` (wait
    with no timeout); returns it as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {describe(value)}; pass e.g. 0.05")
    if math.isnan(value) or value <= 0:
        raise ValueError(
            f"{what} must be > 0, got {value!r}; pass a positive number of seconds, or math.inf to wait "
            f"with no timeout"
        )
    if MAX_SECONDS < value < math.inf:
        raise ValueError(
            f"{what} must be at most threading.TIMEOUT_MAX = {MAX_SECONDS!r} s, got {value!r}; pass a "
            f"number of seconds no larger than that, or math.inf to wait with no timeout"
        )
    return float(value)


def check_count(what: str, value: object, minimum: int, fix: str) -> int:
    """An int (not a bool) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {describe(value)}; {fix}")
    if value < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {value}; {fix}")
    return value


def check_optional_count(what: str, value: object, minimum: int, fix: str) -> int | None:
    """None, or an int (not a bool) >= ``minimum``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int or None, got {describe(value)}; {fix}")
    if value < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {value}; {fix}")
    return value


def check_optional_callable(what: str, value: object, fix: str) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{what} must be callable or None, got {describe(value)}; {fix}")
