"""The ``walks`` phase: the backend driven along the explorer's world graphs.

Seeded random walks on the kit's bounded worlds (``refqueue.conformance.worlds``:
the agreement world the TLA+ spec agrees with and three wider ones), the
profile's walks shared among them, each world with its own stream of the
seed; or, with ``exhaustive``, a cover of every transition of each (the
certificate's entry is then ``exhaustive``).  Every step is compared with
the model, answer and observables (``refqueue.conformance.walker`` drives,
``refqueue.conformance.harness`` compares).  It reports the coverage of the
graphs (transitions, nodes and actions taken, per world and in total) and
the share of interesting situations reached (``refqueue.conformance.coverage``).
A backend without FIFO delivery cannot follow the graph: the phase is
skipped, and ``exhaustive`` refused.  A failure's replay is the failing
walk, shortened, call by call.

Imports: ``worlds``, ``walker``, ``coverage``, ``harness`` (through
``walker``), ``render`` (through ``phase.harness_failure``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from refqueue.conformance.contract import Backend
from refqueue.conformance.phase import Context, PhaseBase, PhaseResult, harness_failure, lacking, timed
from refqueue.conformance.walker import OffGraph, WalkResult, cover, random_walks
from refqueue.conformance.worlds import (
    KIT_WORLDS, Coverage, WorldGraph, drivable, kit_world, world_graph, world_limits,
)  # fmt: skip

__all__ = [
    "KIT_WORLDS", "PHASE", "WALK_NEEDS", "Coverage", "OffGraph", "WorldGraph", "WalkResult", "cover", "drivable",
    "kit_world", "random_walks", "world_graph", "world_limits",
]  # fmt: skip


# -- the walks phase -----------------------------------------------------------------------

# What the world graph's transitions need that no smaller world does without:
# FIFO acquires (the graph's Acquire takes the head).  A backend lacking other
# capabilities walks the graph without their transitions (worlds.world_limits).
WALK_NEEDS = ("fifo",)

# The rough cost of each kit world (building its graph, covering it), for sharing them out among workers.
_COST = {"agreement": 12, "wide": 6, "timing": 3, "reput": 2}
_BY_COST = sorted(KIT_WORLDS, key=lambda w: -_COST.get(w, 1))


class WalksPhase(PhaseBase):
    """The ``walks`` phase: seeded random walks on the kit's world graphs, or
    with ``exhaustive`` (its entry then ``exhaustive``) a cover of every
    transition of each; reports the coverage of the graphs and the
    interesting situations reached."""

    name = "walks"
    needs = WALK_NEEDS
    keys = ("exhaustive",)
    slow_start = True  # the world graphs take seconds to build (on the workers, from prepare)

    def skipped(self, lacking: Any) -> str:
        return f"the world graph needs {', '.join(lacking)}"

    def not_checked(self, lacking: Any) -> dict[str, str]:
        return {"check": "walks / exhaustive", "why": self.skipped(lacking)}

    def refuse(self, backend: Backend, exhaustive: bool) -> str | None:
        missing = lacking(backend, WALK_NEEDS)
        if exhaustive and missing:
            return (
                f"the exhaustive cover follows the explorer's world graph, which needs {', '.join(WALK_NEEDS)}, "
                f"but {backend.target} does not declare {', '.join(missing)}; certify it without --exhaustive"
            )
        return None

    def prepare(self, context: Context) -> None:
        if context.workers is None or lacking(context.backend, WALK_NEEDS):
            return
        jobs = context.workers.jobs
        if context.exhaustive:  # every worker covers a share of every world
            plan = [list(_BY_COST) for _ in range(jobs)]
        else:  # each world's walks are one task: the worlds shared out, largest first
            plan = [[] for _ in range(jobs)]
            load = [0] * jobs
            for world in _BY_COST:
                k = load.index(min(load))
                plan[k].append(world)
                load[k] += _COST[world]
        context.workers.warm(plan)

    def model_units(self, capabilities: Any) -> int:
        from refqueue.model.world import make_world

        return max(sum(make_world(**kw).sizes) for kw in KIT_WORLDS.values())

    def run(self, context: Context) -> PhaseResult:
        from refqueue.conformance.coverage import Reach

        backend, bar = context.backend, context.progress
        name = "exhaustive" if context.exhaustive else "walks"
        reach = Reach(backend.capabilities.to_dict())
        total = WalkResult()
        worlds: dict[str, dict[str, Any]] = {}
        said = world_limits(backend.capabilities)[2]
        failure = None
        started = time.perf_counter()
        outcomes = _parallel(context, name) if context.workers is not None else {}
        for k, world in enumerate(KIT_WORLDS):
            outcome = outcomes.get(world)
            if outcome is not None and outcome.error is None:  # walked by the workers (refqueue.conformance.parallel)
                result, coverage = outcome.result, outcome.coverage
            else:
                result, coverage = _serial(context, name, k, world, reach)
            reach.add(list(coverage.situations))
            worlds[world] = _graph_coverage(coverage) | {"steps": result.steps, "seconds": round(result.seconds, 2)}
            if outcome is not None and outcome.error is not None:
                worlds[world]["walked_serially"] = outcome.error.strip().splitlines()[-1][:200]
            earlier = total.steps
            for field_name in ("steps", "walks", "replays", "off_graph", "given_up"):
                setattr(total, field_name, getattr(total, field_name) + getattr(result, field_name))
            total.seconds += result.seconds
            if result.failure is not None or (outcome is not None and outcome.failure is not None):
                failure = result.failure if result.failure is not None else outcome.failure  # type: ignore[union-attr]
                total.steps_to_failure = earlier + (result.steps_to_failure or 0)
                worlds[world]["failed"] = True
                break
        if context.workers is not None:
            total.seconds = time.perf_counter() - started  # the worlds overlap: the phase's wall time
        got, possible = reach.counts()
        bar.start(f"{name} situations", possible)
        bar.update(got, "interesting situations reached", force=True)
        counts = timed(total.steps, total.seconds, walks=total.walks, replays=total.replays, worlds=list(worlds))
        if context.workers is not None:
            counts["jobs"] = context.workers.jobs
        elif context.serial:
            counts["serial"] = context.serial
        if total.off_graph:
            counts["tie_orders_off_graph"] = total.off_graph
        if total.given_up:
            counts["transitions_given_up"] = total.given_up
        if said:
            counts["reduced_world"] = "; ".join(said)
        graph: dict[str, Any] = {}
        for key in ("nodes", "nodes_total", "transitions", "transitions_total"):
            graph[key] = sum(w[key] for w in worlds.values())
        graph["actions"] = sorted({a for w in worlds.values() for a in w["actions"]})
        every = sorted({a for w in worlds.values() for a in w["actions"] + w["actions_never_tried"]})
        graph["actions_never_tried"] = [a for a in every if a not in graph["actions"]]
        graph["actions_total"] = len(every)
        graph["transitions_share"] = f"{100 * graph['transitions'] / max(graph['transitions_total'], 1):.1f} %"
        graph["nodes_share"] = f"{100 * graph['nodes'] / max(graph['nodes_total'], 1):.1f} %"
        graph["worlds"] = worlds
        out = PhaseResult(counts, key=name, coverage={"world_graph": graph, "situations": reach.to_dict()})
        if isinstance(failure, dict):  # found by a worker, its replay rendered there
            in_phase = total.steps_to_failure or 0
            out.failure = {
                "phase": name,
                "message": failure["message"],
                "steps_to_failure": context.steps_before + in_phase,
                "phase_steps_to_failure": in_phase,
                "trace_steps": failure["trace_steps"],
            }
            out.replay = failure["replay"]
        elif failure is not None:
            out.failure, out.replay = harness_failure(context, name, failure, total.steps_to_failure)
        return out

    def summary(self, name: str, entry: Mapping[str, Any]) -> list[str]:
        what = f"{entry['walks']:,} walks"
        if entry.get("replays"):
            what += f" ({entry['replays']:,} replays)"
        rate = f", {entry['steps_per_second']:,} steps/s" if entry.get("steps_per_second") else ""
        return [f"  {name:<13} {what}, {entry['steps']:,} steps, {entry['seconds']} s{rate}"]

    def coverage_summary(self, coverage: Mapping[str, Any]) -> list[str]:
        lines = []
        graph = coverage.get("world_graph")
        if graph:
            lines.append(
                f"  {'coverage':<13} world graph: {graph['transitions']:,}/{graph['transitions_total']:,} transitions "
                f"({graph['transitions_share']}), {graph['nodes']:,}/{graph['nodes_total']:,} nodes ({graph['nodes_share']}), "
                f"{len(graph['actions'])}/{graph['actions_total']} actions "
                f"(never tried: {', '.join(graph['actions_never_tried']) or 'none'})"
            )
        situations = coverage.get("situations")
        if situations:
            lines.append(
                f"  {'':<13} situations: {situations['reached_count']}/{situations['total']} interesting situations "
                f"reached ({situations['share']}; never reached: {', '.join(situations['never_reached']) or 'none'})"
            )
        return lines

    def coverage_markdown(self, coverage: Mapping[str, Any]) -> list[str]:
        lines: list[str] = []
        graph = coverage.get("world_graph")
        if graph:
            lines += [
                "",
                "## Coverage of the world graph",
                "",
                f"- transitions: {graph['transitions']:,} of {graph['transitions_total']:,} ({graph['transitions_share']})",
                f"- nodes: {graph['nodes']:,} of {graph['nodes_total']:,} ({graph['nodes_share']})",
                f"- actions: {len(graph['actions'])} of {graph['actions_total']} "
                f"(never tried: {', '.join(graph['actions_never_tried']) or 'none'})",
            ]
            for world, w in graph.get("worlds", {}).items():
                lines.append(
                    f"  - world {world}: {w['transitions']:,} of {w['transitions_total']:,} transitions "
                    f"({w['transitions_share']}), {w['nodes']:,} of {w['nodes_total']:,} nodes ({w['nodes_share']})"
                )
        situations = coverage.get("situations")
        if situations:
            lines += [
                "",
                "## Interesting situations reached",
                "",
                f"- {situations['reached_count']} of {situations['total']} ({situations['share']}); "
                f"never reached: {', '.join(situations['never_reached']) or 'none'}",
                "",
                "| situation | reached | what |",
                "|---|---|---|",
            ]
            for name, what in situations["what"].items():
                mark = "yes" if name in situations["reached"] else situations["out_of_reach"].get(name, "no")
                lines.append(f"| {name} | {mark} | {what} |")
        return lines


def _serial(context: Context, name: str, k: int, world: str, reach: Any) -> tuple[WalkResult, Coverage]:
    """World ``world`` (the ``k``-th) walked, or covered, in this process."""
    backend, bar, profile = context.backend, context.progress, context.profile
    wg, _said = kit_world(world, backend.capabilities)
    coverage = Coverage.of(wg)
    label = f"{name} {k + 1}/{len(KIT_WORLDS)} ({world})"

    def note(done: int, walked: int, unit: str = "") -> str:
        reach.add(list(coverage.situations))
        got, possible = reach.counts()
        return f"{unit} · {walked:,} steps · situations {got}/{possible}"

    if context.exhaustive:
        bar.start(label, sum(len(o) for o in wg.out))
        result = cover(
            backend, coverage=coverage, wg=wg,
            progress=lambda taken, done: bar.update(taken, note(taken, done, unit="transitions")),
        )  # fmt: skip
    else:
        share = -(-profile.walks // len(KIT_WORLDS))  # the profile's walks, shared among the worlds
        bar.start(label, share)
        # Each world gets its own stream of the seed (the same for every run of that seed).
        result = random_walks(
            backend, walks=share, length=profile.walk_length, seed=context.seed * len(KIT_WORLDS) + k,
            coverage=coverage, wg=wg, progress=lambda walks, done: bar.update(walks, note(walks, done, unit="walks")),
        )  # fmt: skip
    return result, coverage


def _parallel(context: Context, name: str) -> dict[str, Any]:
    """The worlds walked, or covered, by the workers (``refqueue.conformance.parallel``):
    with ``exhaustive`` each world split into one share per worker, else each
    world's walks one task, with the seed stream a serial run gives it."""
    profile, workers, bar = context.profile, context.workers, context.progress
    names = list(KIT_WORLDS)
    tasks: list[dict[str, Any]] = []
    for k, world in enumerate(names):
        common = {"world": world, "target": context.target, "found_by": context.found_by(name), "weight": _COST.get(world, 1)}
        if context.exhaustive:
            tasks += [{"kind": "cover", "share": [j, workers.jobs], **common} for j in range(workers.jobs)]
        else:
            share = -(-profile.walks // len(KIT_WORLDS))
            walks = {"walks": share, "length": profile.walk_length, "seed": context.seed * len(KIT_WORLDS) + k}
            tasks.append({"kind": "walks", **walks, **common})
    bar.start(f"{name} {len(names)} worlds on {workers.jobs} workers", len(tasks))

    def progress(done: int, of: int, taken: int, steps: int) -> None:
        bar.update(done, f"tasks · {taken:,} transitions · {steps:,} steps")

    return workers.drive(tasks, names, progress)


def _graph_coverage(coverage: Coverage) -> dict[str, Any]:
    graph = coverage.to_dict()
    graph["transitions_share"] = f"{100 * graph['transitions'] / max(graph['transitions_total'], 1):.1f} %"
    graph["nodes_share"] = f"{100 * graph['nodes'] / max(graph['nodes_total'], 1):.1f} %"
    return graph


PHASE = WalksPhase()
