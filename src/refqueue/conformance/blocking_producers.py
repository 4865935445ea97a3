"""The ``blocking`` phase's checks of producers: a blocked
``put_blocks_until_below`` that pauses and is resumed by an ack, a
dead-letter or another producer's step, raises on ``close`` and honours
``abort_when`` (its ref's bytes in ``parked_bytes`` meanwhile), and no
wakeup is lost between its pausing step and its wait.  The callbacks' checks
are in ``refqueue.conformance.blocking_callbacks``.
``refqueue.conformance.blocking_checks`` lists them and says what each checks; each
is ``check(attempt) -> float | None`` (the latency of the wakeup it measured,
if any) and raises ``Failed``/``Late``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from refqueue.conformance.contract import rejection_kind
from refqueue.conformance.samples import UNIT_BYTES
from refqueue.conformance.wakeups import (
    LONG_POLL, VISIBILITY, Attempt, Call, Failed, WaitQueue, blocked_consumer, blocked_producer, expect_lease,
    no_error, outcome,
)  # fmt: skip

__all__ = [
    "abort_when", "acquire_woken_by_admission", "all_woken_by_resume", "lost_wakeup_in_window", "pauses_and_resumes", "put_woken_by_close",
    "put_woken_by_dead_letter",
]  # fmt: skip

PUT = "put_blocks_until_below"  # what the waking calls of these checks must wake


# -- put_blocks_until_below: pause, resume, close, abort_when ------------------------------


def _paused_producer(
    qq: WaitQueue, *, abort_when: Callable[[], bool] | None = None, poll: float = LONG_POLL
) -> tuple[Any, Call, Any]:
    """A consumer holds a lease on a ``2b`` sample, a ``b`` sample is stored, and its
    producer blocks in ``put_blocks_until_below``: effective residency ``3b - b = 2b``
    is at ``high`` and there is work a consumer can free.  The lease, the call and
    its ref ('small')."""
    big = qq.store_put("big", 2)
    qq.ask("put('big')", lambda: qq.q.put(big))
    lease = qq.ask("acquire()", lambda: qq.q.acquire(poll_interval=qq.bound))
    expect_lease(lease, "big", 0, "acquire() with one ref pending")
    small = qq.store_put("small", 1)
    producer = blocked_producer(
        qq,
        small,
        f"the store holds 3b (b = {UNIT_BYTES} bytes), 2b of it ('big') leased, high = 2b, low = b: the step pauses "
        f"and, with work a consumer can free, the producer must wait" + ("" if abort_when is None else " while abort_when() is false"),
        abort_when=abort_when,
        poll=poll,
    )
    if qq.events != ["pause"]:
        raise Failed(f"the producer paused at high; on_pause/on_resume were called {qq.events}, not ['pause']")
    paused = qq.ask("is_paused", lambda: qq.q.is_paused)
    if paused is not True:
        raise Failed(f"the producer is blocked at high, but is_paused is {paused!r}")
    return lease, producer, small


def _resumed_by(attempt: Attempt, how: str) -> float:
    """The paused producer is woken, resumed and admitted by ``how`` ("ack" or
    "dead_letter") of the lease on 'big', which brings residency to low."""
    qq = attempt.queue(watermarks=True, visibility=VISIBILITY)
    lease, producer, _ = _paused_producer(qq)
    if how == "ack":
        what = "ack(lease of 'big')"
        answer, at = qq.waking(what, lambda: qq.w.ack(lease), wakes=PUT)
    else:
        what = "dead_letter(lease of 'big', 'kit')"
        answer, at = qq.waking(what, lambda: qq.w.dead_letter(lease, "kit"), wakes=PUT)
    if answer is not True:
        raise Failed(f"{what} of the live lease returned {answer!r}, not True")
    latency = qq.woken(producer, f"{what}, which brought residency to low,", at)
    no_error(producer)
    _expect_resumed(qq, what, "'small'", 1)
    return latency


def _expect_resumed(qq: WaitQueue, after: str, refs: str, pending: int) -> None:
    """After ``after`` woke the blocked producers: resumed once, and ``pending`` refs
    (``refs``, the producers' among them) pending."""
    got = qq.ask("pending_count()", qq.q.pending_count)
    if got != pending or qq.events != ["pause", "resume"]:
        raise Failed(
            f"after {after} pending_count() is {got} and on_pause/on_resume were called {qq.events}; the blocked "
            f"producers should have resumed (['pause', 'resume']) and enqueued {refs} ({pending})"
        )


def pauses_and_resumes(attempt: Attempt) -> float:
    return _resumed_by(attempt, "ack")


def acquire_woken_by_admission(attempt: Attempt) -> float:
    """A consumer blocked in ``acquire`` beside the paused producer: the ack that
    lets the producer's next step enqueue 'small' wakes the consumer too (a step
    enqueues as ``put`` does, and every put wakes one waiting acquire: D6)."""
    qq = attempt.queue(watermarks=True, visibility=VISIBILITY)
    lease, producer, _ = _paused_producer(qq)
    consumer = blocked_consumer(qq, "", "nothing is pending ('small' is parked, not enqueued): it must wait")
    what = "ack(lease of 'big')"
    answer, at = qq.waking(what, lambda: qq.w.ack(lease), wakes=PUT)
    if answer is not True:
        raise Failed(f"{what} of the live lease returned {answer!r}, not True")
    qq.woken(producer, f"{what}, which brought residency to low,", at)
    no_error(producer)
    latency = qq.woken(consumer, f"{what}, after which the blocked producer's next step enqueued 'small',", at)
    no_error(consumer)
    expect_lease(consumer.value, "small", 0, consumer.what)
    return latency


def put_woken_by_dead_letter(attempt: Attempt) -> float:
    return _resumed_by(attempt, "dead_letter")


def all_woken_by_resume(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=(4, 2), visibility=VISIBILITY)
    orphan = qq.store_put("orphan", 3)  # a producer's data that was never put
    work = qq.store_put("work", 1)
    qq.ask("put('work')", lambda: qq.q.put(work))  # work a consumer could free: a paused step waits
    producers = []
    for name in ("p1", "p2"):
        why = "high = 4b, low = 2b, a 3b orphan and 'work' (b) pending: the effective residency is 4b, paused, and "
        producers.append(blocked_producer(qq, qq.store_put(name, 1), why + "the producer must wait"))
    if qq.events != ["pause"]:
        raise Failed(f"two producers blocked at high; on_pause/on_resume were called {qq.events}, not ['pause']")
    scrubbed = qq.ask("store.scrub('orphan')", lambda: qq.store.scrub(orphan))  # the queue is not told
    if scrubbed is not True:
        raise Failed(f"store.scrub of the orphan returned {scrubbed!r}, not True")
    third = qq.store_put("p3", 1)
    what = "put_blocks_until_below('p3', abort_when=lambda: True)"
    _, at = qq.waking(what, lambda: qq.w.put_blocks_until_below(third, abort_when=lambda: True), wakes=PUT)
    latency = max(qq.woken(p, f"{what}, the step that resumed (4b resident, 2b parked, its own b),", at) for p in producers)
    for producer in producers:
        no_error(producer)
    _expect_resumed(qq, what, "'work', 'p3', 'p1', 'p2'", 4)
    return latency


def put_woken_by_close(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=True, visibility=VISIBILITY)
    _, first, _ = _paused_producer(qq)
    # A second producer blocks beside it: 4b stored, 'small' (b) parked, its own b: 2b, still paused.
    second = blocked_producer(
        qq, qq.store_put("other", 1), "a second producer at high (4b stored, 'small' parked, its own b: 2b) must wait too"
    )
    _, at = qq.waking("close()", qq.w.close, wakes=PUT)
    latency = max(qq.woken(producer, "close()", at) for producer in (first, second))
    for producer in (first, second):
        if producer.error is None or rejection_kind(producer.error) != "closed":
            raise Failed(f"{producer.what} {outcome(producer)} when the queue closed; it must raise QueueClosed")
    pending = qq.ask("pending_count()", qq.q.pending_count)
    if pending != 0:
        raise Failed(f"the blocked producers raised QueueClosed, but pending_count() is {pending}: a ref was enqueued")
    if hasattr(type(qq.q), "parked_bytes"):
        parked = qq.ask("parked_bytes", lambda: qq.q.parked_bytes)
        if parked != 0:
            raise Failed(
                f"the blocked producers raised QueueClosed, but parked_bytes is {parked!r}, not 0; docs/API.md: a "
                f"waiting producer's ref stays parked until its call returns or raises for any reason, QueueClosed "
                f"included (D8)"
            )
    return latency


class AbortWhenRaised(KeyboardInterrupt):
    """What the second producer's ``abort_when`` of ``put-abort-when`` raises once
    ``abort`` is set: a ``KeyboardInterrupt`` (a ``BaseException``, as a Ctrl-C is),
    which a backend that cleans up on ``except Exception`` only lets past."""


def _consulted(abort: threading.Event, *, raising: bool = False) -> tuple[Callable[[], bool], threading.Event]:
    """An ``abort_when`` that answers ``abort.is_set()`` (``raising``: that raises
    ``AbortWhenRaised`` once it is set), and an ``Event`` set when it is consulted
    the second time: its producer has parked by then (it parks when it goes to
    wait after the first, and stays parked until its call ends: D8)."""
    consults = [0]
    parked = threading.Event()

    def abort_when() -> bool:
        consults[0] += 1
        if consults[0] >= 2:
            parked.set()
        if raising and abort.is_set():
            raise AbortWhenRaised("the kit's abort_when raised on purpose (put-abort-when)")
        return abort.is_set()

    return abort_when, parked


def abort_when(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=True, visibility=VISIBILITY)
    abort = threading.Event()
    poll = qq.bound / 2
    first_when, first_parked = _consulted(abort)
    _, first, small = _paused_producer(qq, abort_when=first_when, poll=poll)
    # A second producer blocks beside it: 4b stored, 'small' (b) parked, its own b: 2b, still paused.
    other = qq.store_put("other", 1)
    second_when, second_parked = _consulted(abort, raising=True)
    second = blocked_producer(
        qq, other, "a second producer at high (4b stored, 'small' parked, its own b: 2b) must wait too while "
        "abort_when() is false", abort_when=second_when, poll=poll,
    )  # fmt: skip
    producers = (first, second)
    for producer, parked in ((first, first_parked), (second, second_parked)):
        if not parked.wait(qq.give_up):
            raise Failed(
                f"{producer.what} did not consult abort_when() again within {qq.give_up} s ({qq.observed()}); "
                f"blocked with poll_interval={poll}, it must step again and consult it after each interval"
            )
    if hasattr(type(qq.q), "parked_bytes"):
        parked_bytes = qq.ask("parked_bytes", lambda: qq.q.parked_bytes)
        refs = (small, other)
        want = sum(ref.estimated_bytes for ref in refs)
        if parked_bytes != want:
            sizes = " + ".join(f"{ref.sample_id!r} {ref.estimated_bytes}" for ref in refs)
            raise Failed(
                f"two producers are blocked in put_blocks_until_below (each has consulted abort_when() twice, so "
                f"each has parked its ref), but parked_bytes is {parked_bytes!r}, not {want} ({sizes} bytes); "
                f"docs/API.md: parked_bytes is the bytes of the refs whose producers are inside "
                f"put_blocks_until_below now, the sum of their estimated_bytes (D8)"
            )
    pending = qq.ask("pending_count()", qq.q.pending_count)
    if pending != 0:
        raise Failed(f"two producers are blocked in put_blocks_until_below, their refs parked, and pending_count() is "
                     f"{pending}, not 0; a parked ref is not enqueued (D8): pending_count() counts enqueued refs only")
    qq.after_offset("abort_when")  # polled at poll_interval by design: no escape stated for it
    abort.set()
    at = time.monotonic()
    latency = max(qq.woken(producer, "abort_when() turning true", at) for producer in producers)
    if first.error is None or rejection_kind(first.error) != "aborted":
        raise Failed(f"{first.what} {outcome(first)} once abort_when() was true; it must raise PutAborted")
    if not isinstance(second.error, AbortWhenRaised):
        raise Failed(f"{second.what} {outcome(second)} once its abort_when() raised; the exception must reach the "
                     f"caller (docs/API.md: the call raises)")
    pending = qq.ask("pending_count()", qq.q.pending_count)
    if pending != 0:
        raise Failed(f"the blocked producers raised, but pending_count() is {pending}: a ref was enqueued")
    if hasattr(type(qq.q), "parked_bytes"):
        parked = qq.ask("parked_bytes", lambda: qq.q.parked_bytes)
        if parked != 0:
            raise Failed(
                f"the blocked producers raised (one PutAborted, one the KeyboardInterrupt its abort_when raised), but "
                f"parked_bytes is {parked!r}, not 0; docs/API.md: a waiting producer's ref stays parked until its "
                f"call returns or raises for any reason, an exception from abort_when and KeyboardInterrupt included "
                f"(D8)"
            )
    return latency


# -- put_blocks_until_below(poll_interval=math.inf): no wakeup lost between a step and its wait ----

WINDOW_EVENTS = ("ack", "dead_letter", "resume", "close")  # what frees room or ends a producer's wait


def _in_window(qq: WaitQueue, what: str, event: Callable[[], Any]) -> tuple[Callable[[], bool], list[Call]]:
    """An ``abort_when`` that answers False and, the first time it is consulted
    (after a step that did not enqueue, before the producer waits: docs/API.md),
    first makes ``event`` happen in another thread and waits for it to return
    (bounded: a backend that consults ``abort_when`` under its lock gets the
    event after it waits, an ordinary wakeup).  The event's ``Call``, once made."""
    made: list[Call] = []

    def abort_when() -> bool:
        if not made:
            made.append(qq.start(what, event))
            made[0].done.wait(qq.give_up)
        return False

    return abort_when, made


def _window_case(qq: WaitQueue, how: str) -> tuple[Any, str, Callable[[], Any], str, int]:
    """The queue set up for ``how`` (one of ``WINDOW_EVENTS``): the producer's ref,
    the waking event (its name and call), what the producer must do, and the
    refs pending afterwards."""
    if how == "resume":  # high 4b, low 2b: a 3b orphan and 'work' (b) pending; the producer's step pauses
        orphan = qq.store_put("orphan", 3)
        work = qq.store_put("work", 1)
        qq.ask("put('work')", lambda: qq.q.put(work))
        ref = qq.store_put("p1", 1)

        def resume() -> None:
            if qq.store.scrub(orphan) is not True:  # the queue hears nothing of it
                raise Failed("store.scrub('orphan') did not return True")
            third = qq.store_put("p3", 1)
            qq.q.put_blocks_until_below(third, abort_when=lambda: True)  # 3b resident, its own b: 2b, resumes

        what = "store.scrub('orphan') then put_blocks_until_below('p3', abort_when=lambda: True), which resumed,"
        return ref, what, resume, "be admitted", 3
    big = qq.store_put("big", 2)  # high 2b, low b: 'big' leased, the producer's step pauses at 3b - b = 2b
    qq.ask("put('big')", lambda: qq.q.put(big))
    lease = qq.ask("acquire()", lambda: qq.q.acquire(poll_interval=qq.bound))
    expect_lease(lease, "big", 0, "acquire() with one ref pending")
    ref = qq.store_put("small", 1)
    if how == "ack":
        return ref, "ack(lease of 'big')", lambda: qq.q.ack(lease), "be admitted", 1
    if how == "dead_letter":
        return ref, "dead_letter(lease of 'big', 'kit')", lambda: qq.q.dead_letter(lease, "kit"), "be admitted", 1
    return ref, "close()", qq.q.close, "raise QueueClosed", 0


def lost_wakeup_in_window(attempt: Attempt) -> None:
    for how in WINDOW_EVENTS:
        if how == "dead_letter" and not attempt.backend.capabilities.dead_letter:
            continue
        qq = attempt.queue(watermarks=(4, 2) if how == "resume" else True, visibility=VISIBILITY)
        ref, what, event, must, pending = _window_case(qq, how)
        abort_when, made = _in_window(qq, what, event)
        name = ref.sample_id
        producer = qq.start(
            f"put_blocks_until_below({name!r}, poll_interval=math.inf, abort_when=...)",
            lambda: qq.q.put_blocks_until_below(ref, poll_interval=math.inf, abort_when=abort_when),
        )
        done = producer.done.wait(qq.give_up)
        if not made:
            raise Failed(
                f"{producer.what} {'returned' if done else 'waited'} without consulting abort_when() although its "
                f"step paused with work a consumer can free ({qq.observed()}); docs/API.md: after a step that did "
                f"not enqueue, abort_when() is consulted, then the producer waits"
            )
        if not made[0].done.wait(qq.give_up):
            raise Failed(f"{what}, made while the producer consulted abort_when(), hung ({qq.observed()})")
        no_error(made[0])
        if not producer.done.wait(0 if done else qq.give_up):
            raise Failed(
                f"{producer.what} was still blocked {qq.give_up} s after {what} returned: that call landed after "
                f"the producer's step that paused and before its wait (inside abort_when(), which answered False), "
                f"and the wakeup was lost ({qq.observed()}); with poll_interval=math.inf the producer waits only for "
                f"the queue's signals (docs/API.md: an ack, a dead-letter, a resume, close), so one that comes "
                f"between its step and its wait must make it step again"
            )
        if how == "close":
            if producer.error is None or rejection_kind(producer.error) != "closed":
                raise Failed(f"{producer.what} {outcome(producer)} when the queue closed; it must {must}")
        else:
            no_error(producer)
        got = qq.ask("pending_count()", qq.q.pending_count)
        if got != pending:
            raise Failed(f"after {what} woke {producer.what}, pending_count() is {got}, not {pending}")
    return None
