"""What a phase of a certification is: one small interface, and the pieces
the phases share.

A *phase* is one module of the kit (``refqueue.conformance.phases`` lists
them in the order they run) exposing ``PHASE``, an object with

``name``
    the phase's name (``--phase NAME``; its entry in the certificate)
``needs``
    the capabilities it cannot run without; a backend that lacks one gets the
    phase listed as skipped, with ``skipped(lacking)`` saying why, and
    ``not_checked(lacking)`` joins the certificate's list of checks not run
``run(context) -> PhaseResult``
    everything the phase does.  The result carries its verdict, its counts
    (the certificate's entry: ``steps``, ``seconds`` and the phase's own
    numbers), its coverage, the checks it did not run, and on a failure the
    failure and the source of the pytest module that replays it.

and, optionally, what it adds to the certificate's text: ``summary(entry)``
(the lines ``refqueue certify`` prints for its entry), ``coverage_summary``
and ``coverage_markdown`` (for the coverage it reported), ``refuse`` (why
the options cannot be certified at all, before anything runs) and
``model_units`` (how much residency its model must represent on a backend's
own store).  ``PhaseBase`` gives every optional part a default.

``certify`` (``refqueue.conformance.certify``) composes the phases: it runs
each in order on one ``Context``, merges the results into one certificate
and stops at the first failure; it knows nothing else of them, as Jepsen's
``checker/compose`` merges independent verdict maps.  Adding a phase touches
no other phase.

The phases made of named checks (``calls``, ``producers``, ``blocking``,
``faults``) list them as ``Check`` records and report through a
``ChecksReport``; ``checks_result`` turns one into a ``PhaseResult``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from refqueue.conformance.contract import Backend
from refqueue.conformance.progress import Progress

__all__ = [
    "Check", "ChecksReport", "Context", "Phase", "PhaseBase", "PhaseResult", "checks_counts", "checks_doc",
    "checks_result", "crashed", "harness_failure", "lacking", "select_checks", "timed", "unfit",
]  # fmt: skip


@dataclass(frozen=True)
class Context:
    """What every phase of one certification runs with.

    ``profile`` is a ``refqueue.conformance.profiles.Profile``; ``steps`` the
    lockstep override (None: the profile's); ``steps_before`` the steps the
    phases before this one took (a failure reports the steps of all phases
    until it showed).  ``workers`` (a ``refqueue.conformance.parallel.Workers``,
    or None) are the processes the walks phase may use (``-j``); ``serial``
    says why there are none though more than one job was asked for.
    ``short`` is true in the short pass of ``--fail-fast`` (the profile is then
    ``Profile.short()``'s).
    """

    backend: Backend
    profile: Any
    seed: int
    steps: int | None
    exhaustive: bool
    progress: Progress
    kit_version: str
    steps_before: int = 0
    workers: Any = None
    serial: str | None = None
    short: bool = False

    @property
    def target(self) -> str:
        return self.backend.target

    def found_by(self, phase: str) -> str:
        """The line of a replay that says where the failure was found."""
        return (
            f"Found by the refqueue conformance kit {self.kit_version} (profile {self.profile.name}, seed {self.seed}, "
            f"phase {phase})."
        )


@dataclass
class PhaseResult:
    """What one phase found.

    ``counts`` is the phase's entry in the certificate (``steps``,
    ``seconds``, ``steps_per_second`` and its own numbers; ``skipped`` with
    why when it did not run).  ``key`` names that entry when it is not the
    phase's name (the walks phase reports ``exhaustive`` for the cover).
    ``coverage`` is merged into the certificate's coverage; ``not_run``
    (``{"check", "why"}``) joins its list of checks not run.  On a failure,
    ``failure`` is the certificate's failure record (``phase``, ``message``,
    ``steps_to_failure``, ``phase_steps_to_failure``, ``trace_steps`` and
    what the phase adds; ``kind``: ``"divergence"``, ``"crash"`` (the backend
    raised where it must not; ``crash`` says what, where and what to fix) or
    ``"unfit"`` (the phase cannot judge this backend as given: "could not
    certify")), ``replay`` the source of the pytest module that replays it,
    and ``history`` the JSON of a history the phase rejected.
    """

    counts: dict[str, Any]
    key: str | None = None
    coverage: dict[str, Any] = field(default_factory=dict)
    not_run: list[dict[str, str]] = field(default_factory=list)
    failure: dict[str, Any] | None = None
    replay: str | None = None
    history: str | None = None

    @property
    def verdict(self) -> str:
        """``"fail"``, ``"skipped"`` or ``"pass"``."""
        if self.failure is not None:
            return "fail"
        return "skipped" if "skipped" in self.counts else "pass"

    @property
    def steps(self) -> int:
        return int(self.counts.get("steps", 0))


class Phase(Protocol):
    """The interface of a phase (see the module docstring)."""

    name: str
    needs: tuple[str, ...]

    def run(self, context: Context) -> PhaseResult: ...


class PhaseBase:
    """Defaults for the optional parts of a phase; a phase module subclasses it
    and sets ``name``, ``needs`` and ``run``."""

    name = ""
    needs: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()  # certificate entries it may write besides ``name``
    split = False  # the pytest plugin reports one test per named check (``checks``)
    # Whether the profile's sizes (walks, examples, histories, trials) set how much
    # the phase runs: --fail-fast runs such a phase twice (short, then whole), one
    # that is not sized once, whole, in its short pass.
    sized = True
    # Whether its first step waits for something built in the background (``prepare``):
    # the short pass of --fail-fast runs such a phase after the others, meanwhile.
    slow_start = False
    checks: tuple[str, ...] = ()

    def run(self, context: Context) -> PhaseResult:  # pragma: no cover - every phase overrides it
        raise NotImplementedError

    def skipped(self, lacking: Sequence[str]) -> str:
        """Why the phase did not run on a backend that lacks ``lacking``."""
        return f"{', '.join(f'{name}=False declared' for name in lacking)}"

    def not_checked(self, lacking: Sequence[str]) -> dict[str, str]:
        """The certificate's not-checked entry of the phase, skipped for ``lacking``."""
        return {"check": f"{self.name} phase", "why": self.skipped(lacking)}

    def prepare(self, context: Context) -> None:
        """Start, in the background, what the phase's run will need (``certify``
        calls it for every phase it will run, before the first runs); nothing by default."""

    def refuse(self, backend: Backend, exhaustive: bool) -> str | None:
        """Why ``backend`` cannot be certified with these options at all (``certify``
        raises ``ValueError`` with it before any phase runs), or None."""
        return None

    def model_units(self, capabilities: Any) -> int:
        """Units of residency the phase's model reaches on a backend's own store (0: none)."""
        return 0

    def summary(self, name: str, entry: Mapping[str, Any]) -> list[str]:
        """The lines ``refqueue certify`` prints for the phase's entry ``name``
        (each ``"  "``, a 13-wide column with the name on the first, the text)."""
        rate = f", {entry['steps_per_second']:,} steps/s" if entry.get("steps_per_second") else ""
        return [f"  {name:<13} {entry.get('steps', 0):,} steps, {entry.get('seconds', 0)} s{rate}"]

    def markdown(self, name: str, entry: Mapping[str, Any]) -> list[str]:
        """Sections of the certificate's Markdown for the phase's entry ``name``
        (after the table of phases); none by default."""
        return []

    def coverage_summary(self, coverage: Mapping[str, Any]) -> list[str]:
        """The lines ``refqueue certify`` prints for the coverage the phase reported
        (after every phase's own lines)."""
        return []

    def coverage_markdown(self, coverage: Mapping[str, Any]) -> list[str]:
        """Sections of the certificate's Markdown for the coverage the phase reported."""
        return []


def lacking(backend: Backend, needs: Sequence[str]) -> list[str]:
    """The capabilities of ``needs`` the backend does not declare."""
    caps = backend.capabilities.to_dict()
    return [name for name in needs if not caps.get(name, False)]


def timed(steps: int, seconds: float, **detail: Any) -> dict[str, Any]:
    """A phase's counts: its steps, time and rate, then ``detail``."""
    return {
        "steps": steps,
        "seconds": round(seconds, 2),
        "steps_per_second": round(steps / seconds) if seconds > 0 else None,
        **detail,
    }


def harness_failure(context: Context, phase: str, failure: Any, in_phase: int | None) -> tuple[dict[str, Any], str]:
    """The failure record and replay of a ``harness.Failure`` found after
    ``in_phase`` steps of ``phase`` (walks, exhaustive, lockstep)."""
    from refqueue.conformance.render import render_test

    source = render_test(
        failure.trace,
        target=context.target,
        config=failure.config,
        sizes=failure.sizes,
        store=failure.store,
        clock_start=failure.clock_start,
        reason=f"{failure.message}\n\n{context.found_by(phase)}",
    )
    record = {
        "phase": phase,
        "message": failure.message,
        "steps_to_failure": context.steps_before + (in_phase or 0),  # all phases' steps until it showed
        "phase_steps_to_failure": in_phase or 0,
        "trace_steps": len(failure.trace),
    }
    return record, source


# -- phases made of named checks -----------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One named check of a phase made of checks: what it checks (a sentence for
    the certificate), the function that runs it, the capabilities it needs, and
    the phase's options it takes: ``run(backend, seed, **{o: options[o] for o in
    takes})``, where the phase's caller set ``options``."""

    name: str
    what: str
    run: Callable[..., Any]
    needs: tuple[str, ...] = ()
    takes: tuple[str, ...] = ()


