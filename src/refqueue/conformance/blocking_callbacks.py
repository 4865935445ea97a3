"""The ``blocking`` phase's checks of ``on_pause``/``on_resume``: they run
outside every lock, one at a time in the order of the changes, and their
exceptions reach the caller of ``put_blocks_until_below`` without cancelling
the report of a change made meanwhile.  ``refqueue.conformance.blocking_checks``
lists them and says what each checks; each is ``check(attempt) -> None`` and
raises ``Failed``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from refqueue.conformance.contract import rejection_kind
from refqueue.conformance.wakeups import (
    VISIBILITY, Attempt, Call, CallbackError, Failed, WaitQueue, expect_lease, no_error, outcome,
)  # fmt: skip

__all__ = [
    "CallbackInterrupt", "callback_errors_propagate", "callback_interrupt", "callbacks_after_an_error",
    "callbacks_in_order", "callbacks_outside_locks",
]  # fmt: skip


class CallbackInterrupt(KeyboardInterrupt):
    """What the kit's ``on_pause`` raises in ``callback-interrupted``: a Ctrl-C's exception, no ``Exception``."""


# -- callbacks: outside every lock, their exceptions reach the caller ---------------------------


def _probe(qq: WaitQueue, which: str, found: dict[str, str]) -> Callable[[Any], None]:
    """A callback that calls the queue and the store from a second thread and waits
    for it (bounded); records in ``found[which]`` what it saw."""

    def callback(health: Any) -> None:
        doing = ["(starting)"]

        def calls() -> None:
            for name, fn in (
                ("pending_count()", qq.q.pending_count),
                ("outstanding_count()", qq.q.outstanding_count),
                ("is_paused", lambda: qq.q.is_paused),
                ("store.health()", qq.store.health),
            ):
                doing[0] = name
                fn()
            doing[0] = ""

        helper = threading.Thread(target=calls, name=f"refqueue-blocking-{which}-probe", daemon=True)
        helper.start()
        helper.join(qq.give_up)
        if helper.is_alive():
            found[which] = (
                f"inside {which}, another thread's {doing[0]} did not return within {qq.give_up} s: {which} runs "
                f"with a queue or store lock held; docs/API.md: callbacks run outside every lock"
            )
        elif doing[0]:
            found[which] = f"inside {which}, another thread's {doing[0]} raised"
        else:
            found[which] = ""

    return callback


def callbacks_outside_locks(attempt: Attempt) -> None:
    qq = attempt.queue(watermarks=True, visibility=VISIBILITY)
    found: dict[str, str] = {}
    qq.pause_hook = _probe(qq, "on_pause", found)
    qq.resume_hook = _probe(qq, "on_resume", found)
    small = _paused_then_room(qq)
    _one_step(qq, small, None)  # resumes and enqueues: on_resume
    for which in ("on_pause", "on_resume"):
        if which not in found:
            raise Failed(f"{which} was never called (calls: {qq.events}); the producer paused at high and resumed at low")
        if found[which]:
            raise Failed(found[which])
    return None


def _paused_then_room(qq: WaitQueue) -> Any:
    """'big' (2b) leased and 'small' (b) stored: a one-step put of 'small' pauses
    (on_pause) and aborts; then the ack of 'big' makes room.  'small', whose next
    one-step put resumes (on_resume) and enqueues."""
    big = qq.store_put("big", 2)
    qq.ask("put('big')", lambda: qq.q.put(big))
    lease = qq.ask("acquire()", lambda: qq.q.acquire(poll_interval=qq.bound))
    small = qq.store_put("small", 1)
    _one_step(qq, small, "aborted")  # pauses: on_pause
    qq.ask("ack(lease of 'big')", lambda: qq.q.ack(lease))
    return small


def callbacks_in_order(attempt: Attempt) -> None:
    qq = attempt.queue(watermarks=True, visibility=VISIBILITY)
    small = _paused_then_room(qq)

    inside = threading.Event()  # on_resume has been entered
    holding = threading.Event()  # on_resume is running now
    release = threading.Event()  # the kit lets on_resume return
    overlapped: list[list[str]] = []  # the calls so far, when on_pause came in while on_resume ran

    def hold(health: Any) -> None:
        holding.set()
        inside.set()
        release.wait(3 * qq.give_up)  # past the kit's own wait below, however slow the other thread
        holding.clear()

    def pause_seen(health: Any) -> None:
        if holding.is_set():
            overlapped.append(list(qq.events))

    qq.resume_hook, qq.pause_hook = hold, pause_seen
    resumer = _start_step(qq, small)
    if not inside.wait(qq.give_up):
        raise Failed(
            f"{resumer.what} after the ack that brought residency to 0 did not call on_resume within {qq.give_up} s "
            f"(calls: {qq.events}; {qq.observed()}); it resumes the paused queue"
        )
    # 'small' is pending (work); 'filler' (2b, never put) and 'third' (b) make the
    # effective residency of third's step 4b - b = 3b >= high: it pauses again.
    qq.store_put("filler", 2)
    third = qq.store_put("third", 1)
    pauser = _start_step(qq, third)
    # It returns (its on_pause left to the thread inside on_resume), calls on_pause
    # (the failure), or waits for on_resume to return: a bounded wait for either.
    pauser.done.wait(qq.give_up)
    release.set()
    _all_return(qq, (resumer, pauser), "on_resume returning")
    if overlapped:
        raise Failed(
            f"on_pause was called while on_resume was still running in another thread (calls then: {overlapped[0]}); "
            f"docs/API.md: callbacks are called one at a time, in the order of the changes they report, so a "
            f"handler that tracks the pause state never ends on the wrong one"
        )
    no_error(resumer)
    if pauser.error is None or rejection_kind(pauser.error) != "aborted":
        raise Failed(f"{pauser.what} {outcome(pauser)}; with 'small' pending and the store at 4b it pauses: PutAborted")
    if qq.events != ["pause", "resume", "pause"]:
        raise Failed(
            f"the queue paused, resumed and paused again, and on_pause/on_resume were called {qq.events}, not "
            f"['pause', 'resume', 'pause']: each change is reported exactly once, in order, by the time the "
            f"calls that made them have returned"
        )
    return None


def _start_step(qq: WaitQueue, ref: Any) -> Call:
    """``put_blocks_until_below(ref, abort_when=lambda: True)`` (one step) in a thread of its own."""
    what = f"put_blocks_until_below({ref.sample_id!r}, abort_when=lambda: True)"
    return qq.start(what, lambda: qq.q.put_blocks_until_below(ref, abort_when=lambda: True))


def _all_return(qq: WaitQueue, calls: tuple[Call, ...], after: str) -> None:
    """Each of ``calls`` returns within the kit's wait of ``after``."""
    for call in calls:
        if not call.done.wait(qq.give_up):
            raise Failed(f"{call.what} hung: it did not return within {qq.give_up} s of {after} ({qq.observed()})")


