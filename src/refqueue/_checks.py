"""Argument checks of the production queue: each names the value, what is
wrong with it and how to fix it, and raises before anything changes.

Plain ``TypeError``/``ValueError`` (the model's rejection kind ``invalid``).
A bool is never accepted where a number is expected.
"""

from __future__ import annotations

import math

__all__ = ["check_seconds", "check_count", "check_optional_count", "check_optional_callable", "describe"]


def describe(value: object) -> str:
    """``value!r (type)``, the way every message shows a rejected value."""
    return f"{value!r} ({type(value).__name__})"


def check_seconds(what: str, value: object) -> float:
    """A finite number of seconds > 0; returns it as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {describe(value)}; pass e.g. 0.05")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be finite and > 0, got {value!r}; pass a positive number of seconds")
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
