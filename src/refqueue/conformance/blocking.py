"""The ``blocking`` phase: what users of a queue feel, with real threads and
bounded waits (D4, D6, D8's wakeups, the background reclaimer).

The walks, the lockstep machine and the threads phase drive a backend one
call at a time with short poll intervals, so a backend that never wakes a
waiting consumer, runs its callbacks under its lock, or ignores backpressure
when no ``abort_when`` is given passes them all.  Each check of this phase
runs on a fresh queue of the backend (its watermarks, where it needs them,
passed as the queue's overrides: ``high = 2b``, ``low = b``, one unit
``b = UNIT_BYTES`` bytes, so a backend's own store works too):

``acquire-woken-by-put`` / ``-by-fail`` / ``-by-reclaim`` / ``-by-close``
    a consumer blocks in ``acquire(poll_interval=30)``; it must still be
    waiting after a settle window (nothing to take: an early return is a
    failure of its own), then ``put`` of a ref (``fail`` of a live lease;
    ``reclaim_expired`` after the injected clock passed the lease's
    deadline; ``close`` of the empty queue) must wake it within the bound,
    measured from the waking call's return to ``acquire``'s return, with
    the ref (the ref again, redelivered; ``None``: drained, D3).
``acquire-times-out``
    ``acquire(poll_interval=4 * bound)`` on the empty open queue returns
    ``None`` after its interval, neither before (a consumer that polls in a
    loop would spin) nor more than the bound after it (an interval rounded
    up to whole seconds, or ignored).
``acquire-woken-by-drain``
    the queue is closed with one lease outstanding, so two consumers blocked
    in ``acquire(poll_interval=30)`` must wait (the lease may come back); the
    ``ack`` that drains the queue must wake both within the bound, with the
    terminal ``None``; then the same on a fresh queue with ``dead_letter``
    (where the backend has it).
``acquire-each-woken-by-puts``
    two consumers block in ``acquire(poll_interval=30)``; two ``put`` calls
    back to back must wake both within the bound of the second's return, one
    ref each (a put that wakes a consumer only when pending was empty leaves
    the second asleep).
``acquire-all-woken-by-close``
    three consumers block in ``acquire(poll_interval=30)`` on the empty
    queue; ``close()`` must wake every one within the bound, each with
    ``None``.
``put-pauses-and-resumes``
    a consumer holds a lease on a ``2b`` sample and a ``b`` sample is
    stored: ``put_blocks_until_below(ref, poll_interval=30)`` *without*
    ``abort_when`` must pause (``on_pause`` once) and block; the ack that
    brings residency to ``low`` must wake it within the bound, resumed
    (``on_resume`` once) and enqueued.
``put-all-woken-by-resume``
    ``high = 4b``, ``low = 2b``; with a ``3b`` orphan and a ``b`` ref pending,
    two producers block in ``put_blocks_until_below(poll_interval=30)``
    without ``abort_when`` (paused); the orphan is scrubbed through the store
    (the queue hears nothing); a third producer's one-step put then resumes
    (effective ``4b - 2b parked - b = b``), and the resume must wake both
    blocked producers within the bound: both admitted, ``pause, resume``.
``put-woken-by-dead-letter``
    as ``put-pauses-and-resumes``, with ``dead_letter`` of the lease instead
    of ``ack``: a dead-letter frees the sample's bytes and wakes the producer.
``put-woken-by-close``
    the same blocked producer and a second one blocked beside it both raise
    ``QueueClosed`` within the bound of ``close()``, their refs not enqueued.
``put-abort-when``
    the same producer, with ``abort_when`` and a poll interval of half the
    bound, keeps waiting while ``abort_when()`` is false and raises
    ``PutAborted`` within the bound once it turns true; the ref is not
    enqueued (and ``parked_bytes`` is 0, where the backend has it).
``callbacks-outside-locks``
    inside ``on_pause`` and ``on_resume`` a second thread calls
    ``pending_count()``, ``outstanding_count()``, ``is_paused`` and
    ``store.health()``; it must finish (a join with a timeout of
    ``stall`` seconds): a callback run under a queue or store lock stalls it.
``callbacks-in-order``
    ``on_resume`` is held open (it waits for the kit) while a second
    producer's one-step put pauses the queue again: ``on_pause`` must not be
    called until ``on_resume`` has returned (callbacks are called one at a
    time, in the order of the changes they report), and it must be called
    then: the calls are ``pause, resume, pause``.  The second producer may
    return before its ``on_pause`` is called (the thread inside
    ``on_resume`` calls it next) or wait for it; the kit waits up to
    ``GIVE_UP`` bounds for it to do either.
``callback-errors-propagate``
    an exception raised by ``on_pause`` (``on_resume``) reaches the caller of
    the ``put_blocks_until_below`` that delivered it, and the transition it
    reports committed: ``is_paused`` is True (False, and the ref enqueued).
``reclaimer-reclaims``
    with the clock past a lease's deadline, ``start_reclaimer(interval)``
    takes the lease back with nobody calling ``reclaim_expired``: a consumer
    blocked in ``acquire`` gets the ref again within ``RECLAIM_WITHIN``
    intervals (or, if the backend did not wake it, it is pending then).
``reclaimer-stops``
    after ``stop_reclaimer()`` returned, the clock passes the next lease's
    deadline and nothing is reclaimed for ``STOPPED_FOR`` intervals: a wait
    for something that must *not* happen, bounded in the reclaimer's own
    interval as its unit; then ``reclaim_expired()`` by hand takes that
    lease back (so the lease really was due).

A check whose capability the backend declares absent (``injected_clock`` for
the reclaim checks, ``reclaimer``, ``abort_when``) is listed as not run, with
the reason; it never passes.

Every wait is bounded: a thread is joined, or an ``Event`` waited on, with a
timeout; a call still running after ``GIVE_UP`` times the bound is reported
with the check, the call and how long it had waited (its daemon thread is
left behind).  A wakeup that came, but later than the bound, is measured
again on a fresh queue, up to ``ATTEMPTS`` times in all, so that one
preempted thread on a loaded machine fails nothing; every attempt's latency
is in the report.  A backend that waits out its poll interval is late every
time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from refqueue.clock import ManualClock
from refqueue.conformance.contract import Backend, load_backend, rejection_kind
from refqueue.conformance.samples import STORE_META, UNIT_BYTES, default_store, sample_tensors

__all__ = ["ATTEMPTS", "CHECKS", "DEFAULT_BOUND", "BlockingReport", "check_blocking"]

CHECKS = (
    "acquire-woken-by-put",
    "acquire-woken-by-fail",
    "acquire-woken-by-reclaim",
    "acquire-woken-by-close",
    "acquire-times-out",
    "acquire-woken-by-drain",
    "acquire-each-woken-by-puts",
    "acquire-all-woken-by-close",
    "put-pauses-and-resumes",
    "put-woken-by-dead-letter",
    "put-all-woken-by-resume",
    "put-woken-by-close",
    "put-abort-when",
    "callbacks-outside-locks",
    "callbacks-in-order",
    "callback-errors-propagate",
    "reclaimer-reclaims",
    "reclaimer-stops",
)
DEFAULT_BOUND = 0.05  # seconds from a waking call's return to the woken call's return
ATTEMPTS = 3  # measurements of a wakeup that came late before it fails
LONG_POLL = 30.0  # the poll interval of every blocked call: a backend that waits it out is late
SETTLE = 0.05  # seconds a blocked call must stay blocked before it is woken (it reaches its wait meanwhile)
GIVE_UP = 20  # a call still blocked this many bounds (at least MIN_GIVE_UP s) after its waker is hung
MIN_GIVE_UP = 1.0
RECLAIMER_INTERVAL = 0.01  # seconds; start_reclaimer's interval
RECLAIM_WITHIN = 50  # intervals the reclaimer may take to reclaim an expired lease
STOPPED_FOR = 10  # intervals a stopped reclaimer is watched for a reclaim that must not come
_VISIBILITY = 30.0  # seconds; the injected clock moves past it where a lease must expire
_REQUIRES = {
    "acquire-woken-by-reclaim": ("injected_clock",),
    "put-abort-when": ("abort_when",),
    # both drive the pause and the resume with one-step puts (abort_when=lambda: True)
    "callbacks-outside-locks": ("abort_when",),
    "callbacks-in-order": ("abort_when",),
    "put-all-woken-by-resume": ("abort_when",),  # the resuming put is one step
    "put-woken-by-dead-letter": ("dead_letter",),
    "callback-errors-propagate": ("abort_when",),
    "reclaimer-reclaims": ("reclaimer", "injected_clock"),
    "reclaimer-stops": ("reclaimer", "injected_clock"),
}


@dataclass
class BlockingReport:
    """What the phase found: per check what it checked, its time and its
    latencies; the checks not run and why; the first failure."""

    bound: float
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    not_run: dict[str, str] = field(default_factory=dict)
    steps: int = 0  # backend calls made
    seconds: float = 0.0
    failure: str | None = None
    failed_check: str | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


class _Failed(Exception):
    """A check's verdict: the backend did something the API forbids."""


