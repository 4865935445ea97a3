"""Drive a backend along paths of the explorer's world graph.

The explorer's graph (``refqueue.model.explorer.build_graph(make_world())``:
at the default bounds 133,944 nodes and 850,536 transitions) holds every
state one producer, two consumers and the environment can reach, and every
transition between them.  Each transition maps to backend calls through the
``Harness`` (which compares every answer and observable with the model):

    StorePut(p)  store.put of the sample producer p starts (the dst node's producers[p])
    TryPut(p)    one blocking-put step of producer p's ref (the src node's producers[p])
    Acquire      acquire_nowait()        Get      store.get(lease.ref)
    Ack/Fail     ack/fail with the consumer's lease
    Extend       extend(lease)           Release  store.release(handle)
    Crash        the consumer forgets its lease
    Stop         acquire_nowait() is None and is_drained
    ReclaimExpired, Close, Tick          reclaim_expired(), close(), clock.advance(1)

and, in worlds that enable them (the default does not):

    AckCopy/FailCopy  ack/fail with a copy of the lease the consumer gave back (stale: False)
    ProducerCrash(p)  producer p dies before its put (a trace marker; its data is an orphan)
    CollectOrphan(s)  store.scrub(ref) of the orphan s
    DeadLetter        dead_letter(lease, "poison")
    Extend((c, s))    extend(lease, s) with another amount than the timeout, live or stale

**The kit's worlds.**  The default world (the one the TLA+ spec agrees with)
never has three samples live at once, never refuses a re-put, never
dead-letters by hand, extends only by the timeout and reclaims only when
something expired.  The kit therefore drives a stated set of bounded worlds
(``KIT_WORLDS``), each widening the default in one direction:

``agreement``  ``make_world()`` itself (133,944 nodes, 850,536 transitions)
``wide``       four 1-unit samples under a band of high 3 / low 1: three live
               at once, pending holding two or three, ties, dead letters at a
               cap of one delivery, reclaims attempted in every node
``reput``      the ids ``s0 s1 s0 s1`` with a dedup window of one: re-puts
               refused within the window and accepted beyond it, producers
               that give up, orphans collected, ``dead_letter`` by hand
``timing``     two samples without watermarks, a timeout of 2 and extends by 1
               as well as by the timeout (on live and stale leases),
               ``dead_letter``, reclaims attempted in every node

The walks run the profile's number of walks in each world; ``--exhaustive``
covers every transition of each.  A backend's capabilities shrink every
world alike (``world_limits``).

A blocking-put step is ``put_blocks_until_below(ref, abort_when=lambda:
True)``, the model's ``put_step``: it never leaves the ref parked, while the
world's ``TryPut`` may (a blocked producer stays parked until its next step).
The kit therefore compares its model state with the graph's *ignoring*
``parked``.  That is exact with one producer, as in the default world: the
only parked ref is the stepping producer's own, and a step discounts its own
bytes whether or not it was parked already, so the parked set never changes
a decision.  With several producers and watermarks, the other producers'
parked bytes would change decisions the kit cannot reproduce one step at a
time; such a world is refused (the ``producers`` phase of ``certify`` checks
blocked producers with real threads instead).

A backend cannot be snapshotted, so a path always starts from a fresh
backend at the initial node.  Two drivers:

``random_walks``  seeded random walks, each from a node drawn uniformly
                  (reached by its shortest path), preferring transitions not
                  taken yet (the ci profile's sample of the graph);
``cover``         every transition taken at least once (``--exhaustive``):
                  walk greedily along untaken transitions; when the current
                  node has none left, move along taken ones to the nearest
                  node that still has some, or, when restarting is shorter
                  (or nothing is reachable), start a fresh backend and replay
                  the shortest path to the shallowest such node.

Both stop at the first divergence and return the failing run, shortened by
deleting transitions while it still fails (``refqueue.conformance.shrink``).
"""

from __future__ import annotations

import functools
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from refqueue.conformance.contract import Backend
from refqueue.conformance.coverage import situations_of
from refqueue.conformance.harness import Divergence, Failure, Harness, ModelConfig
from refqueue.conformance.shrink import shrink
from refqueue.model.explorer import StateGraph, build_graph
from refqueue.model.state import State
from refqueue.model.world import DEAD_LETTER_REASON, World, make_world

