"""The ``calls`` phase's checks of calls whose environment fails under them
(docs/API.md, "Failures change nothing": a state change runs everything that
can raise first, the clock and the store's ``scrub`` among them, and commits
last).  ``refqueue.conformance.calls`` lists them after its own:

``clock-fails``
    the kit's clock, switched to raise ``OSError`` on every read: ``acquire``
    with a ref pending, ``extend`` of a live lease and ``reclaim_expired``
    with a lease past its deadline each raise and change nothing (the ref
    stays pending and is then delivered for the first time, the old deadline
    stands, the lease stays out); once the clock reads again each call does
    what it would have done.  A call that did not read the clock at all is
    not judged (it had nothing to fail on).  Then an ``acquire`` whose clock
    raises ``KeyboardInterrupt`` (no ``Exception``) leaves its sample pending
    or leased, never neither.
``reclaim-scrub-fails``
    a reclaim that dead-letters at ``max_deliveries=1`` on a store whose
    ``scrub`` raises: ``reclaim_expired`` raises and commits nothing (the
    lease still out, the data resident, no dead letter); once the store
    scrubs again, the next ``reclaim_expired`` dead-letters it.
``reclaimer-error-kept``
    the same reclaim made by the background reclaimer
    (``start_reclaimer(RECLAIMER_INTERVAL)``): once it has tried the scrub
    (bounded by ``WITHIN`` seconds), ``stop_reclaimer()`` raises
    ``RuntimeError`` (docs/API.md: an error that stopped the reclaimer early
    is kept and raised by the next ``stop_reclaimer()``, never lost), and
    the lease is still out; the store scrubbing again, a reclaim by hand
    dead-letters it, and a new reclaimer, started and stopped, raises
    nothing (the old error was raised by the *next* stop only).  Then on a
    fresh queue: the same error, a reclaim by hand that drains the queue,
    ``close()``, which must return normally, and ``stop_reclaimer()``, which
    must raise it.
``put-health-fails``
    (where ``put_blocks_until_below`` takes ``abort_when``) on a queue with
    watermarks, a one-step blocking put whose store's ``health()`` raises:
    the put raises and changes nothing (nothing pending or parked, the
    pause flag as it was).  A step that cannot read the residency cannot
    decide the hysteresis; letting the ref in "fails open" past the
    watermarks.  Once ``health()`` answers, the same ref is enqueued.  A
    backend whose step never read ``health()`` is not judged.
``scrub-fails-keeps-windows``
    on a queue made with ``dedup_window=1`` (and ``dead_letter_limit=1``
    where declared), one sample completed by ``ack`` (by ``dead_letter``),
    then an ``ack`` (a ``dead_letter``) of another whose scrub raises: the
    window still holds the completed id (put again, it is a replay) and the
    kept dead letter is still kept, none dropped; the failed call made no
    room for its own id or letter.  Once the store scrubs, the same call
    completes the other sample, which is then the replay.
"""

from __future__ import annotations

import logging
from typing import Any

from refqueue.clock import ManualClock
from refqueue.conformance.contract import Backend
from refqueue.conformance.probe import WITHIN, Failed, Probe, ScrubSwitch, raises_while_scrubs_fail, scrub_switch_probe
from refqueue.conformance.samples import UNIT_BYTES

__all__ = [
    "ClockSwitch", "RECLAIMER_INTERVAL", "clock_fails", "reclaim_scrub_fails", "reclaimer_error_kept",
    "put_health_fails", "scrub_fails_keeps_windows",
]  # fmt: skip

VISIBILITY = 30.0
RECLAIMER_INTERVAL = 0.01  # seconds between the background reclaimer's reclaims


class ClockInterrupt(KeyboardInterrupt):
    """What ``ClockSwitch`` raises while ``interrupting``: a Ctrl-C's exception, no ``Exception``."""