class _Late(Exception):
    """A wakeup came, later than the bound (measured again before it fails)."""

    def __init__(self, message: str, latency: float) -> None:
        super().__init__(message)
        self.latency = latency


class _CallbackError(Exception):
    """Raised by the kit's callbacks on purpose (``callback-errors-propagate``)."""


class _Call:
    """One backend call running in its own daemon thread; ``done`` is set when
    it returned or raised, and ``at`` is ``time.monotonic()`` at that moment."""

    def __init__(self, check: str, what: str, fn: Callable[[], Any]) -> None:
        self.what = what
        self.started = time.monotonic()
        self.done = threading.Event()
        self.at = 0.0
        self.value: Any = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                self.value = fn()
            except BaseException as exc:  # noqa: BLE001 - reported by the check that waits on it
                self.error = exc
            finally:
                self.at = time.monotonic()
                self.done.set()

        self.thread = threading.Thread(target=run, name=f"refqueue-blocking-{check}", daemon=True)
        self.thread.start()


class _Queue:
    """A fresh queue of the backend, its store and clock, and the kit's callbacks.

    ``on_pause``/``on_resume`` append to ``events`` and then run the hook the
    check installed (``pause_hook``/``resume_hook``), if any."""

    def __init__(
        self, backend: Backend, check: str, bound: float, *, watermarks: bool | tuple[int, int], visibility: float
    ) -> None:
        self.check = check
        self.bound = bound
        self.give_up = max(GIVE_UP * bound, MIN_GIVE_UP)
        self.clock = ManualClock(100.0)
        self.store = backend.make_store() if backend.make_store is not None else default_store()
        self.events: list[str] = []
        self.pause_hook: Callable[[Any], None] | None = None
        self.resume_hook: Callable[[Any], None] | None = None
        self.steps = 0
        self.calls: list[_Call] = []
        config: dict[str, Any] = {"visibility_timeout": visibility}
        if watermarks:
            high, low = (2, 1) if watermarks is True else watermarks  # in units
            config.update(high_watermark_bytes=high * UNIT_BYTES, low_watermark_bytes=low * UNIT_BYTES)
        self.q = backend.factory(self.store, self.clock, **config, on_pause=self._on_pause, on_resume=self._on_resume)

    def _on_pause(self, health: Any) -> None:
        self.events.append("pause")
        if self.pause_hook is not None:
            self.pause_hook(health)

    def _on_resume(self, health: Any) -> None:
        self.events.append("resume")
        if self.resume_hook is not None:
            self.resume_hook(health)

    def store_put(self, sample_id: str, units: int) -> Any:
        self.steps += 1
        return self.store.put(sample_id, sample_tensors(units, 1), num_tokens=units, **STORE_META)

    def start(self, what: str, fn: Callable[[], Any]) -> _Call:
        """``fn`` in its own thread (the call that is to block)."""
        self.steps += 1
        call = _Call(self.check, what, fn)
        self.calls.append(call)
        return call

    def ask(self, what: str, fn: Callable[[], Any]) -> Any:
        """``fn()`` made for the checking thread and waited for at most ``give_up``
        seconds (a hung backend cannot hang the kit); its value, or ``_Failed``."""
        call = self.start(what, fn)
        if not call.done.wait(self.give_up):
            raise _Failed(f"{what} hung: it did not return within {self.give_up} s ({self.observed()})")
        if call.error is not None:
            raise _Failed(f"{what} raised {type(call.error).__name__}: {call.error}")
        return call.value

    def ask_at(self, what: str, fn: Callable[[], Any]) -> tuple[Any, float]:
        """``ask``, and the ``time.monotonic()`` at which ``fn`` returned."""
        value, at = self.ask(what, lambda: (fn(), time.monotonic()))
        return value, at

    def stays_blocked(self, call: _Call, why: str) -> None:
        """``call`` must not return within ``SETTLE`` seconds (``why`` says why it must wait)."""
        if call.done.wait(SETTLE):
            got = f"raised {type(call.error).__name__}: {call.error}" if call.error else f"returned {_show(call.value)}"
            raise _Failed(f"{call.what} {got} after {call.at - call.started:.3f} s; {why}")

    def woken(self, call: _Call, by: str, at: float) -> float:
        """Wait (bounded) for ``call`` to end after the waking call ``by`` returned at
        ``at``; the latency, or ``_Late``/``_Failed``."""
        if not call.done.wait(self.give_up):
            raise _Failed(
                f"{call.what} was still blocked {self.give_up} s after {by} returned (bound {self.bound} s; "
                f"{self.observed()}): it was not woken, and waits out its poll interval of {LONG_POLL} s"
            )
        latency = max(0.0, call.at - at)
        if latency > self.bound:
            raise _Late(
                f"{call.what} returned {latency:.3f} s after {by} returned, past the bound of {self.bound} s "
                f"(in each of {ATTEMPTS} attempts); {by} must wake it at once",
                latency,
            )
        return latency

    def observed(self) -> str:
        """The queue's counts, for a message; never raises, never waits long on a stuck lock."""
        parts: list[str] = []

        def read() -> None:
            for name, fn in (
                ("pending", self.q.pending_count),
                ("outstanding", self.q.outstanding_count),
                ("paused", lambda: self.q.is_paused),
                ("closed", lambda: self.q.is_closed),
            ):
                try:
                    parts.append(f"{name} {fn()}")
                except Exception:  # noqa: BLE001 - a missing observable is not this message's concern
                    continue

        reader = threading.Thread(target=read, name=f"refqueue-blocking-{self.check}-observer", daemon=True)
        reader.start()
        reader.join(0.5)
        return ", ".join(parts) if not reader.is_alive() else ", ".join([*parts, "the next read hung"])

    def finish(self) -> None:
        """Close the queue and the store (best effort, bounded); stop a reclaimer."""
        def wind_down() -> None:
            for fn in (getattr(self.q, "stop_reclaimer", None), self.q.close, self.store.close):
                if fn is None:
                    continue
                try:
                    fn()
                except Exception:  # noqa: BLE001 - winding down changes no verdict
                    pass

        closer = threading.Thread(target=wind_down, name=f"refqueue-blocking-{self.check}-close", daemon=True)
        closer.start()
        closer.join(self.give_up)


