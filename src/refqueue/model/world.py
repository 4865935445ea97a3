"""The closed world the explorer and the TLA+ spec walk: producers, consumers
and an environment around the model's queue and store.

The queue's actions (``refqueue.model.actions``) take leases as arguments and
know nothing of who holds them.  To check the protocol exhaustively we also
need the *callers*: producers that each write a sample to the store and then
block in ``put_blocks_until_below`` (and, with ``producer_crash``, may die in
between, leaving an orphan that the environment collects); consumers that acquire, get, release,
ack, fail, extend, crash (a crash drops the lease on the floor and the
consumer restarts empty-handed) and stop when ``acquire`` says the queue is
drained; and an environment that reclaims, closes and lets time pass.  A
consumer keeps a lease after it went stale, so stale acks, fails and releases
are part of every run; with ``retain_copies`` it also keeps a copy of each
lease it gave back and acks or fails the copy later.

``successors(world, node)`` yields every transition of the world from a node,
labelled with the TLA+ action name and its argument.  Self-loops (a blocked
put step that changes nothing, an extend to the same deadline) are left out:
the TLA+ spec's actions are written with the same enabling conditions.

Kit-world options (``make_world`` keywords whose defaults leave the world the
TLA+ spec agrees with unchanged; the conformance kit's walks turn them on):

``dedup_window``      the queue remembers that many completed ids (D5): a re-put
                      within the window is refused as a replay
``give_up``           a producer whose put is refused (closed, replay) gives up:
                      ``TryPut(p)`` is a transition whose value is the
                      ``Rejection``; its data is an orphan (``CollectOrphan``)
``dead_letter``       a consumer may dead-letter its lease: ``DeadLetter(c)``
                      (reason ``DEAD_LETTER_REASON``; a stale lease answers False)
``extend_by``         more heartbeat amounts: ``Extend((c, seconds))`` (the arg
                      names the amount; plain ``Extend(c)`` is by the timeout),
                      made on live and stale leases alike (a stale one answers
                      False); amounts up to the timeout keep
                      ``DeadlineWithinVisibility`` an invariant
``reclaim_any_time``  ``ReclaimExpired`` is enabled in every node, also where
                      nothing expired (value 0: a self-loop)

``anchor_consumer=True`` replaces the consumer's stop rule by the anchor's
(``acquire() is None and is_closed``), to show ``TerminalNoneMeansDrained``
biting (D3).

Deployment options (D9; the TLA+ spec has them too, as the switches named in
brackets, so their worlds are compared with TLC's graph):

``two_step_ack``   [TwoStepAck] an ack or dead-letter commits with a scrub
                   intent; the environment's ``ScrubIntent(sample)`` scrubs
                   it later (``actions.scrub_intent``).  A consumer that
                   crashes between the two steps is an interleaving.
``lost_replies``   [LostReplies] a call takes effect while its caller sees
                   an error: ``AcquireLost(c)`` (the lease is held by nobody),
                   ``AckLost(c)`` / ``FailLost(c)`` (of a live lease, which the
                   consumer keeps: its retry answers stale), ``TryPutLost(p)``
                   (an enqueuing put step; the producer keeps the id and
                   retries, ``PutRetry(p)``, which changes nothing)
``max_restarts``   [MaxRestarts] up to that many ``RestartLossy`` of an open
                   queue (``actions.restart_lossy``: a new epoch, what the
                   queue held forgotten as LOST), each followed by the
                   operator's ``Recover(sample)``; ``Close`` waits until
                   nothing is LOST
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import NamedTuple

from refqueue.model import actions as A
from refqueue.model.state import LOST, STORED, Config, ModelLease, State, initial_state, make_config

__all__ = [
    "DEAD_LETTER_REASON", "Consumer", "ConsumerMove", "Memo", "Node", "Transition", "World", "make_world", "initial_node", "successors", "consumer_moves",
]  # fmt: skip


# The reason a consumer of a kit world gives dead_letter.
DEAD_LETTER_REASON = "poison"


class Consumer(NamedTuple):
    lease: ModelLease | None  # the lease this consumer holds (live or stale)
    holding: bool  # it has data from get() that it has not released
    stopped: bool  # it saw acquire's terminal None and left
    kept: ModelLease | None = None  # a copy of the lease it last acked or failed (retain_copies)


IDLE = Consumer(None, False, False, None)
STOPPED = Consumer(None, False, True, None)


class Node(NamedTuple):
    """A state of the whole world: the model's state, the consumers', and the
    producers' (the sample id each is putting, or None), and how many
    productions were started (an index into ``World.samples``)."""

    state: State
    consumers: tuple[Consumer, ...]
    producers: tuple[str | None, ...] = (None,)
    produced: int = 0


class Transition(NamedTuple):
    action: str  # the TLA+ action name, e.g. "Ack"
    arg: object  # the consumer or producer index or sample id it was taken for (None for the environment)
    node: Node  # the node it leads to
    value: object  # what the model's action returned (a lease, True/False, a count, ...)


class World(NamedTuple):
    """The bounds of one exploration (TLA+: the constants of an MC config)."""

    cfg: Config
    samples: tuple[str, ...]  # the productions, in this order (an id may recur: a re-put, D5)
    sizes: tuple[int, ...]  # nbytes of each production
    consumers: int
    horizon: int  # the clock stops at this value
    anchor_consumer: bool
    producers: int = 1
    producer_crash: bool = False  # a producer may die between store put and queue put
    retain_copies: bool = False  # consumers keep a copy of a lease they gave back, and use it later
    give_up: bool = False  # a producer whose put is refused gives up (kit worlds)
    dead_letter: bool = False  # consumers may dead-letter their lease (kit worlds)
    extend_by: tuple[int, ...] = ()  # more extend amounts, made on live and stale leases (kit worlds)
    reclaim_any_time: bool = False  # ReclaimExpired enabled where nothing expired too (kit worlds)
    lost_replies: bool = False  # calls may take effect with their reply lost (D9; cfg.two_step_ack is the ack's)
    max_restarts: int = 0  # lossy restarts of the queue server, each followed by recovery (D9)

    @property
    def largest(self) -> int:
        return max(self.sizes)


def make_world(
    *,
    samples: int | tuple[str, ...] = 3,
    consumers: int = 2,
    producers: int = 1,
    max_deliveries: int | None = 2,
    horizon: int = 3,
    visibility_timeout: int = 1,
    high: int | None = 2,
    low: int | None = 1,
    capacity: int | None = None,
    sample_bytes: int | tuple[int, ...] = 1,
    producer_crash: bool = False,
    retain_copies: bool = False,
    anchor_consumer: bool = False,
    dedup_window: int = 0,
    give_up: bool = False,
    dead_letter: bool = False,
    extend_by: tuple[int, ...] = (),
    reclaim_any_time: bool = False,
    two_step_ack: bool = False,
    lost_replies: bool = False,
    max_restarts: int = 0,
) -> World:
    """Bounds with validation.  ``samples`` is a count (ids ``s0, s1, ...``) or
    the ids in production order (a repeated id is a re-put of a completed
    sample, D5); ``sample_bytes`` is one size for all or one per production.
    The store's capacity defaults to all the data (at least the high
    watermark).  Any size up to the capacity is allowed: D8 needs no
    ``sample_bytes <= low``.  The kit-world options (``dedup_window``,
    ``give_up``, ``dead_letter``, ``extend_by``, ``reclaim_any_time``) and the
    deployment options (``two_step_ack``, ``lost_replies``, ``max_restarts``)
    are described in the module docstring; their defaults add nothing."""
    for name, flag in (
        ("give_up", give_up),
        ("dead_letter", dead_letter),
        ("reclaim_any_time", reclaim_any_time),
        ("producer_crash", producer_crash),
        ("retain_copies", retain_copies),
        ("anchor_consumer", anchor_consumer),
        ("two_step_ack", two_step_ack),
        ("lost_replies", lost_replies),
    ):
        if not isinstance(flag, bool):
            raise ValueError(f"{name} must be a bool, got {flag!r}; pass True or False")
    if not isinstance(extend_by, tuple) or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in extend_by):
        raise ValueError(f"extend_by must be a tuple of ints >= 1 (extend amounts), got {extend_by!r}")
    if isinstance(dedup_window, bool) or not isinstance(dedup_window, int) or dedup_window < 0:
        raise ValueError(f"dedup_window must be an int >= 0, got {dedup_window!r}; pass 0 for none")
    for name, value, minimum in (
        ("consumers", consumers, 1),
        ("producers", producers, 1),
        ("horizon", horizon, 0),
        ("visibility_timeout", visibility_timeout, 1),
        ("max_restarts", max_restarts, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    if isinstance(samples, int) and not isinstance(samples, bool):
        if samples < 1:
            raise ValueError(f"samples must be an int >= 1 or a tuple of ids, got {samples!r}")
        ids = tuple(f"s{i}" for i in range(samples))
    elif isinstance(samples, (tuple, list)) and samples and all(isinstance(x, str) and x for x in samples):
        ids = tuple(samples)
    else:
        raise ValueError(f"samples must be an int >= 1 or a non-empty tuple of id strings, got {samples!r}")
    if isinstance(sample_bytes, int) and not isinstance(sample_bytes, bool):
        sizes = (sample_bytes,) * len(ids)
    else:
        sizes = tuple(sample_bytes)
    if len(sizes) != len(ids) or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in sizes):
        raise ValueError(f"sample_bytes must be an int >= 1 or one such int per sample, got {sample_bytes!r}")
    if capacity is None:
        capacity = max(sum(sizes), high or 0)
    if max(sizes) > capacity:
        raise ValueError(f"a sample of {max(sizes)} bytes exceeds the capacity {capacity}; it could never be stored")
    cfg = make_config(
        visibility_timeout=visibility_timeout,
        store_high_watermark_bytes=high,
        store_low_watermark_bytes=low,
        capacity_bytes=capacity,
        max_deliveries=max_deliveries,
        dedup_window=dedup_window,
        two_step_ack=two_step_ack,
    )
    return World(
        cfg=cfg,
        samples=ids,
        sizes=sizes,
        consumers=consumers,
        horizon=horizon,
        anchor_consumer=anchor_consumer,
        producers=producers,
        producer_crash=producer_crash,
        retain_copies=retain_copies,
        give_up=give_up,
        dead_letter=dead_letter,
        extend_by=tuple(sorted(set(extend_by))),
        reclaim_any_time=reclaim_any_time,
        lost_replies=lost_replies,
        max_restarts=max_restarts,
    )


def initial_node(world: World) -> Node:
    return Node(initial_state(0), (IDLE,) * world.consumers, (None,) * world.producers, 0)


# NamedTuple constructors without the Python-level __new__ frame (the
# explorer builds one node per transition).
_node = functools.partial(tuple.__new__, Node)
_transition = functools.partial(tuple.__new__, Transition)
_consumer = functools.partial(tuple.__new__, Consumer)


def _core_moves(
    world: World, state: State, producers: tuple[str | None, ...], produced: int
) -> list[tuple[str, object, State, object, tuple[str | None, ...], int]]:
    """The producers' and the environment's moves: they depend on the model's
    state and the producers, never on the consumers."""
    cfg = world.cfg
    moves: list[tuple[str, object, State, object, tuple[str | None, ...], int]] = []
    # producers: StorePut(p), then TryPut(p) until the ref is enqueued (or the
    # producer dies: ProducerCrash(p), leaving its data as an orphan)
    for p, sid in enumerate(producers):
        if sid is not None:
            idle = producers[:p] + (None,) + producers[p + 1 :]
            if state.recs[state.ids.index(sid)].status != STORED:
                # its put took effect with the reply lost (TryPutLost): it retries, which changes nothing
                out = A.put_retry(cfg, state, sid)
                moves.append(("PutRetry", p, out.state, out.value, idle, produced))
            else:
                size = _size_of(state, sid)
                out = A.try_put(cfg, state, sid, size)
                if out.error is None and out.state != state:  # a blocked step that changed nothing is a self-loop
                    after = idle if out.value.enqueued else producers
                    moves.append(("TryPut", p, out.state, out.value, after, produced))
                    if world.lost_replies and out.value.enqueued:
                        # enqueued, the reply lost: the producer still holds its id
                        moves.append(("TryPutLost", p, out.state, out.value, producers, produced))
                elif out.error is not None and world.give_up:
                    # refused (closed, a replay): the producer gives up; its data is an orphan
                    moves.append(("TryPut", p, state, out.error, idle, produced))
            if world.producer_crash:
                moves.append(("ProducerCrash", p, A.abort_put(cfg, state, sid).state, None, idle, produced))
        elif not state.closed and produced < len(world.samples) and world.samples[produced] not in producers:
            # (an id a producer still holds, its put's reply lost, is not stored again until it retried)
            sid = world.samples[produced]
            out = A.store_put(cfg, state, sid, world.sizes[produced])
            if out.error is None:
                held = producers[:p] + (sid,) + producers[p + 1 :]
                moves.append(("StorePut", p, out.state, None, held, produced + 1))
    if world.producer_crash or world.give_up:
        for sid, r in zip(state.ids, state.recs):
            if r.status == STORED and sid not in producers:
                out = A.drop(cfg, state, sid)
                if out.error is None:
                    moves.append(("CollectOrphan", sid, out.state, None, producers, produced))
    # environment: anyone scrubs what a two-step completion left (D9)
    for sid in state.intents:
        out = A.scrub_intent(cfg, state, sid)
        moves.append(("ScrubIntent", sid, out.state, out.value, producers, produced))
    if world.reclaim_any_time or A.expired(state):
        out = A.reclaim_expired(cfg, state)
        moves.append(("ReclaimExpired", None, out.state, out.value, producers, produced))
    lost = [sid for sid, r in zip(state.ids, state.recs) if r.status == LOST]
    if not state.closed and not lost:  # a queue awaiting recovery refuses close too
        moves.append(("Close", None, A.close(cfg, state).state, None, producers, produced))
    if state.now < world.horizon:
        moves.append(("Tick", None, A.tick(cfg, state, 1).state, None, producers, produced))
    # a lossy restart of an open queue, and the operator's recovery (D9)
    if state.epoch < world.max_restarts and not state.closed:
        moves.append(("RestartLossy", None, A.restart_lossy(cfg, state).state, None, producers, produced))
    for sid in lost:
        out = A.recover(cfg, state, sid)
        moves.append(("Recover", sid, out.state, out.value, producers, produced))
    return moves


def _size_of(state: State, sample_id: str) -> int:
    """The size of a stored sample's data (the ref's estimated_bytes)."""
    return state.recs[state.ids.index(sample_id)].nbytes


class _LeaseMoves(NamedTuple):
    """What a consumer holding ``lease`` can do to the model's state."""

    can_get: bool
    ack: A.Outcome
    fail: A.Outcome
    extend: A.Outcome | None  # None: not live, or the deadline would not move
    dead_letter: A.Outcome | None = None  # with world.dead_letter
    extend_by: tuple[tuple[int, A.Outcome], ...] = ()  # (seconds, outcome) per world.extend_by amount


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
        A.dead_letter(cfg, state, lease, DEAD_LETTER_REASON) if world.dead_letter else None,
        tuple((seconds, A.extend(cfg, state, lease, seconds)) for seconds in world.extend_by),
    )