__all__ = [
    "KIT_WORLDS", "Coverage", "WorldGraph", "WalkResult", "cover", "drivable", "kit_world", "random_walks",
    "world_graph", "world_limits",
]  # fmt: skip

# The bounded worlds the kit drives, as make_world keywords (see the module docstring).
KIT_WORLDS: dict[str, dict[str, Any]] = {
    "agreement": {},
    "wide": dict(samples=4, consumers=2, high=3, low=1, horizon=2, max_deliveries=1, reclaim_any_time=True),
    "reput": dict(
        samples=("s0", "s1", "s0", "s1"), consumers=1, horizon=2, high=2, low=1, dedup_window=1, give_up=True,
        dead_letter=True,
    ),
    "timing": dict(
        samples=2, consumers=2, horizon=3, visibility_timeout=2, high=None, low=None, extend_by=(1,), dead_letter=True,
        reclaim_any_time=True,
    ),
}


@dataclass
class WorldGraph:
    """The explorer's graph with what the drivers need: out-edges per node, and
    the breadth-first tree (each node's parent edge and depth)."""

    graph: StateGraph
    out: list[list[int]]  # node -> indices of its out-edges
    parent: list[int]  # node -> the edge that first reached it (-1 for the initial node)
    depth: list[int]  # node -> length of the shortest path to it
    reached: list[bool] | None = None  # nodes reachable over the usable transitions (None: all)

    def nodes_reached(self) -> list[int]:
        """The nodes a driver can reach (all, unless transitions were left out)."""
        if self.reached is None:
            return list(range(len(self.graph.nodes)))
        return [k for k, r in enumerate(self.reached) if r]

    @property
    def world(self) -> World:
        return self.graph.world

    @property
    def edges(self) -> list[tuple[int, str, object, int, object]]:
        return self.graph.edges

    def path_to(self, node: int) -> list[int]:
        """The edges of the shortest path from the initial node to ``node``."""
        path = []
        while node != 0:
            e = self.parent[node]
            path.append(e)
            node = self.edges[e][0]
        path.reverse()
        return path


@functools.lru_cache(maxsize=8)
def world_graph(world: World | None = None, without: frozenset[str] = frozenset()) -> WorldGraph:
    """The graph of ``world`` (default ``make_world()``), built once per process.

    ``without`` names what the backend cannot do (``world_limits``): the
    actions ``"Extend"`` and ``"Tick"``, and ``"TryPutWaits"`` (a blocking
    put that would wait: made only with ``abort_when``).  Their transitions
    are left out, and so is every node reachable only through them: the
    drivers and the coverage see the smaller world.
    """
    graph = build_graph(make_world() if world is None else world)
    n = len(graph.nodes)
    out: list[list[int]] = [[] for _ in range(n)]
    parent = [-1] * n
    depth = [0] * n
    usable = [not _left_out(graph, edge, without) for edge in graph.edges]
    for e, (src, _action, _arg, _dst, _value) in enumerate(graph.edges):
        if usable[e]:
            out[src].append(e)
    # Breadth-first over the usable transitions (the graph's own order when none is left out).
    reached = [False] * n
    reached[0] = True
    frontier = deque([0])
    while frontier:
        src = frontier.popleft()
        for e in out[src]:
            dst = graph.edges[e][3]
            if not reached[dst]:
                reached[dst] = True
                parent[dst] = e
                depth[dst] = depth[src] + 1
                frontier.append(dst)
    for k in range(n):
        if not reached[k]:
            out[k] = []
    return WorldGraph(graph, out, parent, depth, reached)


def _left_out(graph: StateGraph, edge: tuple[int, str, object, int, object], without: frozenset[str]) -> bool:
    src, action, _arg, dst, value = edge
    if action in without:
        return True
    if (
        "DeadLetterAtCap" in without
        and action != "DeadLetter"
        and len(graph.nodes[dst].state.dead) > len(graph.nodes[src].state.dead)
    ):
        return True
    return action == "TryPut" and "TryPutWaits" in without and not getattr(value, "enqueued", True)


