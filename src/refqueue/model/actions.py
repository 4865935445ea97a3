"""The actions of the reference model, one pure function each.

Every action is ``action(cfg, state, *args) -> Outcome(state, value, error)``:
it never mutates, never raises for a protocol-level rejection and never reads
a machine clock.  A rejected call returns ``error=Rejection(kind, message)``
and the *same* state object; ``kind`` is one of

    "closed"     put after close
    "duplicate"  put of an id that is pending or leased; store_put of resident data
    "replay"     put of an id completed within the dedup window (D5)
    "foreign"    a lease minted by another queue (another epoch) (D1)
    "capacity"   store_put past the store's byte or sample cap
    "missing"    get of data that is not resident
    "invalid"    an argument no call accepts (a non-positive timeout, ...)

A lease of one of the queue's *earlier* epochs (before a detected lossy
restart, D9) is not foreign: it is stale, and every call with it answers
False and changes nothing.

The order of the functions is the order of the actions in
``spec/SampleRefQueue.tla``: the store's put, the producer's put, blocking
put and retried put, the consumer's acquire, get, release, ack, fail,
dead_letter and extend, then reclaim, close and the passage of time, the
store's scrub, and a deployment's second step of a completion
(``scrub_intent``), lossy restart and recovery (D9).
"""

from __future__ import annotations

import functools
import math
from itertools import compress, count, repeat
from operator import attrgetter, is_not
from typing import Any, NamedTuple

from refqueue.model.decisions import effective_residency, is_due, next_paused
from refqueue.model.state import (
    ACKED,
    CHUNK,
    DEAD,
    DROPPED,
    LEASED,
    LIVE,
    LOST,
    MAX_DELIVERIES_REASON,
    PENDING,
    STORED,
    Config,
    ModelLease,
    Rec,
    State,
    _clone,
    appended_id,
    epoch_generation,
    id_at,
    index_of,
    lease_epoch,
    pending_appended,
    pending_head,
    pending_set,
    rec_at,
    with_rec,
    with_rec_popped,
    with_rec_queued,
)

__all__ = [
    "Outcome",
    "Rejection",
    "TryPutResult",
    "store_put",
    "put",
    "try_put",
    "abort_put",
    "put_step",
    "put_retry",
    "acquire",
    "get",
    "release",
    "ack",
    "fail",
    "dead_letter",
    "extend",
    "reclaim_expired",
    "close",
    "tick",
    "scrub",
    "drop",
    "scrub_intent",
    "restart_lossy",
    "recover",
    "lease_state",
    "expired",
    "allowed_acquires",
    "find",
    "rec_of",
    "is_live",
    "lease_deadline",
    "pending_count",
    "known_count",
    "outstanding_count",
    "is_drained",
    "health",
    "Health",
]


class Rejection(NamedTuple):
    kind: str
    message: str


class Outcome(NamedTuple):
    state: State
    value: Any
    error: Rejection | None


class TryPutResult(NamedTuple):
    """One step of ``put_blocks_until_below``: whether the ref was enqueued,
    and the callbacks fired on the way (``"pause"``/``"resume"``)."""

    enqueued: bool
    events: tuple[str, ...]


class Health(NamedTuple):
    """``StoreHealth`` as the model sees it."""

    resident_bytes: int
    capacity_bytes: int | None
    sample_count: int
    high_watermark_hit: bool
    low_watermark_hit: bool


# The NamedTuples the hot paths build, without the Python-level __new__ frame
# (the same objects: ``_outcome((state, value, error)) == Outcome(state, value, error)``).
_outcome = functools.partial(tuple.__new__, Outcome)
_rec = functools.partial(tuple.__new__, Rec)
_lease = functools.partial(tuple.__new__, ModelLease)
_deadline = attrgetter("deadline")


# -- reading the state ------------------------------------------------------


def find(state: State, sample_id: str) -> int:
    """Index of ``sample_id`` in ``state.ids``, or -1."""
    return index_of(state, sample_id)


def rec_of(state: State, sample_id: str) -> Rec | None:
    i = index_of(state, sample_id)
    return rec_at(state, i) if i >= 0 else None


def is_live(state: State, lease: ModelLease) -> bool:
    """Whether ``lease`` is the sample's live lease (same incarnation and
    delivery, of the queue's current epoch)."""
    _require_lease(lease, "is_live")
    return _live_index(state, lease) >= 0


