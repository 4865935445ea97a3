"""The ``blocking`` phase's checks of consumers: a blocked ``acquire`` woken by
``put``, ``fail``, a reclaim, ``close`` and the ack or dead-letter that drains
a closed queue; an idle ``acquire`` returning after its poll interval, on an
empty queue and on a busy one whose every ref another consumer takes first;
several blocked consumers each woken; and the background reclaimer (it
reclaims, a stopped one does not, and with no interval it runs every quarter
of the visibility timeout).  ``refqueue.conformance.blocking_checks`` lists them and
says what each checks; each is ``check(attempt) -> float`` (the latency of
the wakeup it measured, or the time it waited) and raises ``Failed``/``Late``.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

from refqueue.conformance.wakeups import (
    ATTEMPTS, LONG_POLL, VISIBILITY, Attempt, Failed, Late, WaitQueue, blocked_consumer, expect_lease, leased,
    no_error, show,
)  # fmt: skip

__all__ = [
    "BUSY_TRIES", "DEFAULT_SLACK", "DEFAULT_VISIBILITY", "RECLAIMER_INTERVAL", "RECLAIM_WITHIN", "STOPPED_FOR",
    "acquire_times_out", "acquire_times_out_busy", "all_woken_by_close", "drain_woken_at_the_cap", "each_woken_by_fails",
    "each_woken_by_puts", "each_woken_by_reclaim", "woken_by_blocking_put",
    "reclaimer_after_close", "reclaimer_default_interval", "reclaimer_reclaims", "reclaimer_stops", "woken_by_close", "woken_by_drain",
    "woken_by_fail", "woken_by_put", "woken_by_reclaim",
]  # fmt: skip

RECLAIMER_INTERVAL = 0.01  # seconds; start_reclaimer's interval
RECLAIM_WITHIN = 50  # intervals the reclaimer may take to reclaim an expired lease
STOPPED_FOR = 10  # intervals a stopped reclaimer is watched for a reclaim that must not come
BUSY_TRIES = 5  # fresh queues tried when the waiting consumer takes a churned ref (an inconclusive try)
# start_reclaimer() with no interval: a visibility timeout whose quarter (0.5 s) and whole (2 s)
# are far apart in real seconds, and how far past a quarter a reclaim may come (a thread's wakeup).
DEFAULT_VISIBILITY = 2.0
DEFAULT_SLACK = DEFAULT_VISIBILITY / 8


def woken_by_put(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    consumer = blocked_consumer(qq)
    ref = qq.store_put("w0", 1)
    _, at = qq.waking("put('w0')", lambda: qq.w.put(ref), wakes="acquire")
    latency = qq.woken(consumer, "put('w0')", at)
    no_error(consumer)
    expect_lease(consumer.value, "w0", 0, consumer.what)
    return latency


def woken_by_fail(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    lease = leased(qq, "w0")
    consumer = blocked_consumer(qq)
    answer, at = qq.waking("fail(lease of 'w0')", lambda: qq.w.fail(lease), wakes="acquire")
    if answer is not True:
        raise Failed(f"fail of the live lease on 'w0' returned {answer!r}, not True")
    latency = qq.woken(consumer, "fail(lease of 'w0')", at)
    no_error(consumer)
    expect_lease(consumer.value, "w0", 1, consumer.what)
    return latency


def woken_by_reclaim(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    lease = leased(qq, "w0")
    consumer = blocked_consumer(qq)
    qq.clock.advance(VISIBILITY + 1.0)
    count, at = qq.waking("reclaim_expired()", qq.w.reclaim_expired, wakes="acquire")
    if count != 1:
        raise Failed(
            f"reclaim_expired() returned {count!r} with the clock {VISIBILITY + 1.0} s past the acquire of the "
            f"only lease (deadline {lease.deadline}); it should take that lease back: 1"
        )
    latency = qq.woken(consumer, "reclaim_expired()", at)
    no_error(consumer)
    expect_lease(consumer.value, "w0", 1, consumer.what)
    return latency


def woken_by_close(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    consumer = blocked_consumer(qq)
    _, at = qq.waking("close()", qq.w.close, wakes="acquire")
    latency = qq.woken(consumer, "close() of the empty queue", at)
    no_error(consumer)
    if consumer.value is not None:
        raise Failed(f"{consumer.what} returned {show(consumer.value)} after close() of the empty queue, not None")
    drained = qq.ask("is_drained", lambda: qq.q.is_drained)
    if drained is not True:
        raise Failed(f"after close() of the empty queue is_drained is {drained!r}, not True")
    return latency


def acquire_times_out(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    poll = 4 * qq.bound
    consumer = qq.start(f"acquire(poll_interval={poll})", lambda: qq.q.acquire(poll_interval=poll))
    if not consumer.done.wait(poll + qq.give_up):
        raise Failed(
            f"{consumer.what} on the empty open queue was still blocked {poll + qq.give_up} s later ({qq.observed()}): "
            f"it must return None once its poll interval has passed"
        )
    no_error(consumer)
    if consumer.value is not None:
        raise Failed(f"{consumer.what} on the empty open queue returned {show(consumer.value)}, not None")
    took = consumer.at - consumer.started
    if took < poll * 0.99 - 0.002:
        raise Failed(
            f"{consumer.what} on the empty open queue returned None after {took:.4f} s, before its poll interval: a "
            f"consumer that polls in a loop would spin"
        )
    late = took - poll
    if late > qq.bound:
        raise Late(
            f"{consumer.what} returned None {took:.3f} s after it was called, {late:.3f} s past its poll interval and "
            f"past the bound of {qq.bound} s (in each of {ATTEMPTS} attempts); it must wait up to its interval, no "
            f"longer",
            late,
        )
    return max(0.0, late)


def acquire_times_out_busy(attempt: Attempt) -> float:
    inconclusive: list[str] = []
    for _ in range(BUSY_TRIES):
        late = _busy_try(attempt, inconclusive)
        if late is not None:
            return late
    raise Failed(
        f"inconclusive in each of {BUSY_TRIES} tries, on fresh queues: {'; '.join(inconclusive)}; the consumer must "
        f"be woken and find nothing (the kit took the ref first) for its timeout to be checked"
    )


def _busy_try(attempt: Attempt, inconclusive: list[str]) -> float | None:
    """One try of ``acquire-times-out-busy``: the consumer's lateness past its
    interval, or None (noted in ``inconclusive``) when it took a churned ref or
    the kit took none while it waited."""
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    poll = 4 * qq.bound
    period = qq.bound / 2
    consumer = qq.start(f"acquire(poll_interval={poll})", lambda: qq.q.acquire(poll_interval=poll))
    qq.stays_blocked(consumer, "with nothing pending and the queue open it must wait")
    churn = _Churn(qq, consumer.started + poll / 2, period, attempt.backend.capabilities.acquire_nowait)
    within = poll + qq.give_up
    ended = consumer.done.wait(max(0.0, consumer.started + within - time.monotonic()))
    churn.stop.set()
    for call in churn.calls:
        if not call.done.wait(qq.give_up):
            raise Failed(f"the kit's {call.what} hung ({qq.observed()})")
        no_error(call)
    busy = (
        f"while, from half its interval on, a ref was put through the other client every {period} s and taken back "
        f"with {churn.taker} the moment it was pending, until the kit had taken one ({len(churn.puts)} "
        f"put{'s' if len(churn.puts) != 1 else ''}), so a put woke it to find nothing"
    )
    if not ended:
        raise Failed(
            f"{consumer.what} was still blocked {within} s after it was called, {busy} ({qq.observed()}); docs/API.md: "
            f"acquire waits up to poll_interval for a ref and returns None if none came, so a wakeup that brought "
            f"nothing must not start its interval again (on a busy queue it would never return)"
        )
    no_error(consumer)
    if consumer.value is not None:
        inconclusive.append(f"{consumer.what} took {show(consumer.value)} before the kit could")
        return None
    if not [t for t in churn.took if t < consumer.at]:
        inconclusive.append(f"{consumer.what} returned None before the kit had taken a ref back")
        return None
    took = consumer.at - consumer.started
    late = took - poll
    if late > qq.bound:
        raise Late(
            f"{consumer.what} returned None {took:.3f} s after it was called, {late:.3f} s past its poll interval and "
            f"past the bound of {qq.bound} s, {busy} (in each of {ATTEMPTS} attempts); docs/API.md: it waits up to "
            f"poll_interval for a ref, counted from its call, not from its last wakeup",
            late,
        )
    return max(0.0, late)


class _Churn:
    """The traffic of one try of ``acquire-times-out-busy``: from ``start`` (a
    ``time.monotonic()``) on, every ``period`` seconds (a pacing timer), a fresh
    ref is put through the other client and taken back the moment it is
    pending, until the kit has taken one (each put is a chance for the waiting
    consumer to win the race instead, which makes the try inconclusive).

    With ``acquire_nowait`` the putter calls it at once after its put, and a
    second thread spins on it from before the put until the ref is taken
    (bounded): one of them wins the race even where the woken consumer's
    acquire is a round trip shorter than a put's reply and then another call.
    Without it, the putter takes the ref with an ``acquire`` that finds it
    pending.  ``puts`` and ``took`` are when each put returned and each ref
    was taken back; ``calls`` the kit's threads, ended by ``stop``."""

    def __init__(self, qq: WaitQueue, start: float, period: float, nowait: bool) -> None:
        self.qq, self.start, self.period, self.nowait = qq, start, period, nowait
        self.taker = "acquire_nowait()" if nowait else f"acquire(poll_interval={period})"
        self.stop = threading.Event()
        self.puts: list[float] = []
        self.took: list[float] = []
        self.rounds: queue.Queue[tuple[threading.Event, threading.Event]] = queue.Queue()  # (spinning, taken)
        self.calls = [qq.start(f"put then {self.taker} every {period} s", self._put_every)]
        if nowait:
            self.calls.append(qq.start("acquire_nowait() from before each put", self._spin_each))

    def _taken(self, lease: Any, by: Any, taken: threading.Event) -> None:
        taken.set()
        self.took.append(time.monotonic())
        by.ack(lease)

    def _put_every(self) -> None:
        qq, k = self.qq, 0
        if self.stop.wait(max(0.0, self.start - time.monotonic())):
            return
        while not self.took:
            ref = qq.store_put(f"busy{k}", 1)
            k += 1
            spinning, taken = threading.Event(), threading.Event()
            if self.nowait:
                self.rounds.put((spinning, taken))
                spinning.wait(self.period)
            qq.w.put(ref)
            self.puts.append(time.monotonic())
            lease = qq.w.acquire_nowait() if self.nowait else qq.w.acquire(poll_interval=self.period)
            if lease is not None:
                self._taken(lease, qq.w, taken)
            if self.stop.wait(self.period):
                return

    def _spin_each(self) -> None:
        while not self.stop.is_set():
            try:
                spinning, taken = self.rounds.get(timeout=self.period)
            except queue.Empty:
                continue
            spinning.set()
            until = time.monotonic() + 2 * self.period
            while not taken.is_set() and time.monotonic() < until:
                lease = self.qq.q.acquire_nowait()
                if lease is not None:
                    self._taken(lease, self.qq.q, taken)