class _Attempt:
    """One run of one check: the queues it made (each wound down after it)."""

    def __init__(self, backend: Backend, check: str, bound: float) -> None:
        self.backend = backend
        self.check = check
        self.bound = bound
        self.queues: list[_Queue] = []

    def queue(self, *, watermarks: bool | tuple[int, int], visibility: float) -> _Queue:
        qq = _Queue(self.backend, self.check, self.bound, watermarks=watermarks, visibility=visibility)
        self.queues.append(qq)
        return qq

    @property
    def steps(self) -> int:
        return sum(qq.steps for qq in self.queues)

    def finish(self) -> None:
        for qq in self.queues:
            qq.finish()


def _show(value: Any) -> str:
    ref = getattr(value, "ref", None)
    if ref is not None:
        return f"a lease on {ref.sample_id!r}"
    return repr(value)


def _expect_lease(value: Any, sample_id: str, redelivery: int, what: str) -> None:
    ref = getattr(value, "ref", None)
    if ref is None or ref.sample_id != sample_id:
        raise _Failed(f"{what} returned {_show(value)}; it should hand out {sample_id!r}")
    if getattr(value, "redelivery_count", None) != redelivery:
        raise _Failed(f"{what} handed out {sample_id!r} with redelivery_count {value.redelivery_count}, not {redelivery}")


# -- acquire: woken by put, fail, reclaim, close ----------------------------------------------


def _blocked_consumer(
    qq: _Queue, who: str = "", why: str = "with nothing pending and the queue open it must wait"
) -> _Call:
    """A consumer (``who`` names it among several) blocked in ``acquire(poll_interval=30)``
    (``why`` says why it must wait)."""
    consumer = qq.start(f"{who}acquire(poll_interval={LONG_POLL})", lambda: qq.q.acquire(poll_interval=LONG_POLL))
    qq.stays_blocked(consumer, why)
    return consumer


def _blocked_producer(
    qq: _Queue, ref: Any, why: str, *, abort_when: Callable[[], bool] | None = None, poll: float = LONG_POLL
) -> _Call:
    """A producer blocked in ``put_blocks_until_below(ref, poll_interval=poll)``, with
    ``abort_when`` or without (``why`` says why it must wait)."""
    name = ref.sample_id
    if abort_when is None:
        what = f"put_blocks_until_below({name!r}, poll_interval={poll}) without abort_when"
        producer = qq.start(what, lambda: qq.q.put_blocks_until_below(ref, poll_interval=poll))
    else:
        what = f"put_blocks_until_below({name!r}, poll_interval={poll}, abort_when=...)"
        producer = qq.start(what, lambda: qq.q.put_blocks_until_below(ref, poll_interval=poll, abort_when=abort_when))
    qq.stays_blocked(producer, why)
    return producer