def kit_world(name: str, capabilities: Any) -> tuple[WorldGraph, list[str]]:
    """The graph of the kit world ``name`` (``KIT_WORLDS``) as a backend with
    ``capabilities`` can drive it, and what its capabilities left out."""
    if name not in KIT_WORLDS:
        raise ValueError(f"unknown kit world {name!r}; use one of {list(KIT_WORLDS)}")
    keywords, without, said = world_limits(capabilities)
    merged = {**KIT_WORLDS[name], **keywords}
    return world_graph(make_world(**merged) if merged else None, without), said


def world_limits(capabilities: Any) -> tuple[dict[str, Any], frozenset[str], list[str]]:
    """What a backend's capabilities change in the kit's worlds: ``make_world``
    keywords, the transitions left out (``world_graph``'s ``without``), and
    a sentence for each, for the certificate."""
    world: dict[str, Any] = {}
    without: set[str] = set()
    said: list[str] = []
    if not capabilities.dedup_window:
        world["dedup_window"] = 0
        said.append("no dedup_window: worlds without a dedup window (re-puts are never refused as replays)")
    if not capabilities.dead_letter:
        without.add("DeadLetter")
        said.append("no dead_letter: DeadLetter transitions left out")
    if not capabilities.max_deliveries:
        # The world keeps its cap (without one it never ends: fails redeliver for
        # ever); the queue gets none, and transitions that would dead-letter are left out.
        without.add("DeadLetterAtCap")
        said.append("no max_deliveries: transitions that dead-letter at the cap left out")
    if not capabilities.extend:
        without.add("Extend")
        said.append("no extend: Extend transitions left out")
    if not capabilities.injected_clock:
        without.add("Tick")
        said.append("no injected clock: Tick transitions left out (no lease ever expires)")
    if not capabilities.abort_when:
        without.add("TryPutWaits")
        said.append("no abort_when: blocking puts that would wait left out")
    return world, frozenset(without), said


@dataclass
class Coverage:
    """Which of the graph's nodes, transitions and actions a run exercised."""

    nodes_total: int
    edges_total: int
    actions_total: list[str]
    nodes: set[int] = field(default_factory=set)
    edges: set[int] = field(default_factory=set)
    actions: set[str] = field(default_factory=set)
    situations: set[str] = field(default_factory=set)  # refqueue.conformance.coverage.SITUATIONS reached

    def take(self, wg: WorldGraph, e: int) -> None:
        """Transition ``e`` of ``wg`` was taken; a new one is classified into situations."""
        if e in self.edges:
            return
        self.edges.add(e)
        src, action, arg, dst, value = wg.edges[e]
        self.nodes.add(dst)
        self.actions.add(action)
        nodes = wg.graph.nodes
        self.situations.update(situations_of(wg.world, nodes[src], action, arg, nodes[dst], value))

    @classmethod
    def of(cls, wg: WorldGraph) -> Coverage:
        """Totals of what a driver can reach in ``wg`` (left-out transitions do not count)."""
        usable = [e for o in wg.out for e in o]
        actions = sorted({wg.edges[e][1] for e in usable})
        return cls(len(wg.nodes_reached()), len(usable), actions, {0})

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": len(self.nodes),
            "nodes_total": self.nodes_total,
            "transitions": len(self.edges),
            "transitions_total": self.edges_total,
            "actions": sorted(self.actions),
            "actions_never_tried": [a for a in self.actions_total if a not in self.actions],
            "actions_total": len(self.actions_total),
        }


@dataclass
class WalkResult:
    steps: int = 0  # backend steps, replays included
    walks: int = 0  # fresh backends started (a replay starts one)
    replays: int = 0  # restarts of the cover that replayed a path
    off_graph: int = 0  # walks ended by a legal tie order the graph does not hold
    given_up: int = 0  # transitions the cover could not reach past such tie orders
    steps_to_failure: int | None = None
    failure: Failure | None = None
    seconds: float = 0.0