def _live_index(state: State, lease: ModelLease) -> int:
    """The index in ``ids`` of ``lease``'s sample when ``lease`` is live
    (``is_live``), else -1: the calls that take a lease look it up once,
    through ``_live_at``."""
    sid = lease.sample_id
    if state._n <= CHUNK:  # (the ids fit one chunk: a scan in C, no call)
        ids = state.ids
        if sid not in ids:
            return -1
        i = ids.index(sid)
        rec = state.recs[i]
    else:
        i = index_of(state, sid)
        if i < 0:
            return -1
        rec = rec_at(state, i)
    if (
        rec.status == LEASED
        and rec.incarnation == lease.incarnation
        and rec.redeliveries == lease.redelivery_count
        and epoch_generation(lease.epoch) == state.epoch
    ):
        return i
    return -1


# What ack, fail, dead_letter and extend ask: the same function, under a name
# of its own, so that a mutant of the model (refqueue.spec_check.mutants)
# patches the actions' liveness and leaves ``is_live``, which the invariants
# import, as it is.
_live_at = _live_index


def lease_deadline(state: State, lease: ModelLease) -> float | None:
    """The live lease's deadline, or None when the lease is stale."""
    _require_lease(lease, "lease_deadline")
    return rec_of(state, lease.sample_id).deadline if is_live(state, lease) else None  # type: ignore[union-attr]


def allowed_acquires(cfg: Config, state: State) -> tuple[str, ...]:
    """The sample ids an ``acquire`` may return now: the head of ``pending``
    for a FIFO backend, any pending id for one that delivers in any order."""
    if not state._pn:
        return ()
    return (pending_head(state),) if cfg.fifo else state.pending


def pending_count(state: State) -> int:
    return state._pn


def known_count(state: State) -> int:
    """``len(state.ids)``: how many sample ids the state holds a record of."""
    n = state._n
    return n if n >= 0 else len(state.ids)


def outstanding_count(state: State) -> int:
    return sum(1 for r in state.recs if r.status == LEASED)


def is_drained(state: State) -> bool:
    """Closed, nothing pending and nothing outstanding (D3)."""
    return state.closed and not state._pn and outstanding_count(state) == 0


def health(cfg: Config, state: State) -> Health:
    """The store's health: counters only, flags against the *store's* watermarks."""
    return Health(
        resident_bytes=state.resident_bytes,
        capacity_bytes=cfg.capacity_bytes,
        sample_count=state.resident_count,
        high_watermark_hit=cfg.store_high is not None and state.resident_bytes >= cfg.store_high,
        low_watermark_hit=cfg.store_low is not None and state.resident_bytes <= cfg.store_low,
    )


# -- helpers that build new states -------------------------------------------


def _reject(state: State, kind: str, message: str) -> Outcome:
    return Outcome(state, None, Rejection(kind, message))


def _with_rec(state: State, i: int, rec: Rec, **changes: Any) -> State:
    """``state`` with ``recs[i]`` replaced by ``rec`` and the other fields in
    ``changes`` (not ``ids`` or ``recs``).  Shares what it does not change
    (``refqueue.model.state.CHUNK``)."""
    t = with_rec(state, i, rec)
    for name, value in changes.items():
        if name == "pending":
            pending_set(t, value if type(value) is tuple else tuple(value))
        else:
            setattr(t, name, value)
    return t


def _completed(cfg: Config, state: State, sample_id: str) -> tuple[str, ...]:
    if cfg.dedup_window == 0:
        return state.completed
    return (state.completed + (sample_id,))[-cfg.dedup_window :]


def _finish(cfg: Config, state: State, i: int, status: str, reason: str | None) -> State:
    """Move sample ``i`` to a terminal status and scrub its data (D2), or, in
    a deployment (``cfg.two_step_ack``), record a scrub intent for it in the
    same step and leave the data resident until ``scrub_intent`` (D9)."""
    rec = rec_at(state, i)
    if cfg.two_step_ack:
        sid = id_at(state, i)
        intents = state.intents if sid in state.intents else tuple(sorted(state.intents + (sid,)))
        return _with_rec(
            state,
            i,
            rec._replace(status=status, deadline=None),
            dead=state.dead + ((sid, reason),) if status == DEAD else state.dead,
            completed=_completed(cfg, state, sid),
            intents=intents,
        )
    new = _rec((status, rec.incarnation, rec.deliveries, rec.redeliveries, None, False, rec.nbytes))
    # (the fields set one by one on the fresh state: the hot path of every ack)
    t = with_rec(state, i, new)
    if rec.resident:
        t.resident_bytes = state.resident_bytes - rec.nbytes
        t.resident_count = state.resident_count - 1
    if status == DEAD:
        t.dead = state.dead + ((id_at(state, i), reason),)
    if cfg.dedup_window:
        t.completed = _completed(cfg, state, id_at(state, i))
    return t


