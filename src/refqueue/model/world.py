"""The closed world the explorer and the TLA+ spec walk: one producer, a few
consumers and an environment around the model's queue and store.

The queue's actions (``refqueue.model.actions``) take leases as arguments and
know nothing of who holds them.  To check the protocol exhaustively we also
need the *callers*: a producer that writes each sample to the store and then
blocks in ``put_blocks_until_below``; consumers that acquire, get, release,
ack, fail, extend, crash (a crash drops the lease on the floor and the
consumer restarts empty-handed) and stop when ``acquire`` says the queue is
drained; and an environment that reclaims, closes and lets time pass.  A
consumer keeps a lease after it went stale, so stale acks, fails and releases
are part of every run.

``successors(world, node)`` yields every transition of the world from a node,
labelled with the TLA+ action name and its argument.  Self-loops (a blocked
put step that changes nothing, an extend to the same deadline) are left out:
the TLA+ spec's actions are written with the same enabling conditions.

``anchor_consumer=True`` replaces the consumer's stop rule by the anchor's
(``acquire() is None and is_closed``), to show ``TerminalNoneMeansDrained``
biting (D3).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import NamedTuple

from refqueue.model import actions as A
from refqueue.model.state import STORED, Config, ModelLease, State, initial_state, make_config

__all__ = ["Consumer", "Memo", "Node", "Transition", "World", "make_world", "initial_node", "successors"]


class Consumer(NamedTuple):
    lease: ModelLease | None  # the lease this consumer holds (live or stale)
    holding: bool  # it has data from get() that it has not released
    stopped: bool  # it saw acquire's terminal None and left


IDLE = Consumer(None, False, False)
STOPPED = Consumer(None, False, True)


class Node(NamedTuple):
    """A state of the whole world: the model's state plus the consumers'."""

    state: State
    consumers: tuple[Consumer, ...]


class Transition(NamedTuple):
    action: str  # the TLA+ action name, e.g. "Ack"
    arg: object  # the consumer index or sample id it was taken for (None for the environment)
    node: Node  # the node it leads to
    value: object  # what the model's action returned (a lease, True/False, a count, ...)


class World(NamedTuple):
    """The bounds of one exploration (TLA+: the constants of an MC config)."""

    cfg: Config
    samples: tuple[str, ...]  # produced in this order, each once
    sizes: tuple[int, ...]  # nbytes of each sample
    consumers: int
    horizon: int  # the clock stops at this value
    anchor_consumer: bool


def make_world(
    *,
    samples: int = 3,
    consumers: int = 2,
    max_deliveries: int | None = 2,
    horizon: int = 3,
    visibility_timeout: int = 1,
    high: int | None = 2,
    low: int | None = 1,
    capacity: int | None = None,
    sample_bytes: int = 1,
    anchor_consumer: bool = False,
) -> World:
    """Bounds with validation; every sample has ``sample_bytes`` bytes and the
    store's capacity defaults to all of them (at least the high watermark)."""
    for name, value, minimum in (
        ("samples", samples, 1),
        ("consumers", consumers, 1),
        ("horizon", horizon, 0),
        ("visibility_timeout", visibility_timeout, 1),
        ("sample_bytes", sample_bytes, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    if capacity is None:
        capacity = max(samples * sample_bytes, high or 0)
    if low is not None and sample_bytes > low:
        raise ValueError(
            f"sample_bytes={sample_bytes} exceeds the low watermark {low}: a producer blocked "
            f"with its own sample resident could never resume; use sample_bytes <= low"
        )
    cfg = make_config(
        visibility_timeout=visibility_timeout,
        store_high_watermark_bytes=high,
        store_low_watermark_bytes=low,
        capacity_bytes=capacity,
        max_deliveries=max_deliveries,
    )
    return World(
        cfg=cfg,
        samples=tuple(f"s{i}" for i in range(samples)),
        sizes=(sample_bytes,) * samples,
        consumers=consumers,
        horizon=horizon,
        anchor_consumer=anchor_consumer,
    )


def initial_node(world: World) -> Node:
    return Node(initial_state(0), (IDLE,) * world.consumers)


# NamedTuple constructors without the Python-level __new__ frame (the
# explorer builds one node per transition).
_node = functools.partial(tuple.__new__, Node)
_transition = functools.partial(tuple.__new__, Transition)
_consumer = functools.partial(tuple.__new__, Consumer)


def _core_moves(world: World, state: State) -> list[tuple[str, object, State, object]]:
    """The producer's and the environment's moves: they depend on the model's
    state only, never on the consumers."""
    cfg = world.cfg
    moves: list[tuple[str, object, State, object]] = []
    # producer: StorePut(s), then TryPut(s) until it is enqueued
    storing = None
    for sid, r in zip(state.ids, state.recs):
        if r.status == STORED:
            storing = sid
            break
    if storing is not None:
        out = A.try_put(cfg, state, storing)
        if out.error is None and out.state != state:  # a blocked step that changed nothing is a self-loop
            moves.append(("TryPut", storing, out.state, out.value))
    elif not state.closed and len(state.ids) < len(world.samples):
        k = len(state.ids)
        out = A.store_put(cfg, state, world.samples[k], world.sizes[k])
        if out.error is None:
            moves.append(("StorePut", world.samples[k], out.state, None))
    # environment
    if A.expired(state):
        out = A.reclaim_expired(cfg, state)
        moves.append(("ReclaimExpired", None, out.state, out.value))
    if not state.closed:
        moves.append(("Close", None, A.close(cfg, state).state, None))
    if state.now < world.horizon:
        moves.append(("Tick", None, A.tick(cfg, state, 1).state, None))
    return moves


class _LeaseMoves(NamedTuple):
    """What a consumer holding ``lease`` can do to the model's state."""

    can_get: bool
    ack: A.Outcome
    fail: A.Outcome
    extend: A.Outcome | None  # None: not live, or the deadline would not move


def _lease_moves(world: World, state: State, lease: ModelLease) -> _LeaseMoves:
    cfg = world.cfg
    extend = None
    if A.is_live(state, lease):
        if A.rec_of(state, lease.sample_id).deadline != state.now + cfg.visibility_timeout:  # type: ignore[union-attr]
            extend = A.extend(cfg, state, lease, cfg.visibility_timeout)
    return _LeaseMoves(
        A.get(cfg, state, lease.sample_id).error is None,
        A.ack(cfg, state, lease),
        A.fail(cfg, state, lease),
        extend,
    )


class Memo:
    """Caches of the world's pure moves, keyed by the model's state.

    Many nodes share one model state and differ only in what the consumers
    hold (at the default bounds, 26,308 nodes over 1,696 states), so the
    explorer computes each state's moves once.  The actions are pure, so this
    changes nothing but the time taken.
    """

    __slots__ = ("core", "lease")

    def __init__(self) -> None:
        self.core: dict[State, list[tuple[str, object, State, object]]] = {}
        self.lease: dict[tuple[State, ModelLease], _LeaseMoves] = {}


def successors(world: World, node: Node, memo: Memo | None = None) -> Iterator[Transition]:
    """Every transition out of ``node``: the producer's, the environment's, each consumer's."""
    state, consumers = node
    if memo is None:
        core = _core_moves(world, state)
    else:
        core = memo.core.get(state)  # type: ignore[assignment]
        if core is None:
            core = memo.core[state] = _core_moves(world, state)
    for action, arg, new_state, value in core:
        yield _transition((action, arg, _node((new_state, consumers)), value))

    def moved(c: int, me: Consumer, to: State = state) -> Node:
        return _node((to, consumers[:c] + (me,) + consumers[c + 1 :]))

    for c, me in enumerate(consumers):
        if me.stopped:
            continue
        lease = me.lease
        if lease is None:
            if state.pending:
                out = A.acquire(world.cfg, state)
                yield _transition(("Acquire", c, moved(c, _consumer((out.value, False, False)), out.state), out.value))
            elif state.closed and (world.anchor_consumer or A.outstanding_count(state) == 0):
                yield _transition(("Stop", c, moved(c, STOPPED), None))
            continue
        if memo is None:
            moves = _lease_moves(world, state, lease)
        else:
            moves = memo.lease.get((state, lease))  # type: ignore[assignment]
            if moves is None:
                moves = memo.lease[(state, lease)] = _lease_moves(world, state, lease)
        if me.holding:
            yield _transition(("Release", c, moved(c, _consumer((lease, False, False))), None))
        else:
            if moves.can_get:
                yield _transition(("Get", c, moved(c, _consumer((lease, True, False))), True))
            yield _transition(("Ack", c, moved(c, IDLE, moves.ack.state), moves.ack.value))
            yield _transition(("Fail", c, moved(c, IDLE, moves.fail.state), moves.fail.value))
        if moves.extend is not None:
            yield _transition(("Extend", c, _node((moves.extend.state, consumers)), moves.extend.value))
        yield _transition(("Crash", c, moved(c, IDLE), None))
