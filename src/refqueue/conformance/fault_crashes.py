"""The ``faults`` phase's checks of crashed clients, the background reclaimer
under faults, and server restarts.

``crash-mid-ack``
    a client dies right after its ack commits (``crash_after_commit``), and
    after a dead-letter and a fail at ``max_deliveries`` where declared:
    another client sees the sample completed; the store may keep its data
    until the clock passes ``intent_timeout``, and then that client's
    ``reclaim_expired`` collects it; live data stays.
``reclaimer-collects-intents``
    the same crash, and another client's background reclaimer (nobody calls
    ``reclaim_expired``) collects the intent within ``RECOVER_WITHIN`` s.
``reclaimer-survives-lost-reply``
    a client's background reclaimer whose reclaim loses its reply keeps
    running: it takes back the next expired lease within ``RECOVER_WITHIN`` s.
``reclaimer-survives-restart``
    a client's background reclaimer runs while the server restarts durably
    and stays down ``RESTART_DOWN_FOR`` s (the hook's ``down_for``; a
    reclaimer retrying every interval meets dozens of errors in a row): it
    takes back the next expired lease within ``RECOVER_WITHIN`` s after.
``restart-durable``
    ``restart(durable=True)`` changes nothing a client sees: counts, dead
    letters, ``lease_state``; a lease from before acks through another
    client; no lease identity is reused.
``restart-lossy``
    ``restart(durable=False)``: every call of a client opened before, reads
    included, raises an error of kind ``"state_lost"``; a client opened
    after has a new epoch, refuses every lease of the old one (``ForeignLease``,
    or ``False`` as the model's stale lease: never accepted) and mints no
    lease identity seen before; the samples it forgot are put again.

``refqueue.conformance.faults`` lists them; each is ``check(backend, seed)
-> steps`` and raises ``Failed`` (with the check's history) or ``NotRun``
(a restart the hooks cannot make, with their reason).  Bounded waits on the
background reclaimer read an observable until it changes or the bound
passes; nothing sleeps in place of an event.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

from refqueue.conformance.contract import Backend, rejection_kind
from refqueue.conformance.fault_run import FaultRun
from refqueue.conformance.probe import NotRun
from refqueue.conformance.samples import UNIT_BYTES
from refqueue.model import actions as A

__all__ = [
    "RECLAIMER_INTERVAL", "RECOVER_WITHIN", "RESTART_DOWN_FOR", "crash_mid_ack", "reclaimer_collects_intents",
    "REFUSED_FOR", "reclaimer_survives_lost_reply", "reclaimer_survives_refusals", "reclaimer_survives_restart", "restart_durable", "restart_lossy",
    "restart_rewound",
]  # fmt: skip

RECLAIMER_INTERVAL = 0.01  # seconds; start_reclaimer's interval in these checks
RECOVER_WITHIN = 10.0  # seconds a background reclaimer may take to act, through its backoff after an error
# Seconds the server stays down in reclaimer-survives-restart: a real restart takes
# seconds (a snapshot loaded, a pod moved); this is 50 of the reclaimer's intervals, so
# a reclaimer that gives up after a few errors in a row meets them on any machine.
RESTART_DOWN_FOR = 0.5


def crash_mid_ack(backend: Backend, seed: int) -> int:
    caps = backend.capabilities
    hows = ["ack"] + (["dead_letter"] if caps.dead_letter else []) + (["fail"] if caps.max_deliveries else [])
    steps = 0
    for how in hows:
        run = FaultRun(backend, "crash-mid-ack", max_deliveries=1 if how == "fail" else None)
        try:
            run.open("B")
            run.store_put("s2")
            run.put("B", "s2")
            run.acquire("B", "L2")  # live data of another client
            run.store_put("s0")
            run.put("A", "s0")
            run.acquire("A", "L0")
            run.store_put("s1")
            run.put("B", "s1")  # live data, pending
            {"ack": run.ack, "dead_letter": run.dead_letter, "fail": run.fail_lease}[how]("A", "L0", fault="crash")
            run.observe("B", f"A crashed right after its {how} committed")
            run.lease_state("B", "L0")
            run.collect("B")
            run.ack("B", "L2")
            run.acquire("B", "L1")
            run.ack("B", "L1")
            run.observe("B", "the other samples' acks")
            steps += run.steps
        finally:
            run.close_all()
    return steps


def _within(run: FaultRun, what: str, done: Callable[[], bool]) -> float:
    """Read ``done()`` until it holds, for at most ``RECOVER_WITHIN`` seconds (a
    bounded wait on a background thread's effect); the seconds it took."""
    started = time.monotonic()
    while True:
        run.steps += 1
        if done():
            return time.monotonic() - started
        if time.monotonic() - started > RECOVER_WITHIN:
            raise run.fail(f"{what} did not happen within {RECOVER_WITHIN} s")
        time.sleep(RECLAIMER_INTERVAL)


def _reclaimer(run: FaultRun, who: str, call: str) -> None:
    fn = getattr(run.client(who), call)
    try:
        fn(RECLAIMER_INTERVAL) if call == "start_reclaimer" else fn()
    except Exception as exc:  # noqa: BLE001
        raise run.fail(f"{who}: {call}() raised {type(exc).__name__}: {exc}") from exc
    run.note(f"{who}: {call}({RECLAIMER_INTERVAL if call == 'start_reclaimer' else ''})")


def reclaimer_collects_intents(backend: Backend, seed: int) -> int:
    run = FaultRun(backend, "reclaimer-collects-intents")
    try:
        run.open("B")
        run.store_put("s1")
        run.put("B", "s1")
        run.acquire("B", "L1")  # live data of another client
        run.store_put("s0")
        run.put("A", "s0")
        run.acquire("A", "L0")
        run.ack("A", "L0", fault="crash")
        run.tick(run.intent_timeout + 1.0, f"past intent_timeout = {run.intent_timeout:g} s")
        _reclaimer(run, "B", "start_reclaimer")
        left = (A.health(run.cfg, run.state).resident_bytes - A.rec_of(run.state, "s0").nbytes) * UNIT_BYTES  # type: ignore[union-attr]
        took = _within(run, f"B's background reclaimer collecting the scrub intent of 's0' (the store at {left} bytes)",
                       lambda: run.store.health().resident_bytes == left)
        run.note(f"the store's residency fell to {left} bytes after {took:.2f} s (the reclaimer collected the intent)")
        _reclaimer(run, "B", "stop_reclaimer")
        run.state = A.scrub_intent(run.cfg, run.state, "s0").state
        run.observe("B", "the background reclaimer's collection")
        run.gone()
        run.ack("B", "L1")
        return run.steps
    finally:
        run.close_all()


def reclaimer_survives_lost_reply(backend: Backend, seed: int) -> int:
    run = FaultRun(backend, "reclaimer-survives-lost-reply")
    try:
        _lease_out(run)
        run.tick(run.vt + 1.0, "past the lease's deadline")
        run.hooks.lose_next_reply(run.client("A"))
        run.note("fault: the reply to A's next state-changing call will be lost (A's reclaimer makes it)")
        _reclaimer(run, "A", "start_reclaimer")
        for round_, name in ((1, "L0b"), (2, "L0c")):
            took = _within(run, f"A's background reclaimer taking back the expired lease (round {round_})",
                           lambda: run.client("B").pending_count() == 1)
            run.state = A.reclaim_expired(run.cfg, run.state).state
            run.note(f"B: pending_count() -> 1 after {took:.2f} s (A's reclaimer took the lease back)")
            run.acquire("B", name)
            if round_ == 1:
                run.tick(run.vt + 1.0, "past the redelivered lease's deadline")
        _reclaimer(run, "A", "stop_reclaimer")
        run.ack("B", "L0c")
        run.observe("B", "the ack of the twice redelivered sample")
        return run.steps
    finally:
        run.close_all()


def reclaimer_survives_restart(backend: Backend, seed: int) -> int:
    run = FaultRun(backend, "reclaimer-survives-restart")
    try:
        _lease_out(run)
        _reclaimer(run, "B", "start_reclaimer")
        _restart(run, durable=True, down_for=RESTART_DOWN_FOR)  # B's reclaimer meets the server down, call after call
        run.tick(run.vt + 1.0, "past the lease's deadline, after the restart")
        _reclaimed_by_b(run, "after the server's restart", "outlived the restart")
        return run.steps
    finally:
        run.close_all()


REFUSED_FOR = 20  # reclaimer intervals the server refuses every write for


def reclaimer_survives_refusals(backend: Backend, seed: int) -> int:
    refuse = getattr(backend.faults, "refuse_writes", None)
    if not callable(refuse):
        raise NotRun("the backend's fault hooks have no refuse_writes (a server that refuses writes: full, read-only)")
    run = FaultRun(backend, "reclaimer-survives-refusals")
    try:
        _lease_out(run)
        why = refuse(run.client("A"), True)
        if why is not None:
            raise NotRun(f"the backend's hooks cannot make its server refuse writes: {why}")
        try:
            run.note("fault: the server refuses every write from now on (out of memory)")
            _reclaimer(run, "B", "start_reclaimer")
            run.tick(run.vt + 1.0, "past the lease's deadline, the server refusing")
            # a window for the reclaimer's passes to be refused (what it must survive), not a synchronisation
            time.sleep(REFUSED_FOR * RECLAIMER_INTERVAL)
        finally:
            refuse(run.client("A"), False)
        run.note(f"fault: after {REFUSED_FOR} reclaimer intervals the server takes writes again")
        _reclaimed_by_b(run, "once the server takes writes again", "outlived the refusals")
        return run.steps
    finally:
        run.close_all()


def _lease_out(run: FaultRun) -> None:
    """Client B opened; 's0' put by A and leased to A (L0)."""
    run.open("B")
    run.store_put("s0")
    run.put("A", "s0")
    run.acquire("A", "L0")


def _reclaimed_by_b(run: FaultRun, when: str, survived: str) -> None:
    """B's background reclaimer takes L0 back (a bounded wait ``when``), is
    stopped, and A takes the redelivered sample and acks it."""
    took = _within(run, f"B's background reclaimer taking back the expired lease {when}",
                   lambda: run.client("A").pending_count() == 1)
    run.state = A.reclaim_expired(run.cfg, run.state).state
    run.note(f"A: pending_count() -> 1 after {took:.2f} s (B's reclaimer {survived})")
    _reclaimer(run, "B", "stop_reclaimer")
    run.acquire("A", "L0b")
    run.ack("A", "L0b")
    run.observe("A", "the ack of the redelivered sample")


def _restart(run: FaultRun, durable: bool, down_for: float = 0.0) -> None:
    """The hooks' restart; ``down_for`` > 0 asks the server to stay down that
    long, passed to a hook that takes it (one written before the keyword
    restarts as fast as it does, and the history says so)."""
    how = "durably" if durable else "losing its state"
    restart = run.hooks.restart
    takes_down_for = down_for > 0 and _takes_keyword(restart, "down_for")
    try:
        if takes_down_for:
            why = restart(run.client("A"), durable=durable, down_for=down_for)
        else:
            why = restart(run.client("A"), durable=durable)
    except Exception as exc:  # noqa: BLE001
        raise run.fail(f"restart(durable={durable}) raised {type(exc).__name__}: {exc}") from exc
    if why is not None:
        raise NotRun(f"the backend's hooks cannot restart its server {how}: {why}")
    if takes_down_for:
        run.note(f"fault: the queue's server restarts, {how}, down for {down_for:g} s")
    elif down_for > 0:
        run.note(f"fault: the queue's server restarts, {how} (the hook takes no down_for: down as long as its restart)")
    else:
        run.note(f"fault: the queue's server restarts, {how}")


def _takes_keyword(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) or p.kind is p.VAR_KEYWORD
               for p in params)