def _requeue(cfg: Config, state: State, i: int) -> State:
    """A leased sample comes back (fail or reclaim): pending again with one
    more redelivery, or dead-lettered once it was delivered max_deliveries times."""
    rec = rec_at(state, i)
    if cfg.max_deliveries is not None and rec.deliveries >= cfg.max_deliveries:
        state = _with_rec(state, i, rec._replace(redeliveries=rec.redeliveries + 1))
        return _finish(cfg, state, i, DEAD, MAX_DELIVERIES_REASON)
    new = _rec((PENDING, rec.incarnation, rec.deliveries, rec.redeliveries + 1, None, rec.resident, rec.nbytes))
    return with_rec_queued(state, i, new)


def _bad_lease(lease: object) -> bool:
    """Not a ``ModelLease`` whose epoch and sample id are strs (the fields
    the model looks up and compares by hash)."""
    return not isinstance(lease, ModelLease) or type(lease.epoch) is not str or type(lease.sample_id) is not str


def _require_lease(lease: object, call: str) -> None:
    """For the reads that take a lease: a TypeError naming a value that is not one."""
    if _bad_lease(lease):
        raise TypeError(f"{call} needs a ModelLease with str epoch and sample_id, got {lease!r}; pass what acquire returned")


def _check_lease(cfg: Config, state: State, lease: object, call: str) -> Outcome | None:
    if _bad_lease(lease):
        return _reject(state, "invalid", f"{call} needs a lease, got {lease!r}; pass what acquire returned")
    assert isinstance(lease, ModelLease)
    if lease.epoch != cfg.epoch:
        n = epoch_generation(lease.epoch)
        if not (0 < n <= state.epoch and lease.epoch == lease_epoch(cfg, n)):  # not one of this queue's epochs
            return _reject(
                state,
                "foreign",
                f"{call} got a lease of queue epoch {lease.epoch!r}, but this queue's epoch is "
                f"{lease_epoch(cfg, state.epoch)!r}; hand a lease back to the queue that issued it",
            )
    return None


def _check_sample_id(state: State, sample_id: object, call: str) -> Outcome | None:
    if not isinstance(sample_id, str) or not sample_id:
        return _reject(state, "invalid", f"{call} needs a non-empty sample_id str, got {sample_id!r}")
    return None


def _check_positive(state: State, value: object, call: str) -> Outcome | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return _reject(
            state,
            "invalid",
            f"{call} needs a finite number of seconds > 0, got {value!r}; pass a positive duration",
        )
    return None


def _check_put(cfg: Config, state: State, sample_id: object, call: str) -> Outcome | None:
    bad = _check_sample_id(state, sample_id, call)
    if bad is not None:
        return bad
    return _check_put_at(cfg, state, sample_id, call, index_of(state, sample_id))  # type: ignore[arg-type]


def _check_put_at(cfg: Config, state: State, sample_id: str, call: str, i: int) -> Outcome | None:
    """``_check_put`` past the sample id's own check, given its index ``i``
    in ``ids`` (-1: unknown), which the put goes on to use."""
    if state.closed:
        return _reject(state, "closed", f"{call}({sample_id!r}) after close(); the queue takes no more refs")
    rec = rec_at(state, i) if i >= 0 else None
    if rec is not None and rec.status in LIVE:
        return _reject(
            state,
            "duplicate",
            f"{call}({sample_id!r}): that sample is already {rec.status}; "
            f"put it again only after its lease is acked or it is dead-lettered",
        )
    if cfg.dedup_window and sample_id in state.completed:
        return _reject(
            state,
            "replay",
            f"{call}({sample_id!r}): that sample completed within the last {cfg.dedup_window} "
            f"(dedup_window); a restarted producer is replaying it, skip it",
        )
    return None


# -- the actions, in the spec's order ------------------------------------------


