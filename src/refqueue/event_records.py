"""What a record of ``refqueue.events`` holds, checked before a reader trusts it.

The readers of recorded logs (``refqueue trace-check``, ``report``, ``top``)
take files that anyone may have edited, truncated or forged.  ``problem``
answers why a record is not one ``refqueue.events`` writes (docs/EVENTS.md,
"Records"), or None: each field a reader uses must hold its type (an int
is an ``int`` that is not a ``bool``, within int64; seconds are finite
numbers; ids are strings), and the fields every writer writes must be
there.  A reader that checks each record first never meets a ``TypeError``
or ``KeyError`` deep in its own code: it says which record and field is
wrong, and stops (``trace-check``, ``report``: exit 2) or skips the record
(``top``).  Fields a reader does not know are not looked at.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["problem", "printable"]

_INT_MAX = 2**63 - 1


def _int(v: Any) -> bool:
    return type(v) is int and -_INT_MAX - 1 <= v <= _INT_MAX


def _count(v: Any) -> bool:
    return type(v) is int and 0 <= v <= _INT_MAX


def _positive(v: Any) -> bool:
    return type(v) is int and 1 <= v <= _INT_MAX


def _seconds(v: Any) -> bool:
    return (type(v) is float and math.isfinite(v)) or _int(v)


def _str(v: Any) -> bool:
    return type(v) is str


def _bool(v: Any) -> bool:
    return type(v) is bool


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: type(v) is list and all(check(x) for x in v)


# check -> how the message names what it wants
_WANTS = {
    _int: "an int", _count: "an int >= 0", _positive: "an int >= 1", _seconds: "finite seconds", _str: "a string",
    _bool: "true or false",
}

_SAMPLE = {"sample": _str}
_LEASE_CALL = {"sample": _str, "lease": _int, "live": _bool}
_STORE_COUNTS = {"resident_bytes": _count, "resident_count": _count}

# ev -> {field: check}: every field of docs/EVENTS.md's table that a reader uses
FIELDS: dict[str, dict[str, Any]] = {
    "open": {"epoch": _str, "store": _optional(_str), "visibility_timeout": _seconds, "high": _optional(_count),
             "low": _optional(_count), "store_high": _optional(_count), "store_low": _optional(_count),
             "capacity_bytes": _optional(_count), "max_deliveries": _optional(_positive), "dedup_window": _count,
             "dead_letter_limit": _count, "fifo": _bool},
    "put": {**_SAMPLE, "pending": _count},
    "try_put": {**_SAMPLE, "nbytes": _count, "enqueued": _bool, "paused": _bool, "resident_bytes": _count,
                "parked_bytes": _count, "pending": _count},
    "pause": {"resident_bytes": _count},
    "resume": {"resident_bytes": _count},
    "park": {**_SAMPLE, "nbytes": _count},
    "unpark": {**_SAMPLE, "nbytes": _count},
    "acquire": {"sample": _optional(_str), "lease": _optional(_int), "redeliveries": _count,
                "deadline": _optional(_seconds), "pending": _count, "outstanding": _count},
    "wait": {"waited": _seconds},
    "ack": _LEASE_CALL,
    "fail": {**_LEASE_CALL, "dead": _bool},
    "dead_letter": {**_LEASE_CALL, "reason": _str},
    "extend": {**_LEASE_CALL, "seconds": _seconds, "deadline": _optional(_seconds)},
    "reclaim": {"samples": _list_of(_str), "leases": _list_of(_int), "dead": _list_of(_str), "pending": _count,
                "count": _count},
    "close": {"pending": _count, "outstanding": _count},
    "store_open": {"store": _optional(_str), "capacity_bytes": _optional(_count), "max_samples": _optional(_positive),
                   "store_high": _optional(_count), "store_low": _optional(_count)},
    "store_put": {**_SAMPLE, "nbytes": _count, **_STORE_COUNTS},
    "scrub": {**_SAMPLE, "nbytes": _count, **_STORE_COUNTS},
    "get": {**_SAMPLE, "handle": _int, **_STORE_COUNTS},
    "release": {**_SAMPLE, "handle": _int, **_STORE_COUNTS},
    "store_close": _STORE_COUNTS,
    "loader_wait": {"loader": _positive},
    "loader_batch": {"loader": _positive, "samples": _count, "waited": _seconds, "outcome": _str},
    "loader_retry": {"loader": _positive, "sample": _str, "call": _str, "error": _str},
}

# ev -> the fields every writer (a queue, a store, RecordedBackend) writes
REQUIRED: dict[str, tuple[str, ...]] = {
    "open": ("epoch", "visibility_timeout"), "put": ("sample",), "try_put": ("sample", "nbytes", "enqueued"),
    "park": ("sample", "nbytes"), "unpark": ("sample", "nbytes"), "acquire": ("sample",),
    "ack": ("sample", "lease", "live"), "fail": ("sample", "lease", "live"), "dead_letter": ("sample", "lease", "live"),
    "extend": ("sample", "lease", "live"), "store_put": ("sample", "nbytes"), "scrub": ("sample", "nbytes"),
    "get": ("sample", "handle"), "release": ("sample", "handle"),
    "loader_wait": ("loader",), "loader_batch": ("loader", "samples", "waited"),
    "loader_retry": ("loader", "sample", "call"),
}

_COMMON = {"seq": _positive, "pid": _int, "tid": _int, "t": _optional(_seconds), "q": _positive, "s": _positive}


def _wants(check: Any) -> str:
    return _WANTS.get(check) or "a value of the documented type"


# ev -> every (field, check) to run on a record of that event, common fields first
_PLANS: dict[str, tuple[tuple[str, Any], ...]] = {
    ev: tuple(_COMMON.items()) + tuple(fields.items()) for ev, fields in FIELDS.items()
}
_COMMON_PLAN = tuple(_COMMON.items())
_ABSENT = object()


def problem(record: object) -> str | None:
    """Why ``record`` is not a record ``refqueue.events`` writes, or None
    (about 2 us a record: trace-check reads every record through it)."""
    if type(record) is not dict:
        return f"a JSON {type(record).__name__}, not an event object"
    ev = record.get("ev")
    plan = _PLANS.get(ev, _COMMON_PLAN) if type(ev) is str else None
    if plan is not None:
        for name, check in plan:
            value = record.get(name, _ABSENT)
            if value is not _ABSENT and not check(value):
                break
        else:
            if "seq" in record and "pid" in record and (("q" in record) != ("s" in record)):
                for name in REQUIRED.get(ev, ()):  # type: ignore[arg-type]
                    if name not in record:
                        break
                else:
                    if ev != "acquire" or record.get("sample") is None or "lease" in record:
                        return None
    return _why(record)


def _why(record: dict[str, Any]) -> str:
    """What ``problem`` found wrong with ``record`` (the slow path: only on a bad record)."""
    ev = record.get("ev")
    where = f"seq={_shown(record.get('seq'), typed=False)} ev={_shown(ev, typed=False)}"
    if type(ev) is not str:
        return f"{where}: field 'ev' is {_shown(ev)}, not an event name"
    for name, check in _COMMON.items():
        if name in record and not check(record[name]):
            return f"{where}: field {name!r} is {_shown(record[name])}, not {_wants(check)}"
    for name in ("seq", "pid"):
        if name not in record:
            return f"{where} has no {name!r} field"
    if ("q" in record) == ("s" in record):
        return f"{where} names {'both' if 'q' in record else 'neither'} a queue (q) {'and' if 'q' in record else 'nor'} a store (s)"
    fields = FIELDS.get(ev, {})
    for name, check in fields.items():
        if name in record and not check(record[name]):
            wanted = _wants(check) if check in _WANTS else _wants_of(name)
            return f"{where}: field {name!r} is {_shown(record[name])}, not {wanted}"
    for name in REQUIRED.get(ev, ()):
        if name not in record:
            return f"{where} has no {name!r} field"
    return f"{where} has no 'lease' field"


def _wants_of(name: str) -> str:
    """What an optional or list field wants, for the message."""
    if name in ("samples", "dead"):
        return "a list of strings"
    if name == "leases":
        return "a list of ints"
    return "null or " + {"store": "a string", "sample": "a string", "deadline": "finite seconds",
                          "max_deliveries": "an int >= 1", "max_samples": "an int >= 1", "lease": "an int"}.get(
        name, "an int >= 0")


def _shown(value: object, typed: bool = True) -> str:
    """A short, printable description of a record's value (``repr`` escapes
    control characters; a deep value is named by its type)."""
    try:
        text = repr(value)
    except RecursionError:
        text = f"a {type(value).__name__} nested too deeply"
    if len(text) > 80:
        text = text[:80] + "..."
    return f"{text} ({type(value).__name__})" if typed else text


def printable(text: str) -> str:
    """``text`` with every character a terminal could act on escaped (C0 and
    C1 controls, DEL, bidirectional overrides: whatever ``str.isprintable``
    refuses), newlines kept: a sample id from a log can then never set the
    terminal's title, write its clipboard or reorder what is shown."""
    if text.isprintable():
        return text
    return "\n".join(
        line if line.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)
        for line in text.split("\n")
    )