@dataclass
class ChecksReport:
    """What a phase made of named checks found: per check what it checked, its
    time and its numbers; the checks not run and why; the first failure (its
    check and message); or why the whole phase was skipped.  ``bound`` is the
    phase's time bound, where it has one."""

    bound: float | None = None
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    not_run: dict[str, str] = field(default_factory=dict)
    steps: int = 0  # backend calls made
    seconds: float = 0.0
    failure: str | None = None
    failed_check: str | None = None
    skipped: str | None = None
    history: str | None = None  # the JSON of a history a check rejected, kept beside the certificate
    crash: dict[str, Any] | None = None  # the failure is the backend's exception (``crash.Crash.to_dict()``)

    @property
    def ok(self) -> bool:
        return self.failure is None


def select_checks(names: Sequence[str], checks: Sequence[str] | None) -> tuple[str, ...]:
    """``checks`` (default: every one of ``names``), validated: a non-empty subset."""
    chosen = tuple(names) if checks is None else tuple(checks)
    if not chosen or any(c not in names for c in chosen):
        raise ValueError(f"checks must be a non-empty subset of {tuple(names)}, got {chosen!r}")
    return chosen


def checks_result(
    context: Context,
    phase: str,
    report: ChecksReport,
    counts: dict[str, Any],
    render: Callable[[Context, ChecksReport], str],
) -> PhaseResult:
    """The ``PhaseResult`` of a phase made of named checks: ``counts`` its
    entry; the checks ``report.not_run`` names join the certificate's
    not-checked list; a failed check is the failure, replayed by
    ``render(context, report)``."""
    result = PhaseResult(counts, not_run=[{"check": f"{phase}: {name}", "why": why} for name, why in report.not_run.items()])
    if report.ok:
        return result
    result.failure = {
        "phase": phase,
        "message": report.failure,
        "steps_to_failure": context.steps_before + report.steps,
        "phase_steps_to_failure": report.steps,
        "trace_steps": 0,
        "check": report.failed_check,
        "kind": "crash" if report.crash is not None else "divergence",
    }
    if report.crash is not None:
        result.failure["crash"] = report.crash
    result.replay = render(context, report)
    return result