def store_put(cfg: Config, state: State, sample_id: str, nbytes: int) -> Outcome:
    """FeatureStore.put: the producer writes a sample's data.

    Enabled: the data is not already resident and fits under the store's caps.
    Effect: the data is resident (``resident_bytes += nbytes``); a sample the
    queue does not hold (new, or completed earlier) becomes STORED, ready to be
    put as a new incarnation.
    """
    bad = _check_sample_id(state, sample_id, "store_put")
    if bad is not None:
        return bad
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        return _reject(state, "invalid", f"store_put needs nbytes as an int >= 0, got {nbytes!r}")
    i = index_of(state, sample_id)
    rec = rec_at(state, i) if i >= 0 else None
    if rec is not None and rec.resident:
        return _reject(
            state,
            "duplicate",
            f"store_put({sample_id!r}): its data is already resident; a sample id is written once "
            f"per incarnation",
        )
    if cfg.capacity_bytes is not None and state.resident_bytes + nbytes > cfg.capacity_bytes:
        return _reject(
            state,
            "capacity",
            f"store_put({sample_id!r}) of {nbytes} bytes would hold {state.resident_bytes + nbytes} "
            f"bytes, over capacity_bytes={cfg.capacity_bytes}; ack samples or raise the cap",
        )
    if cfg.max_samples is not None and state.resident_count + 1 > cfg.max_samples:
        return _reject(
            state,
            "capacity",
            f"store_put({sample_id!r}) would hold {state.resident_count + 1} samples, over "
            f"max_samples={cfg.max_samples}; ack samples or raise the cap",
        )
    if rec is None:
        t = _clone(state)
        appended_id(t, state, sample_id, Rec(STORED, 0, 0, 0, None, True, nbytes))
    else:
        if rec.status in LIVE:
            new = rec._replace(resident=True, nbytes=nbytes)
        else:  # a completed (or dropped) id stored again: the next put makes a new incarnation of it
            new = Rec(STORED, rec.incarnation, 0, 0, None, True, nbytes)
        t = with_rec(state, i, new)
    t.resident_bytes = state.resident_bytes + nbytes
    t.resident_count = state.resident_count + 1
    return Outcome(t, None, None)


def put(cfg: Config, state: State, sample_id: str) -> Outcome:
    """SampleRefQueue.put: enqueue a ref without looking at backpressure.

    Enabled: the queue is open, the id is neither pending nor leased, and
    (with ``dedup_window``) it did not complete recently (D5).
    Effect: a new incarnation of the sample is appended to ``pending`` with
    zero deliveries.
    """
    if type(sample_id) is not str or not sample_id:  # (the usual id passes without a call)
        bad = _check_sample_id(state, sample_id, "put")
        if bad is not None:
            return bad
    i = index_of(state, sample_id)
    rec = rec_at(state, i) if i >= 0 else None
    if state.closed or rec is not None and rec.status in LIVE or cfg.dedup_window:
        bad = _check_put_at(cfg, state, sample_id, "put", i)
        if bad is not None:
            return bad
    if rec is None:
        t = _clone(state)
        appended_id(t, state, sample_id, Rec(PENDING, 1, 0, 0, None, False, 0))
        pending_appended(t, state, sample_id)
        return Outcome(t, None, None)
    new = _rec((PENDING, rec.incarnation + 1, 0, 0, None, rec.resident, rec.nbytes))
    return _outcome((with_rec_queued(state, i, new), None, None))


def _parked_without(state: State, sample_id: str) -> tuple[tuple[str, int], ...]:
    return tuple(p for p in state.parked if p[0] != sample_id)


def _has_work(state: State) -> bool:
    """Something is pending or leased: a consumer can still free bytes."""
    return bool(state._pn) or any(r.status == LEASED for r in state.recs)


def try_put(cfg: Config, state: State, sample_id: str, nbytes: int = 0) -> Outcome:
    """One step of SampleRefQueue.put_blocks_until_below (D4, D8).

    ``nbytes`` is the ref's ``estimated_bytes``.  Enabled: as ``put`` (a bad
    put is rejected before any waiting, and changes nothing).
    Effect: against the *effective* residency ``max(0, resident_bytes -
    parked)``, where ``parked`` counts the refs whose producers wait in a
    blocking put, this ref's own bytes included (D8),
    ``paused' = paused ? ~(effective <= low) : (effective >= high)``; a change
    fires ``"pause"`` or ``"resume"`` once.  The ref is enqueued as by ``put``
    (and leaves ``parked``) when not paused afterwards, **or when the queue
    holds no work** (nothing pending, nothing leased: no consumer could ever
    free a byte), in which case the pause stands.  Otherwise the producer
    waits: the ref joins ``parked``.  With no watermarks it never pauses.
    """
    bad = _check_put(cfg, state, sample_id, "put_blocks_until_below")
    if bad is not None:
        return bad
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        return _reject(state, "invalid", f"put_blocks_until_below needs nbytes as an int >= 0, got {nbytes!r}")
    others = _parked_without(state, sample_id)
    paused = state.paused
    events: tuple[str, ...] = ()
    if cfg.high is not None:
        effective = effective_residency(state.resident_bytes, sum(b for _, b in others) + nbytes)
        after = next_paused(paused, effective, cfg.high, cfg.low)
        if after != paused:
            paused, events = after, (("pause",) if after else ("resume",))
    if paused and _has_work(state):
        parked = tuple(sorted(others + ((sample_id, nbytes),)))
        if paused != state.paused or parked != state.parked:
            state = state._replace(paused=paused, parked=parked)
        return Outcome(state, TryPutResult(False, events), None)
    if paused != state.paused or others != state.parked:
        state = state._replace(paused=paused, parked=others)
    return Outcome(put(cfg, state, sample_id).state, TryPutResult(True, events), None)


