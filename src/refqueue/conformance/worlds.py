"""The kit's worlds: the explorer's world graphs the walks drive, and what a
backend's capabilities leave out of them.

The explorer's graph (``refqueue.model.explorer.build_graph(make_world())``:
at the default bounds 133,944 nodes and 850,536 transitions) holds every
state one producer, two consumers and the environment can reach, and every
transition between them (``refqueue.conformance.walks`` says how each maps
to backend calls).

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

A backend's capabilities shrink every world alike (``world_limits``), and
``drivable`` refuses a world the kit cannot drive one call at a time.
``Coverage`` records which nodes, transitions, actions and interesting
situations (``refqueue.conformance.coverage``) a run exercised.
"""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from refqueue.conformance.coverage import situations_of
from refqueue.model.explorer import StateGraph, build_graph
from refqueue.model.world import World, make_world

__all__ = ["KIT_WORLDS", "Coverage", "WorldGraph", "drivable", "kit_world", "world_graph", "world_limits"]

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


# The explorer's graphs of the kit's worlds (each KIT_WORLDS entry as every set of
# capabilities shapes it: five distinct worlds), kept for the process.  They take
# seconds each to build (the agreement world about 6 s) and every walks phase
# drives all four, while world_graph's small cache also holds the tests' own
# worlds and each capability's view: there they were evicted and built again.
_KIT_GRAPHS: dict[World, StateGraph] = {}


def _kit_graph(world: World) -> StateGraph:
    """The explorer's graph of ``world``, one of the kit's worlds: built once per process."""
    graph = _KIT_GRAPHS.get(world)
    if graph is None:
        graph = _KIT_GRAPHS[world] = build_graph(world)
    return graph


@functools.lru_cache(maxsize=8)
def world_graph(world: World | None = None, without: frozenset[str] = frozenset()) -> WorldGraph:
    """The graph of ``world`` (default ``make_world()``), built once per process.

    ``without`` names what the backend cannot do (``world_limits``): the
    actions ``"Extend"`` and ``"Tick"``, and ``"TryPutWaits"`` (a blocking
    put that would wait: made only with ``abort_when``).  Their transitions
    are left out, and so is every node reachable only through them: the
    drivers and the coverage see the smaller world.
    """
    world = make_world() if world is None else world
    graph = _KIT_GRAPHS.get(world)
    if graph is None:
        graph = build_graph(world)
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
    world = make_world(**{**KIT_WORLDS[name], **keywords})
    _kit_graph(world)  # world_graph finds it there, however often its own cache evicted it
    return world_graph(world, without), said


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
