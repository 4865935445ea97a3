"""The state of the reference model: immutable tuples that hash and compare by value.

Names follow ``spec/SampleRefQueue.tla``: one ``Rec`` per sample the model has
seen (its status, incarnation, delivery counts, lease deadline and whether its
data is resident in the store), the FIFO ``pending`` sequence, the clock
``now``, the ``closed`` and ``paused`` flags, the store's counters, the
dead-letter list and the dedup window; for a deployment over two systems
(D9), the recorded scrub intents and the queue's epoch.

Everything is a ``NamedTuple`` of ints, strings, bools and tuples, so two equal
states hash equal (Porcupine's ``Equal``/``Hash`` come free) and a state can be
a dict key in the explorer.  The model never reads a machine clock and imports
neither torch nor threading.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

__all__ = [
    "STORED",
    "PENDING",
    "LEASED",
    "ACKED",
    "DEAD",
    "DROPPED",
    "LOST",
    "STATUSES",
    "LIVE",
    "DONE",
    "MAX_DELIVERIES_REASON",
    "Config",
    "ModelLease",
    "Rec",
    "State",
    "make_config",
    "initial_state",
    "lease_epoch",
    "epoch_generation",
]

# Sample statuses (TLA+: the strings of the same spelling).
STORED = "stored"  # data written to the store, ref not (yet) enqueued
PENDING = "pending"  # enqueued, waiting for an acquire
LEASED = "leased"  # handed out under a live lease
ACKED = "acked"  # terminal: a live ack committed, data scrubbed (two_step_ack: or its scrub intended)
DEAD = "dead"  # terminal: dead-lettered, data scrubbed (or intended), ref + reason listed
DROPPED = "dropped"  # an orphan (stored, never enqueued, its producer gone) whose data was scrubbed
LOST = "lost"  # forgotten by a lossy restart, its data resident, awaiting the operator's recover (D9)
STATUSES = frozenset({STORED, PENDING, LEASED, ACKED, DEAD, DROPPED, LOST})
LIVE = frozenset({PENDING, LEASED})  # a put of the same id is a duplicate
DONE = frozenset({ACKED, DEAD})  # completed: counted by the dedup window

# The reason recorded when a sample is dead-lettered for reaching max_deliveries.
MAX_DELIVERIES_REASON = "max_deliveries"


class Config(NamedTuple):
    """Fixed parameters of one model run; build it with ``make_config``.

    ``high``/``low`` are the *effective* watermarks (the queue's override where
    given, else the store's own); ``store_high``/``store_low`` are the store's,
    which decide ``StoreHealth.high_watermark_hit``/``low_watermark_hit``.
    ``two_step_ack`` is a deployment over two systems (D9, the spec's
    ``TwoStepAck``): an ack or dead-letter commits with a scrub intent and
    leaves the data resident until ``scrub_intent``; off (the in-process
    queue), it scrubs in the same step.
    """

    visibility_timeout: float
    high: int | None
    low: int | None
    store_high: int | None
    store_low: int | None
    capacity_bytes: int | None
    max_samples: int | None
    max_deliveries: int | None
    dedup_window: int
    fifo: bool
    epoch: str
    two_step_ack: bool = False


class ModelLease(NamedTuple):
    """A lease's identity: which queue, which sample, which incarnation, which delivery.

    ``redelivery_count`` is the number of earlier deliveries of this
    incarnation, so it also numbers the delivery.  Identity is the whole
    tuple: a copy or a JSON round trip of a lease is the same lease (D1).
    ``epoch`` names the queue and its epoch: ``lease_epoch(cfg, n)`` after
    the queue's n-th detected loss (D9), so no lease identity is reused.
    The deadline is not part of the identity (``extend`` moves it); read it
    from the state with ``lease_deadline``.
    """

    epoch: str
    sample_id: str
    incarnation: int
    redelivery_count: int


class Rec(NamedTuple):
    """What the model knows of one sample id.

    Invariants (checked by ``refqueue.model.invariants``):
    ``status in (STORED, PENDING, LEASED, LOST) => resident`` (NoScrubBeforeAck),
    ``status in (ACKED, DEAD) and resident => a scrub intent is recorded``
    (NothingResidentAfterAck),
    ``deadline is not None <=> status == LEASED``,
    ``deliveries == redeliveries + (status == LEASED)`` for a live sample
    (RedeliveryCountsDeliveries).
    """

    status: str
    incarnation: int  # 0 until the first put; +1 per put of this id
    deliveries: int  # acquires of this incarnation
    redeliveries: int  # fails + reclaims of this incarnation
    deadline: float | None  # the live lease's deadline, only while LEASED
    resident: bool  # the store holds this sample's data
    nbytes: int  # the data's size (estimated_bytes of the ref)


class State(NamedTuple):
    """The whole observable state of a queue bound to its store.

    ``ids``/``recs`` are parallel: ``recs[i]`` describes ``ids[i]``; ids are
    kept in the order they were first seen, never removed.  ``intents`` and
    ``epoch`` matter only in a deployment (D9); their defaults are the
    in-process queue's.
    """

    now: float
    closed: bool
    paused: bool
    pending: tuple[str, ...]  # PENDING ids in delivery order (FIFO)
    ids: tuple[str, ...]
    recs: tuple[Rec, ...]
    resident_bytes: int  # the store's counter; = sum of resident recs' nbytes
    resident_count: int  # the store's counter; = number of resident recs
    dead: tuple[tuple[str, str], ...]  # (sample_id, reason), in dead-letter order
    completed: tuple[str, ...]  # the last dedup_window completed ids, oldest first
    # Refs whose producers wait in put_blocks_until_below, as (sample_id,
    # nbytes) sorted by id: their bytes are not counted against the
    # watermarks (D8).
    parked: tuple[tuple[str, int], ...] = ()
    # The ids whose scrub intent a two-step completion recorded, sorted: acked
    # or dead-lettered, their data still resident until scrub_intent (D9).
    intents: tuple[str, ...] = ()
    # 0, then one more per detected lossy restart; a lease carries it (lease_epoch).
    epoch: int = 0


def _check_int(name: str, value: object, minimum: int, fix: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{name} must be an int, got {value!r} ({type(value).__name__}); {fix}"
        )
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}; {fix}")


def _check_seconds(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, got {value!r} ({type(value).__name__})")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}; pass a positive number of seconds")


def make_config(
    *,
    visibility_timeout: float = 30.0,
    high_watermark_bytes: int | None = None,
    low_watermark_bytes: int | None = None,
    store_high_watermark_bytes: int | None = None,
    store_low_watermark_bytes: int | None = None,
    capacity_bytes: int | None = None,
    max_samples: int | None = None,
    max_deliveries: int | None = None,
    dedup_window: int = 0,
    fifo: bool = True,
    epoch: str = "model",
    two_step_ack: bool = False,
) -> Config:
    """Validate the parameters and resolve the effective watermark pair (D4).

    The effective high (low) watermark is the queue's override if given, else
    the store's own; the pair must be both set or both unset, with
    ``low < high`` and ``high <= capacity_bytes``.  Raises ``TypeError`` or
    ``ValueError`` naming the value and the fix.
    """
    _check_seconds("visibility_timeout", visibility_timeout)
    for name, value in (
        ("high_watermark_bytes", high_watermark_bytes),
        ("low_watermark_bytes", low_watermark_bytes),
        ("store_high_watermark_bytes", store_high_watermark_bytes),
        ("store_low_watermark_bytes", store_low_watermark_bytes),
    ):
        if value is not None:
            _check_int(name, value, 0, "pass a byte count or None")
    if capacity_bytes is not None:
        _check_int("capacity_bytes", capacity_bytes, 1, "pass a positive byte cap or None")
    if max_samples is not None:
        _check_int("max_samples", max_samples, 1, "pass a positive sample cap or None")
    if max_deliveries is not None:
        _check_int("max_deliveries", max_deliveries, 1, "pass None for no limit or a count >= 1")
    _check_int("dedup_window", dedup_window, 0, "pass 0 to turn deduplication off")
    if not isinstance(fifo, bool):
        raise TypeError(f"fifo must be a bool, got {fifo!r}")
    if not isinstance(epoch, str) or not epoch:
        raise ValueError(f"epoch must be a non-empty str, got {epoch!r}")
    if EPOCH_MARK in epoch:
        raise ValueError(
            f"epoch must not contain {EPOCH_MARK!r} (the model marks a queue's later epochs with it), "
            f"got {epoch!r}; pick another name"
        )
    if not isinstance(two_step_ack, bool):
        raise TypeError(f"two_step_ack must be a bool, got {two_step_ack!r}; pass True or False")
    store_high, store_low = store_high_watermark_bytes, store_low_watermark_bytes
    if (store_high is None) != (store_low is None):
        raise ValueError(
            f"the store watermarks are half set (high={store_high!r}, low={store_low!r}); "
            f"set both or neither"
        )
    if store_high is not None and not store_low < store_high:  # type: ignore[operator]
        raise ValueError(
            f"store low watermark {store_low} must be < store high watermark {store_high}; "
            f"widen the hysteresis band"
        )
    high = high_watermark_bytes if high_watermark_bytes is not None else store_high_watermark_bytes
    low = low_watermark_bytes if low_watermark_bytes is not None else store_low_watermark_bytes
    if (high is None) != (low is None):
        raise ValueError(
            f"the effective watermark pair is half set (high={high!r}, low={low!r}); "
            f"give both high_watermark_bytes and low_watermark_bytes, or configure the store's"
        )
    if high is not None:
        assert low is not None
        if not low < high:
            raise ValueError(
                f"effective low watermark {low} must be < effective high watermark {high} "
                f"(queue override or store default, mixed included); lower low or raise high"
            )
        if capacity_bytes is not None and high > capacity_bytes:
            raise ValueError(
                f"effective high watermark {high} exceeds the store's capacity {capacity_bytes} "
                f"bytes, so the producer could never pause; use high <= {capacity_bytes}"
            )
    return Config(
        visibility_timeout=visibility_timeout,
        high=high,
        low=low,
        store_high=store_high_watermark_bytes,
        store_low=store_low_watermark_bytes,
        capacity_bytes=capacity_bytes,
        max_samples=max_samples,
        max_deliveries=max_deliveries,
        dedup_window=dedup_window,
        fifo=fifo,
        epoch=epoch,
        two_step_ack=two_step_ack,
    )


# What separates a queue's name from the number of its epoch (lease_epoch).
EPOCH_MARK = "#"


def lease_epoch(cfg: Config, epoch: int) -> str:
    """The epoch a lease of the queue's ``epoch`` carries (``ModelLease.epoch``):
    the configured ``cfg.epoch`` until the first detected loss, then
    ``"<cfg.epoch>#<n>"`` after the n-th (D9: no lease identity is reused)."""
    return cfg.epoch if epoch == 0 else f"{cfg.epoch}{EPOCH_MARK}{epoch}"


@functools.lru_cache(maxsize=1 << 10)
def epoch_generation(name: str) -> int:
    """The number of the epoch a lease's ``epoch`` names (0: the first; see ``lease_epoch``)."""
    head, mark, tail = name.rpartition(EPOCH_MARK)
    return int(tail) if mark and head and tail.isdigit() and tail[0] != "0" else 0


def initial_state(now: float = 0) -> State:
    """The empty queue and store at time ``now`` (TLA+: ``Init``)."""
    return State(
        now=now,
        closed=False,
        paused=False,
        pending=(),
        ids=(),
        recs=(),
        resident_bytes=0,
        resident_count=0,
        dead=(),
        completed=(),
    )
