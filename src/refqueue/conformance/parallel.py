"""The walks phase on several cores: worker processes, each with its own backend.

``refqueue certify -j N`` (default: the number of cores the process may run
on) gives the walks phase N worker processes.  With ``--exhaustive`` each
world's cover is split into N shares (``walker.cover(share=(k, N))``: out-edge
``j`` of node ``v`` belongs to share ``(v + j) % N``), one task each; without
it each world's random walks are one task (the same seed stream as a serial
run, so the same walks).  The tasks of the four worlds go to whichever worker
is free, largest world first, and each worker keeps the graphs it built
(``worlds.world_graph`` is cached per process).

A worker loads the backend itself from its target string ``module:factory``
plus the ``-o`` options (``spec_of``), and builds a fresh backend for every
walk, as the serial drivers do: nothing of the backend crosses a process
boundary.  The processes are started with the ``spawn`` context; every
message is one JSON object sent with ``Connection.send_bytes`` (tasks: the
spec, the world's name, the share or the seed; results: plain counts, the
transitions and nodes covered as zlib-compressed bitmaps, the actions and
situations, and on a divergence the failure's message and the source of its
replay, rendered in the worker).

The certificate's coverage (transitions, nodes, actions, situations) is the
union of the shares, the same as a serial run's when every transition is
taken; steps, walks and replays are the shares' sums, which differ from a
serial cover's (each share replays its own paths).  A backend that cannot be
loaded by name (a factory object built in a test, say) is walked serially,
and the certificate's entry says why (``serial``).  A worker whose task
raised anything but a divergence, or died, hands its world back: the phase
walks that world serially in its own process, where the backend's exception
is judged as in any serial run.
"""

from __future__ import annotations

import base64
import json
import os
import time
import traceback
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Outcome", "Workers", "default_jobs", "spec_of"]