def drivable(world: World) -> None:
    """Raise ``ValueError`` naming what the kit cannot drive in ``world``, if anything."""
    if world.producers > 1 and world.cfg.high is not None:
        raise ValueError(
            f"the world has {world.producers} producers and watermarks: a blocked producer's parked bytes "
            f"(D8) change the other producers' decisions, and the kit drives a blocking put one step at a "
            f"time (abort_when=lambda: True), which never leaves a ref parked; walk a world with one "
            f"producer (the producers phase checks several blocked producers with real threads)"
        )
    if world.anchor_consumer:
        raise ValueError(
            "the world uses the anchor's consumer stop rule (a documented counterexample, D3); the kit "
            "drives only the protocol's own consumers"
        )
    sizes: dict[str, int] = {}
    for sample_id, size in zip(world.samples, world.sizes):
        if sizes.setdefault(sample_id, size) != size:
            raise ValueError(
                f"the world stores {sample_id!r} with {sizes[sample_id]} and with {size} units; the kit's "
                f"samples keep their size across incarnations (refqueue.conformance.samples)"
            )


def _parked_ignored(state: State) -> State:
    return state._replace(parked=()) if state.parked else state


class _Run:
    """One backend walking the graph: a harness plus which lease and handle
    each world consumer holds, and which lease it kept a copy of (by harness
    name)."""

    def __init__(self, backend: Backend, wg: WorldGraph) -> None:
        world = wg.world
        drivable(world)
        cfg = world.cfg
        self.wg = wg
        own_store = backend.make_store is not None
        # The default store carries the world's watermarks (the queue falls back
        # on them, D4); a backend's own store gets them as the queue's overrides.
        config = ModelConfig(
            visibility_timeout=cfg.visibility_timeout,
            high=cfg.high if own_store else None,
            low=cfg.low if own_store else None,
            max_deliveries=cfg.max_deliveries if backend.capabilities.max_deliveries else None,
            dedup_window=cfg.dedup_window if cfg.dedup_window else None,
        )
        store = None if own_store else {"capacity": cfg.capacity_bytes, "high": cfg.store_high, "low": cfg.store_low}
        self.h = Harness(backend, config, sizes=dict(zip(world.samples, world.sizes)), store=store, clock_start=0.0)
        self.leases: list[str | None] = [None] * world.consumers
        self.handles: list[str | None] = [None] * world.consumers
        self.kept: list[str | None] = [None] * world.consumers  # retain_copies: the lease last given back
        self.node = 0
        self.actions: list[tuple[str, object]] = []  # (action, arg) of each transition taken

    def take(self, e: int) -> None:
        """Make transition ``e`` (from the current node) on the backend."""
        src, action, arg, dst, _value = self.wg.edges[e]
        nodes = self.wg.graph.nodes
        self.actions.append((action, arg))
        h = self.h
        if action == "StorePut":
            h.store_put(nodes[dst].producers[arg])  # type: ignore[index]
        elif action == "TryPut":
            h.try_put(h.latest_ref[nodes[src].producers[arg]])  # type: ignore[index]
        elif action == "ProducerCrash":
            h.producer_crash(h.latest_ref[nodes[src].producers[arg]])  # type: ignore[index]
        elif action == "CollectOrphan":
            h.collect(h.latest_ref[arg])  # type: ignore[index]
        elif action in ("AckCopy", "FailCopy"):
            twin = h.copy(self.kept[arg], "copy")  # type: ignore[arg-type,index]
            (h.ack if action == "AckCopy" else h.fail)(twin)
            self.kept[arg] = None  # type: ignore[index]
        elif action == "Acquire":
            self.leases[arg] = h.acquire()
        elif action == "Get":
            self.handles[arg] = h.get(self.leases[arg])
        elif action == "Release":
            h.release(self.handles[arg])
            self.handles[arg] = None
        elif action in ("Ack", "Fail"):
            (h.ack if action == "Ack" else h.fail)(self.leases[arg])
            if self.wg.world.retain_copies:
                self.kept[arg] = self.leases[arg]
            self.leases[arg] = None
        elif action == "DeadLetter":
            h.dead_letter(self.leases[arg], DEAD_LETTER_REASON)  # type: ignore[index,arg-type]
            if self.wg.world.retain_copies:
                self.kept[arg] = self.leases[arg]  # type: ignore[index]
            self.leases[arg] = None  # type: ignore[index]
        elif action == "Extend" and isinstance(arg, tuple):  # a kit world's extend by another amount
            consumer, seconds = arg
            h.extend(self.leases[consumer], seconds)
        elif action == "Extend":
            h.extend(self.leases[arg], None)
        elif action == "Crash":
            h.crash(self.leases[arg])
            self.leases[arg] = self.handles[arg] = self.kept[arg] = None
        elif action == "Stop":
            h.stop()
            self.kept[arg] = None  # type: ignore[index]
        elif action == "ReclaimExpired":
            h.reclaim()
        elif action == "Close":
            h.close()
        elif action == "Tick":
            h.tick(1)
        else:
            raise ValueError(f"the world graph has an action the kit does not know: {action!r}")
        # The kit's steps never leave a ref parked; with one producer the
        # graph's parked set never changes a decision (see the module docstring).
        if action == "Acquire" and h.tie_taken:
            # A legal tie order the graph does not hold (it requeues ties by id):
            # checked, but the walk cannot follow the graph past it.
            raise OffGraph(f"Acquire({arg}) took a tied ref ahead of the model's head")
        if h.state != _parked_ignored(nodes[dst].state):
            raise RuntimeError(
                f"the kit's model state differs from the world graph's after {action}({arg}); the "
                f"backend's own store must hold every sample of the world "
                f"({sum(self.wg.world.sizes)} units) under its capacity and sample cap"
            )
        self.node = dst