class ClockSwitch(ManualClock):
    """The kit's manual clock, whose ``now()`` raises ``OSError`` while ``failing``
    is set, and ``ClockInterrupt`` while ``interrupting`` is."""

    __slots__ = ("failing", "interrupting", "reads_refused")

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self.failing = False
        self.interrupting = False
        self.reads_refused = 0

    def now(self) -> float:
        if self.failing:
            self.reads_refused += 1
            raise OSError("the kit's clock failed on purpose (clock-fails)")
        if self.interrupting:
            self.reads_refused += 1
            raise ClockInterrupt("the kit's clock raised KeyboardInterrupt on purpose (clock-fails)")
        return super().now()


def _fails(qq: Probe, clock: ClockSwitch, what: str, call: Any) -> bool:
    """Run ``call`` with the clock failing: False if it returned without reading
    the clock (nothing to judge), True if it raised; ``Failed`` if it read the
    clock and still returned."""
    clock.failing, clock.reads_refused = True, 0
    qq.calls += 1
    try:
        value = call()
    except Exception:  # noqa: BLE001 - the clock's failure reached the caller: as documented
        return True
    finally:
        clock.failing = False
    if clock.reads_refused:
        raise Failed(f"{what} returned {value!r} although the clock raised when it read it; it must raise and change "
                     f"nothing")
    return False


def clock_fails(backend: Backend) -> int:
    clock = ClockSwitch(100.0)
    qq = Probe(backend, clock=clock, visibility_timeout=VISIBILITY)
    try:
        ref = qq.ref("c0")
        qq.call("put('c0')", lambda: qq.q.put(ref))
        before = qq.counts()
        taken: list[Any] = []
        acquire = qq.q.acquire_nowait if qq.caps.acquire_nowait else lambda: qq.q.acquire(poll_interval=0.001)
        if _fails(qq, clock, "acquire() with 'c0' pending", lambda: taken.append(acquire()) or taken[-1]):
            qq.expect_counts(before, "acquire() whose clock raised (the ref stays pending)")
            lease = qq.acquire("acquire() with 'c0' pending, the clock reading again")
            if getattr(getattr(lease, "ref", None), "sample_id", None) != "c0" or lease.redelivery_count != 0:
                raise Failed(f"acquire() after one whose clock raised returned {lease!r}; it should deliver 'c0' for "
                             f"the first time (redelivery_count 0): the failed acquire changed nothing")
        else:  # it did not read the clock: the lease it returned is the one to go on with
            lease = taken[-1]
            if getattr(getattr(lease, "ref", None), "sample_id", None) != "c0":
                raise Failed(f"acquire() with 'c0' pending returned {lease!r}")
        clock.advance(VISIBILITY / 2)
        if _fails(qq, clock, "extend(lease of 'c0')", lambda: qq.q.extend(lease)):
            clock.advance(VISIBILITY / 2 + 1.0)  # past the old deadline, which must stand
            got = qq.call("reclaim_expired() past the deadline the failed extend left", qq.q.reclaim_expired)
            if got != 1:
                raise Failed(f"reclaim_expired() with the clock past the lease's deadline returned {got!r}, not 1: "
                             f"the extend whose clock raised moved the deadline (it must change nothing)")
            lease = qq.acquire("acquire() of 'c0', reclaimed")
            if getattr(getattr(lease, "ref", None), "sample_id", None) != "c0":
                raise Failed(f"acquire() after the reclaim of 'c0' returned {lease!r}")
        clock.advance(VISIBILITY + 1.0)
        before = qq.counts()
        if _fails(qq, clock, "reclaim_expired() with the lease past its deadline", qq.q.reclaim_expired):
            qq.expect_counts(before, "reclaim_expired() whose clock raised (nothing taken back)")
            got = qq.call("reclaim_expired(), the clock reading again", qq.q.reclaim_expired)
            if got != 1:
                raise Failed(f"reclaim_expired() with the lease past its deadline, after one whose clock raised, "
                             f"returned {got!r}; it should take the lease back: 1")
        _acquire_interrupted(qq, clock, acquire)
        return qq.calls
    finally:
        qq.close()