def _outcome(call: _Call) -> str:
    """How ``call`` ended, for a message."""
    return f"raised {type(call.error).__name__}: {call.error}" if call.error else "returned normally"


def _leased(qq: _Queue, sample_id: str) -> Any:
    """Put ``sample_id`` and lease it (an ``acquire`` that finds it pending)."""
    ref = qq.store_put(sample_id, 1)
    qq.ask(f"put({sample_id!r})", lambda: qq.q.put(ref))
    lease = qq.ask("acquire()", lambda: qq.q.acquire(poll_interval=qq.bound))
    _expect_lease(lease, sample_id, 0, "acquire() with one ref pending")
    return lease


def _woken_by_put(attempt: _Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=_VISIBILITY)
    consumer = _blocked_consumer(qq)
    ref = qq.store_put("w0", 1)
    _, at = qq.ask_at("put('w0')", lambda: qq.q.put(ref))
    latency = qq.woken(consumer, "put('w0')", at)
    _raised(consumer)
    _expect_lease(consumer.value, "w0", 0, consumer.what)
    return latency


def _woken_by_fail(attempt: _Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=_VISIBILITY)
    lease = _leased(qq, "w0")
    consumer = _blocked_consumer(qq)
    answer, at = qq.ask_at("fail(lease of 'w0')", lambda: qq.q.fail(lease))
    if answer is not True:
        raise _Failed(f"fail of the live lease on 'w0' returned {answer!r}, not True")
    latency = qq.woken(consumer, "fail(lease of 'w0')", at)
    _raised(consumer)
    _expect_lease(consumer.value, "w0", 1, consumer.what)
    return latency


def _woken_by_reclaim(attempt: _Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=_VISIBILITY)
    lease = _leased(qq, "w0")
    consumer = _blocked_consumer(qq)
    qq.clock.advance(_VISIBILITY + 1.0)
    count, at = qq.ask_at("reclaim_expired()", qq.q.reclaim_expired)
    if count != 1:
        raise _Failed(
            f"reclaim_expired() returned {count!r} with the clock {_VISIBILITY + 1.0} s past the acquire of the "
            f"only lease (deadline {lease.deadline}); it should take that lease back: 1"
        )
    latency = qq.woken(consumer, "reclaim_expired()", at)
    _raised(consumer)
    _expect_lease(consumer.value, "w0", 1, consumer.what)
    return latency


def _woken_by_close(attempt: _Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=_VISIBILITY)
    consumer = _blocked_consumer(qq)
    _, at = qq.ask_at("close()", qq.q.close)
    latency = qq.woken(consumer, "close() of the empty queue", at)
    _raised(consumer)
    if consumer.value is not None:
        raise _Failed(f"{consumer.what} returned {_show(consumer.value)} after close() of the empty queue, not None")
    drained = qq.ask("is_drained", lambda: qq.q.is_drained)
    if drained is not True:
        raise _Failed(f"after close() of the empty queue is_drained is {drained!r}, not True")
    return latency


def _acquire_times_out(attempt: _Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=_VISIBILITY)
    poll = 4 * qq.bound
    consumer = qq.start(f"acquire(poll_interval={poll})", lambda: qq.q.acquire(poll_interval=poll))
    if not consumer.done.wait(poll + qq.give_up):
        raise _Failed(
            f"{consumer.what} on the empty open queue was still blocked {poll + qq.give_up} s later ({qq.observed()}): "
            f"it must return None once its poll interval has passed"
        )
    _raised(consumer)
    if consumer.value is not None:
        raise _Failed(f"{consumer.what} on the empty open queue returned {_show(consumer.value)}, not None")
    took = consumer.at - consumer.started
    if took < poll * 0.99 - 0.002:
        raise _Failed(
            f"{consumer.what} on the empty open queue returned None after {took:.4f} s, before its poll interval: a "
            f"consumer that polls in a loop would spin"
        )
    late = took - poll
    if late > qq.bound:
        raise _Late(
            f"{consumer.what} returned None {took:.3f} s after it was called, {late:.3f} s past its poll interval and "
            f"past the bound of {qq.bound} s (in each of {ATTEMPTS} attempts); it must wait up to its interval, no "
            f"longer",
            late,
        )
    return max(0.0, late)


def _woken_by_drain(attempt: _Attempt) -> float:
    latencies = []
    for how in ("ack", "dead_letter") if attempt.backend.capabilities.dead_letter else ("ack",):
        qq = attempt.queue(watermarks=False, visibility=_VISIBILITY)
        lease = _leased(qq, "w0")
        qq.ask("close()", qq.q.close)
        why = "the queue is closed but not drained (a lease is outstanding and may come back): it must wait"
        consumers = [_blocked_consumer(qq, f"consumer {k}'s ", why) for k in (1, 2)]
        if how == "ack":
            call, finish = "ack(lease of 'w0')", lambda: qq.q.ack(lease)
        else:
            call, finish = "dead_letter(lease of 'w0', 'kit')", lambda: qq.q.dead_letter(lease, "kit")
        answer, at = qq.ask_at(call, finish)
        if answer is not True:
            raise _Failed(f"{call} of the live lease returned {answer!r}, not True")
        latencies += [qq.woken(consumer, f"the {how} that drained the closed queue", at) for consumer in consumers]
        for consumer in consumers:
            _raised(consumer)
            if consumer.value is not None:
                raise _Failed(f"{consumer.what} returned {_show(consumer.value)} once the closed queue drained, not None")
    return max(latencies)