def _phase_replay(context: Context, phase: str, headline: str, message: str) -> str:
    """A pytest module that runs ``phase`` of the certification again (same
    profile and seed) and asserts it passes."""
    from refqueue.conformance.render import replay_module

    doc = [f"Counterexample: {context.target} {headline}", "", *message.splitlines(), "", context.found_by(phase),
           "This test runs the phase again (same profile and seed) on fresh queues."]  # fmt: skip
    return replay_module(
        doc,
        ["from refqueue.conformance.certify import certify", "from refqueue.conformance.contract import load_backend"],
        [
            f"cert = certify(BACKEND, profile={context.profile.name!r}, seed={context.seed!r}, phases=({phase!r},))",
            "assert cert.passed, cert.failure['message']",
        ],
        target=context.target,
    )


def _whole_phase_failure(context: Context, phase: str, message: str, kind: str, **extra: Any) -> dict[str, Any]:
    """The certificate's failure entry of a phase judged as a whole (no step of it to shrink to)."""
    return {
        "phase": phase,
        "message": message,
        "steps_to_failure": context.steps_before,
        "phase_steps_to_failure": 0,
        "trace_steps": 0,
        "shrunk": False,
        "kind": kind,
        **extra,
    }


def crashed(context: Context, phase: str, crash: Any, seconds: float) -> PhaseResult:
    """The ``PhaseResult`` of a phase out of which the backend's exception escaped
    (``crash``: a ``refqueue.conformance.crash.Crash``): a failure of the phase,
    replayed by running the phase again."""
    message = f"{phase} phase: {crash.describe()}"
    result = PhaseResult(timed(0, seconds, crashed=crash.exception))
    result.failure = _whole_phase_failure(context, phase, message, "crash", crash=crash.to_dict())
    result.replay = _phase_replay(context, phase, "raises where docs/API.md says it returns.", message)
    return result


def unfit(context: Context, phase: str, why: str, seconds: float) -> PhaseResult:
    """The ``PhaseResult`` of a phase that cannot judge this backend as given
    (``why`` says why and what to change): the verdict is "could not certify"."""
    message = f"{phase} phase: could not certify: {why}"
    result = PhaseResult(timed(0, seconds, unfit=why))
    result.failure = _whole_phase_failure(context, phase, message, "unfit")
    result.replay = _phase_replay(context, phase, "cannot be certified as given.", message)
    return result


def checks_counts(report: ChecksReport, *, bounded: bool, **detail: Any) -> dict[str, Any]:
    """The certificate's entry for a phase made of named checks: its steps and
    time, what each check checked, its bound (``bounded``), each check's
    seconds, then ``detail``."""
    head: dict[str, Any] = {"checks": {name: c["what"] for name, c in report.checks.items()}}
    if bounded:
        head["bound_s"] = report.bound
    head["check_seconds"] = {name: c["seconds"] for name, c in report.checks.items()}
    return timed(report.steps, report.seconds, **head, **detail)


def checks_doc(context: Context, phase: str, report: ChecksReport, headline: str, notes: list[str]) -> list[str]:
    """The docstring of a checks phase's replay: what failed, where it was found, how it replays."""
    return [f"Counterexample: {context.target} {headline}", "", *str(report.failure).splitlines(), "", context.found_by(phase), *notes]