def _one_step(qq: WaitQueue, ref: Any, kind: str | None) -> BaseException | None:
    """``put_blocks_until_below(ref, abort_when=lambda: True)``: one step; it must
    raise an error of ``kind`` (None: return).  Returns what it raised, if anything."""
    call = _start_step(qq, ref)
    what = call.what
    within = 2 * qq.give_up  # longer than a probing callback waits for its thread
    if not call.done.wait(within):
        raise Failed(f"{what} hung: it did not return within {within} s ({qq.observed()})")
    if kind is None and call.error is None:
        return None
    if kind is not None and call.error is not None and rejection_kind(call.error) == kind:
        return call.error
    if isinstance(call.error, CallbackError):
        return call.error
    raise Failed(f"{what} {outcome(call)}; {'it should enqueue' if kind is None else f'it should raise an error of kind {kind!r}'}")


def callback_errors_propagate(attempt: Attempt) -> None:
    qq = attempt.queue(watermarks=True, visibility=VISIBILITY)

    def boom(which: str) -> Callable[[Any], None]:
        def callback(health: Any) -> None:
            raise CallbackError(f"{which} raised on purpose")

        return callback

    qq.pause_hook, qq.resume_hook = boom("on_pause"), boom("on_resume")
    big = qq.store_put("big", 2)
    qq.ask("put('big')", lambda: qq.q.put(big))
    lease = qq.ask("acquire()", lambda: qq.q.acquire(poll_interval=qq.bound))
    small = qq.store_put("small", 1)
    for which, kind, then in (("on_pause", "aborted", "is_paused"), ("on_resume", None, "pending")):
        if which == "on_resume":
            qq.ask("ack(lease of 'big')", lambda: qq.q.ack(lease))
        raised = _one_step(qq, small, kind)
        if not isinstance(raised, CallbackError):
            got = f"{type(raised).__name__}: {raised}" if raised is not None else "nothing"
            raise Failed(
                f"{which} raised an exception and the caller of put_blocks_until_below('small', abort_when=lambda: "
                f"True) got {got}; docs/API.md: a callback's exception propagates out of the call that delivered it"
            )
        paused = qq.ask("is_paused", lambda: qq.q.is_paused)
        pending = qq.ask("pending_count()", qq.q.pending_count)
        if which == "on_pause" and (paused is not True or pending != 0):
            raise Failed(
                f"after on_pause raised, is_paused is {paused!r} and pending_count() {pending}; the pause it reported "
                f"must stand (True) with 'small' not enqueued (0)"
            )
        if which == "on_resume" and (paused is not False or pending != 1):
            raise Failed(
                f"after on_resume raised, is_paused is {paused!r} and pending_count() {pending}; the step it reported "
                f"must have committed: resumed (False) and 'small' enqueued (1)"
            )
    return None