def _each_woken_by_puts(attempt: _Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=_VISIBILITY)
    consumers = [_blocked_consumer(qq, f"consumer {k}'s ") for k in (1, 2)]
    refs = [qq.store_put(f"w{k}", 1) for k in (0, 1)]
    # Both puts from one thread, back to back: the second usually comes before a
    # woken consumer has taken the first ref, so pending is not empty then.
    _, at = qq.ask_at("put('w0') then put('w1')", lambda: (qq.q.put(refs[0]), qq.q.put(refs[1])))
    latency = max(qq.woken(consumer, "put('w0') then put('w1')", at) for consumer in consumers)
    got = []
    for consumer in consumers:
        _raised(consumer)
        if getattr(consumer.value, "ref", None) is None:
            raise _Failed(f"{consumer.what} returned {_show(consumer.value)} after two puts; it should take one ref")
        got.append(consumer.value.ref.sample_id)
    if sorted(got) != ["w0", "w1"]:
        raise _Failed(f"two consumers woken by put('w0') and put('w1') took {got}; each should take one of them")
    return latency


def _all_woken_by_close(attempt: _Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=_VISIBILITY)
    consumers = [_blocked_consumer(qq, f"consumer {k}'s ") for k in (1, 2, 3)]
    _, at = qq.ask_at("close()", qq.q.close)
    latency = max(qq.woken(consumer, "close() of the empty queue", at) for consumer in consumers)
    for consumer in consumers:
        _raised(consumer)
        if consumer.value is not None:
            raise _Failed(f"{consumer.what} returned {_show(consumer.value)} when the empty queue closed, not None")
    return latency


def _raised(call: _Call) -> None:
    if call.error is not None:
        raise _Failed(f"{call.what} raised {type(call.error).__name__}: {call.error}")


# -- put_blocks_until_below: pause, resume, close, abort_when ------------------------------


def _paused_producer(qq: _Queue, *, abort_when: Callable[[], bool] | None = None, poll: float = LONG_POLL) -> tuple[Any, _Call]:
    """A consumer holds a lease on a ``2b`` sample, a ``b`` sample is stored, and its
    producer blocks in ``put_blocks_until_below``: effective residency ``3b - b = 2b``
    is at ``high`` and there is work a consumer can free.  The lease, and the call."""
    big = qq.store_put("big", 2)
    qq.ask("put('big')", lambda: qq.q.put(big))
    lease = qq.ask("acquire()", lambda: qq.q.acquire(poll_interval=qq.bound))
    _expect_lease(lease, "big", 0, "acquire() with one ref pending")
    small = qq.store_put("small", 1)
    producer = _blocked_producer(
        qq,
        small,
        f"the store holds 3b (b = {UNIT_BYTES} bytes), 2b of it ('big') leased, high = 2b, low = b: the step pauses "
        f"and, with work a consumer can free, the producer must wait" + ("" if abort_when is None else " while abort_when() is false"),
        abort_when=abort_when,
        poll=poll,
    )
    if qq.events != ["pause"]:
        raise _Failed(f"the producer paused at high; on_pause/on_resume were called {qq.events}, not ['pause']")
    paused = qq.ask("is_paused", lambda: qq.q.is_paused)
    if paused is not True:
        raise _Failed(f"the producer is blocked at high, but is_paused is {paused!r}")
    return lease, producer


def _resumed_by(attempt: _Attempt, how: str) -> float:
    """The paused producer is woken, resumed and admitted by ``how`` ("ack" or
    "dead_letter") of the lease on 'big', which brings residency to low."""
    qq = attempt.queue(watermarks=True, visibility=_VISIBILITY)
    lease, producer = _paused_producer(qq)
    if how == "ack":
        what = "ack(lease of 'big')"
        answer, at = qq.ask_at(what, lambda: qq.q.ack(lease))
    else:
        what = "dead_letter(lease of 'big', 'kit')"
        answer, at = qq.ask_at(what, lambda: qq.q.dead_letter(lease, "kit"))
    if answer is not True:
        raise _Failed(f"{what} of the live lease returned {answer!r}, not True")
    latency = qq.woken(producer, f"{what}, which brought residency to low,", at)
    _raised(producer)
    _expect_resumed(qq, what, "'small'", 1)
    return latency


def _expect_resumed(qq: _Queue, after: str, refs: str, pending: int) -> None:
    """After ``after`` woke the blocked producers: resumed once, and ``pending`` refs
    (``refs``, the producers' among them) pending."""
    got = qq.ask("pending_count()", qq.q.pending_count)
    if got != pending or qq.events != ["pause", "resume"]:
        raise _Failed(
            f"after {after} pending_count() is {got} and on_pause/on_resume were called {qq.events}; the blocked "
            f"producers should have resumed (['pause', 'resume']) and enqueued {refs} ({pending})"
        )


def _pauses_and_resumes(attempt: _Attempt) -> float:
    return _resumed_by(attempt, "ack")


def _put_woken_by_dead_letter(attempt: _Attempt) -> float:
    return _resumed_by(attempt, "dead_letter")


def _all_woken_by_resume(attempt: _Attempt) -> float:
    qq = attempt.queue(watermarks=(4, 2), visibility=_VISIBILITY)
    orphan = qq.store_put("orphan", 3)  # a producer's data that was never put
    work = qq.store_put("work", 1)
    qq.ask("put('work')", lambda: qq.q.put(work))  # work a consumer could free: a paused step waits
    producers = []
    for name in ("p1", "p2"):
        why = "high = 4b, low = 2b, a 3b orphan and 'work' (b) pending: the effective residency is 4b, paused, and "
        producers.append(_blocked_producer(qq, qq.store_put(name, 1), why + "the producer must wait"))
    if qq.events != ["pause"]:
        raise _Failed(f"two producers blocked at high; on_pause/on_resume were called {qq.events}, not ['pause']")
    scrubbed = qq.ask("store.scrub('orphan')", lambda: qq.store.scrub(orphan))  # the queue is not told
    if scrubbed is not True:
        raise _Failed(f"store.scrub of the orphan returned {scrubbed!r}, not True")
    third = qq.store_put("p3", 1)
    what = "put_blocks_until_below('p3', abort_when=lambda: True)"
    _, at = qq.ask_at(what, lambda: qq.q.put_blocks_until_below(third, abort_when=lambda: True))
    latency = max(qq.woken(p, f"{what}, the step that resumed (4b resident, 2b parked, its own b),", at) for p in producers)
    for producer in producers:
        _raised(producer)
    _expect_resumed(qq, what, "'work', 'p3', 'p1', 'p2'", 4)
    return latency