def default_jobs() -> int:
    """The number of cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def spec_of(backend: Any, options: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, str | None]:
    """``({"target", "options", "clients"}, None)``: what a worker loads the backend from
    (``backend`` as given, before its options are bound); or ``(None, why)``
    when a worker could not load the same factory by name."""
    from refqueue.conformance.contract import load_backend

    try:
        loaded = load_backend(backend.target)
    except Exception as exc:  # noqa: BLE001 - any reason it cannot be loaded by name
        return None, f"the backend {backend.target!r} cannot be loaded by name in a worker ({exc})"
    if loaded.factory is not backend.factory:
        return None, f"{backend.target!r} loads another object than the backend given"
    try:
        text = json.dumps(dict(options or {}))
    except (TypeError, ValueError):
        return None, "the backend options are not JSON"
    return {"target": backend.target, "options": json.loads(text), "clients": backend.clients}, None


@dataclass
class Outcome:
    """What the workers found for one world: the driver's counts (a
    ``walker.WalkResult``), the coverage (a ``worlds.Coverage``) and on a
    divergence ``failure`` (``message``, ``trace_steps``, ``replay``); or
    ``error`` (the traceback of anything else: walk the world serially)."""

    result: Any = None
    coverage: Any = None
    failure: dict[str, Any] | None = None
    error: str | None = None
    tasks: int = 0
    done: int = 0
    cpu_seconds: list[float] = field(default_factory=list)  # each finished task's worker's CPU so far


@dataclass
class _Proc:
    process: Any
    conn: Any
    task: dict[str, Any] | None = None
    progress: tuple[int, int] = (0, 0)
    built: set[str] = field(default_factory=set)  # the worlds whose graphs it holds


@dataclass
class Workers:
    """N worker processes for one certification, started on first use and
    kept for every walks run of it (the short pass and the long one), so
    each builds a world's graph once; ``close()`` ends them."""

    spec: dict[str, Any]
    jobs: int
    _procs: list[_Proc] = field(default_factory=list)

    def _start(self) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self._procs = [p for p in self._procs if p.process.is_alive()]
        for _ in range(self.jobs - len(self._procs)):
            here, there = ctx.Pipe()
            process = ctx.Process(target=_serve, args=(there,), daemon=True, name="refqueue-certify-worker")
            process.start()
            there.close()
            self._procs.append(_Proc(process, here))

    def warm(self, plan: list[list[str]]) -> None:
        """Start the workers and have worker ``k`` build the graphs of the worlds
        ``plan[k]`` now (returns at once): while this process runs the phases
        before the walks, the workers build what the walks need.  ``drive``
        hands a world's task to a worker that holds its graph, when one is free."""
        self._start()
        for p, worlds in zip(self._procs, plan):
            if p.task is None and worlds:
                p.task = {"kind": "warm", "world": None, "worlds": list(worlds), "id": -1}
                _send(p.conn, {**p.task, "spec": self.spec})

    def close(self) -> None:
        for p in self._procs:
            try:
                if p.process.is_alive() and p.task is None:
                    _send(p.conn, {"kind": "stop"})
            except OSError:
                pass
        for p in self._procs:
            p.process.join(timeout=2)
            if p.process.is_alive():
                p.process.kill()
                p.process.join(timeout=2)
            p.conn.close()
        self._procs = []

    def drive(
        self,
        tasks: list[dict[str, Any]],
        worlds: list[str],
        progress: Callable[[int, int, int, int], None] | None = None,
    ) -> dict[str, Outcome]:
        """Run ``tasks`` (each ``{"kind": "cover"|"walks", "world", ...}``; a
        ``"keywords"`` entry gives the world's ``make_world`` keywords instead of
        a kit world's name) on the workers; the outcome of each world, merged over its tasks.  After a
        divergence in world ``w`` no task of a later world (in ``worlds``'
        order) is started, and those running are ended, as a serial run stops
        there.  ``progress(tasks_done, tasks, transitions_taken, steps)``."""
        from refqueue.conformance.walker import WalkResult

        self._start()  # the missing workers (all, the first time)
        order = {w: i for i, w in enumerate(worlds)}
        queue = sorted(tasks, key=lambda t: (-t.get("weight", 0), order[t["world"]]))
        outcomes = {w: Outcome(tasks=sum(1 for t in tasks if t["world"] == w)) for w in {t["world"] for t in tasks}}
        parts: dict[str, list[dict[str, Any]]] = {w: [] for w in outcomes}
        finished = 0
        stop_after: int | None = None  # index of the earliest world that diverged
        for i, task in enumerate(queue):
            task["id"] = i
        taken_done = steps_done = 0
        while queue or any(p.task is not None for p in self._procs):
            for p in self._procs:
                if p.task is None and queue and p.process.is_alive():
                    k = next((i for i, t in enumerate(queue) if t["world"] in p.built), 0)  # a graph it holds
                    p.task, p.progress = queue.pop(k), (0, 0)
                    p.built.add(p.task["world"])
                    _send(p.conn, {**p.task, "spec": self.spec})
            busy = [p for p in self._procs if p.task is not None]
            if not busy:  # every worker died: what is left is walked serially
                for task in queue:
                    outcomes[task["world"]].error = "no worker process left"
                break
            from multiprocessing.connection import wait

            for conn in wait([p.conn for p in busy], timeout=0.5):
                p = next(p for p in busy if p.conn is conn)
                if p.task is None:  # ended above, after an earlier world diverged
                    continue
                world = p.task["world"]
                if p.task["kind"] == "warm":  # its graphs are built (or it failed to: a task will say why)
                    try:
                        msg = json.loads(conn.recv_bytes())
                    except (EOFError, OSError):
                        msg = {}
                    if "warmed" in msg:
                        p.built.update(msg["warmed"])
                    p.task = None
                    continue
                try:
                    msg = json.loads(conn.recv_bytes())
                except (EOFError, OSError):
                    outcomes[world].error = f"the worker process died (exit code {p.process.exitcode})"
                    p.task = None
                    finished += 1
                    continue
                if "progress" in msg:
                    p.progress = tuple(msg["progress"])  # type: ignore[assignment]
                    continue
                p.task = None
                finished += 1
                if "error" in msg:
                    outcomes[world].error = msg["error"]
                    continue
                done = msg["done"]
                taken_done += done["transitions_taken"]
                steps_done += done["steps"]
                parts[world].append(done)
                outcomes[world].cpu_seconds.append(done["cpu_seconds"])
                outcomes[world].done += 1
                if done["failure"] is not None and (stop_after is None or order[world] < stop_after):
                    stop_after = order[world]
                    queue = [t for t in queue if order[t["world"]] < stop_after]
                    for q in self._procs:  # end the tasks a serial run would never have reached
                        if q.task is not None and q.task["kind"] != "warm" and order[q.task["world"]] > stop_after:
                            outcomes[q.task["world"]].error = "ended: an earlier world diverged"
                            q.process.kill()
                            q.process.join(timeout=2)
                            q.conn.close()
                            q.task = None
                            finished += 1
            if progress is not None:
                live = [p.progress for p in self._procs if p.task is not None]
                progress(finished, len(tasks), taken_done + sum(t for t, _ in live), steps_done + sum(s for _, s in live))
            for p in self._procs:
                if p.task is not None and not p.process.is_alive() and not p.conn.poll():
                    if p.task["kind"] != "warm":
                        outcomes[p.task["world"]].error = f"the worker process died (exit code {p.process.exitcode})"
                        finished += 1
                    p.task = None
            self._procs = [p for p in self._procs if p.process.is_alive() or p.task is not None]
        for world, done_parts in parts.items():
            out = outcomes[world]
            diverged = any(d["failure"] is not None for d in done_parts)
            if out.error is None and not diverged and out.done < out.tasks:
                out.error = "a share of the world did not finish"
            if out.error is not None and not diverged:
                continue
            out.error = None
            result = WalkResult()
            for d in done_parts:
                for name in ("steps", "walks", "replays", "off_graph", "given_up"):
                    setattr(result, name, getattr(result, name) + d[name])
                result.seconds = max(result.seconds, d["seconds"])
                if d["failure"] is not None and out.failure is None:
                    out.failure = d["failure"]
                    result.steps_to_failure = d["steps_to_failure"]
            out.result = result
            out.coverage = _merge_coverage([d["coverage"] for d in done_parts])
        return outcomes


