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

from refqueue.model.invariants import (
    STATE_INVARIANTS,
    TRANSITION_INVARIANTS,
    WORLD_INVARIANTS,
    WORLD_TRANSITION_INVARIANTS,
)
from refqueue.model.state import LEASED, PENDING
from refqueue.model.world import Memo, Node, World, initial_node, successors

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


def _trace(index: list[tuple[int, str | None, object, object]], nodes: list[Node], k: int) -> list[Step]:
    steps: list[Step] = []
    while k >= 0:
        parent, action, arg, value = index[k]
        steps.append(Step(action, arg, nodes[k], value))
        k = parent
    steps.reverse()
    return steps


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
    """
    cfg = world.cfg
    # Invariants that read only the model's state are checked once per state
    # (many nodes share one); the others once per node.
    core_checks = [(n, p) for n, p in STATE_INVARIANTS.items() if not getattr(p, "reads_consumers", True)]
    node_checks = [(n, p) for n, p in STATE_INVARIANTS.items() if getattr(p, "reads_consumers", True)]
    core_failed: dict[object, list[str]] = {}
    memo = Memo()
    step_checks = list(TRANSITION_INVARIANTS.items())
    step_failed: dict[tuple, tuple] = {}  # (id(before), id(after), action, what, value) -> (failed names, before, after)
    # a world property that says what it reads (``step_key``) is judged once per distinct key
    world_step_checks = [(n, p, getattr(p, "step_key", None)) for n, p in WORLD_TRANSITION_INVARIANTS.items()]
    world_step_ok: dict[tuple, bool] = {}
    world_checks = [(n, p, getattr(p, "node_key", None)) for n, p in WORLD_INVARIANTS.items()]
    world_ok: dict[tuple, bool] = {}
    goals = dict(goals or {})
    start = time.perf_counter()
    next_report = start + progress_every

    root = initial_node(world)
    seen: dict[Node, int] = {root: 0}
    nodes: list[Node] = [root]
    index: list[tuple[int, str | None, object, object]] = [(-1, None, None, None)]
    depth_of: list[int] = [0]
    violations: dict[str, list[Step]] = {}
    reached: dict[str, list[Step]] = {}
    transitions = 0
    max_depth = 0

    # Every check is a pure function of what it reads, so one that reads only
    # the model's state is judged once per state, a world invariant once per
    # its ``node_key`` where it gives one.  A check already violated is not
    # judged again (as before the caches).
    def check_node(k: int) -> None:
        node = nodes[k]
        state = node.state
        failed = core_failed.get(state)
        if failed is None:
            failed = core_failed[state] = [n for n, p in core_checks if not p(cfg, state, ())]
        for name in failed:
            if name not in violations:
                violations[name] = _trace(index, nodes, k)
        consumers = node.consumers  # (nodes rarely share their state and consumers: judged per node)
        for name, pred in node_checks:
            if name not in violations and not pred(cfg, state, consumers):
                violations[name] = _trace(index, nodes, k)
        for name, pred, node_key in world_checks:
            if name in violations:
                continue
            if node_key is None:
                ok = pred(world, node)
            else:
                wkey = (name, node_key(node))
                ok = world_ok.get(wkey)
                if ok is None:
                    ok = world_ok[wkey] = bool(pred(world, node))
            if not ok:
                violations[name] = _trace(index, nodes, k)
        for name, goal in goals.items():
            if name not in reached and goal(world, node):
                reached[name] = _trace(index, nodes, k)

    check_node(0)
    frontier: deque[int] = deque([0])
    verdict, reason = "ok", ""
    while frontier:
        if violations and stop_on_violation:
            break
        if goals and len(reached) == len(goals) and not stop_on_violation:
            break
        k = frontier.popleft()
        node = nodes[k]
        d = depth_of[k] + 1
        before = node.state
        for action, arg, child, value in successors(world, node, memo):
            transitions += 1
            after = child.state
            if before is not after:
                # a put step is judged by the sample it puts (the world's arg is the
                # producer), a consumer's step by the lease it holds
                if action in _BY_PRODUCER:
                    what = node.producers[arg]  # type: ignore[index]
                elif action in _BY_HOLDER:
                    holder = arg[0] if isinstance(arg, tuple) else arg  # a kit world's Extend((consumer, seconds))
                    what = node.consumers[holder].lease  # type: ignore[index]
                else:
                    what = arg
                # The queue's properties read only these five (and cfg): judged once
                # per distinct step, however many nodes take it.
                # (keyed by the states' identities: the world's memo makes equal states
                # one object; the entry keeps both alive, so no identity is reused)
                key = (id(before), id(after), action, what, value)
                entry = step_failed.get(key)
                if entry is None:
                    entry = step_failed[key] = (
                        tuple(
                            name for name, pred in step_checks
                            if name not in violations and not pred(cfg, before, after, action, what, value)
                        ),
                        before,
                        after,
                    )
                for name in entry[0]:
                    if name not in violations:
                        violations[name] = _trace(index, nodes, k) + [Step(action, arg, child, value)]
                for name, wpred, wkey in world_step_checks:
                    if name in violations:
                        continue
                    if wkey is None:
                        ok = wpred(world, node, child, action, arg, value)
                    else:
                        memo_key = (name, wkey(node, child, action, arg, value))
                        ok = world_step_ok.get(memo_key)
                        if ok is None:
                            ok = world_step_ok[memo_key] = bool(wpred(world, node, child, action, arg, value))
                    if not ok:
                        violations[name] = _trace(index, nodes, k) + [Step(action, arg, child, value)]
            j = len(nodes)
            if seen.setdefault(child, j) != j:
                continue
            nodes.append(child)
            index.append((k, action, arg, value))
            depth_of.append(d)
            if d > max_depth:
                max_depth = d
            check_node(j)
            frontier.append(j)
        now = time.perf_counter()
        if progress is not None and now >= next_report:
            progress(len(nodes), transitions, max_depth, now - start)
            next_report = now + progress_every
        if max_states is not None and len(nodes) >= max_states and frontier:
            verdict, reason = "unknown", f"stopped at max_states={max_states} with {len(frontier)} nodes unexplored"
            break
        if max_seconds is not None and now - start >= max_seconds and frontier:
            verdict, reason = "unknown", f"stopped at max_seconds={max_seconds} with {len(frontier)} nodes unexplored"
            break
    if violations:
        verdict = "violation"
    return ExploreResult(
        verdict=verdict,
        distinct_states=len(nodes),
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
    root = initial_node(world)
    index: dict[Node, int] = {root: 0}
    nodes = [root]
    edges: list[tuple[int, str, object, int, object]] = []
    frontier: deque[int] = deque([0])
    memo = Memo()
    while frontier:
        k = frontier.popleft()
        for action, arg, child, value in successors(world, nodes[k], memo):
            j = index.get(child)
            if j is None:
                if max_states is not None and len(nodes) >= max_states:
                    raise RuntimeError(
                        f"the graph of {world} has more than max_states={max_states} nodes; "
                        f"shrink the bounds or raise max_states"
                    )
                j = index[child] = len(nodes)
                nodes.append(child)
                frontier.append(j)
            edges.append((k, action, arg, j, value))
    return StateGraph(world, nodes, edges, index)