def _identity(run: FaultRun, name: str) -> tuple[Any, Any]:
    lease = run.leases[name][0]
    return (lease.epoch, lease.lease_id)


def restart_durable(backend: Backend, seed: int) -> int:
    run = FaultRun(backend, "restart-durable")
    try:
        run.open("B")
        for sample_id in ("s0", "s1", "s2"):
            run.store_put(sample_id)
        run.put("A", "s0")
        run.acquire("A", "L0")
        run.put("A", "s1")
        run.acquire("A", "L1")
        (run.dead_letter if backend.capabilities.dead_letter else run.ack)("A", "L1")
        run.put("A", "s2")
        seen = {_identity(run, "L0"), _identity(run, "L1")}
        _restart(run, durable=True)
        run.observe("A", "a durable restart")
        run.observe("B", "a durable restart")
        run.lease_state("B", "L0")
        run.ack("B", "L0")  # a lease from before the restart, through another client
        run.acquire("A", "L2")
        if _identity(run, "L2") in seen:
            raise run.fail(f"after a durable restart, acquire minted lease {_identity(run, 'L2')!r} (epoch, lease_id) "
                           f"again; no lease identity is ever reused")
        run.ack("A", "L2")
        run.observe("A", "the acks after the restart")
        return run.steps
    finally:
        run.close_all()