def _merge_coverage(parts: list[dict[str, Any]]) -> Any:
    from refqueue.conformance.worlds import Coverage

    first = parts[0]
    coverage = Coverage(first["nodes_total"], first["edges_total"], list(first["actions_total"]))
    for part in parts:
        coverage.nodes.update(_unbits(part["nodes"]))
        coverage.edges.update(_unbits(part["edges"]))
        coverage.actions.update(part["actions"])
        coverage.situations.update(part["situations"])
    return coverage


def _bits(indices: set[int], n: int) -> str:
    flags = bytearray(n)
    for i in indices:
        flags[i] = 1
    return base64.b64encode(zlib.compress(bytes(flags))).decode("ascii")


def _unbits(text: str) -> list[int]:
    flags = zlib.decompress(base64.b64decode(text))
    return [i for i, f in enumerate(flags) if f]


def _send(conn: Any, message: dict[str, Any]) -> None:
    conn.send_bytes(json.dumps(message).encode())


# -- the worker ------------------------------------------------------------------------------


def _serve(conn: Any) -> None:
    """A worker's loop: one JSON task at a time, answered with one JSON result
    (and progress messages while it runs); ``{"kind": "stop"}`` ends it, and
    so does the certifying process's death, even in the middle of a task."""
    from refqueue._parent import exit_with_parent

    exit_with_parent()
    while True:
        try:
            task = json.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        if task.get("kind") == "stop":
            return
        if task.get("kind") == "warm":
            _send(conn, {"id": -1, "warmed": _warm(task)})
            continue
        try:
            done = _run_task(task, lambda taken, steps: _send(conn, {"id": task["id"], "progress": [taken, steps]}))
        except BaseException:  # noqa: BLE001 - handed back: the world is walked serially, where it is judged
            _send(conn, {"id": task["id"], "error": traceback.format_exc()})
        else:
            _send(conn, {"id": task["id"], "done": done})


