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


class WalksPhase(PhaseBase):
    """The ``walks`` phase: seeded random walks on the kit's world graphs, or
    with ``exhaustive`` (its entry then ``exhaustive``) a cover of every
    transition of each; reports the coverage of the graphs and the
    interesting situations reached."""

    name = "walks"
    needs = WALK_NEEDS
    keys = ("exhaustive",)

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

    def model_units(self, capabilities: Any) -> int:
        from refqueue.model.world import make_world

        return max(sum(make_world(**kw).sizes) for kw in KIT_WORLDS.values())

    def run(self, context: Context) -> PhaseResult:
        from refqueue.conformance.coverage import Reach

        backend, bar, profile = context.backend, context.progress, context.profile
        name = "exhaustive" if context.exhaustive else "walks"
        reach = Reach(backend.capabilities.to_dict())
        total = WalkResult()
        worlds: dict[str, dict[str, Any]] = {}
        said: list[str] = []
        failure = None
        for k, world in enumerate(KIT_WORLDS):
            wg, said = kit_world(world, backend.capabilities)
            coverage = Coverage.of(wg)
            label = f"{name} {k + 1}/{len(KIT_WORLDS)} ({world})"

            def note(done: int, walked: int, coverage: Coverage = coverage, unit: str = "") -> str:
                reach.add(list(coverage.situations))
                got, possible = reach.counts()
                return f"{unit} · {walked:,} steps · situations {got}/{possible}"

            if context.exhaustive:
                bar.start(label, sum(len(o) for o in wg.out))
                result = cover(
                    backend,
                    coverage=coverage,
                    wg=wg,
                    progress=lambda taken, done, note=note: bar.update(taken, note(taken, done, unit="transitions")),
                )
            else:
                share = -(-profile.walks // len(KIT_WORLDS))  # the profile's walks, shared among the worlds
                bar.start(label, share)
                # Each world gets its own stream of the seed (the same for every run of that seed).
                result = random_walks(
                    backend,
                    walks=share,
                    length=profile.walk_length,
                    seed=context.seed * len(KIT_WORLDS) + k,
                    coverage=coverage,
                    wg=wg,
                    progress=lambda walks, done, note=note: bar.update(walks, note(walks, done, unit="walks")),
                )
            reach.add(list(coverage.situations))
            worlds[world] = _graph_coverage(coverage) | {"steps": result.steps, "seconds": round(result.seconds, 2)}
            earlier = total.steps
            for field_name in ("steps", "walks", "replays", "off_graph", "given_up"):
                setattr(total, field_name, getattr(total, field_name) + getattr(result, field_name))
            total.seconds += result.seconds
            if result.failure is not None:
                failure = result.failure
                total.steps_to_failure = earlier + (result.steps_to_failure or 0)
                worlds[world]["failed"] = True
                break
        got, possible = reach.counts()
        bar.start(f"{name} situations", possible)
        bar.update(got, "interesting situations reached", force=True)
        counts = timed(total.steps, total.seconds, walks=total.walks, replays=total.replays, worlds=list(worlds))
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
        if failure is not None:
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


def _graph_coverage(coverage: Coverage) -> dict[str, Any]:
    graph = coverage.to_dict()
    graph["transitions_share"] = f"{100 * graph['transitions'] / max(graph['transitions_total'], 1):.1f} %"
    graph["nodes_share"] = f"{100 * graph['nodes'] / max(graph['nodes_total'], 1):.1f} %"
    return graph


PHASE = WalksPhase()