def _acquire_interrupted(qq: Probe, clock: ClockSwitch, acquire: Any) -> None:
    """An ``acquire`` whose clock read raises ``KeyboardInterrupt`` leaves its
    sample pending or leased, never neither (docs/API.md: an asynchronous
    exception loses no sample)."""
    ref = qq.ref("c1")
    qq.call("put('c1')", lambda: qq.q.put(ref))
    pending, outstanding, _ = qq.counts()
    clock.interrupting = True
    qq.calls += 1
    try:
        acquire()
    except ClockInterrupt:
        pass  # the interrupt reached the caller: the sample must still be somewhere
    finally:
        clock.interrupting = False
    after, out_after, _ = qq.counts()
    if after + out_after != pending + outstanding:
        raise Failed(
            f"acquire() with refs pending, whose clock read raised KeyboardInterrupt: pending_count() + "
            f"outstanding_count() went from {pending} + {outstanding} to {after} + {out_after}; docs/API.md: an "
            f"asynchronous exception leaves the sample pending, or leased, never neither (a queue that takes the ref "
            f"off pending first and puts it back on `except Exception` only loses it)"
        )


def reclaim_scrub_fails(backend: Backend) -> int:
    qq, store = scrub_switch_probe(backend, max_deliveries=1, visibility_timeout=VISIBILITY)
    try:
        qq.leased("r0")
        qq.clock.advance(VISIBILITY + 1.0)
        before = qq.counts()
        dead = list(qq.q.dead_letters()) if qq.caps.dead_letter else None
        store.failing = True
        qq.calls += 1
        try:
            value = qq.q.reclaim_expired()
        except Exception:  # noqa: BLE001 - the store's failure reached the caller: as documented
            pass
        else:
            if store.scrubs_refused:
                raise Failed(f"reclaim_expired() that dead-letters 'r0' at max_deliveries=1 returned {value!r} although "
                             f"the store's scrub raised; it must raise and commit nothing (or the sample is finished "
                             f"with its data resident for ever)")
        finally:
            store.failing = False
        if store.scrubs_refused == 0:
            raise Failed("reclaim_expired() of a lease at max_deliveries=1 never called store.scrub: a dead letter "
                         "scrubs its data (D2)")
        qq.expect_counts(before, "reclaim_expired() whose dead-letter scrub raised (nothing commits)")
        if dead is not None and list(qq.q.dead_letters()) != dead:
            raise Failed("after reclaim_expired() whose dead-letter scrub raised, dead_letters() changed; nothing commits")
        got = qq.call("reclaim_expired() again, the store scrubbing", qq.q.reclaim_expired)
        if got != 1:
            raise Failed(f"reclaim_expired() again, once the store scrubs, returned {got!r}; it should dead-letter "
                         f"'r0': 1")
        qq.expect_counts((0, 0, 0), "the reclaim that dead-lettered 'r0' at max_deliveries=1")
        return qq.calls
    finally:
        qq.close()


def reclaimer_error_kept(backend: Backend) -> int:
    qq, store = scrub_switch_probe(backend, max_deliveries=1, visibility_timeout=VISIBILITY)
    try:
        qq.leased("e0")
        qq.clock.advance(VISIBILITY + 1.0)
        before = qq.counts()
        store.failing = True
        quiet = logging.NullHandler()  # the reclaimer logs the error that stopped it: not the kit's output
        logging.getLogger("refqueue").addHandler(quiet)
        try:
            _reclaimer_meets_the_failing_scrub(qq, store)
            qq.calls += 1
            try:
                qq.q.stop_reclaimer()
            except RuntimeError:
                pass  # the error that stopped it, kept and raised: as documented
            except Exception as exc:  # noqa: BLE001 - judged below
                raise Failed(f"stop_reclaimer() after the reclaimer's reclaim raised (its dead-letter's scrub failed) "
                             f"raised {type(exc).__name__}: {exc}; docs/API.md: RuntimeError") from exc
            else:
                raise Failed(
                    "stop_reclaimer() returned normally after the background reclaimer's reclaim raised (the scrub of "
                    "its dead-letter failed); docs/API.md: an error that stopped the reclaimer early is kept and "
                    "raised by the next stop_reclaimer() as RuntimeError, never lost"
                )
        finally:
            store.failing = False
            logging.getLogger("refqueue").removeHandler(quiet)
        qq.expect_counts(before, "the background reclaimer's reclaim whose dead-letter scrub raised (nothing commits)")
        got = qq.call("reclaim_expired() by hand, the store scrubbing", qq.q.reclaim_expired)
        if got != 1:
            raise Failed(f"reclaim_expired() by hand, once the store scrubs, returned {got!r}; it should dead-letter "
                         f"'e0': 1")
        qq.call(f"start_reclaimer({RECLAIMER_INTERVAL}) again, the store scrubbing",
                lambda: qq.q.start_reclaimer(RECLAIMER_INTERVAL))
        qq.call("stop_reclaimer() of the new reclaimer, which met no error (the old error was raised once)",
                qq.q.stop_reclaimer)
        return qq.calls + _error_kept_through_close(backend)
    finally:
        qq.close()