def callbacks_after_an_error(attempt: Attempt) -> None:
    # high 4b, low 2b: 'work' (b) leased, a 3b orphan; the step of 'p1' (b) sees 5b - b = 4b: pauses.
    qq = attempt.queue(watermarks=(4, 2), visibility=VISIBILITY)
    work = qq.store_put("work", 1)
    qq.ask("put('work')", lambda: qq.q.put(work))
    expect_lease(qq.ask("acquire()", lambda: qq.q.acquire(poll_interval=qq.bound)), "work", 0, "acquire() of 'work'")
    orphan = qq.store_put("orphan", 3)
    inside = threading.Event()  # on_pause has been entered
    release = threading.Event()  # the kit lets on_pause raise

    def pause_then_raise(health: Any) -> None:
        inside.set()
        release.wait(3 * qq.give_up)  # past the kit's own waits below, however slow the other thread
        raise CallbackError("on_pause raised on purpose, once the kit let it")

    qq.pause_hook = pause_then_raise
    p1 = qq.store_put("p1", 1)
    pauser = _start_step(qq, p1)
    if not inside.wait(qq.give_up):
        raise Failed(
            f"{pauser.what} with 'work' leased and a 3b orphan (effective 5b - b = 4b = high) did not call on_pause "
            f"within {qq.give_up} s (calls: {qq.events}; {qq.observed()}); its step pauses the queue"
        )
    if qq.ask("store.scrub('orphan')", lambda: qq.store.scrub(orphan)) is not True:  # the queue hears nothing
        raise Failed("store.scrub('orphan') did not return True")
    # 3b resident ('work', 'p1', 'p2'), its own b: 2b = low, so this step resumes while on_pause runs.
    p2 = qq.store_put("p2", 1)
    resumer = _start_step(qq, p2)
    # It returns (its on_resume left queued behind on_pause) or waits for on_pause to end: a bounded wait for either.
    resumer.done.wait(qq.give_up)
    release.set()
    _all_return(qq, (pauser, resumer), "on_pause raising")
    if not isinstance(pauser.error, CallbackError):
        raise Failed(
            f"on_pause raised an exception and {pauser.what}, which delivered it, {outcome(pauser)}; docs/API.md: a "
            f"callback's exception propagates out of the call that delivered it"
        )
    no_error(resumer)
    # A step that changes nothing (4b resident, its own b: 3b, not paused): it delivers what is still queued.
    after = _one_step(qq, qq.store_put("p3", 1), None)
    if after is not None:
        raise Failed(f"put_blocks_until_below('p3', abort_when=lambda: True) raised {type(after).__name__}: {after}")
    if qq.events != ["pause", "resume"]:
        raise Failed(
            f"on_pause raised while {resumer.what} resumed the queue, and after it raised (and a later step, 'p3') "
            f"on_pause/on_resume were called {qq.events}, not ['pause', 'resume']: the resume was "
            f"{'reported more than once' if qq.events.count('resume') > 1 else 'never reported'}; docs/API.md: a "
            f"change calls on_resume exactly once, a change made while another thread is inside a callback is "
            f"reported after that callback returns, and a callback's exception propagates out of the call that "
            f"delivered it (it does not cancel the reports of other changes)"
        )
    paused = qq.ask("is_paused", lambda: qq.q.is_paused)
    pending = qq.ask("pending_count()", qq.q.pending_count)
    if paused is not False or pending != 2:
        raise Failed(
            f"after the resume is_paused is {paused!r} and pending_count() {pending}; the queue resumed (False) and "
            f"'p2' and 'p3' were enqueued (2)"
        )
    return None


def callback_interrupt(attempt: Attempt) -> None:
    qq = attempt.queue(watermarks=True, visibility=VISIBILITY)
    interrupted = [False]

    def interrupt_once(health: Any) -> None:
        if not interrupted[0]:
            interrupted[0] = True
            raise CallbackInterrupt("on_pause raised KeyboardInterrupt on purpose (callback-interrupted)")

    qq.pause_hook = interrupt_once
    big = qq.store_put("big", 2)
    qq.ask("put('big')", lambda: qq.q.put(big))
    lease = qq.ask("acquire()", lambda: qq.q.acquire(poll_interval=qq.bound))
    expect_lease(lease, "big", 0, "acquire() of 'big'")
    small = qq.store_put("small", 1)
    pauser = _start_step(qq, small)
    _all_return(qq, (pauser,), "its step")
    if not isinstance(pauser.error, CallbackInterrupt):
        raise Failed(
            f"on_pause raised KeyboardInterrupt and {pauser.what}, which delivered it, {outcome(pauser)}; docs/API.md: "
            f"a callback's exception (KeyboardInterrupt too) propagates out of the call that delivered it"
        )
    qq.ask("ack(lease of 'big')", lambda: qq.q.ack(lease))
    resumer = _start_step(qq, small)  # its data is still stored: the step that resumes puts it
    _all_return(qq, (resumer,), "the ack of 'big'")
    no_error(resumer)
    paused = qq.ask("is_paused", lambda: qq.q.is_paused)
    if qq.events != ["pause", "resume"] or paused is not False:
        raise Failed(
            f"on_pause raised KeyboardInterrupt (no Exception) out of {pauser.what}; after the ack of 'big' the next "
            f"step resumed the queue (is_paused {paused!r}) and on_pause/on_resume were called {qq.events}, not "
            f"['pause', 'resume']: a callback that raised KeyboardInterrupt left the queue believing a callback "
            f"still runs (cleaned up on `except Exception` only), so no change is reported again"
        )
    return None
