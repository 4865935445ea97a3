"""The certificate: the merged verdicts of the phases of one certification,
as JSON and Markdown.

Each phase contributes its entry (``phases``: its counts, or why it was
skipped), its coverage, the checks it did not run and, on a failure, the
failure and the pytest module that replays it (``refqueue.conformance.phase``);
the certificate adds the run's setting (backend, kit version, profile, seed,
capabilities) and the verdict.  The text of each phase's coverage is the
phase's own (``coverage_markdown``).
"""

from __future__ import annotations

import json
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import refqueue

__all__ = ["KIT_VERSION", "Certificate", "failing_run_text", "write_certificate"]

KIT_VERSION = refqueue.__version__


def failing_run_text(failure: dict[str, Any]) -> str:
    """What the replay of ``failure`` runs: the shortest failing run of steps found,
    or, for a failed named check (a phase of checks: nothing to shrink), that check."""
    steps = failure.get("trace_steps", 0)
    if failure.get("check") and not steps:
        return f"the replay runs check {failure['check']} again on its own"
    if failure.get("shrunk", True):
        return f"shortest failing run {steps} steps"
    return f"failing run {steps} steps, not shrunk"


def configuration_of(backend: Any) -> dict[str, Any]:
    """The configuration a run of ``backend`` certifies: how many clients of
    one queue it drives, their clocks' skew, and the clock deadlines come from."""
    from refqueue.conformance.session import client_skew

    clients = backend.clients
    injected = backend.capabilities.injected_clock
    return {
        "clients": clients,
        "client_clock_skew_s": [client_skew(i) for i in range(1, clients)],
        "clock": "injected (the kit's ManualClock)" if injected else "the backend's own (real time)",
    }


def configuration_text(configuration: dict[str, Any]) -> str:
    """One line: ``2 clients of one queue (clock skew +0.5 s), injected clock``."""
    if not configuration:
        return "not recorded"
    clients = configuration["clients"]
    skews = ", ".join(f"{s:+g} s" for s in configuration["client_clock_skew_s"])
    who = f"{clients} clients of one queue (other clients' clock skew {skews})" if clients > 1 else "1 client"
    return f"{who}; deadlines on {configuration['clock']}"