def _warm(task: dict[str, Any]) -> list[str]:
    """Build the graphs of ``task["worlds"]`` (cached in this process); the worlds built."""
    from refqueue.conformance.worlds import kit_world

    built = []
    try:
        capabilities = _backend(task["spec"]).capabilities
        for world in task["worlds"]:
            kit_world(world, capabilities)
            built.append(world)
    except Exception:  # noqa: BLE001 - the task that needs the graph builds it again, and reports what fails
        pass
    return built


def _backend(spec: dict[str, Any]) -> Any:
    import dataclasses

    from refqueue.conformance.contract import load_backend

    backend = load_backend(spec["target"])
    if spec["options"]:
        make, fixed = backend.factory, dict(spec["options"])
        backend = dataclasses.replace(backend, factory=lambda store, clock, **kw: make(store, clock, **fixed, **kw))
    clients = spec.get("clients", backend.clients)  # as many clients of a queue as the run drives
    if clients == 1:
        backend = dataclasses.replace(backend, open_client=None)
    elif backend.open_client is not None:
        backend = dataclasses.replace(backend, client_count=clients)
    return backend


def _run_task(task: dict[str, Any], report: Callable[[int, int], None]) -> dict[str, Any]:
    from refqueue.conformance.walker import cover, random_walks
    from refqueue.conformance.worlds import Coverage, kit_world, world_graph, world_limits

    backend = _backend(task["spec"])
    if "keywords" in task:  # a world given by its make_world keywords (tests, benchmarks), not a kit world's name
        from refqueue.model.world import make_world

        keywords, without, _said = world_limits(backend.capabilities)
        given = {k: tuple(v) if isinstance(v, list) else v for k, v in task["keywords"].items()}
        wg = world_graph(make_world(**{**given, **keywords}), without)
    else:
        wg, _said = kit_world(task["world"], backend.capabilities)
    coverage = Coverage.of(wg)
    last = [0.0]

    def tick(taken: int, steps: int) -> None:
        now = time.monotonic()
        if now - last[0] > 0.5:
            last[0] = now
            report(taken, steps)

    if task["kind"] == "cover":
        result = cover(backend, coverage=coverage, wg=wg, share=tuple(task["share"]), progress=tick)  # type: ignore[arg-type]
    else:
        result = random_walks(
            backend, walks=task["walks"], length=task["length"], seed=task["seed"], coverage=coverage, wg=wg,
            progress=lambda walks, steps: tick(len(coverage.edges), steps),
        )  # fmt: skip
    failure = None
    if result.failure is not None:
        from refqueue.conformance.render import render_test

        f = result.failure
        failure = {
            "message": f.message,
            "trace_steps": len(f.trace),
            "replay": render_test(
                f.trace, target=task["target"], config=f.config, sizes=f.sizes, store=f.store,
                clock_start=f.clock_start, reason=f"{f.message}\n\n{task['found_by']}",
            ),
        }  # fmt: skip
    return {
        "steps": result.steps,
        "walks": result.walks,
        "replays": result.replays,
        "off_graph": result.off_graph,
        "given_up": result.given_up,
        "steps_to_failure": result.steps_to_failure,
        "seconds": result.seconds,
        "transitions_taken": len(coverage.edges),
        "cpu_seconds": time.process_time(),  # the worker's CPU so far (its graphs included)
        "failure": failure,
        "coverage": {
            "nodes_total": coverage.nodes_total,
            "edges_total": coverage.edges_total,
            "actions_total": list(coverage.actions_total),
            "nodes": _bits(coverage.nodes, len(wg.graph.nodes)),
            "edges": _bits(coverage.edges, len(wg.edges)),
            "actions": sorted(coverage.actions),
            "situations": sorted(coverage.situations),
        },
    }