def restart_lossy(backend: Backend, seed: int) -> int:
    run = FaultRun(backend, "restart-lossy")
    try:
        for sample_id in ("s0", "s1"):
            run.store_put(sample_id)
        run.put("A", "s0")
        run.acquire("A", "L0")
        run.put("A", "s1")
        seen = {_identity(run, "L0")}
        old_epoch = run.client("A").epoch
        _restart(run, durable=False)
        run.state = A.restart_lossy(run.cfg, run.state).state
        run.store_put("s2")
        _every_call_lost(run, "A")
        b = run.open("B")
        if b.epoch == old_epoch:
            raise run.fail(f"a client opened after a lossy restart has the old epoch {old_epoch!r}; the queue must move "
                           f"to a new epoch so that no lease of the old one is accepted")
        _old_lease_refused(run, "B", "L0")
        run.observe("B", "the lossy restart (the queue forgot every sample)")
        for sample_id, name in (("s1", "L1"), ("s0", "L0b")):  # what it forgot, put again (the model's recover)
            run.do("B", f"put({sample_id!r}) again (recovering it)", lambda q, r=run.refs[sample_id]: q.put(r),
                   lambda s, sid=sample_id: A.recover(run.cfg, s, sid), says="it returns None",
                   compare=lambda got, want: None if got is None else "put returns None")
            run.acquire("B", name)
            if _identity(run, name) in seen:
                raise run.fail(f"after a lossy restart, acquire minted lease {_identity(run, name)!r} (epoch, lease_id) "
                               f"again; no lease identity is ever reused")
            run.ack("B", name)
        run.put("B", "s2")
        run.acquire("B", "L2")
        run.ack("B", "L2")
        run.observe("B", "the acks after the restart")
        _lost(run, "A", "pending_count()", lambda q: q.pending_count())  # still lost: the old client never recovers
        return run.steps
    finally:
        run.close_all()