def _put_woken_by_close(attempt: _Attempt) -> float:
    qq = attempt.queue(watermarks=True, visibility=_VISIBILITY)
    _, first = _paused_producer(qq)
    # A second producer blocks beside it: 4b stored, 'small' (b) parked, its own b: 2b, still paused.
    second = _blocked_producer(
        qq, qq.store_put("other", 1), "a second producer at high (4b stored, 'small' parked, its own b: 2b) must wait too"
    )
    _, at = qq.ask_at("close()", qq.q.close)
    latency = max(qq.woken(producer, "close()", at) for producer in (first, second))
    for producer in (first, second):
        if producer.error is None or rejection_kind(producer.error) != "closed":
            raise _Failed(f"{producer.what} {_outcome(producer)} when the queue closed; it must raise QueueClosed")
    pending = qq.ask("pending_count()", qq.q.pending_count)
    if pending != 0:
        raise _Failed(f"the blocked producers raised QueueClosed, but pending_count() is {pending}: a ref was enqueued")
    return latency


def _abort_when(attempt: _Attempt) -> float:
    qq = attempt.queue(watermarks=True, visibility=_VISIBILITY)
    abort = threading.Event()
    _, producer = _paused_producer(qq, abort_when=abort.is_set, poll=qq.bound / 2)
    abort.set()
    latency = qq.woken(producer, "abort_when() turning true", time.monotonic())
    if producer.error is None or rejection_kind(producer.error) != "aborted":
        raise _Failed(f"{producer.what} {_outcome(producer)} once abort_when() was true; it must raise PutAborted")
    pending = qq.ask("pending_count()", qq.q.pending_count)
    if pending != 0:
        raise _Failed(f"{producer.what} raised PutAborted, but pending_count() is {pending}: the ref was enqueued")
    if hasattr(type(qq.q), "parked_bytes"):
        parked = qq.ask("parked_bytes", lambda: qq.q.parked_bytes)
        if parked != 0:
            raise _Failed(f"{producer.what} raised PutAborted, but parked_bytes is {parked!r}, not 0")
    return latency


# -- callbacks: outside every lock, their exceptions reach the caller ---------------------------


def _probe(qq: _Queue, which: str, found: dict[str, str]) -> Callable[[Any], None]:
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


def _callbacks_outside_locks(attempt: _Attempt) -> None:
    qq = attempt.queue(watermarks=True, visibility=_VISIBILITY)
    found: dict[str, str] = {}
    qq.pause_hook = _probe(qq, "on_pause", found)
    qq.resume_hook = _probe(qq, "on_resume", found)
    small = _paused_then_room(qq)
    _one_step(qq, small, None)  # resumes and enqueues: on_resume
    for which in ("on_pause", "on_resume"):
        if which not in found:
            raise _Failed(f"{which} was never called (calls: {qq.events}); the producer paused at high and resumed at low")
        if found[which]:
            raise _Failed(found[which])
    return None


def _paused_then_room(qq: _Queue) -> Any:
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


def _callbacks_in_order(attempt: _Attempt) -> None:
    qq = attempt.queue(watermarks=True, visibility=_VISIBILITY)
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
    resumer = qq.start(
        "put_blocks_until_below('small', abort_when=lambda: True)",
        lambda: qq.q.put_blocks_until_below(small, abort_when=lambda: True),
    )
    if not inside.wait(qq.give_up):
        raise _Failed(
            f"{resumer.what} after the ack that brought residency to 0 did not call on_resume within {qq.give_up} s "
            f"(calls: {qq.events}; {qq.observed()}); it resumes the paused queue"
        )
    # 'small' is pending (work); 'filler' (2b, never put) and 'third' (b) make the
    # effective residency of third's step 4b - b = 3b >= high: it pauses again.
    qq.store_put("filler", 2)
    third = qq.store_put("third", 1)
    pauser = qq.start(
        "put_blocks_until_below('third', abort_when=lambda: True)",
        lambda: qq.q.put_blocks_until_below(third, abort_when=lambda: True),
    )
    # It returns (its on_pause left to the thread inside on_resume), calls on_pause
    # (the failure), or waits for on_resume to return: a bounded wait for either.
    pauser.done.wait(qq.give_up)
    release.set()
    for call in (resumer, pauser):
        if not call.done.wait(qq.give_up):
            raise _Failed(f"{call.what} hung: it did not return within {qq.give_up} s of on_resume returning ({qq.observed()})")
    if overlapped:
        raise _Failed(
            f"on_pause was called while on_resume was still running in another thread (calls then: {overlapped[0]}); "
            f"docs/API.md: callbacks are called one at a time, in the order of the changes they report, so a "
            f"handler that tracks the pause state never ends on the wrong one"
        )
    _raised(resumer)
    if pauser.error is None or rejection_kind(pauser.error) != "aborted":
        raise _Failed(f"{pauser.what} {_outcome(pauser)}; with 'small' pending and the store at 4b it pauses: PutAborted")
    if qq.events != ["pause", "resume", "pause"]:
        raise _Failed(
            f"the queue paused, resumed and paused again, and on_pause/on_resume were called {qq.events}, not "
            f"['pause', 'resume', 'pause']: each change is reported exactly once, in order, by the time the "
            f"calls that made them have returned"
        )
    return None