# One move of one consumer (``consumer_moves``): the TLA+ action, the extend's
# seconds (None: the world's arg is the consumer's index; else the arg is
# ``(index, seconds)``), what the consumer holds afterwards, the model's state
# afterwards (the same object when the move leaves it alone) and the value the
# model's action returned.
ConsumerMove = tuple[str, int | None, Consumer, State, object]


def consumer_moves(world: World, state: State, me: Consumer, memo: Memo | None = None) -> list[ConsumerMove]:
    """Every move of one consumer holding ``me`` from the model's ``state``.

    A consumer's moves depend on the model's state and on what that consumer
    holds, never on the other consumers or the producers: ``successors`` and
    the explorer compute them once per pair and place them in each node.
    ``memo`` keeps the model's answers that several holdings share (an
    acquire from the state, what a lease can do in it)."""
    if me.stopped:
        return []
    cfg = world.cfg
    lease, holding, _, kept = me
    moves: list[ConsumerMove] = []
    if kept is not None:
        # a stale copy used later (D1): always answers False and changes nothing
        same = _consumer((lease, holding, False, None))
        out = A.ack(cfg, state, kept)
        moves.append(("AckCopy", None, same, out.state, out.value))
        out = A.fail(cfg, state, kept)
        moves.append(("FailCopy", None, same, out.state, out.value))
    if lease is None:
        if state.pending:
            if memo is None:
                out = A.acquire(cfg, state)
            else:
                out = memo.acquire.get(state)  # type: ignore[assignment]
                if out is None:
                    out = memo.acquire[state] = A.acquire(cfg, state)
            moves.append(("Acquire", None, _consumer((out.value, False, False, kept)), out.state, out.value))
            if world.lost_replies:  # leased, the reply lost: nobody holds the lease
                moves.append(("AcquireLost", None, me, out.state, out.value))
        elif state.closed and (world.anchor_consumer or A.outstanding_count(state) == 0):
            moves.append(("Stop", None, STOPPED, state, None))
        return moves
    if memo is None:
        lm = _lease_moves(world, state, lease)
    else:
        lm = memo.lease.get((state, lease))  # type: ignore[assignment]
        if lm is None:
            lm = memo.lease[(state, lease)] = _lease_moves(world, state, lease)
    if holding:
        moves.append(("Release", None, _consumer((lease, False, False, kept)), state, None))
    else:
        if lm.can_get:
            moves.append(("Get", None, _consumer((lease, True, False, kept)), state, True))
        done = _consumer((None, False, False, lease if world.retain_copies else None))
        moves.append(("Ack", None, done, lm.ack.state, lm.ack.value))
        if world.lost_replies and lm.ack.value is True:  # committed, the reply lost: it keeps the lease
            moves.append(("AckLost", None, me, lm.ack.state, lm.ack.value))
        moves.append(("Fail", None, done, lm.fail.state, lm.fail.value))
        if world.lost_replies and lm.fail.value is True:
            moves.append(("FailLost", None, me, lm.fail.state, lm.fail.value))
        if lm.dead_letter is not None:
            moves.append(("DeadLetter", None, done, lm.dead_letter.state, lm.dead_letter.value))
    if lm.extend is not None:
        moves.append(("Extend", None, me, lm.extend.state, lm.extend.value))
    for seconds, out in lm.extend_by:
        moves.append(("Extend", seconds, me, out.state, out.value))
    moves.append(("Crash", None, IDLE, state, None))
    return moves