def abort_put(cfg: Config, state: State, sample_id: str) -> Outcome:
    """A blocking put returns without enqueueing its ref (``PutAborted``,
    ``QueueClosed``, or its producer died): the ref leaves ``parked`` (D8).

    Enabled: always; nothing changes for a ref that is not parked.
    """
    parked = _parked_without(state, sample_id)
    if parked == state.parked:
        return Outcome(state, None, None)
    return Outcome(state._replace(parked=parked), None, None)


def put_step(cfg: Config, state: State, sample_id: str, nbytes: int = 0) -> Outcome:
    """``put_blocks_until_below(ref, abort_when=lambda: True)``: exactly one
    ``try_put`` step, and the call returns either way (so the ref is never
    left parked).  The value is the step's ``TryPutResult``."""
    out = try_put(cfg, state, sample_id, nbytes)
    if out.error is not None or out.value.enqueued:
        return out
    return Outcome(abort_put(cfg, out.state, sample_id).state, out.value, None)


def put_retry(cfg: Config, state: State, sample_id: str) -> Outcome:
    """A put re-sent after its reply was lost, its first attempt having
    taken effect (D9; the spec's ``PutRetry``).

    The queue recognises the ref (the Redis backend remembers the refs it
    enqueued), so the retry changes nothing, whatever became of the sample
    since: pending, leased, acked and scrubbed, dead-lettered, or forgotten
    by a lossy restart; the value is True ("already put").  A queue that took
    the retry for a new put would enqueue a completed sample again, its data
    maybe gone.  Rejected as ``"invalid"`` when no put of the sample took
    effect (its data is only STORED, or unknown): that is a first put
    (``try_put``).
    """
    bad = _check_sample_id(state, sample_id, "put_retry")
    if bad is not None:
        return bad
    rec = rec_of(state, sample_id)
    if rec is None or rec.status == STORED:
        return _reject(
            state,
            "invalid",
            f"put_retry({sample_id!r}): no put of it took effect (its data is "
            f"{'unknown' if rec is None else 'only stored'}); put it with try_put or put",
        )
    return Outcome(state, True, None)


def acquire(cfg: Config, state: State, choose: str | None = None) -> Outcome:
    """SampleRefQueue.acquire: lease the next pending ref, or None.

    Enabled: always.  With nothing pending the value is None (terminal only
    when ``is_drained``: D3) and nothing changes.  Otherwise the head of
    ``pending`` (or ``choose``, one of ``allowed_acquires``, for a backend that
    is not FIFO) becomes LEASED with deadline ``now + visibility_timeout`` and
    one more delivery; the value is its ``ModelLease``.
    """
    if not state._pn:
        return Outcome(state, None, None)
    if choose is None:
        sample_id = pending_head(state)
        rest = None
    else:
        if choose not in allowed_acquires(cfg, state):
            return _reject(
                state,
                "invalid",
                f"acquire may return one of {list(allowed_acquires(cfg, state))} now, not {choose!r}",
            )
        sample_id = choose
        k = state.pending.index(choose)
        rest = state.pending[:k] + state.pending[k + 1 :]
    i = index_of(state, sample_id)
    rec = rec_at(state, i)
    new = _rec((
        LEASED, rec.incarnation, rec.deliveries + 1, rec.redeliveries,
        state.now + cfg.visibility_timeout, rec.resident, rec.nbytes,
    ))
    epoch = state.epoch
    lease = _lease((lease_epoch(cfg, epoch) if epoch else cfg.epoch, sample_id, rec.incarnation, rec.redeliveries))
    if rest is None:
        t = with_rec_popped(state, i, new)
    else:
        t = with_rec(state, i, new)
        pending_set(t, rest)
    return _outcome((t, lease, None))


