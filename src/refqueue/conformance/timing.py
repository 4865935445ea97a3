"""The ``blocking`` phase's timing model: when a waking call is made, and how
likely a backend that polls instead of waking passes anyway.

A backend that never wakes a waiting call but looks again every ``P``
seconds (a ``while not ready: sleep(P)`` loop, or a thread of its own that
looks every ``P``) returns a woken call at the first look after the waking
call returned.  The look times form a lattice of period ``P`` whose phase
the kit does not know; the woken call is within the bound ``B`` exactly
when the waking call returns in the last ``B`` seconds before a look.  A
fixed delay before the waking call (the kit's old design: the waking call
about 50 ms after the waiter blocked) puts it at one phase every time: a
60 ms poll then shows 10 ms of delay and passes every run.

So each waking call of a measured check is made after an *offset*: once the
waiter is known to be blocked (it stayed blocked for ``SETTLE`` seconds,
``refqueue.conformance.wakeups``), the kit sleeps ``u`` seconds, ``u`` drawn
uniformly from ``[0, L]`` with ``L = SPAN * B`` (0.2 s under the default
bound of 0.05 s), then makes the waking call.  ``u`` comes from
``random.Random("<seed>:<check>:<trial>")``: the certification's seed, so a
replay of a check draws the same offsets.  A check is measured in
``trials`` trials (the profile's ``wake_trials``: 6 in ci, 20 in deep), each
on fresh queues with fresh offsets.

**The escape probability.**  However the looks are placed, the returns
``t`` in ``[a, a + L]`` with ``t`` within ``B`` before a look cover at most
``floor(L / P) * B + min(B, L mod P)`` seconds of the ``L`` (``L`` is
``floor(L / P)`` whole periods, each holding one window of length ``B``,
and a remainder holding at most ``min(B, L mod P)`` of one).  One waking
call, its offset uniform and drawn after everything before it, therefore
escapes (the poller's woken call is within the bound) with probability at
most ::

    q(P) = (floor(L/P) * B + min(B, L mod P)) / L      for P > B   (1 for P <= B: legal)

which is ``B / P`` when ``L`` is a multiple of ``P``, and at most ``B / L``
(1/4) for any ``P >= L``.  The waking calls of a phase have independent
offsets, so a backend whose ``acquire`` polls escapes all ``N`` waking calls
that a blocked ``acquire`` must answer with probability at most ``q(P)**N``
(``escape``); ``BlockingPhase`` states it, for ``P`` of 1.2, 2 and 4 bounds,
in the certificate (``timing``).  Under the defaults (``B`` 0.05 s, ``L``
0.2 s, ci: 6 trials of the 8 waking calls a blocked ``acquire`` answers, so
``N = 48``): ``q`` is 0.85 at ``P`` 60 ms (escape ``4e-4``), 0.5 at 100 ms
(``4e-15``), 0.25 at 200 ms (``1e-29``).

**Re-measurement.**  A wakeup later than the bound is measured again on a
fresh queue at the *same* offsets (up to ``ATTEMPTS`` times in all), so one
preempted thread on a loaded machine fails nothing.  A poller whose period
counts from its own call (the ``sleep(P)`` loop) lands at the same phase
each time and is late each time: the bound above holds.  A poller on a
free-running clock of its own (one thread looking every ``P`` for every
waiter) gets a new phase at each measurement and escapes one waking call
with probability up to ``1 - (1 - q(P)) ** ATTEMPTS``; the bound stated in
the certificate is for the first kind, and says so.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

__all__ = ["SPAN", "Offsets", "distribution", "escape", "escape_per_call"]

SPAN = 4  # the offsets span SPAN bounds: uniform in [0, SPAN * bound]


class Offsets:
    """The offsets of one trial of one check: ``next()`` is the next one, in
    seconds, uniform in ``[0, span]``; the same ``(seed, check, trial)`` gives
    the same offsets (a re-measurement, a replay)."""

    def __init__(self, seed: int, check: str, trial: int, span: float) -> None:
        self.span = span
        self.drawn: list[float] = []
        self._rng = random.Random(f"{seed}:{check}:{trial}")

    def next(self) -> float:
        offset = self._rng.uniform(0.0, self.span)
        self.drawn.append(offset)
        return offset


def escape_per_call(period: float, bound: float, span: float) -> float:
    """The most probability with which one waking call, made after an offset
    uniform in ``[0, span]``, finds a backend that looks every ``period``
    seconds (and never wakes) within ``bound`` (see the module docstring)."""
    for name, value in (("period", period), ("bound", bound), ("span", span)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a finite number of seconds > 0, got {value!r}")
    if period <= bound:
        return 1.0
    whole = math.floor(span / period)
    return min(1.0, (whole * bound + min(bound, span - whole * period)) / span)


def escape(period: float, bound: float, span: float, calls: int) -> float:
    """The most probability with which such a backend escapes ``calls`` waking
    calls with independent offsets: ``escape_per_call(...) ** calls``."""
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0:
        raise ValueError(f"calls must be an int >= 0, got {calls!r}")
    return escape_per_call(period, bound, span) ** calls


def distribution(latencies: Sequence[float]) -> dict[str, float | int]:
    """``n``, ``p50``, ``p99`` and ``max`` of ``latencies``, in seconds (nearest
    rank: below 100 values ``p99`` is the largest)."""
    values = sorted(latencies)
    if not values:
        return {"n": 0}

    def rank(p: float) -> float:
        return round(values[max(0, math.ceil(p * len(values)) - 1)], 4)

    return {"n": len(values), "p50": rank(0.50), "p99": rank(0.99), "max": round(values[-1], 4)}