def restart_rewound(backend: Backend, seed: int) -> int:
    hooks = backend.faults
    if not (callable(getattr(hooks, "checkpoint", None)) and callable(getattr(hooks, "rewind", None))):
        raise NotRun("the backend's fault hooks have no checkpoint/rewind (a server that loses only its last writes)")
    run = FaultRun(backend, "restart-rewound")
    try:
        for sample_id in ("s0", "s1"):
            run.store_put(sample_id)
        run.put("A", "s0")
        run.put("A", "s1")
        why = run.hooks.checkpoint(run.client("A"))  # type: ignore[attr-defined]
        if why is not None:
            raise NotRun(f"the backend's hooks cannot checkpoint its server: {why}")
        run.note("fault: the server's state is checkpointed (the last state it will keep)")
        run.acquire("A", "L0")  # a write the server will lose; A has seen it
        why = run.hooks.rewind(run.client("A"))  # type: ignore[attr-defined]
        if why is not None:
            raise NotRun(f"the backend's hooks cannot rewind its server: {why}")
        run.note("fault: the server comes back with the checkpointed state (A's acquire lost: an everysec crash, a "
                 "failover to a lagging replica)")
        run.state = A.restart_lossy(run.cfg, run.state).state
        run.store_put("s2")
        _every_call_lost(run, "A")  # A saw a state newer than the server's: every call says so
        return run.steps
    finally:
        run.close_all()


