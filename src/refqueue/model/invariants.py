"""The safety properties of DESIGN.md, one named predicate each.

State invariants take ``(cfg, state, consumers)`` (``consumers`` is ``()``
when the caller has no world around the queue, as in the conformance kit) and
return True when the property holds.  Transition properties take
``(cfg, before, after, action, value)``.  Names are those of
``spec/SampleRefQueue.tla``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from refqueue.model.actions import is_drained, is_live
from refqueue.model.state import (
    ACKED,
    DEAD,
    LEASED,
    MAX_DELIVERIES_REASON,
    PENDING,
    STATUSES,
    STORED,
    Config,
    ModelLease,
    State,
)

__all__ = [
    "STATE_INVARIANTS",
    "TRANSITION_INVARIANTS",
    "TypeOK",
    "PendingAndLeasedDisjoint",
    "AtMostOneLiveLeasePerSample",
    "NoScrubBeforeAck",
    "NothingResidentAfterAck",
    "ResidencyMatchesContents",
    "RedeliveryCountsDeliveries",
    "TerminalNoneMeansDrained",
    "StaleOpsChangeNothing",
    "PauseOnlyAtHigh",
    "ResumeOnlyAtLow",
    "NoFlapping",
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
    return len(set(pending)) == len(pending) and set(pending).issubset(ids)


def TypeOK(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """Every field has its type: known statuses, natural counters, a deadline
    exactly while leased, one record per id, pending ids known and unique; a
    consumer holds data only under a lease and a stopped one holds nothing."""
    if not _state_type_ok(state):
        return False
    for lease, holding, stopped in consumers:
        if lease is not None and type(lease) is not ModelLease:
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
    live = [lease.sample_id for lease, _, _ in consumers if lease is not None and is_live(state, lease)]
    return len(live) < 2 or len(live) == len(set(live))


def NoScrubBeforeAck(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """A stored, pending or leased sample's data is resident (D2)."""
    return all(r.resident for r in state.recs if r.status in (STORED, PENDING, LEASED))


def NothingResidentAfterAck(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """An acked or dead-lettered sample's data is gone (D2)."""
    return not any(r.resident for r in state.recs if r.status in (ACKED, DEAD))


def ResidencyMatchesContents(cfg: Config, state: State, consumers: Consumers = ()) -> bool:
    """The store's counters equal the sum over resident samples, never negative."""
    resident = [r for r in state.recs if r.resident]
    return (
        state.resident_bytes >= 0
        and state.resident_bytes == sum(r.nbytes for r in resident)
        and state.resident_count == len(resident)
    )


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


# Which predicates read the consumers (the explorer checks the others once per
# model state rather than once per node).
for _pred in (PendingAndLeasedDisjoint, NoScrubBeforeAck, NothingResidentAfterAck, ResidencyMatchesContents):
    _pred.reads_consumers = False  # type: ignore[attr-defined]

STATE_INVARIANTS: dict[str, Callable[..., bool]] = {
    "TypeOK": TypeOK,
    "PendingAndLeasedDisjoint": PendingAndLeasedDisjoint,
    "AtMostOneLiveLeasePerSample": AtMostOneLiveLeasePerSample,
    "NoScrubBeforeAck": NoScrubBeforeAck,
    "NothingResidentAfterAck": NothingResidentAfterAck,
    "ResidencyMatchesContents": ResidencyMatchesContents,
    "RedeliveryCountsDeliveries": RedeliveryCountsDeliveries,
    "TerminalNoneMeansDrained": TerminalNoneMeansDrained,
}


# -- transition properties ------------------------------------------------------

STALEABLE = frozenset({"Ack", "Fail", "Extend", "DeadLetter"})


def StaleOpsChangeNothing(cfg: Config, before: State, after: State, action: str, value: object) -> bool:
    """An ack, fail, extend or dead-letter that answered False left the
    queue and store exactly as they were (D1)."""
    return not (action in STALEABLE and value is False) or before == after


def PauseOnlyAtHigh(cfg: Config, before: State, after: State, action: str, value: object) -> bool:
    """The producer pauses only with residency at or above the high watermark (D4)."""
    return before.paused or not after.paused or (cfg.high is not None and before.resident_bytes >= cfg.high)


def ResumeOnlyAtLow(cfg: Config, before: State, after: State, action: str, value: object) -> bool:
    """The producer resumes only with residency at or below the low watermark (D4)."""
    return not before.paused or after.paused or (cfg.low is not None and before.resident_bytes <= cfg.low)


def NoFlapping(cfg: Config, before: State, after: State, action: str, value: object) -> bool:
    """A resume happens strictly below the high watermark and a pause strictly
    above the low one, so residency must move across the band between a pause
    and the next resume (what an empty band, ``low == high``, breaks: D4)."""
    if before.paused == after.paused:
        return True
    if after.paused:
        return cfg.low is not None and before.resident_bytes > cfg.low
    return cfg.high is not None and before.resident_bytes < cfg.high


TRANSITION_INVARIANTS: dict[str, Callable[..., bool]] = {
    "StaleOpsChangeNothing": StaleOpsChangeNothing,
    "PauseOnlyAtHigh": PauseOnlyAtHigh,
    "ResumeOnlyAtLow": ResumeOnlyAtLow,
    "NoFlapping": NoFlapping,
}


def violated(cfg: Config, state: State, consumers: Consumers = (), names: Sequence[str] | None = None) -> list[str]:
    """Names of the state invariants that do not hold."""
    checks = STATE_INVARIANTS if names is None else {n: STATE_INVARIANTS[n] for n in names}
    return [name for name, pred in checks.items() if not pred(cfg, state, consumers)]