def _reclaimer_meets_the_failing_scrub(qq: Probe, store: ScrubSwitch) -> None:
    """``start_reclaimer(RECLAIMER_INTERVAL)`` with the only lease past its deadline at
    ``max_deliveries=1`` and the store's scrub failing: wait (bounded) until the
    reclaimer's dead-letter has tried the scrub, which stops it with an error."""
    qq.call(f"start_reclaimer({RECLAIMER_INTERVAL})", lambda: qq.q.start_reclaimer(RECLAIMER_INTERVAL))
    if not store.refused.wait(WITHIN):
        raise Failed(
            f"start_reclaimer({RECLAIMER_INTERVAL}) with the only lease past its deadline at max_deliveries=1 "
            f"had not tried to scrub its sample within {WITHIN} s; its reclaim dead-letters it, scrubbing it (D2)"
        )


def _error_kept_through_close(backend: Backend) -> int:
    """The reclaimer stopped by its error; the queue then drained and closed:
    ``close()`` returns normally (it never raises the error) and the next
    ``stop_reclaimer()`` raises it."""
    qq, store = scrub_switch_probe(backend, max_deliveries=1, visibility_timeout=VISIBILITY)
    quiet = logging.NullHandler()
    logging.getLogger("refqueue").addHandler(quiet)
    try:
        qq.leased("c0")
        qq.clock.advance(VISIBILITY + 1.0)
        store.failing = True
        try:
            _reclaimer_meets_the_failing_scrub(qq, store)
        finally:
            store.failing = False
        if qq.call("reclaim_expired() by hand, the store scrubbing", qq.q.reclaim_expired) != 1:
            raise Failed("reclaim_expired() by hand, once the store scrubs, did not dead-letter 'c0'")
        what = "close() of the drained queue whose reclaimer an error stopped"
        qq.call(f"{what} (docs/API.md: close() never raises that error)", qq.q.close)
        qq.calls += 1
        try:
            qq.q.stop_reclaimer()
        except RuntimeError:
            return qq.calls
        except Exception as exc:  # noqa: BLE001 - judged here
            raise Failed(f"stop_reclaimer() after {what} raised {type(exc).__name__}: {exc}; docs/API.md: "
                         f"RuntimeError") from exc
        raise Failed(f"stop_reclaimer() after {what} returned normally; docs/API.md: the error is kept and raised by "
                     f"the next stop_reclaimer(), close() in between or not")
    finally:
        logging.getLogger("refqueue").removeHandler(quiet)
        qq.close()


