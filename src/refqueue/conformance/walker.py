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

The kit's worlds (``KIT_WORLDS``: the agreement world and three wider ones)
and what a backend's capabilities leave out of them live in
``refqueue.conformance.worlds``.  The walks run the profile's number of
walks, shared among the worlds; ``--exhaustive`` covers every transition of
each.

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

import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from refqueue.conformance.contract import Backend
from refqueue.conformance.harness import Divergence, Failure, Harness, ModelConfig
from refqueue.conformance.shrink import shrink
from refqueue.conformance.worlds import Coverage, WorldGraph, drivable, world_graph
from refqueue.model.state import State
from refqueue.model.world import DEAD_LETTER_REASON

__all__ = ["OffGraph", "WalkResult", "cover", "random_walks"]


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
        if action == "ReclaimExpired" and h.dead_reordered:
            # Likewise a tie dead-lettered in another legal order (the graph lists them by id).
            raise OffGraph("ReclaimExpired dead-lettered a tie in another order than the model's")
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
    out = wg.out
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
    share: tuple[int, int] | None = None,
) -> WalkResult:
    """Take every transition of the graph at least once; see the module docstring.

    ``progress(transitions_taken, steps)`` is called now and then.  ``share``
    ``(k, n)`` takes only the k-th of n shares of the transitions (out-edge
    ``j`` of node ``v`` is in share ``(v + j) % n``; the others count as taken,
    though a path may still cross them): the n shares together are the whole
    cover (``refqueue.conformance.parallel`` runs them in n processes).
    """
    wg = wg or world_graph()
    out, edges, depth = wg.out, wg.edges, wg.depth
    n_edges = len(edges)
    taken = bytearray(n_edges)
    left = [len(o) for o in out]  # untaken out-edges per node (usable ones only)
    if share is not None:
        k, n = share
        for v, o in enumerate(out):
            for j, e in enumerate(o):
                if (v + j) % n != k:
                    taken[e] = 1
                    left[v] -= 1
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