class Memo:
    """Caches of the world's pure moves, keyed by the model's state.

    Many nodes share one model state and differ only in what the consumers
    hold (at the default bounds, thousands of nodes over a few hundred
    states), so ``successors`` computes each state's moves once.  The moves
    are pure, so this changes nothing but the time taken.
    """

    __slots__ = ("core", "consumer", "acquire", "lease", "states")

    def __init__(self) -> None:
        self.core: dict[tuple, list] = {}
        self.consumer: dict[tuple[State, Consumer], list[ConsumerMove]] = {}
        self.acquire: dict[State, A.Outcome] = {}
        self.lease: dict[tuple[State, ModelLease], _LeaseMoves] = {}
        # One object per distinct state the moves reach, so that the nodes
        # share their states and comparing two equal ones is an identity check.
        self.states: dict[State, State] = {}


def successors(world: World, node: Node, memo: Memo | None = None) -> Iterator[Transition]:
    """Every transition out of ``node``: the producers', the environment's, each consumer's."""
    state, consumers, producers, produced = node
    if memo is None:
        core = _core_moves(world, state, producers, produced)
    else:
        key = (state, producers, produced)
        core = memo.core.get(key)  # type: ignore[assignment]
        if core is None:
            states = memo.states
            core = memo.core[key] = [
                (action, arg, states.setdefault(new_state, new_state), value, new_producers, new_produced)
                for action, arg, new_state, value, new_producers, new_produced in _core_moves(
                    world, state, producers, produced
                )
            ]
    for action, arg, new_state, value, new_producers, new_produced in core:
        yield _transition((action, arg, _node((new_state, consumers, new_producers, new_produced)), value))
    for c, me in enumerate(consumers):
        if me.stopped:
            continue
        if memo is None:
            moves = consumer_moves(world, state, me)
        else:
            moves = memo.consumer.get((state, me))  # type: ignore[assignment]
            if moves is None:
                states = memo.states
                moves = memo.consumer[(state, me)] = [
                    # (a move that leaves the state alone keeps the node's own object)
                    (action, seconds, new_me, new_state if new_state is state else states.setdefault(new_state, new_state), value)
                    for action, seconds, new_me, new_state, value in consumer_moves(world, state, me, memo)
                ]
        for action, seconds, new_me, new_state, value in moves:
            after = consumers[:c] + (new_me,) + consumers[c + 1 :]
            yield _transition((
                action, c if seconds is None else (c, seconds),
                _node((new_state, after, producers, produced)), value,
            ))
