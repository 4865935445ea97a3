"""The ``calls`` phase's checks of clock readings the other phases never make:
deadlines apart by less than a millisecond, and a clock that reads NaN.  The
walks and lockstep move the clock by whole and half seconds, so a backend
that compares rounded times, or takes NaN for "long past", passes them.
``refqueue.conformance.calls`` lists them:

``reclaim-sub-ms``
    a lease whose deadline lies 0.4 ms into a millisecond: ``reclaim_expired()``
    0.3 ms before it takes nothing back, at the deadline itself (the clock set
    to the lease's ``deadline``) it takes the lease back (docs/API.md: every
    lease with ``deadline <= now``, and a lease before its deadline is live).
    Times rounded to whole milliseconds, in any direction, make the two
    readings equal.
``reclaim-nan-clock``
    with a lease out, the clock reads NaN: ``reclaim_expired()`` takes
    nothing back (docs/API.md: a reclaim at a NaN ``now`` takes nothing
    back; ``deadline <= nan`` is false, as in the model), or raises and
    changes nothing; once the clock reads past the deadline, the lease is
    taken back.
``extend-while-clock-read``
    while ``extend`` of a live lease reads the clock, another thread fails
    that lease and acquires the sample again (the kit waits ``RACE_WAIT``
    seconds for it: a backend that holds its lock across the read keeps it
    out until the extend returns).  However the two interleave, the new
    holder's lease keeps its own deadline (``now + timeout``): a reclaim at
    that deadline takes it back.  An ``extend`` that checks the lease, reads
    the clock outside its lock and commits to whatever lease the sample
    holds by then moves the new holder's deadline (and answers True for a
    stale lease).  Not judged where ``extend`` does not read the clock.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

from refqueue.clock import ManualClock
from refqueue.conformance.contract import Backend
from refqueue.conformance.probe import WITHIN, Failed, Probe

__all__ = ["HookClock", "NanSwitch", "RACE_WAIT", "extend_while_clock_read", "reclaim_nan_clock", "reclaim_sub_ms"]

VISIBILITY = 30.0
INTO_MS = 0.0004  # where in its millisecond the lease's deadline lies
BEFORE = 0.0003  # how long before the deadline the first reclaim is made
RACE_WAIT = 0.2  # seconds the clock read of extend-while-clock-read waits for the other thread


def reclaim_sub_ms(backend: Backend) -> int:
    qq = Probe(backend, visibility_timeout=VISIBILITY)
    try:
        qq.clock.set(100.0 + INTO_MS)
        lease = qq.leased("t0")
        deadline = lease.deadline
        if not isinstance(deadline, float) or not math.isfinite(deadline):
            raise Failed(f"the lease on 't0' has deadline {deadline!r}; docs/API.md: clock + timeout, in seconds")
        qq.clock.set(deadline - BEFORE)
        before = qq.counts()
        got = qq.call(f"reclaim_expired() {BEFORE * 1000:.1f} ms before the lease's deadline", qq.q.reclaim_expired)
        if got != 0:
            raise Failed(
                f"reclaim_expired() at {qq.clock.now()!r}, {BEFORE * 1000:.1f} ms before the deadline {deadline!r} "
                f"of the only lease, returned {got!r}; it takes back leases with deadline <= now only (docs/API.md), "
                f"so 0: a backend that compares times rounded to milliseconds takes it early"
            )
        qq.expect_counts(before, f"reclaim_expired() {BEFORE * 1000:.1f} ms before the deadline (nothing taken back)")
        qq.clock.set(deadline)
        got = qq.call("reclaim_expired() at the lease's deadline", qq.q.reclaim_expired)
        if got != 1:
            raise Failed(f"reclaim_expired() at the lease's deadline {deadline!r} (the clock reading exactly it) "
                         f"returned {got!r}; a lease with deadline <= now is taken back: 1")
        again = qq.acquire("acquire() of 't0', reclaimed")
        if getattr(getattr(again, "ref", None), "sample_id", None) != "t0":
            raise Failed(f"acquire() after the reclaim of 't0' returned {again!r}")
        if qq.call("ack(lease of 't0')", lambda: qq.q.ack(again)) is not True:
            raise Failed("ack of the live redelivered lease on 't0' did not return True")
        return qq.calls
    finally:
        qq.close()


class NanSwitch(ManualClock):
    """The kit's manual clock, which reads NaN while ``nan`` is set."""

    __slots__ = ("nan",)

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self.nan = False

    def now(self) -> float:
        return math.nan if self.nan else super().now()


