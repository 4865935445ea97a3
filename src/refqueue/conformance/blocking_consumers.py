"""The ``blocking`` phase's checks of consumers: a blocked ``acquire`` woken by
``put``, ``fail``, a reclaim, ``close`` and the ack or dead-letter that drains
a closed queue; an idle ``acquire`` returning after its poll interval; several
blocked consumers each woken; and the background reclaimer (it reclaims, and
a stopped one does not).  ``refqueue.conformance.blocking`` lists them and
says what each checks; each is ``check(attempt) -> float`` (the latency of
the wakeup it measured, or the time it waited) and raises ``Failed``/``Late``.
"""

from __future__ import annotations

import time

from refqueue.conformance.wakeups import (
    ATTEMPTS, VISIBILITY, Attempt, Failed, Late, blocked_consumer, expect_lease, leased, no_error, show,
)  # fmt: skip

__all__ = [
    "RECLAIMER_INTERVAL", "RECLAIM_WITHIN", "STOPPED_FOR", "acquire_times_out", "all_woken_by_close",
    "each_woken_by_puts", "reclaimer_reclaims", "reclaimer_stops", "woken_by_close", "woken_by_drain",
    "woken_by_fail", "woken_by_put", "woken_by_reclaim",
]  # fmt: skip

RECLAIMER_INTERVAL = 0.01  # seconds; start_reclaimer's interval
RECLAIM_WITHIN = 50  # intervals the reclaimer may take to reclaim an expired lease
STOPPED_FOR = 10  # intervals a stopped reclaimer is watched for a reclaim that must not come


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


def woken_by_drain(attempt: Attempt) -> float:
    latencies = []
    for how in ("ack", "dead_letter") if attempt.backend.capabilities.dead_letter else ("ack",):
        qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
        lease = leased(qq, "w0")
        qq.ask("close()", qq.q.close)
        why = "the queue is closed but not drained (a lease is outstanding and may come back): it must wait"
        consumers = [blocked_consumer(qq, f"consumer {k}'s ", why) for k in (1, 2)]
        if how == "ack":
            call, finish = "ack(lease of 'w0')", lambda: qq.w.ack(lease)
        else:
            call, finish = "dead_letter(lease of 'w0', 'kit')", lambda: qq.w.dead_letter(lease, "kit")
        answer, at = qq.waking(call, finish, wakes="acquire")
        if answer is not True:
            raise Failed(f"{call} of the live lease returned {answer!r}, not True")
        latencies += [qq.woken(consumer, f"the {how} that drained the closed queue", at) for consumer in consumers]
        for consumer in consumers:
            no_error(consumer)
            if consumer.value is not None:
                raise Failed(f"{consumer.what} returned {show(consumer.value)} once the closed queue drained, not None")
    return max(latencies)


def each_woken_by_puts(attempt: Attempt) -> float:
    qq = attempt.queue(watermarks=False, visibility=VISIBILITY)
    consumers = [blocked_consumer(qq, f"consumer {k}'s ") for k in (1, 2)]
    refs = [qq.store_put(f"w{k}", 1) for k in (0, 1)]
    # Both puts from one thread, back to back: the second usually comes before a
    # woken consumer has taken the first ref, so pending is not empty then.
    _, at = qq.waking("put('w0') then put('w1')", lambda: (qq.w.put(refs[0]), qq.w.put(refs[1])), wakes="acquire")
    latency = max(qq.woken(consumer, "put('w0') then put('w1')", at) for consumer in consumers)
    got = []
    for consumer in consumers:
        no_error(consumer)
        if getattr(consumer.value, "ref", None) is None:
            raise Failed(f"{consumer.what} returned {show(consumer.value)} after two puts; it should take one ref")
        got.append(consumer.value.ref.sample_id)
    if sorted(got) != ["w0", "w1"]:
        raise Failed(f"two consumers woken by put('w0') and put('w1') took {got}; each should take one of them")
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