def _one_step(qq: _Queue, ref: Any, kind: str | None) -> BaseException | None:
    """``put_blocks_until_below(ref, abort_when=lambda: True)``: one step; it must
    raise an error of ``kind`` (None: return).  Returns what it raised, if anything."""
    what = f"put_blocks_until_below({ref.sample_id!r}, abort_when=lambda: True)"
    call = qq.start(what, lambda: qq.q.put_blocks_until_below(ref, abort_when=lambda: True))
    within = 2 * qq.give_up  # longer than a probing callback waits for its thread
    if not call.done.wait(within):
        raise _Failed(f"{what} hung: it did not return within {within} s ({qq.observed()})")
    if kind is None and call.error is None:
        return None
    if kind is not None and call.error is not None and rejection_kind(call.error) == kind:
        return call.error
    if isinstance(call.error, _CallbackError):
        return call.error
    raise _Failed(f"{what} {_outcome(call)}; {'it should enqueue' if kind is None else f'it should raise an error of kind {kind!r}'}")


def _callback_errors_propagate(attempt: _Attempt) -> None:
    qq = attempt.queue(watermarks=True, visibility=_VISIBILITY)

    def boom(which: str) -> Callable[[Any], None]:
        def callback(health: Any) -> None:
            raise _CallbackError(f"{which} raised on purpose")

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
        if not isinstance(raised, _CallbackError):
            got = f"{type(raised).__name__}: {raised}" if raised is not None else "nothing"
            raise _Failed(
                f"{which} raised an exception and the caller of put_blocks_until_below('small', abort_when=lambda: "
                f"True) got {got}; docs/API.md: a callback's exception propagates out of the call that delivered it"
            )
        paused = qq.ask("is_paused", lambda: qq.q.is_paused)
        pending = qq.ask("pending_count()", qq.q.pending_count)
        if which == "on_pause" and (paused is not True or pending != 0):
            raise _Failed(
                f"after on_pause raised, is_paused is {paused!r} and pending_count() {pending}; the pause it reported "
                f"must stand (True) with 'small' not enqueued (0)"
            )
        if which == "on_resume" and (paused is not False or pending != 1):
            raise _Failed(
                f"after on_resume raised, is_paused is {paused!r} and pending_count() {pending}; the step it reported "
                f"must have committed: resumed (False) and 'small' enqueued (1)"
            )
    return None


# -- the background reclaimer --------------------------------------------------------------------


def _reclaimer_reclaims(attempt: _Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=_VISIBILITY)
    _leased(qq, "r0")
    qq.clock.advance(_VISIBILITY + 1.0)
    _, at = qq.ask_at(f"start_reclaimer({RECLAIMER_INTERVAL})", lambda: qq.q.start_reclaimer(RECLAIMER_INTERVAL))
    window = RECLAIM_WITHIN * RECLAIMER_INTERVAL
    lease = qq.ask(f"acquire(poll_interval={window})", lambda: qq.q.acquire(poll_interval=window))
    if lease is None:
        pending = qq.ask("pending_count()", qq.q.pending_count)
        if pending != 1:
            raise _Failed(
                f"start_reclaimer({RECLAIMER_INTERVAL}) with the clock past the only lease's deadline reclaimed "
                f"nothing within {RECLAIM_WITHIN} of its intervals ({window} s; {qq.observed()}); nobody else calls "
                f"reclaim_expired"
            )
        return time.monotonic() - at
    _expect_lease(lease, "r0", 1, "acquire() after the reclaimer ran")
    return time.monotonic() - at


def _reclaimer_stops(attempt: _Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=_VISIBILITY)
    _leased(qq, "r0")
    qq.clock.advance(_VISIBILITY + 1.0)
    qq.ask(f"start_reclaimer({RECLAIMER_INTERVAL})", lambda: qq.q.start_reclaimer(RECLAIMER_INTERVAL))
    window = RECLAIM_WITHIN * RECLAIMER_INTERVAL
    lease = qq.ask(f"acquire(poll_interval={window})", lambda: qq.q.acquire(poll_interval=window))
    if lease is None:
        raise _Failed(f"the reclaimer did not reclaim the expired lease within {window} s, so its stop cannot be checked")
    qq.ask("stop_reclaimer()", qq.q.stop_reclaimer)
    qq.clock.advance(_VISIBILITY + 1.0)  # the new lease is past its deadline now
    watch = STOPPED_FOR * RECLAIMER_INTERVAL
    # A bounded wait for something that must not happen: a reclaim, for STOPPED_FOR of
    # the stopped reclaimer's intervals (a running one reclaims within one).
    again = qq.ask(f"acquire(poll_interval={watch})", lambda: qq.q.acquire(poll_interval=watch))
    pending = qq.ask("pending_count()", qq.q.pending_count)
    if again is not None or pending != 0:
        raise _Failed(
            f"after stop_reclaimer() returned, the next expired lease was reclaimed within {STOPPED_FOR} reclaimer "
            f"intervals ({watch} s; acquire returned {_show(again)}, pending_count() {pending}); a stopped reclaimer "
            f"reclaims nothing"
        )
    count = qq.ask("reclaim_expired()", qq.q.reclaim_expired)
    if count != 1:
        raise _Failed(f"reclaim_expired() by hand returned {count!r}; the lease past its deadline should be taken back: 1")
    return watch