@dataclass
class Certificate:
    """The outcome of ``certify``; ``passed`` is the verdict."""

    backend: str
    profile: str
    seed: int
    capabilities: dict[str, bool]
    exhaustive: bool
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)
    coverage: dict[str, Any] = field(default_factory=dict)
    failure: dict[str, Any] | None = None
    counterexample: str | None = None  # pytest source replaying the failure
    history: str | None = None  # JSON of the history the threads phase found not linearizable (or undecided)
    not_checked: list[dict[str, str]] = field(default_factory=list)  # {"check", "why"}: each check not run
    phases_not_requested: list[str] = field(default_factory=list)  # left out by certify(phases=...) / --phase
    # Each run of a phase in the order made: {"phase", "pass": "short"|"whole", "verdict", "steps", "seconds"}
    # (--fail-fast runs a short pass of every phase before the whole ones).
    runs: list[dict[str, Any]] = field(default_factory=list)
    duration_s: float = 0.0
    kit_version: str = KIT_VERSION
    # What configuration was certified: the clients driven at once and their
    # clocks' skew, and whose clock the deadlines came from (``configuration_of``).
    configuration: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.failure is None

    @property
    def verdict(self) -> str:
        """``"pass"``; ``"fail"`` (the backend diverged, or raised where it must
        not: ``failure["kind"]`` is ``"divergence"`` or ``"crash"``); or ``"could
        not certify"`` (``failure["kind"] == "unfit"``: the run cannot judge this
        backend as given, e.g. its own store is too small for a phase's samples)."""
        if self.failure is None:
            return "pass"
        return "could not certify" if self.failure.get("kind") == "unfit" else "fail"

    @property
    def examples(self) -> int:
        return sum(int(p.get("examples", 0)) for p in self.phases.values())

    @property
    def steps(self) -> int:
        return sum(int(p.get("steps", 0)) for p in self.phases.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "partial": bool(self.phases_not_requested),
            "phases_not_requested": self.phases_not_requested,
            "backend": self.backend,
            "kit_version": self.kit_version,
            "profile": self.profile,
            "seed": self.seed,
            "exhaustive": self.exhaustive,
            "examples": self.examples,
            "steps": self.steps,
            "duration_s": round(self.duration_s, 2),
            "capabilities": self.capabilities,
            "configuration": self.configuration,
            "phases": self.phases,
            "coverage": self.coverage,
            "not_checked": self.not_checked,
            "runs": self.runs,
            "failure": self.failure,
            "python": platform.python_version(),
        }

    def to_markdown(self) -> str:
        from refqueue.conformance.phases import PHASES, phase

        d = self.to_dict()
        lines = [
            f"# refqueue conformance certificate: `{self.backend}`",
            "",
            f"**Verdict: {d['verdict'].upper()}**"
            + (f" (partial: phases not requested: {', '.join(self.phases_not_requested)})" if d["partial"] else ""),
            "",
            "| field | value |",
            "|---|---|",
            f"| backend | `{self.backend}` |",
            f"| kit version | {self.kit_version} |",
            f"| profile | {self.profile}{' + exhaustive' if self.exhaustive else ''} |",
            f"| seed | {self.seed} |",
            f"| examples | {d['examples']:,} |",
            f"| steps | {d['steps']:,} |",
            f"| duration | {d['duration_s']} s |",
            f"| capabilities | {', '.join(k for k, v in self.capabilities.items() if v)} |",
            f"| not declared (not checked) | {', '.join(k for k, v in self.capabilities.items() if not v) or 'none'} |",
            f"| configuration | {configuration_text(self.configuration)} |",
            "",
            "## Phases",
            "",
            "| phase | steps | seconds | steps/s | detail |",
            "|---|---|---|---|---|",
        ]
        for name, p in self.phases.items():
            detail = ", ".join(f"{k}={v}" for k, v in p.items() if k not in ("steps", "seconds", "steps_per_second"))
            lines.append(f"| {name} | {p.get('steps', 0):,} | {p.get('seconds', 0)} | {p.get('steps_per_second', '')} | {detail} |")
        for name, p in self.phases.items():
            if name in PHASES:
                lines += phase(name).markdown(name, p)
        if self.not_checked:
            lines += ["", "## Not checked", ""]
            lines += [f"- {n['check']}: {n['why']}" for n in self.not_checked]
        for name in PHASES:
            lines += phase(name).coverage_markdown(self.coverage)
        if self.failure:
            lines += [
                "",
                "## Failure",
                "",
                f"- phase: {self.failure['phase']}" + (f", check {self.failure['check']}" if self.failure.get("check") else ""),
                f"- caught after {self.failure['steps_to_failure']:,} steps",
                f"- {failing_run_text(self.failure)}",
                f"- {self.failure['message']}",
            ]
            if self.failure.get("test_file"):
                lines.append(f"- replay: `python -m pytest {self.failure['test_file']}`")
            if self.failure.get("history_file"):
                lines.append(f"- history: `{self.failure['history_file']}`")
        return "\n".join(lines) + "\n"


def _slug(target: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", target).strip("_")


def write_certificate(cert: Certificate, report_dir: str | Path) -> dict[str, Path]:
    """Write ``<slug>.json`` and ``<slug>.md`` (and ``test_<slug>.py`` for a
    failure) under ``report_dir``; returns their paths by kind."""
    directory = Path(report_dir)
    directory.mkdir(parents=True, exist_ok=True)
    slug = _slug(cert.backend)
    paths: dict[str, Path] = {}
    if cert.counterexample is not None:
        paths["test"] = directory / f"test_{slug}.py"
        paths["test"].write_text(cert.counterexample)
        assert cert.failure is not None
        cert.failure["test_file"] = str(paths["test"])
    if cert.history is not None:
        paths["history"] = directory / f"{slug}.history.json"
        paths["history"].write_text(cert.history)
        assert cert.failure is not None
        cert.failure["history_file"] = str(paths["history"])
    paths["json"] = directory / f"{slug}.json"
    paths["json"].write_text(json.dumps(cert.to_dict(), indent=2) + "\n")
    paths["markdown"] = directory / f"{slug}.md"
    paths["markdown"].write_text(cert.to_markdown())
    return paths
