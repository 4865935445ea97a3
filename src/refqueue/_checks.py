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
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from refqueue._leases import VisibilityTimeout

__all__ = [
    "DEFAULT_DEAD_LETTER_LIMIT",
    "MAX_SECONDS",
    "check_queue_arguments",
    "check_seconds",
    "check_poll_interval",
    "check_count",
    "check_optional_count",
    "check_optional_callable",
    "check_reason",
    "describe",
    "safe_repr",
]

# The longest duration any call takes: the longest wait threading accepts.
MAX_SECONDS: float = threading.TIMEOUT_MAX

# DeadLetters a queue keeps by default (dead_letter_limit): the newest ten thousand.
DEFAULT_DEAD_LETTER_LIMIT = 10_000


# How much of a rejected value's repr a message shows.
_REPR_LIMIT = 2000


def safe_repr(value: object) -> str:
    """``repr(value)``, cut to 2,000 characters; never raises (a repr that
    raises, or overflows the stack on deep nesting, is described instead)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 600:
        return f"<an int of {value.bit_length()} bits>"  # its repr may exceed the int-to-str limit
    try:
        text = repr(value)
    except RecursionError:
        return f"<a {type(value).__name__} nested too deeply to show>"
    except Exception as exc:  # a hostile __repr__: the message still names the type
        return f"<a {type(value).__name__} whose repr raised {type(exc).__name__}>"
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."


def describe(value: object) -> str:
    """``value!r (type)``, the way every message shows a rejected value
    (the repr cut to 2,000 characters; see ``safe_repr``)."""
    return f"{safe_repr(value)} ({type(value).__name__})"


def _finite_seconds(what: str, value: int | float, fix: str) -> float:
    """A finite number of seconds > 0 and <= ``MAX_SECONDS`` (an int of any
    size is compared exactly, never converted first: 10**400 has no float)."""
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"{what} must be finite and > 0, got {safe_repr(value)}; {fix}")
    elif not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be finite and > 0, got {value!r}; {fix}")
    if value > MAX_SECONDS:
        raise ValueError(
            f"{what} must be at most threading.TIMEOUT_MAX = {MAX_SECONDS!r} s, got {safe_repr(value)}; "
            f"pass a number of seconds no larger than that"
        )
    return float(value)


def check_seconds(what: str, value: object) -> float:
    """A finite number of seconds, > 0 and <= ``MAX_SECONDS``; returns it as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {describe(value)}; pass e.g. 0.05")
    return _finite_seconds(what, value, "pass a positive number of seconds")


def check_poll_interval(what: str, value: object) -> float:
    """A number of seconds > 0 and <= ``MAX_SECONDS``, or ``math.inf`` (wait
    with no timeout); returns it as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {describe(value)}; pass e.g. 0.05")
    if isinstance(value, int) and value > MAX_SECONDS:  # compared exactly: 10**400 has no float
        raise ValueError(
            f"{what} must be at most threading.TIMEOUT_MAX = {MAX_SECONDS!r} s, got {safe_repr(value)}; pass a "
            f"number of seconds no larger than that, or math.inf to wait with no timeout"
        )
    if (not isinstance(value, int) and math.isnan(value)) or value <= 0:
        raise ValueError(
            f"{what} must be > 0, got {safe_repr(value)}; pass a positive number of seconds, or math.inf to wait "
            f"with no timeout"
        )
    if MAX_SECONDS < value < math.inf:
        raise ValueError(
            f"{what} must be at most threading.TIMEOUT_MAX = {MAX_SECONDS!r} s, got {value!r}; pass a "
            f"number of seconds no larger than that, or math.inf to wait with no timeout"
        )
    return float(value)


def check_count(what: str, value: object, minimum: int, fix: str, maximum: int | None = None) -> int:
    """An int (not a bool) >= ``minimum`` (and <= ``maximum``, when given)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {describe(value)}; {fix}")
    if value < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {safe_repr(value)}; {fix}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{what} must be <= {maximum}, got {safe_repr(value)}; {fix}")
    return value


