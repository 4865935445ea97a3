"""Exhaustive breadth-first exploration of the model's world at small bounds.

``explore(world)`` visits every node reachable from ``initial_node(world)``,
checks every state invariant in every node and every transition property on
every transition that changes the model's state (the queue's properties and
the world's, ``WORLD_TRANSITION_INVARIANTS``), and answers one of three verdicts (Porcupine's ``Ok``,
``Illegal``, ``Unknown``):

``ok``         every reachable node was visited and nothing was violated;
``violation``  an invariant failed; ``trace`` is the shortest path to it
               from the initial node (breadth-first order guarantees that);
``unknown``    a budget (``max_states`` or ``max_seconds``) ran out first.
               Nothing is known about the nodes not visited: *unknown is not
               a pass*, and the command line exits non-zero on it.

``goals`` are predicates to reach rather than avoid (the anchor's lost-work
state); the first node satisfying each is reported with its shortest trace.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from refqueue._collector import collector_paused
from refqueue.model.invariants import (
    STATE_INVARIANTS,
    TRANSITION_INVARIANTS,
    WORLD_INVARIANTS,
    WORLD_TRANSITION_INVARIANTS,
)
from refqueue.model.state import LEASED, PENDING
from refqueue.model.tables import FIELD, FIELD_BITS, Tables
from refqueue.model.world import Node, World, initial_node

_BY_HOLDER = frozenset({"Ack", "Fail", "Extend", "DeadLetter", "AckLost", "FailLost"})
_BY_PRODUCER = frozenset({"TryPut", "TryPutLost"})

__all__ = ["ExploreResult", "Step", "explore", "work_lost", "StateGraph", "build_graph"]


@dataclass(frozen=True)
class Step:
    """One step of a trace: the action taken (``None`` for the initial node) and the node reached."""

    action: str | None
    arg: object
    node: Node
    value: object = None

    def label(self) -> str:
        if self.action is None:
            return "Init"
        return self.action if self.arg is None else f"{self.action}({self.arg})"


@dataclass
class ExploreResult:
    verdict: str  # "ok" | "violation" | "unknown"
    distinct_states: int
    transitions: int
    depth: int
    seconds: float
    violations: dict[str, list[Step]] = field(default_factory=dict)
    goals: dict[str, list[Step]] = field(default_factory=dict)
    reason: str = ""  # why the verdict is unknown

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds > 0 else float("inf")


def work_lost(world: World, node: Node) -> bool:
    """Every consumer has stopped, yet a sample is still pending or leased:
    nobody will ever finish it (the anchor's consumer loop reaches this)."""
    if not all(c.stopped for c in node.consumers):
        return False
    return any(r.status in (PENDING, LEASED) for r in node.state.recs)


# What a world property may read (its ``reads`` attribute), by the names the
# explorer knows: of a node (WORLD_INVARIANTS) or of a step, its nodes before
# and after and its label (WORLD_TRANSITION_INVARIANTS).  "before.consumer",
# in place of the "consumers", says the property is a conjunction over the
# consumers before the step, each judged alone: the explorer judges it once
# per consumer, on nodes that hold that consumer only.  A property that does
# not say what it reads is judged on every node or step.
NODE_READS = frozenset({"state", "consumers", "producers"})
STEP_READS = frozenset({
    "before.state", "after.state", "before.producers", "after.producers", "action", "arg", "value",
    "before.consumers", "after.consumers", "before.consumer",
})  # fmt: skip
_NODE_CORE = frozenset({"state", "producers"})
_STEP_MOVE = frozenset({"before.state", "after.state", "before.producers", "after.producers", "action", "arg", "value"})
_STEP_STATES = frozenset({"before.state", "after.state", "before.consumer"})

# How the explorer keys a world property's judgements (``_how``).
_EVERY, _ONCE, _EACH, _ALL = "every", "once", "each", "all"


def _how(name: str, pred: object, known: frozenset[str], once: frozenset[str]) -> str:
    """``_EVERY`` for a property that does not say what it reads, ``_ONCE`` for
    one that reads only what ``once`` names (a node's core, a step's move),
    ``_EACH`` for a conjunction over the consumers, ``_ALL`` otherwise."""
    reads = getattr(pred, "reads", None)
    if reads is None:
        return _EVERY
    unknown = sorted(set(reads) - known)
    if unknown:
        raise ValueError(f"{name} reads {unknown!r}, which the explorer does not know; name what it reads from {sorted(known)!r}")
    if "before.consumer" in reads:
        if {"before.consumers", "after.consumers"} & set(reads):
            raise ValueError(f"{name} reads both before.consumer (each alone) and all the consumers; say one of the two")
        return _EACH
    return _ONCE if set(reads) <= once else _ALL


def explore(
    world: World,
    *,
    max_states: int | None = None,
    max_seconds: float | None = None,
    stop_on_violation: bool = True,
    goals: Mapping[str, Callable[[World, Node], bool]] | None = None,
    progress: Callable[[int, int, int, float], None] | None = None,
    progress_every: float = 2.0,
) -> ExploreResult:
    """Breadth-first search of ``world``; see the module docstring for the verdicts.

    ``progress(distinct, transitions, depth, seconds)`` is called about every
    ``progress_every`` seconds.

    It visits the nodes and transitions ``successors`` yields, in the same
    order, built from the same parts (the world's ``_core_moves`` and
    ``consumer_moves``, looked up in ``refqueue.model.world`` when called, so a
    patched one is what it explores).  Every property is pure, so it is judged
    once per distinct value of what it reads: an invariant of the model's state
    once per state, one of a step of the model (``TRANSITION_INVARIANTS``) once
    per distinct (state, state', action, what, value), a world property by its
    ``reads`` (``NODE_READS``, ``STEP_READS``).  The step properties are judged
    on the steps that change the model's state (a step that leaves it equal
    changes nothing they compare).
    """
    with collector_paused():  # (about 15 % of the agreement world's time otherwise)
        return _search(world, max_states, max_seconds, stop_on_violation, goals, progress, progress_every)


def _search(
    world: World,
    max_states: int | None,
    max_seconds: float | None,
    stop_on_violation: bool,
    goals: Mapping[str, Callable[[World, Node], bool]] | None,
    progress: Callable[[int, int, int, float], None] | None,
    progress_every: float,
) -> ExploreResult:
    """``explore``'s search (its arguments, as ``explore`` documents and defaults them)."""
    cfg = world.cfg
    # State invariants by what they read of the consumers (their ``reads_consumers``):
    # nothing, each consumer alone (a conjunction: judged on no consumer once
    # per state, then once per state and consumer), a key per consumer that
    # must be distinct (read once per state and consumer) or all of them (per node).
    def reading(how: object) -> list[tuple[str, Callable[..., bool]]]:
        return [(n, p) for n, p in STATE_INVARIANTS.items() if getattr(p, "reads_consumers", True) == how]

    core_checks = reading(False) + reading("each")
    each_checks = reading("each")
    distinct_checks = [(n, p, p.distinct_key) for n, p in reading("distinct")]  # type: ignore[attr-defined]
    node_checks = [(n, p) for n, p in STATE_INVARIANTS.items() if getattr(p, "reads_consumers", True) is True]
    unknown = {n for n, p in STATE_INVARIANTS.items() if getattr(p, "reads_consumers", True) not in (True, False, "each", "distinct")}
    if unknown:
        raise ValueError(f"{sorted(unknown)} say reads_consumers the explorer does not know; use True, False, 'each' or 'distinct'")
    step_checks = list(TRANSITION_INVARIANTS.items())
    world_checks = [(n, p, _how(n, p, NODE_READS, _NODE_CORE)) for n, p in WORLD_INVARIANTS.items()]
    world_step_checks = [
        (
            n, p, _how(n, p, STEP_READS, _STEP_MOVE), {}, set(getattr(p, "reads", STEP_READS)) <= _STEP_STATES,
            getattr(p, "holds_on_states", None), {}, "arg" in getattr(p, "reads", STEP_READS),
        )
        for n, p in WORLD_TRANSITION_INVARIANTS.items()
    ]
    goals = dict(goals or {})
    violations: dict[str, list[Step]] = {}
    reached: dict[str, list[Step]] = {}
    start = time.perf_counter()
    next_report = start + progress_every

    # The tables a key's indices point into (refqueue.model.tables), and what
    # this search keeps per state and per core.
    state_failed: list[tuple[str, ...]] = []  # the core checks each state fails
    core_tab: list[list[tuple] | None] = []  # each core's entries, once made
    core_failed: list[tuple[str, ...] | None] = []  # the world node checks read once per core that it fails

    def new_state(i: int) -> None:
        state = states[i]
        state_failed.append(tuple(n for n, p in core_checks if not p(cfg, state, ())))

    def new_core(g: int) -> None:
        core_tab.append(None)
        core_failed.append(None)

    tables = Tables(world, new_state, new_core)
    states, cores, mes = tables.states, tables.cores, tables.mes
    nc, shift, top, low = tables.nc, tables.shift, tables.top, tables.low
    core_at, node_of, alone = tables.core_at, tables.node_of, tables.alone

    # The step checks a move of the model fails, by (state, state', action, what, value),
    # all they read: a put step is judged by the sample it puts (the world's arg
    # is the producer), a consumer's step by the lease it holds, else by the world's arg.
    step_failed: dict[tuple, tuple[str, ...]] = {}

    def failing_steps(s: int, ns: int, action: str, what: object, value: object) -> tuple[str, ...]:
        if s == ns:
            return ()
        sk = (s, ns, action, what, value)
        failed = step_failed.get(sk)
        if failed is None:
            before, after = states[s], states[ns]
            failed = step_failed[sk] = tuple(
                n for n, p in step_checks if n not in violations and not p(cfg, before, after, action, what, value)
            )
        return failed

    # A move that changes the model's state is judged when its table entry is
    # made (on the node that first takes it): the step checks, and the world's
    # step properties that read no more than the move or that its two states
    # settle.  What is left (a world property that reads the consumers, on a
    # move whose states do not settle it) is judged on each transition, with
    # the move's number to key what it reads.
    moves_made = [0]

    def judge_move(
        key: int, child: int, s: int, ns: int, action: str, arg: object, what: object, value: object, shared: bool
    ) -> tuple[tuple[str, ...], tuple | None]:
        # ``shared``: the entry serves every consumer, so a property that reads
        # the world's arg (the consumer's index) is left to each transition
        if s == ns:
            return (), None
        failed = list(failing_steps(s, ns, action, what, value))
        left = []
        for check in world_step_checks:
            name, pred, how, judged, by_states, holds_on_states, on_states, reads_arg = check
            if name in violations:
                continue
            if holds_on_states is not None:  # what the states alone settle, once per pair of states
                sk = s << FIELD_BITS | ns
                settled = on_states.get(sk)
                if settled is None:
                    settled = on_states[sk] = bool(holds_on_states(states[s], states[ns]))
                if settled:
                    continue
            if how != _ONCE or (shared and reads_arg):
                left.append(check)
                continue
            if by_states:
                ok = judged.get(s << FIELD_BITS | ns)
                if ok is None:
                    ok = judged[s << FIELD_BITS | ns] = bool(pred(world, node_of(key), node_of(child), action, arg, value))
            else:
                ok = bool(pred(world, node_of(key), node_of(child), action, arg, value))
            if not ok:
                failed.append(name)
        if not left:
            return tuple(failed), None
        moves_made[0] += 1
        return tuple(failed), (moves_made[0], tuple(left))

    # The moves from each core, and of each consumer from each core, as table
    # entries: a core's (action, arg, key difference, whether to judge each
    # transition, value, failed checks, checks left to each transition,
    # state'); a consumer's (its index difference, key difference, whether to
    # judge, action, the extend's seconds, value, failed, left, state').  A
    # move that leaves the model's state alone has nothing to judge.
    core_tab: list[list[tuple] | None] = []

    def core_entries(key: int, g: int) -> list[tuple]:
        s, q = cores[g]
        producers = tables.parts[q][0]
        entries = []
        for action, arg, ns, value, ng in tables.core_moves(g):
            dk = (ng - g) << top
            what = producers[arg] if action in _BY_PRODUCER else arg  # type: ignore[index]
            failed, left = judge_move(key, key + dk, s, ns, action, arg, what, value, False)
            entries.append((action, arg, dk, value, failed or left is not None, failed, left, ns))
        core_tab[g] = entries
        return entries

    # (core, a consumer's index) -> its entries, whichever consumer holds it: the
    # entry gives the extend's seconds instead of the arg, and the key
    # difference without the consumer's own field
    cons_tab: dict[int, list[tuple]] = {}

    def consumer_entries(key: int, g: int, m: int, c: int) -> list[tuple]:
        s, q = cores[g]
        moves = tables.consumer_moves(s, m)
        lease = mes[m].lease
        entries = []
        for action, seconds, dm, ns, value in moves:
            if ns == s:  # nothing to judge
                entries.append((dm, 0, False, action, seconds, value, (), None, ns))
                continue
            dk = (core_at(ns, q) - g) << top  # (a consumer's move leaves the producers alone)
            arg = c if seconds is None else (c, seconds)
            # a consumer's step is judged by the lease it holds (the queue's call
            # takes no other: acquire, get and release name no lease of theirs)
            what = lease if action in _BY_HOLDER else None
            failed, left = judge_move(key, key + (dm << shift[c]) + dk, s, ns, action, arg, what, value, True)
            entries.append((dm, dk, bool(failed) or left is not None, action, seconds, value, failed, left, ns))
        cons_tab[(g << FIELD_BITS) | m] = entries
        return entries

    def trace(k: int) -> list[Step]:
        steps: list[Step] = []
        while k >= 0:
            parent, action, arg, value = index[k]
            steps.append(Step(action, arg, node_of(keys[k]), value))
            k = parent
        steps.reverse()
        return steps

    core_failed: list[tuple[str, ...] | None] = []  # core -> the world node checks judged once per core it fails

    def consumer_facts(s: int, m: int) -> tuple[tuple[str, ...], tuple | None]:
        """What one consumer alone settles in one state: the each_checks it
        fails, and its key for each distinct_check (None when every key is None)."""
        state, me = states[s], mes[m]
        alone_ = (me,)
        failed = tuple(n for n, p in each_checks if n not in violations and not p(cfg, state, alone_))
        dkeys = tuple(f(state, me) for _, _, f in distinct_checks)
        facts = per_consumer[(s << FIELD_BITS) | m] = (failed, dkeys if any(x is not None for x in dkeys) else None)
        return facts

    per_consumer: dict[int, tuple[tuple[str, ...], tuple | None]] = {}  # (state, consumer) -> consumer_facts
    world_slow = [(n, p) for n, p, how in world_checks if how != _ONCE]

    def check_node(k: int) -> None:
        key = keys[k]
        g = key >> top
        s = cores[g][0]
        for name in state_failed[s]:
            if name not in violations:
                violations[name] = trace(k)
        base = s << FIELD_BITS
        keyed = None
        for sh in shift:
            m = (key >> sh) & FIELD
            facts = per_consumer.get(base | m)
            if facts is None:
                facts = consumer_facts(s, m)
            failed, dkeys = facts
            for name in failed:
                if name not in violations:
                    violations[name] = trace(k)
            if dkeys is not None:
                if keyed is None:
                    keyed = [dkeys]
                else:
                    keyed.append(dkeys)
        if keyed is not None and len(keyed) > 1:  # the distinct_checks: keys that are not None differ
            for i, (name, _, _) in enumerate(distinct_checks):
                got = [dk[i] for dk in keyed if dk[i] is not None]
                if len(got) != len(set(got)) and name not in violations:
                    violations[name] = trace(k)
        if node_checks:
            state, consumers = states[s], tables.crowd(key & low)
            for name, pred in node_checks:
                if name not in violations and not pred(cfg, state, consumers):
                    violations[name] = trace(k)
        failed = core_failed[g]
        if failed is None:  # the world checks that read only the core, judged on its first node
            node = node_of(key)
            failed = core_failed[g] = tuple(
                n for n, p, how in world_checks if how == _ONCE and n not in violations and not p(world, node)
            )
        for name in failed:
            if name not in violations:
                violations[name] = trace(k)
        for name, pred in world_slow:
            if name not in violations and not pred(world, node_of(key)):
                violations[name] = trace(k)
        if goals:
            for name, goal in goals.items():
                if name not in reached and goal(world, node_of(key)):
                    reached[name] = trace(k)

    def check_step(
        k: int, key: int, child: int, s: int, ns: int, left: tuple, action: str, arg: object, value: object
    ) -> None:
        # the world's step properties ``judge_move`` left to each transition, each
        # judged once per distinct value of what it reads: the pair of states (for
        # one that reads the states only) or the move, then the consumers (each
        # alone, or all of them)
        move, checks = left
        for name, pred, how, judged, by_states, _, _, reads_arg in checks:
            if name in violations:
                continue
            jm = (s << FIELD_BITS | ns) if by_states else move
            if reads_arg:
                jm = (jm, arg)
            if how == _ONCE:
                ok = judged.get(jm)
                if ok is None:
                    ok = judged[jm] = bool(pred(world, node_of(key), node_of(child), action, arg, value))
            elif how == _EACH:
                ok = True
                for c, sh in enumerate(shift):
                    jk = (jm << FIELD_BITS | ((key >> sh) & FIELD)) if type(jm) is int else (jm, (key >> sh) & FIELD)
                    ok = judged.get(jk)
                    if ok is None:
                        ok = judged[jk] = bool(pred(world, alone(key, c), alone(child, c), action, arg, value))
                    if not ok:
                        break
            elif how == _ALL:
                jk = (jm, key & low)
                ok = judged.get(jk)
                if ok is None:
                    ok = judged[jk] = bool(pred(world, node_of(key), node_of(child), action, arg, value))
            else:
                ok = bool(pred(world, node_of(key), node_of(child), action, arg, value))
            if not ok:
                violations[name] = trace(k) + [Step(action, arg, node_of(child), value)]

    root_key = tables.key_of(initial_node(world))
    seen: dict[int, int] = {root_key: 0}
    keys: list[int] = [root_key]
    index: list[tuple[int, str | None, object, object]] = [(-1, None, None, None)]
    transitions = 0
    max_depth = 0
    check_node(0)
    # Breadth-first: the frontier is keys[k:] (a node is appended once, when
    # first met), and the nodes of one depth lie together, so a depth is
    # known from where its level ends.
    k = -1
    depth, level_end = -1, 0
    verdict, reason = "ok", ""
    while k + 1 < len(keys):
        if violations and stop_on_violation:
            break
        if goals and len(reached) == len(goals) and not stop_on_violation:
            break
        k += 1
        if k == level_end:
            depth, level_end = depth + 1, len(keys)
        key = keys[k]
        g = key >> top
        s = cores[g][0]
        known = len(keys)
        # The core's moves, then each consumer's, in ``successors``' order.
        entries = core_tab[g]
        if entries is None:
            entries = core_entries(key, g)
        transitions += len(entries)
        for action, arg, dk, value, judging, failed, left, ns in entries:
            child = key + dk
            if judging:
                for name in failed:
                    if name not in violations:
                        violations[name] = trace(k) + [Step(action, arg, node_of(child), value)]
                if left is not None:
                    check_step(k, key, child, s, ns, left, action, arg, value)
            if child in seen:
                continue
            seen[child] = len(keys)
            keys.append(child)
            index.append((k, action, arg, value))
            check_node(len(keys) - 1)
        for c in range(nc):
            sh = shift[c]
            m = (key >> sh) & FIELD
            entries = cons_tab.get((g << FIELD_BITS) | m)
            if entries is None:
                entries = consumer_entries(key, g, m, c)
            transitions += len(entries)
            for dm, dk, judging, action, seconds, value, failed, left, ns in entries:
                child = key + (dm << sh) + dk
                if judging:
                    arg = c if seconds is None else (c, seconds)
                    for name in failed:
                        if name not in violations:
                            violations[name] = trace(k) + [Step(action, arg, node_of(child), value)]
                    if left is not None:
                        check_step(k, key, child, s, ns, left, action, arg, value)
                if child in seen:
                    continue
                seen[child] = len(keys)
                keys.append(child)
                index.append((k, action, c if seconds is None else (c, seconds), value))
                check_node(len(keys) - 1)
        if len(keys) > known and depth + 1 > max_depth:  # a child met for the first time lies one deeper
            max_depth = depth + 1
        now = time.perf_counter()
        if progress is not None and now >= next_report:
            progress(len(keys), transitions, max_depth, now - start)
            next_report = now + progress_every
        if max_states is not None and len(keys) >= max_states and k + 1 < len(keys):
            verdict, reason = "unknown", f"stopped at max_states={max_states} with {len(keys) - k - 1} nodes unexplored"
            break
        if max_seconds is not None and now - start >= max_seconds and k + 1 < len(keys):
            verdict, reason = "unknown", f"stopped at max_seconds={max_seconds} with {len(keys) - k - 1} nodes unexplored"
            break
    if violations:
        verdict = "violation"
    return ExploreResult(
        verdict=verdict,
        distinct_states=len(keys),
        transitions=transitions,
        depth=max_depth,
        seconds=time.perf_counter() - start,
        violations=violations,
        goals=reached,
        reason=reason,
    )


@dataclass
class StateGraph:
    """The whole reachable graph: ``nodes[0]`` is initial; each edge is
    ``(src, action, arg, dst, value)`` with node indices."""

    world: World
    nodes: list[Node]
    edges: list[tuple[int, str, object, int, object]]
    index: dict[Node, int]


def build_graph(world: World, *, max_states: int | None = None) -> StateGraph:
    """Every reachable node and every transition between them (for the
    spec-agreement check and the exhaustive certification)."""
    with collector_paused():  # (about 15 % of the agreement world's time otherwise)
        return _graph(world, max_states)


def _graph(world: World, max_states: int | None) -> StateGraph:
    # The nodes and transitions ``successors`` gives, in its order, walked over
    # int keys (refqueue.model.tables): the Node objects are made once, at the end.
    tables = Tables(world)
    nc, shift, top = tables.nc, tables.shift, tables.top
    cores = tables.cores
    root_key = tables.key_of(initial_node(world))
    seen: dict[int, int] = {root_key: 0}
    keys = [root_key]
    edges: list[tuple[int, str, object, int, object]] = []
    core_tab: dict[int, list[tuple]] = {}  # core -> (action, arg, key difference, value)
    cons_tab: dict[int, list[tuple]] = {}  # (core, consumer value) -> (index difference, key difference, action, seconds, value)
    frontier: deque[int] = deque([0])

    def reach(child: int) -> int:
        j = seen.get(child)
        if j is None:
            if max_states is not None and len(keys) >= max_states:
                raise RuntimeError(
                    f"the graph of {world} has more than max_states={max_states} nodes; "
                    f"shrink the bounds or raise max_states"
                )
            j = seen[child] = len(keys)
            keys.append(child)
            frontier.append(j)
        return j

    while frontier:
        k = frontier.popleft()
        key = keys[k]
        g = key >> top
        entries = core_tab.get(g)
        if entries is None:
            entries = core_tab[g] = [
                (action, arg, (ng - g) << top, value) for action, arg, _, value, ng in tables.core_moves(g)
            ]
        for action, arg, dk, value in entries:
            child = key + dk
            j = seen.get(child)
            edges.append((k, action, arg, reach(child) if j is None else j, value))
        s, q = cores[g]
        for c in range(nc):
            sh = shift[c]
            m = (key >> sh) & FIELD
            entries = cons_tab.get((g << FIELD_BITS) | m)
            if entries is None:
                entries = cons_tab[(g << FIELD_BITS) | m] = [
                    (dm, 0 if ns == s else (tables.core_at(ns, q) - g) << top, action, seconds, value)
                    for action, seconds, dm, ns, value in tables.consumer_moves(s, m)
                ]
            for dm, dk, action, seconds, value in entries:
                child = key + (dm << sh) + dk
                j = seen.get(child)
                edges.append((k, action, c if seconds is None else (c, seconds), reach(child) if j is None else j, value))
    nodes = [tables.node_of(key) for key in keys]
    return StateGraph(world, nodes, edges, {node: i for i, node in enumerate(nodes)})
