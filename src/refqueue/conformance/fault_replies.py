"""The ``faults`` phase's checks of lost replies: each state-changing call
made once with its reply lost (``FaultHooks.lose_next_reply``), then what
the clients see, ``lease_state`` and a retry of the call compared with the
model (``refqueue.model.actions``, ``two_step_ack``).

``refqueue.conformance.faults`` lists them and says what each checks; each
is ``check(backend, seed) -> steps`` on its own ``FaultRun`` and raises
``Failed`` (with the check's history) or ``NotRun``.  They are deterministic:
the seed is not used.  A sample leased or pending beside the one the fault
strikes stays resident throughout (no collection may scrub live data).
"""

from __future__ import annotations

from typing import Any

from refqueue.conformance.contract import Backend
from refqueue.conformance.fault_run import FaultRun

__all__ = [
    "lost_acquire", "lost_ack", "lost_close", "lost_dead_letter", "lost_extend", "lost_fail", "lost_put",
    "lost_put_step", "lost_reclaim",
]  # fmt: skip


def _run(backend: Backend, check: str, body: Any) -> int:
    run = FaultRun(backend, check)
    try:
        body(run)
        return run.steps
    finally:
        run.close_all()


def _leased_by_b(run: FaultRun, sample_id: str, name: str) -> None:
    """A second client B holds a lease on ``sample_id`` (data that must stay)."""
    if "B" not in run.clients:
        run.open("B")
    run.store_put(sample_id)
    run.put("B", sample_id)
    run.acquire("B", name)


def _lost_put(backend: Backend, seed: int, step: bool) -> int:
    def body(run: FaultRun) -> None:
        # A retry is the one call a careful user makes after the lost reply, made
        # while the sample is still pending (s0), or once it was acked (s2).
        _leased_by_b(run, "s1", "L1")
        run.store_put("s0")
        run.put("A", "s0", fault="lost", step=step)
        run.observe("A", "the put whose reply was lost")
        run.put("A", "s0", retry=True, step=step)
        run.observe("A", "the retried put (it must not enqueue the sample twice)")
        run.acquire("B", "L0")
        run.ack("B", "L0")
        run.store_put("s2")
        run.put("A", "s2", fault="lost", step=step)
        run.acquire("B", "L2")
        run.ack("B", "L2")
        run.put("A", "s2", retry=True, step=step)
        run.observe("A", "a retry of the put after its sample was acked (it must not enqueue it again)")
        # Two puts whose replies were lost, both uncertain at once (a client that remembers only its last)
        run.store_put("s3")
        run.store_put("s4")
        run.put("A", "s3", fault="lost", step=step)
        run.put("A", "s4", fault="lost", step=step)
        run.put("A", "s3", retry=True, step=step)
        run.observe("A", "the retry of the first of two puts whose replies were lost")
        run.acquire("B", "L3")
        run.ack("B", "L3")
        run.acquire("B", "L4")
        run.ack("B", "L4")
        run.put("A", "s4", retry=True, step=step)
        run.observe("A", "the retry of the second, after both were acked (it must not enqueue it again)")
        run.ack("B", "L1")
        run.observe("A", "the last ack")

    return _run(backend, "lost-reply-put-step" if step else "lost-reply-put", body)


def lost_put(backend: Backend, seed: int) -> int:
    return _lost_put(backend, seed, step=False)


def lost_put_step(backend: Backend, seed: int) -> int:
    return _lost_put(backend, seed, step=True)


def lost_acquire(backend: Backend, seed: int) -> int:
    def body(run: FaultRun) -> None:
        run.open("B")
        run.store_put("s0")
        run.put("A", "s0")
        run.acquire("A", "L0", fault="lost")
        run.observe("B", "the acquire whose reply was lost (its lease is outstanding)")
        run.acquire("A", "none")  # the retry: nothing is pending
        run.tick(run.vt + 1.0, "past the deadline of the lease nobody saw")
        run.reclaim("B")
        run.acquire("B", "L0b")
        run.ack("B", "L0b")
        run.observe("B", "the ack of the redelivered sample")

    return _run(backend, "lost-reply-acquire", body)


def lost_ack(backend: Backend, seed: int) -> int:
    def body(run: FaultRun) -> None:
        _leased_by_b(run, "s1", "L1")
        run.store_put("s0")
        run.put("A", "s0")
        run.acquire("A", "L0")
        run.ack("A", "L0", fault="lost")
        run.observe("A", "the ack whose reply was lost")
        run.lease_state("A", "L0")
        run.ack("A", "L0")  # the retry: False, nothing changes
        run.observe("A", "the retried ack")
        run.collect("A")
        run.ack("B", "L1")
        run.observe("B", "the bystander's ack")

    return _run(backend, "lost-reply-ack", body)