def get(cfg: Config, state: State, sample_id: str) -> Outcome:
    """FeatureStore.get: materialise a sample's data.

    Enabled: always; a sample whose data is not resident is rejected as
    ``"missing"``.  Effect: none on the state (a holder's copy stays valid
    after a later scrub: D2); the value is True.
    """
    bad = _check_sample_id(state, sample_id, "get")
    if bad is not None:
        return bad
    rec = rec_of(state, sample_id)
    if rec is None or not rec.resident:
        return _reject(
            state,
            "missing",
            f"get({sample_id!r}): its data is not in the store (never put, or scrubbed after its "
            f"ack or dead-lettering); a stale lease holder should drop the sample",
        )
    return Outcome(state, True, None)


def release(cfg: Config, state: State, sample_id: str) -> Outcome:
    """FeatureStore.release: the holder is done with what ``get`` returned.

    Enabled: always; idempotent.  Effect: none on the state.  A release never
    scrubs, whoever calls it and whenever (D2); only a live ack does.
    """
    bad = _check_sample_id(state, sample_id, "release")
    if bad is not None:
        return bad
    return Outcome(state, None, None)


def ack(cfg: Config, state: State, lease: ModelLease) -> Outcome:
    """SampleRefQueue.ack: the consumer finished the sample.

    Enabled: always (a foreign lease is rejected).  Live lease: the sample is
    ACKED, its data scrubbed from the store (D2), and it joins the dedup
    window; value True.  Stale lease (reclaimed, acked, superseded): nothing
    changes; value False (D1).
    """
    # (the usual lease passes without a call)
    if type(lease) is not ModelLease or lease.epoch != cfg.epoch or type(lease.sample_id) is not str:
        bad = _check_lease(cfg, state, lease, "ack")
        if bad is not None:
            return bad
    i = _live_at(state, lease)
    if i < 0:
        return Outcome(state, False, None)
    return _outcome((_finish(cfg, state, i, ACKED, None), True, None))


def fail(cfg: Config, state: State, lease: ModelLease) -> Outcome:
    """SampleRefQueue.fail: the consumer gives the sample back for a retry.

    Enabled: always (a foreign lease is rejected).  Live lease: the sample is
    appended to ``pending`` with one more redelivery, or dead-lettered with
    reason ``"max_deliveries"`` once delivered ``max_deliveries`` times (D7);
    its data is not scrubbed unless dead-lettered; value True.  Stale lease:
    nothing changes; value False (D1).
    """
    if type(lease) is not ModelLease or lease.epoch != cfg.epoch or type(lease.sample_id) is not str:
        bad = _check_lease(cfg, state, lease, "fail")
        if bad is not None:
            return bad
    i = _live_at(state, lease)
    if i < 0:
        return Outcome(state, False, None)
    return _outcome((_requeue(cfg, state, i), True, None))


def dead_letter(cfg: Config, state: State, lease: ModelLease, reason: str) -> Outcome:
    """SampleRefQueue.dead_letter: the consumer declares the sample poison.

    Enabled: always (a foreign lease or an empty reason is rejected).  Live
    lease: the sample is DEAD, its data scrubbed, ``(sample_id, reason)``
    appended to the dead letters; value True.  Stale lease: value False.
    """
    bad = _check_lease(cfg, state, lease, "dead_letter")
    if bad is not None:
        return bad
    if not isinstance(reason, str) or not reason:
        return _reject(state, "invalid", f"dead_letter needs a non-empty reason str, got {reason!r}")
    i = _live_at(state, lease)
    if i < 0:
        return Outcome(state, False, None)
    return Outcome(_finish(cfg, state, i, DEAD, reason), True, None)


def extend(cfg: Config, state: State, lease: ModelLease, seconds: float) -> Outcome:
    """SampleRefQueue.extend: a heartbeat for a long step (D7).

    Enabled: always (a foreign lease or a non-positive duration is rejected).
    Live lease (expired but not yet reclaimed included): its deadline becomes
    ``now + seconds``; value True.  Stale lease: nothing changes; value False.
    """
    bad = _check_lease(cfg, state, lease, "extend") or _check_positive(state, seconds, "extend")
    if bad is not None:
        return bad
    i = _live_at(state, lease)
    if i < 0:
        return Outcome(state, False, None)
    r = rec_at(state, i)
    new = _rec((r.status, r.incarnation, r.deliveries, r.redeliveries, state.now + seconds, r.resident, r.nbytes))
    t = with_rec(state, i, new)
    return _outcome((t, True, None))