def scrub_fails_keeps_windows(backend: Backend) -> int:
    qq_limit = {"dead_letter_limit": 1} if backend.capabilities.dead_letter_limit else {}
    qq, store = scrub_switch_probe(backend, dedup_window=1, **qq_limit)
    try:
        calls: list[tuple[str, Any]] = [("ack", lambda lease: qq.q.ack(lease))]
        if qq.caps.dead_letter:
            calls.append(("dead_letter", lambda lease: qq.q.dead_letter(lease, "poison")))
        made = "dedup_window=1" + (", dead_letter_limit=1" if qq_limit else "")
        for k, (name, call) in enumerate(calls):
            done, other = f"w{k}", f"s{k}"
            lease = qq.leased(done)
            if qq.call(f"{name}(lease of {done!r})", lambda: call(lease)) is not True:
                raise Failed(f"{name} of the live lease on {done!r} did not return True")
            kept = _letters(qq)
            lease = qq.leased(other)
            raises_while_scrubs_fail(qq, store, f"{name}(lease of {other!r})", lambda: call(lease))
            after = f"{name}(lease of {other!r}) whose scrub raised, on a queue made with {made}"
            qq.refuses_replay(done, f"put({done!r}) again (completed by {name} just before) after {after}: the failed "
                                    f"{name} committed nothing, so the window still holds {done!r}")
            if _letters(qq) != kept:
                raise Failed(f"after {after}, dead_letters() and dead_letters_dropped went from {kept!r} to "
                             f"{_letters(qq)!r}; a failed {name} drops no dead letter to make room for its own")
            if qq.call(f"{name}(lease of {other!r}) again, the store scrubbing", lambda: call(lease)) is not True:
                raise Failed(f"{name}(lease of {other!r}) again, once the store scrubs, did not return True: the "
                             f"lease must still be live")
            qq.refuses_replay(other, f"put({other!r}) again, just completed by {name} on a queue made with {made}")
        return qq.calls
    finally:
        qq.close()


def _letters(qq: Probe) -> tuple[object, object] | None:
    """The dead letters kept (sample id and reason each) and the count dropped, where the backend keeps them."""
    if not (qq.caps.dead_letter or qq.caps.max_deliveries):
        return None
    letters = [(d.ref.sample_id, d.reason) for d in qq.call("dead_letters()", qq.q.dead_letters)]
    dropped = qq.call("dead_letters_dropped", lambda: getattr(qq.q, "dead_letters_dropped", None))
    return letters, dropped


def put_health_fails(backend: Backend) -> int:
    qq, store = scrub_switch_probe(backend, high_watermark_bytes=2 * UNIT_BYTES, low_watermark_bytes=UNIT_BYTES)
    try:
        ref = qq.ref("h0")
        before = qq.counts()
        paused = qq.call("is_paused", lambda: qq.q.is_paused)
        what = "put_blocks_until_below('h0', abort_when=lambda: True)"
        store.health_failing = True
        qq.calls += 1
        try:
            value = qq.q.put_blocks_until_below(ref, abort_when=lambda: True)
        except Exception:  # noqa: BLE001 - the store's failure reached the caller: as documented
            pass
        else:
            if store.health_refused:
                raise Failed(f"{what} on a queue with watermarks returned {value!r} although store.health() raised; "
                             f"a step that cannot read the residency must raise and change nothing, not let the ref "
                             f"in (that fails open past the watermarks)")
        finally:
            store.health_failing = False
        if store.health_refused == 0:
            return qq.calls  # its step never read health(): nothing to fail on
        after = f"{what} whose store.health() raised"
        qq.expect_counts(before, after)
        parked = qq.call("parked_bytes", lambda: getattr(qq.q, "parked_bytes", 0))
        if parked != 0:
            raise Failed(f"after {after}, parked_bytes is {parked!r}, not 0: the ref stayed parked")
        now = qq.call("is_paused", lambda: qq.q.is_paused)
        if now != paused:
            raise Failed(f"after {after}, is_paused went from {paused!r} to {now!r}; nothing commits")
        got = qq.call(f"{what} again, health() answering", lambda: qq.q.put_blocks_until_below(ref, abort_when=lambda: True))
        if got is not None:
            raise Failed(f"{what} again, once health() answers, returned {got!r}; it enqueues and returns None")
        if qq.call("pending_count()", qq.q.pending_count) != 1:
            raise Failed(f"{what} again, once health() answers (nothing else resident, so below the watermarks), "
                         f"did not enqueue 'h0'")
        return qq.calls
    finally:
        qq.close()