def _shortest(backend: Backend, wg: WorldGraph, run: _Run, error: BaseException) -> Failure:
    """The failing run, shortened by deleting actions while it still fails
    (``refqueue.conformance.shrink``; an action the shortened run's node does
    not allow is skipped)."""
    return shrink(run.actions, lambda actions: _replay(backend, wg, actions), run.h.failure(error))


def _replay(backend: Backend, wg: WorldGraph, actions: list[tuple[str, object]]) -> Failure | None:
    """Follow ``actions`` (labels of world transitions) from the initial node on a fresh backend."""
    run = _Run(backend, wg)
    out, edges = wg.out, wg.edges
    try:
        for action, arg in actions:
            for e in out[run.node]:
                if edges[e][1] == action and edges[e][2] == arg:
                    run.take(e)
                    break
    except Divergence as exc:
        return run.h.failure(exc)
    finally:
        run.h.dispose()
    return None


def random_walks(
    backend: Backend,
    *,
    walks: int,
    length: int,
    seed: int,
    coverage: Coverage | None = None,
    progress: Callable[[int, int], None] | None = None,
    wg: WorldGraph | None = None,
) -> WalkResult:
    """``walks`` seeded random walks: each replays the shortest path to a node
    drawn uniformly, then takes at most ``length`` transitions, at each node
    picking among those ``coverage`` has not seen yet, if any, else among all.
    ``progress(walks, steps)`` is called after each walk."""
    for name, value in (("walks", walks), ("length", length), ("seed", seed)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"random_walks({name}={value!r}): {name} must be an int >= 0")
    wg = wg or world_graph()
    coverage = coverage or Coverage.of(wg)
    seen = coverage.edges
    rng = random.Random(seed)
    result = WalkResult()
    start = time.perf_counter()
    out, edges = wg.out, wg.edges
    starts = wg.nodes_reached()
    for _ in range(walks):
        run = _Run(backend, wg)
        result.walks += 1
        path = wg.path_to(starts[rng.randrange(len(starts))])
        try:
            for k in range(len(path) + length):
                if k < len(path):
                    e = path[k]
                else:
                    choices = out[run.node]
                    if not choices:
                        break
                    fresh = [e for e in choices if e not in seen]
                    e = rng.choice(fresh or choices)
                try:
                    run.take(e)
                except OffGraph:
                    result.off_graph += 1
                    break
                except Divergence as exc:
                    result.steps += len(run.h.trace)
                    result.steps_to_failure = result.steps
                    result.failure = _shortest(backend, wg, run, exc)
                    result.seconds = time.perf_counter() - start
                    return result
                coverage.take(wg, e)
        finally:
            run.h.dispose()
        result.steps += len(run.h.trace)
        if progress is not None:
            progress(result.walks, result.steps)
    result.seconds = time.perf_counter() - start
    return result