# The state ``expired`` last answered for, and its answer.  A reclaim asks
# it twice of one state: the trace checker, for the samples the log names,
# then ``reclaim_expired``; a scan of every record is its whole cost.
_expired_memo: tuple[State | None, tuple[int, ...]] = (None, ())


def expired(state: State) -> list[int]:
    """Indices of leased samples whose deadline has passed (``deadline <= now``),
    in reclaim order: by deadline, ties by sample id."""
    global _expired_memo
    last, answer = _expired_memo
    if last is state:  # (a state never changes: the same answer)
        return list(answer)
    now = state.now
    recs = state.recs
    # the leased records picked out in C (most records have no deadline), then tested
    leased = compress(count(), map(is_not, map(_deadline, recs), repeat(None)))
    hits = [i for i in leased if is_due(recs[i].deadline, now)]
    if len(hits) > 1:
        hits.sort(key=lambda i: (state.recs[i].deadline, state.ids[i]))
    _expired_memo = (state, tuple(hits))
    return hits


def reclaim_expired(cfg: Config, state: State) -> Outcome:
    """SampleRefQueue.reclaim_expired: take back orphaned leases.

    Enabled: always.  Effect: every lease with ``deadline <= now`` is requeued
    as by ``fail`` (or dead-lettered), in order of deadline, ties by sample
    id; the value is how many leases were taken back.
    """
    hits = expired(state)
    for i in hits:
        state = _requeue(cfg, state, i)
    return Outcome(state, len(hits), None)


def close(cfg: Config, state: State) -> Outcome:
    """SampleRefQueue.close: no more puts; what is pending or leased still drains.

    Enabled: always; idempotent.
    """
    if state.closed:
        return Outcome(state, None, None)
    closed = _clone(state)
    closed.closed = True
    return Outcome(closed, None, None)


def tick(cfg: Config, state: State, seconds: float = 1) -> Outcome:
    """Time passes (an environment step; the model has no other clock).

    Enabled: always (a non-positive duration is rejected).
    """
    bad = _check_positive(state, seconds, "tick")
    if bad is not None:
        return bad
    later = _clone(state)
    later.now = state.now + seconds
    return _outcome((later, None, None))


def scrub(cfg: Config, state: State, sample_id: str) -> Outcome:
    """FeatureStore scrub: the store drops a sample's data.

    The queue calls it when a live ack commits or a sample is dead-lettered
    (both do it inside ``_finish``); on its own it is the action a broken store
    takes (``spec/MCReleaseScrubs``), and ``NoScrubBeforeAck`` then flags it.
    """
    bad = _check_sample_id(state, sample_id, "scrub")
    if bad is not None:
        return bad
    i = find(state, sample_id)
    if i < 0 or not rec_at(state, i).resident:
        return Outcome(state, None, None)
    rec = rec_at(state, i)
    return Outcome(
        _with_rec(
            state,
            i,
            rec._replace(resident=False),
            resident_bytes=state.resident_bytes - rec.nbytes,
            resident_count=state.resident_count - 1,
        ),
        None,
        None,
    )



def drop(cfg: Config, state: State, sample_id: str) -> Outcome:
    """Collect an orphan: the data of a sample that was stored but never
    enqueued (its producer died, or its put was rejected) is scrubbed by
    whoever owns it (``store.scrub(ref)``: the restarted producer, an
    operator).  Enabled: the sample is STORED and not parked in a blocking
    put; otherwise rejected as ``"invalid"``.  Effect: the data leaves the
    store and the sample is DROPPED (it may be stored and put again).
    """
    bad = _check_sample_id(state, sample_id, "drop")
    if bad is not None:
        return bad
    i = find(state, sample_id)
    if i < 0 or rec_at(state, i).status != STORED or any(p[0] == sample_id for p in state.parked):
        return _reject(state, "invalid", f"drop({sample_id!r}): only a stored sample no producer is putting is an orphan")
    rec = rec_at(state, i)
    return Outcome(
        _with_rec(
            state,
            i,
            rec._replace(status=DROPPED, resident=False),
            resident_bytes=state.resident_bytes - rec.nbytes,
            resident_count=state.resident_count - 1,
        ),
        None,
        None,
    )


# -- a deployment over two systems (D9) ------------------------------------------


