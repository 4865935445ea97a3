"""The safety properties of DESIGN.md, one named predicate each.

State invariants take ``(cfg, state, consumers)`` (``consumers`` is ``()``
when the caller has no world around the queue, as in the conformance kit) and
return True when the property holds.  Transition properties take
``(cfg, before, after, action, arg, value)``.  Properties of the closed world
read its producers and bounds (``(world, node)``) or, for a step, its
consumers before and after (``(world, before, after, action, arg, value)``
with nodes).  Names are those of ``spec/SampleRefQueue.tla``; the spec's
``NoLeaseIssuedTwice`` needs a history variable and has no twin here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from refqueue.model import actions as _actions
from refqueue.model.actions import is_drained, is_live
from refqueue.model.state import (
    ACKED,
    DEAD,
    DONE,
    DROPPED,
    LEASED,
    LOST,
    MAX_DELIVERIES_REASON,
    PENDING,
    STATUSES,
    STORED,
    Config,
    ModelLease,
    State,
    epoch_generation,
)

__all__ = [
    "STATE_INVARIANTS",
    "TRANSITION_INVARIANTS",
    "TypeOK",
    "PendingAndLeasedDisjoint",
    "AtMostOneLiveLeasePerSample",
    "NoScrubBeforeAck",
    "NothingResidentAfterAck",
    "IntentsHoldCompletedData",
    "NoOldEpochLeaseLive",
    "ResidencyMatchesContents",
    "ResidencyWithinCapacity",
    "RedeliveryCountsDeliveries",
    "TerminalNoneMeansDrained",
    "StaleOpsChangeNothing",
    "PauseOnlyAtHigh",
    "ResumeOnlyAtLow",
    "NoFlapping",
    "CompletionIsAbsorbing",
    "LeaseLiveUntilDeadline",
    "PendingIsFifo",
    "DeadLettersListed",
    "PauseFollowsHysteresis",
    "BlockedPutIsParked",
    "DeadlineWithinVisibility",
    "ParkedRefsArePut",
    "WORLD_INVARIANTS",
    "StaleLeaseNeverLiveAgain",
    "LeaseLastsItsTimeout",
    "WORLD_TRANSITION_INVARIANTS",
    "RePutDelivered",
    "WITNESSES",
    "BackpressureBound",
    "NoStuckProducer",
    "effective_residency",
    "queue_bytes",
    "violated",
]

Consumers = Sequence  # of refqueue.model.world.Consumer


def _is_nat(x: object) -> bool:
    return type(x) is int and x >= 0  # type: ignore[operator]


@functools.lru_cache(maxsize=1 << 16)
def _state_type_ok(state: State) -> bool:
    # The part of TypeOK that reads only the model's state; cached because
    # the explorer meets each state in many nodes (states are immutable).
    ids = state.ids
    if len(ids) != len(state.recs) or len(set(ids)) != len(ids):
        return False
    if not (_is_nat(state.resident_bytes) and _is_nat(state.resident_count)):
        return False
    if type(state.closed) is not bool or type(state.paused) is not bool:
        return False
    for status, incarnation, deliveries, redeliveries, deadline, resident, nbytes in state.recs:
        if status not in STATUSES or type(resident) is not bool:
            return False
        if not (_is_nat(incarnation) and _is_nat(deliveries) and _is_nat(redeliveries) and _is_nat(nbytes)):
            return False
        if (deadline is not None) != (status == LEASED):
            return False
    pending = state.pending
    parked = state.parked
    if list(parked) != sorted(parked) or len({p[0] for p in parked}) != len(parked):
        return False
    if not all(type(p[0]) is str and _is_nat(p[1]) for p in parked):
        return False
    intents = state.intents
    if list(intents) != sorted(set(intents)) or not set(intents).issubset(ids) or not _is_nat(state.epoch):
        return False
    return len(set(pending)) == len(pending) and set(pending).issubset(ids)


def TypeOK(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """Every field has its type: known statuses, natural counters, a deadline
    exactly while leased, one record per id, pending ids known and unique; a
    consumer holds data only under a lease and a stopped one holds nothing."""
    if not _state_type_ok(state):
        return False
    for lease, holding, stopped, *kept in consumers:
        if lease is not None and type(lease) is not ModelLease:
            return False
        if kept and kept[0] is not None and type(kept[0]) is not ModelLease:
            return False
        if holding and lease is None:
            return False
        if stopped and (lease is not None or holding):
            return False
    return True


def PendingAndLeasedDisjoint(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """``pending`` holds exactly the PENDING samples; no leased sample is pending."""
    pending = set(state.pending)
    return all((r.status == PENDING) == (sid in pending) for sid, r in zip(state.ids, state.recs))


def AtMostOneLiveLeasePerSample(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """No two consumers hold a live lease on the same sample, and a live lease
    is held only for a LEASED sample (a lease's identity is its delivery)."""
    live = [sid for sid in (_live_sample(state, c) for c in consumers) if sid is not None]
    return len(live) < 2 or len(live) == len(set(live))


def _live_sample(state: State, consumer: Any) -> str | None:
    """The sample of the live lease ``consumer`` holds, or None."""
    lease = consumer.lease
    return lease.sample_id if lease is not None and is_live(state, lease) else None


def NoScrubBeforeAck(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """A stored, pending or leased sample's data is resident (D2), and so is
    that of a sample a lossy restart made the queue forget (D9)."""
    return all(r.resident for r in state.recs if r.status in (STORED, PENDING, LEASED, LOST))


def NothingResidentAfterAck(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """An acked, dead-lettered or dropped sample's data is gone (D2), except
    while a scrub intent for it is recorded (D9: a deployment's ack is two steps)."""
    return not any(
        r.resident and sid not in state.intents
        for sid, r in zip(state.ids, state.recs)
        if r.status in (ACKED, DEAD, DROPPED)
    )


def IntentsHoldCompletedData(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """A recorded scrub intent names a completed (acked or dead-lettered)
    sample whose data is still resident: the commit records it with the data
    in place and ``scrub_intent`` removes both together, so an intent never
    outlives its data nor names live work (D9).  The in-process queue records
    none."""
    if not state.intents:
        return True
    if not cfg.two_step_ack:
        return False
    for sid in state.intents:
        rec = state.recs[state.ids.index(sid)]
        if rec.status not in DONE or not rec.resident:
            return False
    return True


def NoOldEpochLeaseLive(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """No lease of an old epoch is live (D9): a lossy restart revokes every
    lease, whatever the queue's counters say afterwards.  Stated over the
    leases the consumers hold or kept, as the queue judges them: unlike the
    other properties, this one asks the queue's own ``actions.is_live``
    (looked up when called), since it pins that judgement down (the spec's
    IsLive, whose epoch check a mutation may drop)."""
    for c in consumers:
        for lease in (c.lease, c.kept):
            # (_actions.is_live: the queue's, as it is now)
            if lease is not None and epoch_generation(lease.epoch) != state.epoch and _actions.is_live(state, lease):
                return False
    return True


def ResidencyMatchesContents(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """The store's counters equal the sum over resident samples, never negative."""
    resident = [r for r in state.recs if r.resident]
    return (
        state.resident_bytes >= 0
        and state.resident_bytes == sum(r.nbytes for r in resident)
        and state.resident_count == len(resident)
    )


def ResidencyWithinCapacity(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """The store never holds more than its byte cap (or its sample cap)."""
    return (cfg.capacity_bytes is None or state.resident_bytes <= cfg.capacity_bytes) and (
        cfg.max_samples is None or state.resident_count <= cfg.max_samples
    )


def DeadlineWithinVisibility(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """A live lease never runs longer than one visibility timeout from now:
    acquire and the world's extend set ``now + visibility_timeout``, and time
    only shortens it (an extend counted from the old deadline breaks this)."""
    limit = state.now + cfg.visibility_timeout
    return all(r.deadline is None or r.deadline <= limit for r in state.recs)


@functools.lru_cache(maxsize=1 << 16)
def _state_counts_deliveries(cfg: Config, state: State) -> bool:
    # The part of RedeliveryCountsDeliveries that reads only the model's state.
    for r in state.recs:
        if r.status in (STORED, PENDING) and r.deliveries != r.redeliveries:
            return False
        if r.status == LEASED and r.deliveries != r.redeliveries + 1:
            return False
        if cfg.max_deliveries is not None and r.deliveries > cfg.max_deliveries:
            return False
    if state.dead:
        # Only a sample's latest dead letter describes its current record, and
        # only while that record is still DEAD (a dead-lettered id may be put
        # again as a new incarnation: D5).
        by_id = dict(zip(state.ids, state.recs))
        seen: set[str] = set()
        for sid, reason in reversed(state.dead):
            if sid in seen:
                continue
            seen.add(sid)
            rec = by_id[sid]
            if reason == MAX_DELIVERIES_REASON and rec.status == DEAD and rec.deliveries != cfg.max_deliveries:
                return False
    return True


def RedeliveryCountsDeliveries(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """A sample's redelivery count is its deliveries so far (one fewer while
    leased), a live lease carries that count, no sample is delivered more than
    ``max_deliveries`` times, and one dead-lettered for it was delivered exactly
    that often (D7)."""
    if not _state_counts_deliveries(cfg, state):
        return False
    for c in consumers:
        if c.lease is not None and is_live(state, c.lease):
            rec = state.recs[state.ids.index(c.lease.sample_id)]
            if c.lease.redelivery_count != rec.deliveries - 1:
                return False
    return True


def TerminalNoneMeansDrained(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """A consumer stops only on a terminal None, which comes only once the
    queue is closed and drained (D3)."""
    return not any(c.stopped for c in consumers) or is_drained(state)


# What each predicate reads of the consumers (``reads_consumers``): nothing
# (False: the explorer judges it once per model state), each consumer alone
# ("each": it holds exactly when it holds with no consumer and with each
# consumer alone, so the explorer judges it once per state and consumer), or
# all of them together (True, the default: judged once per node; or
# "distinct", below).
for _pred in (
    PendingAndLeasedDisjoint, NoScrubBeforeAck, NothingResidentAfterAck, ResidencyMatchesContents, ResidencyWithinCapacity,
    DeadlineWithinVisibility, IntentsHoldCompletedData,
):
    _pred.reads_consumers = False  # type: ignore[attr-defined]
for _pred in (TypeOK, NoOldEpochLeaseLive, RedeliveryCountsDeliveries, TerminalNoneMeansDrained):
    _pred.reads_consumers = "each"  # type: ignore[attr-defined]
# "distinct": it holds exactly when the consumers' ``distinct_key``s that are
# not None are distinct, so the explorer reads each key once per state and consumer.
AtMostOneLiveLeasePerSample.reads_consumers = "distinct"  # type: ignore[attr-defined]
AtMostOneLiveLeasePerSample.distinct_key = _live_sample  # type: ignore[attr-defined]

STATE_INVARIANTS: dict[str, Callable[..., bool]] = {
    "TypeOK": TypeOK,
    "PendingAndLeasedDisjoint": PendingAndLeasedDisjoint,
    "AtMostOneLiveLeasePerSample": AtMostOneLiveLeasePerSample,
    "NoScrubBeforeAck": NoScrubBeforeAck,
    "NothingResidentAfterAck": NothingResidentAfterAck,
    "ResidencyMatchesContents": ResidencyMatchesContents,
    "ResidencyWithinCapacity": ResidencyWithinCapacity,
    "RedeliveryCountsDeliveries": RedeliveryCountsDeliveries,
    "TerminalNoneMeansDrained": TerminalNoneMeansDrained,
    "DeadlineWithinVisibility": DeadlineWithinVisibility,
    "IntentsHoldCompletedData": IntentsHoldCompletedData,
    "NoOldEpochLeaseLive": NoOldEpochLeaseLive,
}


# -- transition properties ------------------------------------------------------

STALEABLE = frozenset({"Ack", "Fail", "Extend", "DeadLetter", "AckCopy", "FailCopy"})


def StaleOpsChangeNothing(cfg: Config, before: State, after: State, action: str, arg: object, value: object) -> bool:
    """An ack, fail, extend or dead-letter that answered False left the
    queue and store exactly as they were (D1)."""
    return not (action in STALEABLE and value is False) or before == after


def effective_residency(state: State, sample_id: object) -> int:
    """What a put step of ``sample_id`` compares with the watermarks (D8): the
    store's residency less the bytes of every ref parked in a blocking put,
    the stepping ref's own bytes included (it is resident: a world producer
    stores before it puts)."""
    parked = sum(b for s, b in state.parked if s != sample_id)
    own = 0
    if isinstance(sample_id, str) and sample_id in state.ids:
        rec = state.recs[state.ids.index(sample_id)]
        own = rec.nbytes if rec.resident else 0
    return max(0, state.resident_bytes - parked - own)


def PauseOnlyAtHigh(cfg: Config, before: State, after: State, action: str, arg: object, value: object) -> bool:
    """The producer pauses only with effective residency at or above the high watermark (D4, D8)."""
    if before.paused or not after.paused:
        return True
    return cfg.high is not None and effective_residency(before, arg) >= cfg.high


def ResumeOnlyAtLow(cfg: Config, before: State, after: State, action: str, arg: object, value: object) -> bool:
    """The producer resumes only with effective residency at or below the low watermark (D4, D8)."""
    if not before.paused or after.paused:
        return True
    return cfg.low is not None and effective_residency(before, arg) <= cfg.low


def NoFlapping(cfg: Config, before: State, after: State, action: str, arg: object, value: object) -> bool:
    """A resume happens strictly below the high watermark and a pause strictly
    above the low one, so residency must move across the band between a pause
    and the next resume (what an empty band, ``low == high``, breaks: D4)."""
    if before.paused == after.paused:
        return True
    eff = effective_residency(before, arg)
    if after.paused:
        return cfg.low is not None and eff > cfg.low
    return cfg.high is not None and eff < cfg.high


def CompletionIsAbsorbing(cfg: Config, before: State, after: State, action: str, arg: object, value: object) -> bool:
    """An acked or dead-lettered incarnation stays so until its id is stored
    again for a new incarnation (exactly once per incarnation); only its data
    may leave meanwhile (``scrub_intent``).  A lossy restart is the documented
    exception (D9): a completion whose scrub was still intended is forgotten,
    LOST, and delivered again once recovered."""
    old = dict(zip(before.ids, before.recs))
    for sid, rec in zip(after.ids, after.recs):
        was = old.get(sid)
        if was is None or was.status not in (ACKED, DEAD) or rec == was or rec.status == STORED:
            continue
        if rec == was._replace(resident=False) or (action == "RestartLossy" and rec.status == LOST):
            continue
        return False
    return True


_HOLDER_ACTIONS = frozenset({"Ack", "Fail", "Extend", "DeadLetter", "AckLost", "FailLost"})


def LeaseLiveUntilDeadline(cfg: Config, before: State, after: State, action: str, arg: object, value: object) -> bool:
    """The visibility-timeout guarantee: a live lease whose deadline has not
    passed stays live, with its deadline, unless its holder acks, fails,
    dead-letters or extends it (its reply lost or not).  For those steps
    ``arg`` is the lease the acting consumer held (the explorer passes it):
    only that lease may change, and only if it is the sample's live one.  A
    lossy restart revokes every lease (D9)."""
    if action == "RestartLossy":
        return True
    holder = arg if action in _HOLDER_ACTIONS and isinstance(arg, ModelLease) and is_live(before, arg) else None
    for sid, rec in zip(before.ids, before.recs):
        if rec.status == LEASED and rec.deadline > before.now:  # type: ignore[operator]
            new = after.recs[after.ids.index(sid)]
            if (new.status, new.incarnation, new.redeliveries, new.deadline) != (
                LEASED, rec.incarnation, rec.redeliveries, rec.deadline
            ) and (holder is None or holder.sample_id != sid):
                return False
    return True


def PendingIsFifo(cfg: Config, before: State, after: State, action: str, arg: object, value: object) -> bool:
    """Delivery is FIFO: a step keeps what was pending in its order, removes
    at most the head (an acquire) and appends at the tail (a put, a fail, a
    reclaim).  Holds for a FIFO queue (``cfg.fifo``); a backend that delivers
    in any order is judged by ``allowed_acquires`` instead.  A lossy restart
    forgets what was pending (D9)."""
    old, new = before.pending, after.pending
    return not cfg.fifo or new[: len(old)] == old or (bool(old) and new == old[1:]) or action == "RestartLossy"


def DeadLettersListed(cfg: Config, before: State, after: State, action: str, arg: object, value: object) -> bool:
    """The dead-letter list lists exactly the samples dead-lettered: a step
    keeps the list as it was and appends one entry for each sample it
    dead-letters, and none for anything else; the reason is
    ``max_deliveries`` for a fail or reclaim, the caller's (a non-empty str)
    for ``dead_letter``."""
    old_dead, new_dead = before.dead, after.dead
    old_recs = before.recs  # ids only grow, in the order first seen: recs align by index
    newly = {
        after.ids[i] for i, r in enumerate(after.recs)
        if r.status == DEAD and (i >= len(old_recs) or old_recs[i].status != DEAD)
    }
    if not newly and old_dead == new_dead:
        return True
    added = new_dead[len(old_dead):]
    if new_dead[: len(old_dead)] != old_dead or len(added) != len(newly) or {sid for sid, _ in added} != newly:
        return False
    if action == "DeadLetter":
        return all(isinstance(reason, str) and reason for _, reason in added)
    return all(reason == MAX_DELIVERIES_REASON for _, reason in added)


_PUT_STEPS = frozenset({"TryPut", "TryPutLost"})


def PauseFollowsHysteresis(cfg: Config, before: State, after: State, action: str, arg: object, value: object) -> bool:
    """Backpressure follows the hysteresis of D8's measure exactly: every put
    step leaves ``paused' = measure > low if paused else measure >= high``
    (``PauseOnlyAtHigh`` and ``ResumeOnlyAtLow`` say only that a change needs
    the measure past a watermark; this says the measure past it forces the
    change, so a measure that subtracts too much is caught)."""
    if action not in _PUT_STEPS or cfg.high is None or cfg.low is None:
        return True
    eff = effective_residency(before, arg)
    return after.paused == (eff > cfg.low if before.paused else eff >= cfg.high)


def BlockedPutIsParked(cfg: Config, before: State, after: State, action: str, arg: object, value: object) -> bool:
    """A put step that does not admit its ref parks it: the producer waits
    with its bytes in ``parked``, which D8's measure subtracts for the others
    (a step that never parks leaves the waiting producers invisible)."""
    if action != "TryPut" or getattr(value, "enqueued", True):
        return True
    return any(sid == arg for sid, _ in after.parked)


TRANSITION_INVARIANTS: dict[str, Callable[..., bool]] = {
    "StaleOpsChangeNothing": StaleOpsChangeNothing,
    "PauseOnlyAtHigh": PauseOnlyAtHigh,
    "ResumeOnlyAtLow": ResumeOnlyAtLow,
    "NoFlapping": NoFlapping,
    "CompletionIsAbsorbing": CompletionIsAbsorbing,
    "LeaseLiveUntilDeadline": LeaseLiveUntilDeadline,
    "PendingIsFifo": PendingIsFifo,
    "DeadLettersListed": DeadLettersListed,
    "PauseFollowsHysteresis": PauseFollowsHysteresis,
    "BlockedPutIsParked": BlockedPutIsParked,
}


# -- properties of the closed world (they read its producers and bounds) ---------


def queue_bytes(state: State) -> int:
    """The bytes of enqueued work: pending and leased samples."""
    return sum(r.nbytes for r in state.recs if r.status in (PENDING, LEASED))


def BackpressureBound(world: object, node: object) -> bool:
    """D8's bound: work admitted by blocking puts stays below ``high`` plus
    the largest sample (so residency stays below ``high + (producers + 1) x
    largest`` plus orphans).  Until a lossy restart: the operator's recovery
    re-puts what the queue forgot regardless of the watermarks (D9)."""
    cfg = world.cfg  # type: ignore[attr-defined]
    if cfg.high is None or node.state.epoch:  # type: ignore[attr-defined]
        return True
    return queue_bytes(node.state) < cfg.high + world.largest  # type: ignore[attr-defined]


def NoStuckProducer(world: object, node: object) -> bool:
    """No deadlock (D8): a producer waiting in a blocking put on an open queue
    that holds no work (so no consumer can ever free a byte) is admitted by
    its next step."""
    state = node.state  # type: ignore[attr-defined]
    if state.closed or state.pending or any(r.status == LEASED for r in state.recs):
        return True
    for sid in node.producers:  # type: ignore[attr-defined]
        if sid is None or not any(p[0] == sid for p in state.parked):
            continue
        out = _actions.try_put(world.cfg, state, sid, state.recs[state.ids.index(sid)].nbytes)  # type: ignore[attr-defined]
        if out.error is None and not out.value.enqueued:
            return False
    return True


def ParkedRefsArePut(world: object, node: object) -> bool:
    """Every parked ref is the sample a producer is putting (the spec's
    ``parked \\subseteq Range(producers)``, in its TypeOK): a producer that
    leaves its blocking put takes its bytes out of ``parked``."""
    return all(sid in node.producers for sid, _ in node.state.parked)  # type: ignore[attr-defined]


WORLD_INVARIANTS: dict[str, Callable[..., bool]] = {
    "BackpressureBound": BackpressureBound,
    "NoStuckProducer": NoStuckProducer,
    "ParkedRefsArePut": ParkedRefsArePut,
}


def StaleLeaseNeverLiveAgain(world: object, before: object, after: object, action: str, arg: object, value: object) -> bool:
    """A lease that is not live never becomes live again (D1, D9): a lease a
    consumer holds or kept after it went stale stays stale whatever happens
    (a restart that loses the queue's counters included), so a stale holder
    can never ack, fail or extend someone else's delivery.  ``before`` and
    ``after`` are the world's nodes around one step."""
    old, new = before.state, after.state  # type: ignore[attr-defined]
    for c in before.consumers:  # type: ignore[attr-defined]
        lease, kept = c.lease, c.kept
        if lease is not None and is_live(new, lease) and not is_live(old, lease):
            return False
        if kept is not None and is_live(new, kept) and not is_live(old, kept):
            return False
    return True


def LeaseLastsItsTimeout(world: object, before: object, after: object, action: str, arg: object, value: object) -> bool:
    """A lease lasts its visibility timeout: a step that makes a sample leased
    (``Acquire``, ``AcquireLost``) or moves a leased sample's deadline
    (``Extend``) sets the deadline to exactly ``now + visibility_timeout``, or
    ``now + seconds`` for a world's ``Extend((c, seconds))``.  Never shorter
    (a lease that falls due early is reclaimed under a consumer still working
    on it) and never longer; only time (``Tick``) moves a deadline otherwise.
    A world step: the extend's seconds are in the world's ``arg``."""
    if action == "Tick":
        return True
    old, new = before.state, after.state  # type: ignore[attr-defined]
    cfg = world.cfg  # type: ignore[attr-defined]
    seconds = arg[1] if action == "Extend" and isinstance(arg, tuple) else cfg.visibility_timeout
    was = dict(zip(old.ids, old.recs))
    for sid, rec in zip(new.ids, new.recs):
        if rec.status != LEASED:
            continue
        prev = was.get(sid)
        if prev is None or prev.status != LEASED or prev.deadline != rec.deadline:
            if rec.deadline != old.now + seconds:
                return False
    return True


# What each world property reads (``reads``, in the names of
# ``refqueue.model.explorer.NODE_READS`` and ``STEP_READS``): the explorer
# judges it once per distinct value of what it reads (the properties are pure).
# A property that does not say is judged on every node or step.
BackpressureBound.reads = ("state",)  # type: ignore[attr-defined]
NoStuckProducer.reads = ("state", "producers")  # type: ignore[attr-defined]
ParkedRefsArePut.reads = ("state", "producers")  # type: ignore[attr-defined]
StaleLeaseNeverLiveAgain.reads = ("before.state", "after.state", "before.consumer")  # type: ignore[attr-defined]


def _no_lease_wakes(before: State, after: State) -> bool:
    """Enough for ``StaleLeaseNeverLiveAgain`` to hold on a step between these
    two states, whatever the consumers hold: in the same epoch, every sample
    leased after the step was leased before it by the same delivery, so no
    lease is live after that was not live before (``is_live`` reads exactly the
    record's status, incarnation and redeliveries and the epoch).  False says
    nothing: judge the consumers."""
    if before.epoch != after.epoch:
        return False
    was = {(sid, r.incarnation, r.redeliveries) for sid, r in zip(before.ids, before.recs) if r.status == LEASED}
    return all(
        (sid, r.incarnation, r.redeliveries) in was for sid, r in zip(after.ids, after.recs) if r.status == LEASED
    )


# A world step property may give ``holds_on_states(before_state, after_state)``:
# True means it holds on every step between nodes with those model states, so
# the explorer judges the nodes only where it says False.
StaleLeaseNeverLiveAgain.holds_on_states = _no_lease_wakes  # type: ignore[attr-defined]


def _no_lease_starts(before: State, after: State) -> bool:
    """Enough for ``LeaseLastsItsTimeout`` to hold on a step between these two
    states: every sample leased after the step was leased before it with the
    same deadline, so no deadline was set or moved."""
    was = {sid: r.deadline for sid, r in zip(before.ids, before.recs) if r.status == LEASED}
    return all(
        sid in was and was[sid] == r.deadline for sid, r in zip(after.ids, after.recs) if r.status == LEASED
    )


LeaseLastsItsTimeout.holds_on_states = _no_lease_starts  # type: ignore[attr-defined]
LeaseLastsItsTimeout.reads = ("before.state", "after.state", "action", "arg")  # type: ignore[attr-defined]


def RePutDelivered(world: object, node: object) -> bool:
    """A witness, not a property (D5): a sample in its second incarnation or
    later (put, completed, stored and put again) is leased.  ``refqueue
    check-spec`` asks TLC to reach it (MCRePut) and the explorer to reach it
    as a goal, so a model that refuses re-puts, or never delivers them, fails."""
    return any(r.incarnation >= 2 and r.status == LEASED for r in node.state.recs)  # type: ignore[attr-defined]


# States the closed world must be able to reach (explore's goals), by name.
WITNESSES: dict[str, Callable[..., bool]] = {
    "RePutDelivered": RePutDelivered,
}


# Properties of one step of the closed world that read its consumers (or its arg).
WORLD_TRANSITION_INVARIANTS: dict[str, Callable[..., bool]] = {
    "StaleLeaseNeverLiveAgain": StaleLeaseNeverLiveAgain,
    "LeaseLastsItsTimeout": LeaseLastsItsTimeout,
}


def violated(cfg: Config, state: State, consumers: Consumers = (), names: Sequence[str] | None = None) -> list[str]:
    """Names of the state invariants that do not hold."""
    checks = STATE_INVARIANTS if names is None else {n: STATE_INVARIANTS[n] for n in names}
    return [name for name, pred in checks.items() if not pred(cfg, state, consumers)]