_WHAT = {
    "acquire-woken-by-put": "a consumer blocked in acquire(poll_interval=30) is woken by put within the bound",
    "acquire-woken-by-fail": "a consumer blocked in acquire(poll_interval=30) is woken by a live fail within the bound",
    "acquire-woken-by-reclaim": "a consumer blocked in acquire(poll_interval=30) is woken by reclaim_expired (clock past "
    "the deadline) within the bound",
    "acquire-woken-by-close": "a consumer blocked in acquire(poll_interval=30) returns None within the bound of close() "
    "of the empty queue",
    "acquire-times-out": "acquire(poll_interval=4 * bound) on the empty open queue returns None after its interval, "
    "within the bound",
    "acquire-woken-by-drain": "two consumers blocked in acquire(poll_interval=30) on a closed queue with a lease out "
    "return None within the bound of the ack (and, on a fresh queue, the dead_letter) that drains it",
    "acquire-each-woken-by-puts": "two consumers blocked in acquire(poll_interval=30) each take one of two back-to-back "
    "puts within the bound",
    "acquire-all-woken-by-close": "three consumers blocked in acquire(poll_interval=30) all return None within the "
    "bound of close() of the empty queue",
    "put-pauses-and-resumes": "put_blocks_until_below without abort_when pauses at high and blocks; the ack that brings "
    "residency to low resumes and admits it within the bound",
    "put-woken-by-dead-letter": "the dead_letter that brings residency to low resumes and admits a producer blocked "
    "in put_blocks_until_below within the bound",
    "put-all-woken-by-resume": "a resume made by another producer's one-step put wakes both producers blocked in "
    "put_blocks_until_below(poll_interval=30) within the bound; both admitted",
    "put-woken-by-close": "two producers blocked in put_blocks_until_below raise QueueClosed within the bound of "
    "close(); their refs are not enqueued",
    "put-abort-when": "a blocked producer waits while abort_when() is false and raises PutAborted within the bound once "
    "it is true; its ref is not enqueued",
    "callbacks-outside-locks": "inside on_pause and on_resume another thread's pending_count(), outstanding_count(), "
    "is_paused and store.health() return: no lock is held",
    "callbacks-in-order": "with on_resume held open, another producer's pause does not call on_pause until on_resume "
    "returned; the calls are pause, resume, pause",
    "callback-errors-propagate": "an exception of on_pause/on_resume reaches the caller of put_blocks_until_below; the "
    "transition committed",
    "reclaimer-reclaims": f"start_reclaimer({RECLAIMER_INTERVAL}) reclaims an expired lease within {RECLAIM_WITHIN} "
    f"intervals with nobody calling reclaim_expired",
    "reclaimer-stops": f"after stop_reclaimer() nothing is reclaimed for {STOPPED_FOR} intervals (a bounded wait for "
    f"what must not happen), then reclaim_expired() by hand finds the lease due",
}

_RUNNERS: dict[str, Callable[[_Attempt], float | None]] = {
    "acquire-woken-by-put": _woken_by_put,
    "acquire-woken-by-fail": _woken_by_fail,
    "acquire-woken-by-reclaim": _woken_by_reclaim,
    "acquire-woken-by-close": _woken_by_close,
    "acquire-times-out": _acquire_times_out,
    "acquire-woken-by-drain": _woken_by_drain,
    "acquire-each-woken-by-puts": _each_woken_by_puts,
    "acquire-all-woken-by-close": _all_woken_by_close,
    "put-pauses-and-resumes": _pauses_and_resumes,
    "put-woken-by-dead-letter": _put_woken_by_dead_letter,
    "put-all-woken-by-resume": _all_woken_by_resume,
    "put-woken-by-close": _put_woken_by_close,
    "put-abort-when": _abort_when,
    "callbacks-outside-locks": _callbacks_outside_locks,
    "callbacks-in-order": _callbacks_in_order,
    "callback-errors-propagate": _callback_errors_propagate,
    "reclaimer-reclaims": _reclaimer_reclaims,
    "reclaimer-stops": _reclaimer_stops,
}
# Checks that measure a wakeup against the bound (the others report 0 or the reclaim's time).
_WAKEUPS = {
    "acquire-woken-by-put", "acquire-woken-by-fail", "acquire-woken-by-reclaim", "acquire-woken-by-close",
    "acquire-times-out", "acquire-woken-by-drain", "acquire-each-woken-by-puts", "acquire-all-woken-by-close", "put-pauses-and-resumes",
    "put-woken-by-dead-letter", "put-all-woken-by-resume", "put-woken-by-close", "put-abort-when",
}  # fmt: skip


def _not_run(backend: Backend, name: str) -> str | None:
    caps = backend.capabilities
    lacking = [c for c in _REQUIRES.get(name, ()) if not getattr(caps, c, True)]
    if not lacking:
        return None
    return f"the backend does not declare {', '.join(lacking)}"


def check_blocking(
    backend: Backend | str,
    *,
    bound: float = DEFAULT_BOUND,
    checks: Sequence[str] = CHECKS,
) -> BlockingReport:
    """Run ``checks`` (a subset of ``CHECKS``, in that order) on fresh queues of
    ``backend``; stop at the first failure.  See the module docstring."""
    if isinstance(backend, str):
        backend = load_backend(backend)
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not 0 < bound < 3600:
        raise ValueError(f"bound must be a number of seconds in (0, 3600), got {bound!r}")
    unknown = [c for c in checks if c not in CHECKS]
    if unknown or not checks:
        raise ValueError(f"checks must be a non-empty subset of {CHECKS}, got {tuple(checks)!r}")
    report = BlockingReport(bound=float(bound))
    sample_tensors(1, 0)  # imports torch now, not inside the first check's time
    started = time.perf_counter()
    for name in CHECKS:
        if name not in checks:
            continue
        reason = _not_run(backend, name)
        if reason is not None:
            report.not_run[name] = reason
            continue
        began = time.perf_counter()
        latencies: list[float] = []
        waited: float | None = None
        failure = None
        for _ in range(ATTEMPTS if name in _WAKEUPS else 1):
            attempt = _Attempt(backend, name, float(bound))
            try:
                measured = _RUNNERS[name](attempt)
                if name in _WAKEUPS:
                    latencies.append(measured)
                else:
                    waited = measured
                failure = None
            except _Late as late:
                latencies.append(late.latency)
                failure = str(late)
                continue  # measured again on a fresh queue
            except _Failed as failed:
                failure = str(failed)
            except Exception as exc:  # noqa: BLE001 - e.g. the factory refused the check's watermarks
                failure = f"{type(exc).__name__}: {exc}"
            finally:
                report.steps += attempt.steps
                attempt.finish()
            break
        report.checks[name] = {"what": _WHAT[name], "seconds": round(time.perf_counter() - began, 3)}
        if name in _WAKEUPS:
            report.checks[name]["latencies_s"] = [round(t, 4) for t in latencies]
        elif waited is not None:
            report.checks[name]["waited_s"] = round(waited, 3)
        if failure is not None:
            report.failure = f"blocking phase, check {name}: {failure}"
            report.failed_check = name
            break
    report.seconds = time.perf_counter() - started
    return report