def reclaim_nan_clock(backend: Backend) -> int:
    clock = NanSwitch(100.0)
    qq = Probe(backend, clock=clock, visibility_timeout=VISIBILITY)
    try:
        lease = qq.leased("n0")
        before = qq.counts()
        clock.nan = True
        qq.calls += 1
        try:
            got = qq.q.reclaim_expired()
        except Exception:  # noqa: BLE001 - a backend may refuse a NaN clock: then it must change nothing
            got = 0
        finally:
            clock.nan = False
        if got != 0:
            raise Failed(
                f"reclaim_expired() with the clock reading nan returned {got!r}; no deadline is <= nan, so a reclaim "
                f"at a NaN now takes nothing back (docs/API.md; the lease on 'n0' is live until its deadline)"
            )
        qq.expect_counts(before, "reclaim_expired() with the clock reading nan (nothing taken back)")
        clock.advance(VISIBILITY + 1.0)
        got = qq.call("reclaim_expired() past the lease's deadline, the clock reading numbers again", qq.q.reclaim_expired)
        if got != 1:
            raise Failed(f"reclaim_expired() past the deadline of the lease on 'n0', after one at a NaN clock, returned "
                         f"{got!r}; it should take the lease back: 1")
        if qq.call("ack(the reclaimed lease of 'n0')", lambda: qq.q.ack(lease)) is not False:
            raise Failed("ack of the lease on 'n0' after its reclaim did not return False (a stale lease)")
        return qq.calls
    finally:
        qq.close()


class HookClock(ManualClock):
    """The kit's manual clock, which calls ``hook`` (once) at its next read."""

    __slots__ = ("hook",)

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self.hook: Callable[[], None] | None = None

    def now(self) -> float:
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return super().now()


def extend_while_clock_read(backend: Backend) -> int:
    clock = HookClock(100.0)
    qq = Probe(backend, clock=clock, visibility_timeout=VISIBILITY)
    try:
        lease = qq.leased("x0")
        seen: dict[str, Any] = {}

        def other_consumer() -> None:
            try:
                seen["fail"] = qq.q.fail(lease)
                seen["lease"] = qq.q.acquire_nowait() if qq.caps.acquire_nowait else qq.q.acquire(poll_interval=0.001)
            except Exception as exc:  # noqa: BLE001 - judged below
                seen["error"] = exc

        other = threading.Thread(target=other_consumer, name="refqueue-calls-other-consumer", daemon=True)

        def meanwhile() -> None:  # inside extend's clock read
            other.start()
            other.join(RACE_WAIT)

        clock.hook = meanwhile
        qq.calls += 2  # the other thread's fail and acquire
        extended = qq.call("extend(lease of 'x0', 50.0)", lambda: qq.q.extend(lease, 50.0))
        if clock.hook is not None:  # extend did not read the clock: nothing to judge
            clock.hook = None
            return qq.calls
        other.join(WITHIN)
        if other.is_alive():
            raise Failed(f"fail(lease of 'x0') and acquire() in another thread had not returned {WITHIN} s after "
                         f"extend(lease of 'x0', 50.0) returned {extended!r}")
        if "error" in seen:
            error = seen["error"]
            raise Failed(f"fail(lease of 'x0') or acquire() in another thread, while extend read the clock, raised "
                         f"{type(error).__name__}: {error}") from error
        if seen.get("fail") is not True:
            raise Failed(f"fail(lease of 'x0') in another thread, while extend(lease of 'x0', 50.0) read the clock "
                         f"(it returned {extended!r}), returned {seen.get('fail')!r}; the lease was live: True")
        again = seen.get("lease")
        if getattr(getattr(again, "ref", None), "sample_id", None) != "x0":
            raise Failed(f"acquire() after fail(lease of 'x0'), in another thread, returned {again!r}")
        clock.advance(VISIBILITY)  # the new lease's own deadline: now + timeout
        got = qq.call("reclaim_expired() at the new lease's deadline", qq.q.reclaim_expired)
        if got != 1:
            raise Failed(
                f"while extend(lease of 'x0', 50.0) read the clock, another thread failed that lease and acquired "
                f"'x0' again (lease_id {getattr(again, 'lease_id', None)!r}, deadline {getattr(again, 'deadline', None)!r}); "
                f"extend returned {extended!r}, and reclaim_expired() at the new lease's deadline returned {got!r}, "
                f"not 1: the extend of the old, stale lease moved the new holder's deadline (D1: a stale extend "
                f"changes nothing; check the lease and commit in one step)"
            )
        return qq.calls
    finally:
        qq.close()