def _closed_with_a_lease_out(qq: WaitQueue) -> tuple[Any, list[Any]]:
    """Lease 'w0', block a consumer in ``acquire``, close the queue (it keeps
    waiting: not drained) and block a second: the lease and the consumers."""
    lease = leased(qq, "w0")
    first = blocked_consumer(qq, "consumer 1's ")
    qq.ask("close()", qq.q.close)
    why = "the queue is closed but not drained (a lease is outstanding and may come back): it must wait"
    qq.stays_blocked(first, f"close() does not wake it: {why}")
    return lease, [first, blocked_consumer(qq, "consumer 2's ", why)]


def _drained_by(qq: WaitQueue, consumers: list[Any], call: str, finish: Any, want: object, by: str) -> list[float]:
    """Make ``call`` (``finish``), which must answer ``want`` and drain the closed queue:
    both ``consumers`` return None within the bound; their latencies."""
    answer, at = qq.waking(call, finish, wakes="acquire")
    if (answer is not True) if want is True else (answer != want or isinstance(answer, bool)):
        raise Failed(f"{call} of the live lease returned {answer!r}, not {want!r}")
    latencies = [qq.woken(consumer, by, at) for consumer in consumers]
    for consumer in consumers:
        no_error(consumer)
        if consumer.value is not None:
            raise Failed(f"{consumer.what} returned {show(consumer.value)} once the closed queue drained, not None")
    return latencies


