"""Slow backends: every call of the queue costs 1 ms, as a queue behind a
network or a disk does (a persist-queue adapter, a server one round trip
away).  What ``--fail-fast`` is measured on.

``slowed(make, seconds)`` wraps a conformance factory: the queue it builds
sleeps ``seconds`` before every call of its public API (a property read
included) and otherwise is the wrapped queue.  The targets:

``conformance.slow:base``         the correct base backend, slowed (legal:
                                  the kit must certify it; only slower)
``conformance.slow:put_no_wake``  the mutant ``put_no_wake`` (a put does not
                                  wake a blocked consumer), slowed: one bug,
                                  caught by the blocking phase only
``conformance.slow:close_no_wake`` the mutant ``close_no_wake``, slowed

Not in ``conformance.mutants.MUTANTS``: certifying one takes minutes without
the short pass, which ``scripts/bench_fail_fast.py`` measures.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from conformance.mutants._base import make as _base_make
from conformance.mutants.close_no_wake import make as _close_no_wake_make
from conformance.mutants.put_no_wake import make as _put_no_wake_make

__all__ = ["SlowQueue", "base", "close_no_wake", "put_no_wake", "slowed"]

CALL_COST_S = 0.001


class SlowQueue:
    """A queue whose every public call (and property read) first sleeps ``cost`` seconds."""

    def __init__(self, queue: Any, cost: float) -> None:
        self._q = queue
        self._cost = cost

    def __enter__(self) -> SlowQueue:
        time.sleep(self._cost)
        self._q.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        time.sleep(self._cost)
        self._q.__exit__(*exc_info)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        cost = self._cost
        if isinstance(getattr(type(self._q), name, None), property):  # a property read is a call too
            time.sleep(cost)
            return getattr(self._q, name)
        value = getattr(self._q, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            time.sleep(cost)
            return value(*args, **kwargs)

        call.__name__ = name
        return call


def slowed(make: Callable[..., Any], seconds: float = CALL_COST_S) -> Callable[..., Any]:
    """The factory ``make`` whose queues sleep ``seconds`` before every call."""

    def slow(store: Any, clock: Any, **config: Any) -> SlowQueue:
        time.sleep(seconds)  # building the client costs a call too
        return SlowQueue(make(store, clock, **config), seconds)

    for attr in ("capabilities", "make_store"):
        if hasattr(make, attr):
            setattr(slow, attr, getattr(make, attr))
    return slow


base = slowed(_base_make)
put_no_wake = slowed(_put_no_wake_make)
close_no_wake = slowed(_close_no_wake_make)