def scrub_intent(cfg: Config, state: State, sample_id: str) -> Outcome:
    """The second step of a two-step completion (``cfg.two_step_ack``; the
    spec's ``ScrubIntent``): the data of a sample whose scrub intent was
    recorded leaves the store (a compare-and-delete by the exact ref) and
    the intent is cleared.  Taken by the committing client, or by anyone
    later (the reclaimer loop's collection of intents, ``gc()``).

    Enabled: always, idempotent: with an intent recorded the value is True;
    without one (never completed, or scrubbed already) nothing changes and
    the value is False.
    """
    bad = _check_sample_id(state, sample_id, "scrub_intent")
    if bad is not None:
        return bad
    if sample_id not in state.intents:
        return Outcome(state, False, None)
    i = find(state, sample_id)
    rec = rec_at(state, i)
    intents = tuple(s for s in state.intents if s != sample_id)
    if not rec.resident:  # gone already: the delete finds nothing, only the intent is cleared
        return Outcome(state._replace(intents=intents), True, None)
    return Outcome(
        _with_rec(
            state,
            i,
            rec._replace(resident=False),
            resident_bytes=state.resident_bytes - rec.nbytes,
            resident_count=state.resident_count - 1,
            intents=intents,
        ),
        True,
        None,
    )


def restart_lossy(cfg: Config, state: State) -> Outcome:
    """The queue server restarts and its state is lost; the loss is detected
    and the queue moves to a new epoch (D9; the spec's ``RestartLossy``).

    Enabled: always (the closed world restarts only an open queue).  Every
    lease carries its epoch (``lease_epoch``), so no lease of the old one is
    live again and none is reused although the queue's counters restart.
    The pending and leased samples and those whose scrub intent was recorded
    are forgotten: LOST, with incarnation and delivery counts 0 and their
    data still resident (the store is another system), awaiting ``recover``;
    ``pending``, the intents and the dedup window are empty.  Kept: the
    clock, the closed flag, the pause state and parked refs (the producers'
    blocking puts recompute them), and completed, scrubbed records.  A
    *durable* restart has no function: nothing changes, and the calls it
    interrupts are lost replies.
    """
    forgotten = set(state.intents)
    forgotten.update(sid for sid, r in zip(state.ids, state.recs) if r.status in LIVE)
    recs = tuple(
        Rec(LOST, 0, 0, 0, None, r.resident, r.nbytes) if sid in forgotten else r
        for sid, r in zip(state.ids, state.recs)
    )
    return Outcome(
        state._replace(pending=(), recs=recs, completed=(), intents=(), epoch=state.epoch + 1), None, None
    )


def recover(cfg: Config, state: State, sample_id: str) -> Outcome:
    """An operator re-puts a sample a lossy restart made the queue forget, as
    a new incarnation of the new epoch (D9; the spec's ``Recover``): appended
    to ``pending`` with zero deliveries; its data was kept.  Value True.

    Rejected as ``"invalid"`` unless the sample is LOST, as ``"closed"``
    after close (the closed world recovers before anyone closes).
    """
    bad = _check_sample_id(state, sample_id, "recover")
    if bad is not None:
        return bad
    i = find(state, sample_id)
    if i < 0 or rec_at(state, i).status != LOST:
        return _reject(
            state,
            "invalid",
            f"recover({sample_id!r}): only a sample a lossy restart made the queue forget (lost) is "
            f"recovered; put others with put",
        )
    if state.closed:
        return _reject(state, "closed", f"recover({sample_id!r}) after close(); recover before closing the queue")
    rec = rec_at(state, i)
    new = rec._replace(status=PENDING, incarnation=rec.incarnation + 1, deliveries=0, redeliveries=0, deadline=None)
    return Outcome(with_rec_queued(state, i, new), True, None)


def lease_state(state: State, lease: ModelLease) -> str:
    """Where ``lease`` stands, for a caller whose reply was lost (D9):
    ``"live"`` (a retry would take effect), ``"acked"`` (an ack of this very
    delivery committed), ``"other"`` (its sample is leased again, to someone
    else), ``"pending"`` (its sample waits for redelivery) or ``"gone"`` (its
    sample completed otherwise, was put again as a new incarnation or
    forgotten, or the lease is of an earlier epoch).  A read: the state does not change."""
    _require_lease(lease, "lease_state")
    if is_live(state, lease):
        return "live"
    rec = rec_of(state, lease.sample_id)
    if rec is None or epoch_generation(lease.epoch) != state.epoch or rec.incarnation != lease.incarnation:
        return "gone"
    if rec.status == ACKED and rec.redeliveries == lease.redelivery_count:
        return "acked"
    if rec.status == LEASED:
        return "other"
    return "pending" if rec.status == PENDING else "gone"