def woken_by_drain(attempt: Attempt) -> float:
    latencies = []
    for how in ("ack", "dead_letter") if attempt.backend.capabilities.dead_letter else ("ack",):
        qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
        lease, consumers = _closed_with_a_lease_out(qq)
        if how == "ack":
            call, finish = "ack(lease of 'w0')", lambda: qq.w.ack(lease)
        else:
            call, finish = "dead_letter(lease of 'w0', 'kit')", lambda: qq.w.dead_letter(lease, "kit")
        latencies += _drained_by(qq, consumers, call, finish, True, f"the {how} that drained the closed queue")
    return max(latencies)


def each_woken_by_puts(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    consumers = [blocked_consumer(qq, f"consumer {k}'s ") for k in (1, 2)]
    refs = [qq.store_put(f"w{k}", 1) for k in (0, 1)]
    # Both puts from one thread, back to back: the second usually comes before a
    # woken consumer has taken the first ref, so pending is not empty then.
    _, at = qq.waking("put('w0') then put('w1')", lambda: (qq.w.put(refs[0]), qq.w.put(refs[1])), wakes="acquire")
    latency = max(qq.woken(consumer, "put('w0') then put('w1')", at) for consumer in consumers)
    _each_took(consumers, "put('w0') then put('w1')", ["w0", "w1"])
    return latency


def all_woken_by_close(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    consumers = [blocked_consumer(qq, f"consumer {k}'s ") for k in (1, 2, 3)]
    _, at = qq.waking("close()", qq.w.close, wakes="acquire")
    latency = max(qq.woken(consumer, "close() of the empty queue", at) for consumer in consumers)
    for consumer in consumers:
        no_error(consumer)
        if consumer.value is not None:
            raise Failed(f"{consumer.what} returned {show(consumer.value)} when the empty queue closed, not None")
    return latency


def _each_took(consumers: list[Any], by: str, ids: list[str], redelivery: int | None = None) -> None:
    """Each of ``consumers``, woken by ``by``, took one of ``ids`` (each once), with
    ``redelivery`` (when given)."""
    got = []
    for consumer in consumers:
        no_error(consumer)
        if getattr(consumer.value, "ref", None) is None:
            raise Failed(f"{consumer.what} returned {show(consumer.value)} after {by}; it should take one ref")
        got.append(consumer.value.ref.sample_id)
        if redelivery is not None:
            expect_lease(consumer.value, consumer.value.ref.sample_id, redelivery, consumer.what)
    if sorted(got) != sorted(ids):
        raise Failed(f"two consumers woken by {by} took {got}; each should take one of {ids}")


def each_woken_by_fails(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    leases = [leased(qq, f"w{k}") for k in (0, 1)]
    consumers = [blocked_consumer(qq, f"consumer {k}'s ") for k in (1, 2)]
    # Both fails from one thread, back to back: the second requeue finds the first
    # ref still pending (no woken consumer has taken it yet), and must wake too.
    by = "fail(lease of 'w0') then fail(lease of 'w1')"
    answers, at = qq.waking(by, lambda: (qq.w.fail(leases[0]), qq.w.fail(leases[1])), wakes="acquire")
    if answers != (True, True):
        raise Failed(f"{by} of the two live leases returned {answers!r}, not (True, True)")
    latency = max(qq.woken(consumer, by, at) for consumer in consumers)
    _each_took(consumers, by, ["w0", "w1"], 1)
    return latency


def each_woken_by_reclaim(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    for k in (0, 1):
        leased(qq, f"w{k}")
    consumers = [blocked_consumer(qq, f"consumer {k}'s ") for k in (1, 2)]
    qq.clock.advance(VISIBILITY + 1.0)
    count, at = qq.waking("reclaim_expired()", qq.w.reclaim_expired, wakes="acquire")
    if count != 2:
        raise Failed(
            f"reclaim_expired() returned {count!r} with the clock {VISIBILITY + 1.0} s past the acquires of both "
            f"leases; it should take both back: 2"
        )
    latency = max(qq.woken(consumer, "reclaim_expired() of two leases", at) for consumer in consumers)
    _each_took(consumers, "reclaim_expired() of two leases", ["w0", "w1"], 1)
    return latency


def woken_by_blocking_put(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    consumer = blocked_consumer(qq)
    ref = qq.store_put("w0", 1)
    by = f"put_blocks_until_below('w0', poll_interval={LONG_POLL}) (nothing paused: admitted at once)"
    _, at = qq.waking(by, lambda: qq.w.put_blocks_until_below(ref, poll_interval=LONG_POLL), wakes="acquire")
    latency = qq.woken(consumer, by, at)
    no_error(consumer)
    expect_lease(consumer.value, "w0", 0, consumer.what)
    return latency


def drain_woken_at_the_cap(attempt: Attempt) -> float:
    """The requeue that dead-letters at ``max_deliveries`` (a fail, then a
    reclaim) drains a closed queue: both blocked consumers return None."""
    latencies = []
    for how in ("fail", "reclaim"):
        qq = attempt.queue(watermarks=False, visibility=VISIBILITY, max_deliveries=1)
        lease, consumers = _closed_with_a_lease_out(qq)
        if how == "fail":
            call, finish, want = "fail(lease of 'w0') at max_deliveries=1", lambda: qq.w.fail(lease), True
        else:
            qq.clock.advance(VISIBILITY + 1.0)
            call, finish, want = "reclaim_expired() of 'w0' at max_deliveries=1", qq.w.reclaim_expired, 1
        by = f"{call}, which dead-letters the sample and drains the closed queue"
        latencies += _drained_by(qq, consumers, call, finish, want, by)
    return max(latencies)


# -- the background reclaimer --------------------------------------------------------------------


def reclaimer_reclaims(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    leased(qq, "r0")
    qq.clock.advance(VISIBILITY + 1.0)
    _, at = qq.ask_at(f"start_reclaimer({RECLAIMER_INTERVAL})", lambda: qq.q.start_reclaimer(RECLAIMER_INTERVAL))
    window = RECLAIM_WITHIN * RECLAIMER_INTERVAL
    lease = qq.ask(f"acquire(poll_interval={window})", lambda: qq.q.acquire(poll_interval=window))
    if lease is None:
        pending = qq.ask("pending_count()", qq.q.pending_count)
        if pending != 1:
            raise Failed(
                f"start_reclaimer({RECLAIMER_INTERVAL}) with the clock past the only lease's deadline reclaimed "
                f"nothing within {RECLAIM_WITHIN} of its intervals ({window} s; {qq.observed()}); nobody else calls "
                f"reclaim_expired"
            )
        return time.monotonic() - at
    expect_lease(lease, "r0", 1, "acquire() after the reclaimer ran")
    return time.monotonic() - at


def reclaimer_after_close(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    leased(qq, "r0")
    qq.ask(f"start_reclaimer({RECLAIMER_INTERVAL})", lambda: qq.q.start_reclaimer(RECLAIMER_INTERVAL))
    qq.ask("close()", qq.q.close)  # with the lease on 'r0' outstanding: not drained
    _, at = qq.ask_at("advancing the clock past the lease's deadline", lambda: qq.clock.advance(VISIBILITY + 1.0))
    window = RECLAIM_WITHIN * RECLAIMER_INTERVAL
    lease = qq.ask(f"acquire(poll_interval={window})", lambda: qq.q.acquire(poll_interval=window))
    if lease is None:
        raise Failed(
            f"after close() of a queue with a lease outstanding, the reclaimer started before it had not reclaimed "
            f"that lease within {RECLAIM_WITHIN} of its intervals ({window} s) of its deadline passing "
            f"({qq.observed()}); docs/API.md: on a queue closed with leases outstanding the reclaimer keeps running, "
            f"so that a crashed consumer's lease still comes back and the queue can drain (D3)"
        )
    expect_lease(lease, "r0", 1, "acquire() on the closed queue after the reclaimer ran")
    latency = time.monotonic() - at
    if qq.ask("ack(lease of 'r0')", lambda: qq.q.ack(lease)) is not True:
        raise Failed("ack of the live redelivered lease on 'r0' did not return True")
    qq.ask("stop_reclaimer()", qq.q.stop_reclaimer)
    return latency


def reclaimer_stops(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    leased(qq, "r0")
    qq.clock.advance(VISIBILITY + 1.0)
    qq.ask(f"start_reclaimer({RECLAIMER_INTERVAL})", lambda: qq.q.start_reclaimer(RECLAIMER_INTERVAL))
    window = RECLAIM_WITHIN * RECLAIMER_INTERVAL
    lease = qq.ask(f"acquire(poll_interval={window})", lambda: qq.q.acquire(poll_interval=window))
    if lease is None:
        raise Failed(f"the reclaimer did not reclaim the expired lease within {window} s, so its stop cannot be checked")
    qq.ask("stop_reclaimer()", qq.q.stop_reclaimer)
    qq.clock.advance(VISIBILITY + 1.0)  # the new lease is past its deadline now
    watch = STOPPED_FOR * RECLAIMER_INTERVAL
    # A bounded wait for something that must not happen: a reclaim, for STOPPED_FOR of
    # the stopped reclaimer's intervals (a running one reclaims within one).
    again = qq.ask(f"acquire(poll_interval={watch})", lambda: qq.q.acquire(poll_interval=watch))
    pending = qq.ask("pending_count()", qq.q.pending_count)
    if again is not None or pending != 0:
        raise Failed(
            f"after stop_reclaimer() returned, the next expired lease was reclaimed within {STOPPED_FOR} reclaimer "
            f"intervals ({watch} s; acquire returned {show(again)}, pending_count() {pending}); a stopped reclaimer "
            f"reclaims nothing"
        )
    count = qq.ask("reclaim_expired()", qq.q.reclaim_expired)
    if count != 1:
        raise Failed(f"reclaim_expired() by hand returned {count!r}; the lease past its deadline should be taken back: 1")
    return watch


def reclaimer_default_interval(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=DEFAULT_VISIBILITY)
    quarter = DEFAULT_VISIBILITY / 4
    within = quarter + DEFAULT_SLACK
    leased(qq, "r0")
    qq.clock.advance(DEFAULT_VISIBILITY + 1.0)
    _, due = qq.ask_at("start_reclaimer()", qq.q.start_reclaimer)
    since = "start_reclaimer() returned, the clock already past the lease's deadline"
    waited = []
    for redelivery in (1, 2):
        consumer = qq.start(f"acquire(poll_interval={LONG_POLL})", lambda: qq.q.acquire(poll_interval=LONG_POLL))
        if not consumer.done.wait(max(0.0, due + within - time.monotonic())):
            raise Failed(
                f"start_reclaimer() with no interval, on a queue whose visibility timeout is {DEFAULT_VISIBILITY} s, "
                f"had not reclaimed the expired lease on 'r0' {within} s after {since} ({qq.observed()}); "
                f"docs/API.md: the interval defaults to a quarter of the visibility timeout ({quarter} s), so an "
                f"expired lease comes back within {quarter} s (the kit allows {DEFAULT_SLACK} s more)"
            )
        no_error(consumer)
        expect_lease(consumer.value, "r0", redelivery, f"{consumer.what} after the reclaimer ran")
        waited.append(consumer.at - due)
        if redelivery == 1:  # the new lease falls due now: the reclaimer's next pass takes it back
            qq.clock.advance(DEFAULT_VISIBILITY + 1.0)
            due = time.monotonic()
            since = "the clock passed the deadline of the lease taken after the first reclaim"
    return max(waited)