def _lost(run: FaultRun, who: str, what: str, fn: Callable[[Any], Any]) -> None:
    """``fn(client)`` must raise an error of kind ``"state_lost"``."""
    run.steps += 1
    try:
        value = fn(run.client(who))
    except Exception as exc:  # noqa: BLE001 - judged below
        kind = rejection_kind(exc)
        run.note(f"{who}: {what} -> raised {type(exc).__name__} (kind {kind!r})")
        if kind != "state_lost":
            raise run.fail(f"{who}: {what} after a lossy restart raised {type(exc).__name__} (kind {kind!r}): {exc}; "
                           f"every call of a client of the lost state raises an error of kind 'state_lost'") from exc
        return
    run.note(f"{who}: {what} -> {value!r}")
    raise run.fail(f"{who}: {what} after a lossy restart returned {value!r}; the loss went unnoticed: every call of a "
                   f"client of the lost state (or of a state older than it saw), reads included, raises an error of kind "
                   f"'state_lost'")


def _every_call_lost(run: FaultRun, who: str) -> None:
    caps = run.caps
    lease = run.leases["L0"][0]
    ref = run.refs["s2"]
    calls: list[tuple[str, Callable[[Any], Any]]] = [
        ("pending_count()", lambda q: q.pending_count()),
        ("outstanding_count()", lambda q: q.outstanding_count()),
        ("is_closed", lambda q: q.is_closed),
        ("is_drained", lambda q: q.is_drained),
        ("is_paused", lambda q: q.is_paused),
        ("put('s2')", lambda q: q.put(ref)),
        ("acquire_nowait()" if caps.acquire_nowait else "acquire(poll_interval=0.001)",
         (lambda q: q.acquire_nowait()) if caps.acquire_nowait else (lambda q: q.acquire(poll_interval=0.001))),
        ("ack(L0)", lambda q: q.ack(lease)),
        ("fail(L0)", lambda q: q.fail(lease)),
        ("reclaim_expired()", lambda q: q.reclaim_expired()),
    ]
    if caps.dead_letter or caps.max_deliveries:
        calls.append(("dead_letters()", lambda q: q.dead_letters()))
    if caps.extend:
        calls.append(("extend(L0, 1.0)", lambda q: q.extend(lease, 1.0)))
    if caps.dead_letter:
        calls.append(("dead_letter(L0, 'kit')", lambda q: q.dead_letter(lease, "kit")))
    client = run.client(who)
    if callable(getattr(client, "lease_state", None)):
        calls.append(("lease_state(L0)", lambda q: q.lease_state(lease)))
    # reads a backend may add beside docs/API.md's: they answer from the same state
    for extra in ("drain_dead_letters", "metrics", "gauges"):
        if callable(getattr(client, extra, None)):
            calls.append((f"{extra}()", lambda q, name=extra: getattr(q, name)()))
    calls.append(("close()", lambda q: q.close()))
    for what, fn in calls:
        _lost(run, who, what, fn)


def _old_lease_refused(run: FaultRun, who: str, name: str) -> None:
    """Every lease call of ``who`` with a lease of the old epoch is refused:
    ``ForeignLease`` or ``False`` (stale), never ``True``."""
    lease = run.leases[name][0]
    calls: list[tuple[str, Callable[[Any], Any]]] = [("ack", lambda q: q.ack(lease)), ("fail", lambda q: q.fail(lease))]
    if run.caps.extend:
        calls.append(("extend", lambda q: q.extend(lease, 1.0)))
    if run.caps.dead_letter:
        calls.append(("dead_letter", lambda q: q.dead_letter(lease, "kit")))
    for call, fn in calls:
        run.steps += 1
        what = f"{who}: {call}({name}), a lease of the epoch before the loss"
        try:
            value = fn(run.client(who))
        except Exception as exc:  # noqa: BLE001 - judged below
            kind = rejection_kind(exc)
            run.note(f"{what} -> raised {type(exc).__name__} (kind {kind!r})")
            if kind != "foreign":
                raise run.fail(f"{what} raised {type(exc).__name__} (kind {kind!r}): {exc}; it must be refused as "
                               f"foreign (or answer False, stale)") from exc
            continue
        run.note(f"{what} -> {value!r}")
        if value is not False:
            raise run.fail(f"{what} returned {value!r}: a stale lease of the lost state was accepted; it must be "
                           f"refused (ForeignLease) or answer False")