def check_optional_count(what: str, value: object, minimum: int, fix: str) -> int | None:
    """None, or an int (not a bool) >= ``minimum``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int or None, got {describe(value)}; {fix}")
    if value < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {safe_repr(value)}; {fix}")
    return value


def check_optional_callable(what: str, value: object, fix: str) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{what} must be callable or None, got {describe(value)}; {fix}")


def check_reason(reason: object, carrier: str) -> str:
    """``dead_letter``'s reason: a non-empty str with a UTF-8 form (no lone
    surrogate); ``carrier`` says, in the message, who could not carry one.
    Changes nothing; returns the reason."""
    if not isinstance(reason, str):
        raise TypeError(f"dead_letter(reason) must be a str, got {describe(reason)}; say why the sample is poison")
    if not reason:
        raise ValueError("dead_letter(reason) must not be empty; say why the sample is poison")
    if not reason.isascii():
        try:
            reason.encode("utf-8")
        except UnicodeEncodeError as exc:
            shown = repr(reason) if len(reason) <= 80 else repr(reason[:77]) + "..."
            raise ValueError(
                f"dead_letter(reason={shown}): the reason holds {exc.object[exc.start:exc.end]!r} at index "
                f"{exc.start}, which has no UTF-8 form{carrier}; say why in text without lone surrogates"
            ) from None
    return reason


def check_queue_arguments(
    owner: str,
    store: object,
    visibility_timeout: object,
    high_watermark_bytes: object,
    low_watermark_bytes: object,
    on_pause: object,
    on_resume: object,
    max_deliveries: object,
    dedup_window: object,
    dead_letter_limit: object,
    *,
    store_hint: str = "",
) -> tuple[VisibilityTimeout, int | None, int | None]:
    """The checks every queue constructor makes of the arguments all queues
    share, in this order, each error naming ``owner(argument)`` (e.g.
    ``SampleRefQueue(max_deliveries)``); ``store_hint`` is added to the
    store's fix.  Changes nothing.

    Returns the normalised values: the visibility timeout (the default
    ``VisibilityTimeout()`` for None) and the queue's watermark overrides.
    """
    # Imported here: refqueue.store and refqueue._leases import this module.
    from refqueue._leases import VisibilityTimeout
    from refqueue.store import FeatureStore

    if not isinstance(store, FeatureStore):
        raise TypeError(
            f"{owner}(store) needs a refqueue.store.FeatureStore, got {describe(store)}; "
            f"pass the store the producers put into{store_hint}"
        )
    if visibility_timeout is None:
        visibility_timeout = VisibilityTimeout()
    elif not isinstance(visibility_timeout, VisibilityTimeout):
        raise TypeError(
            f"{owner}(visibility_timeout) must be a VisibilityTimeout or None, got "
            f"{describe(visibility_timeout)}; wrap the seconds: VisibilityTimeout(seconds)"
        )
    high_override = check_optional_count(
        f"{owner}(high_watermark_bytes)",
        high_watermark_bytes,
        1,
        "pass a positive byte count (a store always holds >= 0 bytes, so a high of 0 would pause for ever), "
        "or None to use the store's",
    )
    low_override = check_optional_count(
        f"{owner}(low_watermark_bytes)",
        low_watermark_bytes,
        0,
        "pass a non-negative byte count, or None to use the store's",
    )
    check_optional_callable(f"{owner}(on_pause)", on_pause, "pass a function taking a StoreHealth")
    check_optional_callable(f"{owner}(on_resume)", on_resume, "pass a function taking a StoreHealth")
    check_optional_count(f"{owner}(max_deliveries)", max_deliveries, 1, "pass None for no limit or a count >= 1")
    check_count(f"{owner}(dedup_window)", dedup_window, 0, "pass 0 to turn deduplication off")
    check_count(
        f"{owner}(dead_letter_limit)",
        dead_letter_limit,
        0,
        f"pass how many dead letters to keep (the oldest are dropped first), e.g. {DEFAULT_DEAD_LETTER_LIMIT}",
        sys.maxsize,  # (the bound of a deque's maxlen)
    )
    return visibility_timeout, high_override, low_override