def cover(
    backend: Backend,
    *,
    coverage: Coverage | None = None,
    progress: Callable[[int, int], None] | None = None,
    wg: WorldGraph | None = None,
) -> WalkResult:
    """Take every transition of the graph at least once; see the module docstring.

    ``progress(transitions_taken, steps)`` is called now and then.
    """
    wg = wg or world_graph()
    out, edges, depth = wg.out, wg.edges, wg.depth
    n_edges = len(edges)
    taken = bytearray(n_edges)
    left = [len(o) for o in out]  # untaken out-edges per node (usable ones only)
    remaining = usable = sum(left)
    shallowest = 0  # nodes below this index have no untaken out-edge (index order is BFS order)
    result = WalkResult()
    start = time.perf_counter()
    run = _Run(backend, wg)
    result.walks = 1
    done_steps = 0  # steps of finished runs
    last_report = 0.0
    off: set[int] = set()  # edges past which the backend's tie order left the graph

    def fresh() -> _Run:
        nonlocal done_steps
        done_steps += len(run.h.trace)
        run.h.dispose()
        result.walks += 1
        return _Run(backend, wg)

    def mark(e: int) -> None:
        nonlocal remaining
        if not taken[e]:
            taken[e] = 1
            left[edges[e][0]] -= 1
            remaining -= 1

    def step(e: int) -> None:
        try:
            run.take(e)
        except Divergence as exc:
            raise _Stop(e, exc) from exc
        except OffGraph:
            mark(e)  # checked on the backend; what lies past it cannot be followed
            raise
        mark(e)
        if coverage is not None:
            coverage.take(wg, e)

    try:
        while remaining:
            node = run.node
            if left[node]:
                best = -1
                for e in out[node]:
                    if not taken[e]:
                        best = e
                        if left[edges[e][3]] and edges[e][3] != node:
                            break
                try:
                    step(best)
                except OffGraph:
                    result.off_graph += 1
                    run = fresh()
            else:
                while not left[shallowest]:
                    shallowest += 1
                path = _nearest_forward(wg, left, node, depth[shallowest])
                if path is None:
                    run = fresh()
                    result.replays += 1
                    path = wg.path_to(shallowest)
                try:
                    for e in path:
                        step(e)
                except OffGraph:
                    result.off_graph += 1
                    if e in off:  # the backend takes this tie its way every time: give up what lies past it
                        for f in out[shallowest]:
                            if not taken[f]:
                                result.given_up += 1
                                mark(f)
                    off.add(e)
                    run = fresh()
            now = time.perf_counter()
            if progress is not None and now - last_report > 0.25:
                last_report = now
                progress(usable - remaining, done_steps + len(run.h.trace))
    except _Stop as stop:
        result.steps = done_steps + len(run.h.trace)
        result.steps_to_failure = result.steps
        result.failure = _shortest(backend, wg, run, stop.error)
    else:
        result.steps = done_steps + len(run.h.trace)
    finally:
        run.h.dispose()
    result.seconds = time.perf_counter() - start
    return result


class OffGraph(Exception):
    """The backend made a legal choice the world graph has no node for (a tie
    reclaimed in another order): the step was checked, the walk ends there."""


class _Stop(Exception):
    def __init__(self, edge: int, error: Divergence) -> None:
        super().__init__(str(error))
        self.edge = edge
        self.error = error


def _nearest_forward(wg: WorldGraph, left: list[int], node: int, limit: int) -> list[int] | None:
    """The shortest path from ``node`` to a node with untaken out-edges, if one
    is reachable in fewer than ``limit`` steps (else a restart is as short)."""
    out, edges = wg.out, wg.edges
    prev: dict[int, int] = {node: -1}
    frontier = deque([(node, 0)])
    while frontier:
        k, d = frontier.popleft()
        if left[k]:
            path = []
            while k != node:
                e = prev[k]
                path.append(e)
                k = edges[e][0]
            path.reverse()
            return path
        if d + 1 >= limit:
            continue
        for e in out[k]:
            dst = edges[e][3]
            if dst not in prev:
                prev[dst] = e
                frontier.append((dst, d + 1))
    return None