def lost_fail(backend: Backend, seed: int) -> int:
    def body(run: FaultRun) -> None:
        run.store_put("s0")
        run.put("A", "s0")
        run.acquire("A", "L0")
        run.fail_lease("A", "L0", fault="lost")
        run.observe("A", "the fail whose reply was lost")
        run.lease_state("A", "L0")
        run.fail_lease("A", "L0")  # the retry: False, nothing changes
        run.acquire("A", "L0b")
        run.ack("A", "L0b")
        run.observe("A", "the ack of the redelivered sample")

    return _run(backend, "lost-reply-fail", body)


def lost_extend(backend: Backend, seed: int) -> int:
    def body(run: FaultRun) -> None:
        run.store_put("s0")
        run.put("A", "s0")
        run.acquire("A", "L0")
        longer = 2 * run.vt
        run.extend("A", "L0", longer, fault="lost")
        run.observe("A", "the extend whose reply was lost")
        run.lease_state("A", "L0")
        run.extend("A", "L0", longer)  # the retry: True, the same deadline
        run.tick(run.vt + 1.0, "past the lease's first deadline, before the extended one")
        run.reclaim("A")
        run.ack("A", "L0")
        run.observe("A", "the ack of the extended lease")

    return _run(backend, "lost-reply-extend", body)


def lost_dead_letter(backend: Backend, seed: int) -> int:
    def body(run: FaultRun) -> None:
        _leased_by_b(run, "s1", "L1")
        run.store_put("s0")
        run.put("A", "s0")
        run.acquire("A", "L0")
        run.dead_letter("A", "L0", fault="lost")
        run.observe("A", "the dead_letter whose reply was lost")
        run.lease_state("A", "L0")
        run.dead_letter("A", "L0")  # the retry: False, listed once
        run.observe("A", "the retried dead_letter")
        run.collect("A")
        run.ack("B", "L1")
        run.observe("B", "the bystander's ack")

    return _run(backend, "lost-reply-dead-letter", body)


def lost_reclaim(backend: Backend, seed: int) -> int:
    def body(run: FaultRun) -> None:
        run.store_put("s0")
        run.put("A", "s0")
        run.acquire("A", "L0")
        run.tick(run.vt + 1.0, "past the lease's deadline")
        run.reclaim("A", fault="lost")
        run.observe("A", "the reclaim_expired whose reply was lost")
        run.lease_state("A", "L0")
        run.reclaim("A")  # the retry: 0
        run.ack("A", "L0")  # stale now: False
        run.acquire("A", "L0b")
        run.ack("A", "L0b")
        run.observe("A", "the ack of the redelivered sample")

    steps = _run(backend, "lost-reply-reclaim", body)
    if not backend.capabilities.max_deliveries:
        return steps

    def dead_lettering(run: FaultRun) -> None:
        # with max_deliveries=1 the reclaim dead-letters: its scrub intent must outlive the lost reply
        run.open("B")
        run.store_put("s1")
        run.put("B", "s1")  # pending beside it: data no collection may take
        run.store_put("s0")
        run.put("A", "s0")
        run.acquire("A", "L0")
        run.tick(run.vt + 1.0, "past the lease's deadline (its only delivery: max_deliveries=1)")
        run.reclaim("A", fault="lost")
        run.observe("A", "the reclaim_expired whose reply was lost (it dead-lettered 's0')")
        run.lease_state("A", "L0")
        run.collect("A")
        run.acquire("B", "L1")
        run.ack("B", "L1")
        run.observe("B", "the bystander's ack")

    run = FaultRun(backend, "lost-reply-reclaim", max_deliveries=1)
    try:
        dead_lettering(run)
        return steps + run.steps
    finally:
        run.close_all()


def lost_close(backend: Backend, seed: int) -> int:
    def body(run: FaultRun) -> None:
        run.store_put("s0")
        run.put("A", "s0")
        run.close("A", fault="lost")
        run.observe("A", "the close whose reply was lost")
        run.store_put("s1")
        run.put("A", "s1")  # refused: the queue is closed
        run.close("A")  # the retry: idempotent
        run.acquire("A", "L0")
        run.ack("A", "L0")
        run.observe("A", "the ack that drains the closed queue")

    return _run(backend, "lost-reply-close", body)
