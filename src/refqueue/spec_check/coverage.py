"""Coverage as a check: every action of ``Next`` fires somewhere, no property is vacuous.

A property checked in a config that never reaches its antecedent proves
nothing there: a pause/resume property in a config that never pauses, a
stale-operation property where no operation is ever stale.  ``refqueue
check-spec`` runs TLC with ``-coverage`` on every complete (safety and
liveness) config and reads, for each action named in ``Next``, how many
states it generated.  Then

* every action fires (generates a state) in at least one config, except the
  ones ``NEVER_FIRES`` names with the reason they must not (they exist to
  label a step the model could take only if it were wrong), which must fire
  in none;
* every property of ``ANTECEDENTS`` listed by a config (under ``INVARIANT``
  or ``PROPERTY``) has one of its antecedent actions fire in that config.

The antecedents are read off TLC's action coverage, so they are the step
that makes the property's premise true (the pause a pause property judges),
not the premise itself; they catch a config whose bounds never get there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from refqueue.spec_check.tlc import TlcRun, cfg_sections

__all__ = ["ANTECEDENTS", "NEVER_FIRES", "CoverageReport", "config_problems", "check_coverage"]

_PAUSES = frozenset({"TryPutPause", "TryPutPauseEnqueue"})

# property -> the actions one of which must fire in a config that lists it, and why
ANTECEDENTS: dict[str, tuple[frozenset[str], str]] = {
    "PauseOnlyAtHigh": (_PAUSES, "a pause"),
    "PauseFollowsHysteresis": (_PAUSES, "a pause"),
    "NoFlapping": (_PAUSES, "a pause"),
    "ResumeOnlyAtLow": (frozenset({"TryPutResume"}), "a resume"),
    "BackpressureBound": (_PAUSES, "a pause (residency at the high watermark, where the bound is approached)"),
    "NoStuckProducer": (frozenset({"TryPutPark", "TryPutPause"}), "a producer parked in a blocking put"),
    "PausedProducerEventuallyResumes": (frozenset({"TryPutPark", "TryPutPause"}), "a producer parked"),
    "PutEventuallyReturns": (frozenset({"TryPutPark", "TryPutPause"}), "a put that waits"),
    "BlockedPutIsParked": (frozenset({"TryPutPark", "TryPutPause"}), "a put step that does not admit"),
    "StaleOpsChangeNothing": (
        frozenset({"AckStale", "FailStale", "AckCopyStale", "FailCopyStale"}), "a stale ack or fail",
    ),
    "StaleLeaseNeverLiveAgain": (frozenset({"ReclaimExpired", "AckStale", "FailStale"}), "a lease gone stale"),
    "CompletedDataEventuallyScrubbed": (frozenset({"ScrubIntent"}), "a two-step completion's scrub"),
    "EverySampleEventuallyAckedOrDead": (frozenset({"AckLive", "FailLive"}), "a live ack or fail"),
}

# Actions of Next that must fire in no config, and why.
NEVER_FIRES: dict[str, str] = {
    "AckCopyLive": "a kept copy of a lease given back is stale for ever (StaleLeaseNeverLiveAgain); "
    "Next names the step only so the model's answer to it is compared",
    "FailCopyLive": "as AckCopyLive",
}

# Not actions of Next: the initial predicate.
_NOT_ACTIONS = frozenset({"Init"})


@dataclass
class CoverageReport:
    fired_in: dict[str, list[str]] = field(default_factory=dict)  # action -> the configs where it fired
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def config_problems(spec_dir: Path, name: str, cfg: str, run: TlcRun) -> list[str]:
    """The vacuous properties of one complete config (empty: none)."""
    sections = cfg_sections(spec_dir / cfg)
    listed = sections.get("INVARIANT", []) + sections.get("PROPERTY", [])
    fired = {a for a, (_, generated) in run.coverage.items() if generated > 0}
    out = []
    for prop in listed:
        if prop in ANTECEDENTS:
            actions, what = ANTECEDENTS[prop]
            if not actions & fired:
                out.append(
                    f"{name}: {prop} is vacuous there: {what} never happens (none of {sorted(actions)} fires); "
                    f"widen the config's bounds or drop the property from {cfg}"
                )
    return out


def check_coverage(spec_dir: Path, runs: list[tuple[str, str, TlcRun]]) -> CoverageReport:
    """``runs``: (config name, cfg file, its complete TLC run with coverage) for every safety
    and liveness config; see the module docstring."""
    report = CoverageReport()
    for name, cfg, run in runs:
        if not run.coverage:
            report.problems.append(f"{name}: TLC printed no coverage (was it run with -coverage?)")
            continue
        for action, (_, generated) in run.coverage.items():
            if action in _NOT_ACTIONS:
                continue
            where = report.fired_in.setdefault(action, [])
            if generated > 0:
                where.append(name)
        report.problems.extend(config_problems(spec_dir, name, cfg, run))
    for action, where in sorted(report.fired_in.items()):
        if action in NEVER_FIRES:
            if where:
                report.problems.append(f"{action} fired in {where}, which must never happen: {NEVER_FIRES[action]}")
        elif not where:
            report.problems.append(
                f"{action} fires in no config: the spec's {action} is never exercised; add or widen a config that "
                f"reaches it"
            )
    return report
