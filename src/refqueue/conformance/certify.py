"""``certify(backend)``: every check of the kit in one run, and its certificate.

A certification runs these phases in this order (the cheap ones first, the
costly threads and lockstep phases last), stopping at the first failure:

``construction``  configurations the model rejects (a zero timeout, an
                  empty hysteresis band, a half-set effective watermark pair,
                  ...) must make the factory raise ``TypeError``/``ValueError``;
                  those it accepts must construct
``walks``         seeded random walks on the explorer's world graphs of
                  the kit's bounded worlds (``refqueue.conformance.walks``:
                  the agreement world and three wider ones), or with
                  ``exhaustive`` a cover of every transition of each; the
                  interesting situations reached are reported
                  (``refqueue.conformance.coverage``)
``calls``         values and calls no other phase makes, each on a fresh
                  queue with bounded waits (``refqueue.conformance.calls``):
                  ``acquire(poll_interval=math.inf)``, the reclaimer started
                  twice, ``with queue:``, leases with an altered epoch, two
                  queues on one store, a store whose ``scrub`` fails, JSON
                  round trips field by field, a soak of 1,200 deadlines.  A
                  failure's replay runs the failing check again
``producers``     several producers blocked in ``put_blocks_until_below`` at
                  once, with real threads and bounded waits
                  (``refqueue.conformance.producers``, D8): the two-producer
                  deadlock of the pre-D8 rule (``high = 2b``, ``low = b``, no
                  consumer: both admitted), an orphan holding the store at
                  ``high``, and a stress run of three producers, a crashing
                  one and two consumers; every blocked producer must return
                  within the profile's ``producer_bound`` (default 1 s), no
                  thread may hang, and admitted work must stay below ``high +
                  largest`` sample.  A failure's replay runs the failing
                  check again
``blocking``      what users feel, with real threads and bounded waits
                  (``refqueue.conformance.blocking``): a consumer blocked in
                  ``acquire`` is woken by ``put``, ``fail``, a reclaim and
                  ``close`` within the profile's ``wake_bound`` (default
                  50 ms); a blocked ``put_blocks_until_below`` pauses at
                  high, resumes at low, raises ``QueueClosed`` on close and
                  honours ``abort_when``; ``on_pause``/``on_resume`` run with
                  no lock held and their exceptions reach the caller;
                  ``start_reclaimer`` reclaims and ``stop_reclaimer`` stops.
                  A check a declared capability rules out is listed as not
                  run, never passed.  A failure's replay runs the failing
                  check again
``threads``       real multi-threaded histories (``refqueue.conformance.history``),
                  each checked for linearizability against the model
                  (``refqueue.conformance.linearizability``).  A history the
                  checker cannot decide within its budget (``unknown``) fails
                  the certification like an ``illegal`` one: the certificate
                  claims the histories were checked, and an undecided one was
                  not; the failure says which it was.  History k of a run
                  with ``seed`` S is recorded with seed ``1000 * S + k``; a
                  failure's replay records them again
``lockstep``      the Hypothesis state machine (``refqueue.conformance.lockstep``)

The certificate records the backend, the kit's version, the profile, the
seed, examples and steps, the coverage of the world graphs (share of their
transitions, nodes and actions exercised, per world and in total, the
actions never tried, the interesting situations reached) and of the
lockstep operations, the capabilities checked, and the duration.  A
failure carries the shortest failing run found, rendered as a pytest
function that replays it.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import refqueue
from refqueue.conformance.contract import Backend, load_backend, rejection_kind
from refqueue.conformance.harness import Failure, ModelConfig
from refqueue.conformance.phases import PHASES
from refqueue.conformance.progress import Progress
from refqueue.conformance.render import render_test, replay_module

__all__ = [
    "KIT_VERSION", "PHASES", "PROFILES", "Certificate", "Profile", "certify", "check_construction", "write_certificate",
]

KIT_VERSION = refqueue.__version__

# Every operation the lockstep machine can make (the certificate lists those never made).
LOCKSTEP_OPS = (
    "store_put", "put", "try_put", "put_wrong", "acquire", "acquire_wait", "ack", "fail", "dead_letter",
    "extend", "lease_wrong", "copy", "foreign", "get", "release", "tick", "reclaim", "close",
)  # fmt: skip


@dataclass(frozen=True)
class Profile:
    """How much a certification runs.

    ``hypothesis_profile`` is the Hypothesis settings profile the lockstep
    run starts from (``ci`` is Hypothesis's own, ``deep`` the kit's).
    """

    name: str
    examples: int  # Hypothesis examples of the lockstep machine
    steps_per_example: int  # at most this many rules per example
    walks: int  # random walks on the world graph
    walk_length: int  # transitions after the walk's start node
    hypothesis_profile: str
    histories: int = 20  # multi-threaded histories recorded and checked
    history_ops: int = 400  # calls per history (all threads together)
    history_threads: int = 4  # threads per history (one controller, the rest workers)
    history_steps: int = 200_000  # the checker's budget of model steps per history
    producer_bound: float = 1.0  # seconds a blocked producer may wait once consumers drained what they can
    producer_samples: int = 6  # samples each producer of the producers phase's stress check puts
    wake_bound: float = 0.05  # seconds from a waking call's return to the woken call's return (blocking phase)
    shrink_seconds: float = 30.0  # time a failing threaded history may be shrunk for (0: not shrunk)
    shrink_reruns: int = 3  # recordings of a shrunk candidate before it counts as passing (threads vary)


PROFILES: dict[str, Profile] = {
    "ci": Profile("ci", examples=1000, steps_per_example=50, walks=2000, walk_length=40, hypothesis_profile="ci"),
    "deep": Profile(
        "deep", examples=2000, steps_per_example=200, walks=20000, walk_length=60, hypothesis_profile="deep",
        histories=200, history_ops=1000, history_steps=1_000_000, producer_samples=20,
    ),
}


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
    duration_s: float = 0.0
    kit_version: str = KIT_VERSION

    @property
    def passed(self) -> bool:
        return self.failure is None

    @property
    def examples(self) -> int:
        return int(self.phases.get("lockstep", {}).get("examples", 0))

    @property
    def steps(self) -> int:
        return sum(int(p.get("steps", 0)) for p in self.phases.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": "pass" if self.passed else "fail",
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
            "phases": self.phases,
            "coverage": self.coverage,
            "not_checked": self.not_checked,
            "failure": self.failure,
            "python": platform.python_version(),
        }

    def to_markdown(self) -> str:
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
            "",
            "## Phases",
            "",
            "| phase | steps | seconds | steps/s | detail |",
            "|---|---|---|---|---|",
        ]
        for name, p in self.phases.items():
            detail = ", ".join(f"{k}={v}" for k, v in p.items() if k not in ("steps", "seconds", "steps_per_second"))
            lines.append(f"| {name} | {p.get('steps', 0):,} | {p.get('seconds', 0)} | {p.get('steps_per_second', '')} | {detail} |")
        if self.not_checked:
            lines += ["", "## Not checked", ""]
            lines += [f"- {n['check']}: {n['why']}" for n in self.not_checked]
        graph = self.coverage.get("world_graph")
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
        situations = self.coverage.get("situations")
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
        ops = self.coverage.get("lockstep")
        if ops:
            lines += [
                "",
                "## Lockstep operations",
                "",
                f"- distinct model states reached: {ops['model_states']:,}",
                f"- never made: {', '.join(ops['never_made']) or 'none'}",
                "- made: " + ", ".join(f"{k} {v:,}" for k, v in ops["made"].items()),
            ]
        if self.failure:
            lines += [
                "",
                "## Failure",
                "",
                f"- phase: {self.failure['phase']}",
                f"- caught after {self.failure['steps_to_failure']:,} steps",
                f"- {'shortest failing run' if self.failure.get('shrunk', True) else 'failing run (not shrunk)'}: "
                f"{self.failure['trace_steps']} steps",
                f"- {self.failure['message']}",
            ]
            if self.failure.get("test_file"):
                lines.append(f"- replay: `python -m pytest {self.failure['test_file']}`")
            if self.failure.get("history_file"):
                lines.append(f"- history: `{self.failure['history_file']}`")
        return "\n".join(lines) + "\n"


# -- construction ------------------------------------------------------------------

# (what, queue config, default store config in units); the model decides which
# of them a factory must refuse.
_CONSTRUCTIONS: list[tuple[str, ModelConfig, dict[str, int | None]]] = [
    ("defaults", ModelConfig(), {}),
    ("zero visibility timeout", ModelConfig(visibility_timeout=0.0), {}),
    ("negative visibility timeout", ModelConfig(visibility_timeout=-1.0), {}),
    ("non-finite visibility timeout", ModelConfig(visibility_timeout=float("nan")), {}),
    ("watermark pair", ModelConfig(high=4, low=1), {}),
    ("empty hysteresis band", ModelConfig(high=3, low=3), {}),
    ("inverted watermarks", ModelConfig(high=2, low=3), {}),
    ("high override only, store without watermarks", ModelConfig(high=4), {}),
    ("high override over the store's low", ModelConfig(high=8), {"capacity": 10, "high": 6, "low": 2}),
    ("low override at the store's high", ModelConfig(low=6), {"capacity": 10, "high": 6, "low": 2}),
    ("high override past capacity", ModelConfig(high=11, low=2), {"capacity": 10}),
    ("max_deliveries=0", ModelConfig(max_deliveries=0), {}),
    ("max_deliveries=2", ModelConfig(max_deliveries=2), {}),
    ("dedup_window=-1", ModelConfig(dedup_window=-1), {}),
    ("dedup_window=3", ModelConfig(dedup_window=3), {}),
]


def check_construction(backend: Backend) -> tuple[int, dict[str, Any] | None]:
    """Construct the backend with each of ``_CONSTRUCTIONS`` it can take; the
    number checked and, on a disagreement with the model, the failure."""
    from refqueue.conformance.samples import default_store
    from refqueue.conformance.session import Session

    caps = backend.capabilities
    checked = 0
    for what, config, store in _CONSTRUCTIONS:
        if (config.max_deliveries is not None and not caps.max_deliveries) or (
            config.dedup_window is not None and not caps.dedup_window
        ):
            continue
        if backend.make_store is not None and store:
            continue  # the case needs the kit's store
        model_error = None
        try:
            limits_store = backend.make_store() if backend.make_store is not None else default_store(**store)
            try:
                config.byte_config(limits_store, fifo=caps.fifo)  # in bytes: messages say bytes
            finally:
                limits_store.close()
        except (TypeError, ValueError) as exc:
            model_error = str(exc)
        checked += 1
        try:
            session = Session(backend, config.backend_config(), sizes={}, store=store)
        except Exception as exc:  # noqa: BLE001 - classified against the model
            if model_error is not None and rejection_kind(exc) == "invalid":
                continue
            message = (
                f"constructing with {what} raised {type(exc).__name__}: {exc}; "
                + ("the model rejects it as invalid" if model_error else "the model accepts it")
            )
            return checked, _construction_failure(backend, what, config, store, model_error, message)
        session.close()
        if model_error is not None:
            message = f"constructing with {what} succeeded; the model rejects it: {model_error}"
            return checked, _construction_failure(backend, what, config, store, model_error, message)
    return checked, None


def _construction_failure(
    backend: Backend,
    what: str,
    config: ModelConfig,
    store: dict[str, int | None],
    model_error: str | None,
    message: str,
) -> dict[str, Any]:
    from refqueue.conformance.render import render_construction

    source = render_construction(
        target=backend.target, what=what, config=config, store=store, model_error=model_error, reason=message
    )
    return {"phase": "construction", "message": message, "trace_steps": 0, "source": source}


# -- the whole run ---------------------------------------------------------------------




def certify(
    backend: Backend | str,
    *,
    profile: str | Profile = "ci",
    seed: int = 0,
    steps: int | None = None,
    exhaustive: bool = False,
    progress: Progress | None = None,
    phases: tuple[str, ...] = PHASES,
    producer_bound: float | None = None,
    wake_bound: float | None = None,
    options: Mapping[str, Any] | None = None,
) -> Certificate:
    """Certify ``backend`` (a ``Backend`` or ``"module:factory"``); see the module docstring.

    ``steps`` overrides the profile's rules per lockstep example; ``phases``
    runs a subset of ``PHASES`` (the pytest plugin runs one per test);
    ``producer_bound`` overrides the profile's bound (seconds) on a blocked
    producer of the producers phase; ``wake_bound`` the profile's bound
    (seconds) on a wakeup of the blocking phase.  ``options`` are passed to
    every factory call besides the kit's keys (``refqueue certify -o key=value``).
    """
    unknown = [p for p in phases if p not in PHASES]
    if unknown or not phases:
        raise ValueError(f"phases must be a non-empty subset of {PHASES}, got {phases!r}")
    if isinstance(backend, str):
        backend = load_backend(backend)
    if options:
        make, fixed = backend.factory, dict(options)
        backend = dataclasses.replace(backend, factory=lambda store, clock, **kw: make(store, clock, **fixed, **kw))
    if isinstance(profile, str):
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; use one of {sorted(PROFILES)}")
        profile = PROFILES[profile]
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        raise ValueError(f"steps must be an int >= 1 (rules per lockstep example), got {steps!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if producer_bound is not None:
        if isinstance(producer_bound, bool) or not isinstance(producer_bound, (int, float)) or not 0 < producer_bound < 3600:
            raise ValueError(f"producer_bound must be a number of seconds in (0, 3600), got {producer_bound!r}")
        profile = dataclasses.replace(profile, producer_bound=float(producer_bound))
    if wake_bound is not None:
        if isinstance(wake_bound, bool) or not isinstance(wake_bound, (int, float)) or not 0 < wake_bound < 3600:
            raise ValueError(f"wake_bound must be a number of seconds in (0, 3600), got {wake_bound!r}")
        profile = dataclasses.replace(profile, wake_bound=float(wake_bound))
    lacking = _lacking_for_walks(backend)
    if exhaustive and lacking:
        raise ValueError(
            f"the exhaustive cover follows the explorer's world graph, which needs {', '.join(WALK_NEEDS)}, "
            f"but {backend.target} does not declare {', '.join(lacking)}; certify it without --exhaustive"
        )
    unfit = _unrepresentable(backend)
    if unfit is not None:
        raise ValueError(f"{backend.target}: {unfit}")
    bar = progress or Progress(enabled=False)
    started = time.perf_counter()
    cert = Certificate(
        backend=backend.target,
        profile=profile.name,
        seed=seed,
        capabilities=backend.capabilities.to_dict(),
        exhaustive=exhaustive,
    )
    cert.not_checked = _not_checked(backend)
    cert.phases_not_requested = [p for p in PHASES if p not in phases]
    runners = {
        "construction": _construction_phase,
        "walks": _walks_phase,
        "calls": _calls_phase,
        "lockstep": _lockstep_phase,
        "threads": _threads_phase,
        "producers": _producers_phase,
        "blocking": _blocking_phase,
    }
    try:
        for name in PHASES:
            if name in phases and not runners[name](cert, backend, profile, seed, steps, exhaustive, bar):
                break
    finally:
        bar.finish()
        cert.duration_s = time.perf_counter() - started
    return cert


# What the world graph's transitions need that no smaller world does without:
# FIFO acquires (the graph's Acquire takes the head).  A backend lacking other
# capabilities walks the graph without their transitions (walks.world_limits).
WALK_NEEDS = ("fifo",)

# What the lockstep and threads phases leave out for each absent capability.
_NOT_CHECKED = {
    "fifo": "FIFO order (acquire is checked against every pending ref instead)",
    "extend": "extend: lease heartbeats (D7)",
    "max_deliveries": "max_deliveries: dead-lettering at the delivery cap (D7)",
    "dedup_window": "dedup_window: replayed ids refused (D5)",
    "dead_letter": "dead_letter: explicit dead-lettering (D7)",
    "injected_clock": "deadlines and reclaims of expired leases (no time passes)",
    "acquire_nowait": "acquire_nowait: acquire is made only where it returns at once",
    "abort_when": "put_blocks_until_below(abort_when=): blocking puts that would wait",
    "lease_json": "Lease.to_json/from_json round trips",
}


def _not_checked(backend: Backend) -> list[dict[str, str]]:
    """Each check the capabilities rule out, and why (the certificate lists them)."""
    caps = backend.capabilities
    out = [{"check": what, "why": f"{name}=False declared"} for name, what in _NOT_CHECKED.items() if not getattr(caps, name)]
    lacking = _lacking_for_walks(backend)
    if lacking:
        out.append({"check": "walks / exhaustive", "why": f"the world graph needs {', '.join(lacking)}"})
    if not caps.abort_when:
        out.append({"check": "producers phase", "why": "every wait of the phase is bounded by abort_when, which is not declared"})
    return out


def _unrepresentable(backend: Backend) -> str | None:
    """Why the model cannot stand for the backend's own store, if it cannot."""
    if backend.make_store is None:
        return None
    from refqueue.conformance.samples import LOCKSTEP_SIZES, unrepresentable
    from refqueue.conformance.walks import KIT_WORLDS
    from refqueue.model.world import make_world

    reach = max(sum(LOCKSTEP_SIZES.values()), *(sum(make_world(**kw).sizes) for kw in KIT_WORLDS.values()))
    store = backend.make_store()
    try:
        return unrepresentable(store, reach)
    finally:
        store.close()


def _lacking_for_walks(backend: Backend) -> list[str]:
    caps = backend.capabilities.to_dict()
    return [name for name in WALK_NEEDS if not caps[name]]


def _timed(steps: int, seconds: float, **detail: Any) -> dict[str, Any]:
    return {
        "steps": steps,
        "seconds": round(seconds, 2),
        "steps_per_second": round(steps / seconds) if seconds > 0 else None,
        **detail,
    }


def _fail(cert: Certificate, phase: str, failure: Failure, in_phase: int | None) -> None:
    """Record ``failure``, found after ``in_phase`` steps of ``phase``, and its replay."""
    source = render_test(
        failure.trace,
        target=cert.backend,
        config=failure.config,
        sizes=failure.sizes,
        store=failure.store,
        clock_start=failure.clock_start,
        reason=f"{failure.message}\n\n{_found_by(cert, phase)}",
    )
    cert.failure = {
        "phase": phase,
        "message": failure.message,
        "steps_to_failure": _steps_before(cert, phase) + (in_phase or 0),  # all phases' steps until it showed
        "phase_steps_to_failure": in_phase or 0,
        "trace_steps": len(failure.trace),
    }
    cert.counterexample = source


def _steps_before(cert: Certificate, phase: str) -> int:
    """The steps of the phases other than ``phase`` (those run before it)."""
    return sum(int(p.get("steps", 0)) for name, p in cert.phases.items() if name != phase)


def _found_by(cert: Certificate, phase: str) -> str:
    return (
        f"Found by the refqueue conformance kit {cert.kit_version} (profile {cert.profile}, seed {cert.seed}, "
        f"phase {phase})."
    )


def _checks_timed(report: Any, *, bounded: bool, **detail: Any) -> dict[str, Any]:
    """The certificate's entry for a phase made of named checks: its steps and
    time, what each check checked, its bound (``bounded``), each check's
    seconds, then ``detail``."""
    head: dict[str, Any] = {"checks": {name: c["what"] for name, c in report.checks.items()}}
    if bounded:
        head["bound_s"] = report.bound
    head["check_seconds"] = {name: c["seconds"] for name, c in report.checks.items()}
    return _timed(report.steps, report.seconds, **head, **detail)


def _checks_verdict(cert: Certificate, phase: str, report: Any, render: Callable[[Certificate, Any], str]) -> bool:
    """The verdict of a phase made of named checks (calls, blocking, producers).

    The checks ``report.not_run`` names (a phase without optional checks has
    none) join the certificate's not-checked list; a failed check becomes the
    certificate's failure, replayed by ``render(cert, report)``.
    """
    cert.not_checked.extend({"check": f"{phase}: {name}", "why": why} for name, why in getattr(report, "not_run", {}).items())
    if report.ok:
        return True
    cert.failure = {
        "phase": phase,
        "message": report.failure,
        "steps_to_failure": _steps_before(cert, phase) + report.steps,
        "phase_steps_to_failure": report.steps,
        "trace_steps": 0,
        "check": report.failed_check,
    }
    cert.counterexample = render(cert, report)
    return False


def _checks_doc(cert: Certificate, phase: str, report: Any, headline: str, notes: list[str]) -> list[str]:
    """The docstring of a checks phase's counterexample: what failed, where it was found, how it replays."""
    return [f"Counterexample: {cert.backend} {headline}", "", *str(report.failure).splitlines(), "", _found_by(cert, phase), *notes]


def _construction_phase(
    cert: Certificate, backend: Backend, profile: Profile, seed: int, steps: int | None, exhaustive: bool, bar: Progress
) -> bool:
    bar.start("construction", len(_CONSTRUCTIONS))
    started = time.perf_counter()
    checked, failure = check_construction(backend)
    cert.phases["construction"] = _timed(0, time.perf_counter() - started, configurations=checked)
    if failure is not None:
        source = failure.pop("source")
        cert.failure = {**failure, "steps_to_failure": 0, "phase_steps_to_failure": 0}
        cert.counterexample = source
        return False
    return True


def _walks_phase(
    cert: Certificate, backend: Backend, profile: Profile, seed: int, steps: int | None, exhaustive: bool, bar: Progress
) -> bool:
    from refqueue.conformance.coverage import Reach
    from refqueue.conformance.walks import KIT_WORLDS, Coverage, WalkResult, cover, kit_world, random_walks

    lacking = _lacking_for_walks(backend)
    if lacking:
        cert.phases["walks"] = {"steps": 0, "skipped": f"the world graph needs {', '.join(lacking)}"}
        return True
    name = "exhaustive" if exhaustive else "walks"
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

        if exhaustive:
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
                seed=seed * len(KIT_WORLDS) + k,
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
    cert.phases[name] = _timed(total.steps, total.seconds, walks=total.walks, replays=total.replays, worlds=list(worlds))
    if total.off_graph:
        cert.phases[name]["tie_orders_off_graph"] = total.off_graph
    if total.given_up:
        cert.phases[name]["transitions_given_up"] = total.given_up
    if said:
        cert.phases[name]["reduced_world"] = "; ".join(said)
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
    cert.coverage["world_graph"] = graph
    cert.coverage["situations"] = reach.to_dict()
    if failure is not None:
        _fail(cert, name, failure, total.steps_to_failure)
        return False
    return True


def _graph_coverage(coverage: Any) -> dict[str, Any]:
    graph = coverage.to_dict()
    graph["transitions_share"] = f"{100 * graph['transitions'] / max(graph['transitions_total'], 1):.1f} %"
    graph["nodes_share"] = f"{100 * graph['nodes'] / max(graph['nodes_total'], 1):.1f} %"
    return graph


def _calls_phase(
    cert: Certificate, backend: Backend, profile: Profile, seed: int, steps: int | None, exhaustive: bool, bar: Progress
) -> bool:
    from refqueue.conformance.calls import CHECKS, check_calls

    bar.start("calls", len(CHECKS))
    report = check_calls(backend)
    bar.update(len(report.checks) + len(report.not_run), "checks", force=True)
    cert.phases["calls"] = _checks_timed(report, bounded=False, not_run=dict(report.not_run))
    return _checks_verdict(cert, "calls", report, _render_calls)


def _render_calls(cert: Certificate, report: Any) -> str:
    """A pytest module that runs the failing check of the calls phase again."""
    notes = ["This test runs the failing check again on a fresh queue; every wait in it is bounded."]
    return replay_module(
        _checks_doc(cert, "calls", report, "does not answer a call as docs/API.md says.", notes),
        ["from refqueue.conformance.calls import check_calls", "from refqueue.conformance.contract import load_backend"],
        [f"report = check_calls(BACKEND, checks=({report.failed_check!r},))", "assert report.ok, report.failure"],
        target=cert.backend,
    )


def _lockstep_phase(
    cert: Certificate, backend: Backend, profile: Profile, seed: int, steps: int | None, exhaustive: bool, bar: Progress
) -> bool:
    from refqueue.conformance.lockstep import run_lockstep

    bar.start("lockstep", profile.examples)
    started = time.perf_counter()
    stats = run_lockstep(
        backend,
        hypothesis_profile=profile.hypothesis_profile,
        examples=profile.examples,
        steps_per_example=steps or profile.steps_per_example,
        seed_value=seed,
        on_example=lambda s: bar.update(s.examples, f"examples · {s.steps:,} steps"),
    )
    seconds = time.perf_counter() - started
    cert.phases["lockstep"] = _timed(stats.steps, seconds, examples=stats.examples)
    cert.coverage["lockstep"] = {
        "model_states": len(stats.states),
        "made": dict(sorted(stats.ops.items(), key=lambda kv: -kv[1])),
        "never_made": [op for op in LOCKSTEP_OPS if op not in stats.ops],
    }
    if stats.failure is not None:
        _fail(cert, "lockstep", stats.failure, stats.steps_to_failure)
        return False
    return True


def _threads_phase(
    cert: Certificate, backend: Backend, profile: Profile, seed: int, steps: int | None, exhaustive: bool, bar: Progress
) -> bool:
    from refqueue.conformance.history import RecordingHung, record
    from refqueue.conformance.linearizability import ILLEGAL, OK, check

    bar.start("threads", profile.histories)
    seeds = [seed * 1000 + k for k in range(profile.histories)]
    shape = {"threads": profile.history_threads, "operations": profile.history_ops}
    verdicts = {"ok": 0, "illegal": 0, "unknown": 0}
    operations = 0
    recording = checking = 0.0
    most_steps = 0
    failed = None
    for k, history_seed in enumerate(seeds):
        started = time.perf_counter()
        try:
            history = record(backend, seed=history_seed, **shape)
        except RecordingHung as exc:
            recording += time.perf_counter() - started
            failed = (k, history_seed, None, f"history {k + 1} (seed {history_seed}): {exc}", str(exc))
            break
        recording += time.perf_counter() - started
        started = time.perf_counter()
        verdict = check(history, max_steps=profile.history_steps, timeout=None)
        checking += time.perf_counter() - started
        operations += len(history)
        most_steps = max(most_steps, verdict.steps)
        verdicts[verdict.result] += 1
        bar.update(k + 1, f"histories · {operations:,} operations")
        if verdict.result != OK:
            failed = (k, history_seed, verdict, _threads_message(k, history_seed, verdict), verdict.describe())
            break
    cert.phases["threads"] = _timed(
        operations,
        recording + checking,
        histories=sum(verdicts.values()),
        threads=profile.history_threads,
        verdicts=verdicts,
        record_seconds=round(recording, 2),
        check_seconds=round(checking, 2),
        most_model_steps=most_steps,
    )
    if failed is None:
        return True
    k, history_seed, verdict, message, detail = failed
    cert.failure = {
        "phase": "threads",
        "message": message,
        "steps_to_failure": _steps_before(cert, "threads") + operations,
        "phase_steps_to_failure": operations,
        "trace_steps": len(verdict.history) if verdict is not None else 0,
        "shrunk": False,
        "verdict": detail,
    }
    shrunk = None
    if verdict is not None and verdict.result == ILLEGAL and profile.shrink_seconds > 0:
        # Only an illegal history is shrunk: a hang costs a whole hang_after per
        # try, and an undecided one says nothing a smaller one would.
        shrunk = _shrink_history(backend, history_seed, shape, profile, verdict, bar)
        cert.phases["threads"]["shrink"] = {
            "operations_before": shrunk.operations_before,
            "threads_before": shrunk.threads_before,
            "operations_after": shrunk.operations,
            "threads_after": shrunk.threads,
            "recordings": shrunk.recordings,
            "seconds": round(shrunk.seconds, 2),
            "out_of_time": shrunk.out_of_time,
        }
        if shrunk.shrunk:
            verdict = shrunk.verdict
            detail = verdict.describe()
            message = _threads_message(k, history_seed, verdict, shrunk)
            cert.failure.update(
                message=message,
                trace_steps=len(verdict.history),
                shrunk=True,
                verdict=detail,
                operations_before=shrunk.operations_before,
                threads_before=shrunk.threads_before,
                threads_after=shrunk.threads,
            )
        else:
            shrunk = None
    if verdict is not None:
        cert.history = verdict.history.to_json()
    # The replay records the failing seed first, then the phase's other seeds.
    order = [history_seed] + [s for s in seeds if s != history_seed]
    programs = None if shrunk is None else (history_seed, shrunk.programs)
    cert.counterexample = _render_threads(cert, order, shape, profile, message, detail, programs)
    return False


def _shrink_history(backend: Backend, history_seed: int, shape: dict[str, int], profile: Profile, verdict: Any, bar: Progress) -> Any:
    """Shrink the failing history of ``history_seed`` (``shrink.shrink_threads``)."""
    from refqueue.conformance.history import RecordingHung, plan_programs, record
    from refqueue.conformance.linearizability import ILLEGAL, check
    from refqueue.conformance.shrink import shrink_threads

    bar.start("threads: shrinking", int(profile.shrink_seconds))

    def attempt(programs: dict[int, list[str]]) -> tuple[Any, Any] | None:
        try:
            history = record(backend, seed=history_seed, programs=programs, hang_after=_SHRINK_HANG_AFTER)
        except RecordingHung:
            return None  # a smaller program that hangs is not the failure being shrunk
        found = check(history, max_steps=profile.history_steps, timeout=None)
        return (history, found) if found.result == ILLEGAL else None

    return shrink_threads(
        plan_programs(history_seed, **shape),
        attempt,
        verdict.history,
        verdict,
        reruns=profile.shrink_reruns,
        seconds=profile.shrink_seconds,
    )


_SHRINK_HANG_AFTER = 10.0  # seconds a recording made while shrinking may take


def _threads_message(k: int, history_seed: int, verdict: Any, shrunk: Any = None) -> str:
    if verdict.result == "unknown":
        return (
            f"history {k + 1} (seed {history_seed}, {verdict.operations} operations) could not be decided: "
            f"{verdict.reason}; an undecided history is not a pass"
        )
    blocker = verdict.history.events[verdict.blocker]
    if shrunk is None:
        what = f"history {k + 1} (seed {history_seed}, {verdict.operations} operations, not shrunk)"
    else:
        what = (
            f"history {k + 1} (seed {history_seed}), shrunk from {shrunk.operations_before} operations of "
            f"{shrunk.threads_before} threads to {verdict.operations} operations of {verdict.history.threads} "
            f"threads ({shrunk.recordings} recordings, {shrunk.seconds:.1f} s"
            f"{', stopped at the time budget' if shrunk.out_of_time else ''}),"
        )
    return (
        f"{what} is not linearizable: after the longest linearizable prefix ({len(verdict.order)} operations) "
        f"no order places {blocker.text(verdict.history.epoch)}; the model says: {verdict.model_says}"
    )


def _render_threads(
    cert: Certificate,
    seeds: list[int],
    shape: dict[str, int],
    profile: Profile,
    message: str,
    detail: str,
    programs: tuple[int, dict[int, list[str]]] | None = None,
) -> str:
    """A pytest module that records the failing histories again and checks each.

    A thread schedule cannot be replayed call by call, so the test re-runs the
    recording: the shrunk programs first (``profile.shrink_reruns`` times, a
    few more), then the phase's seeds (the failing seed first).  On a backend
    with the race it fails again; on a correct one every history is
    linearizable.
    """
    doc = [
        f"Counterexample: {cert.backend} diverges from the reference model.",
        "",
        *message.splitlines(),
        "",
        _found_by(cert, "threads"),
        "A thread schedule cannot be replayed call by call: this test records the histories again",
        "(new threads) and checks each: "
        + ("first the shrunk per-thread programs below, then the phase's seeds." if programs else "the phase's seeds."),
        "The history that failed is saved beside the certificate (<backend>.history.json); check it again",
        "with refqueue.conformance.linearizability.check.",
        "",
        *detail.splitlines(),
    ]
    constants: list[str] = []
    body: list[str] = []
    if programs is not None:
        seed, shrunk = programs
        constants += ["# The shrunk programs: thread -> the kinds of call it makes (thread 0 is the controller).", "PROGRAMS = {"]
        constants += [f"    {t}: {p!r}," for t, p in sorted(shrunk.items())]
        constants += ["}", ""]
        body += [
            f"for _ in range({max(profile.shrink_reruns, 1) * 3}):",
            f"    history = record(BACKEND, seed={seed!r}, programs=PROGRAMS)",
            f"    verdict = check(history, max_steps={profile.history_steps}, timeout=None)",
            "    assert verdict.ok, verdict.describe()",
        ]
    body += [
        f"for seed in {seeds!r}:",
        "    history = record(",
        f"        BACKEND, seed=seed, threads={shape['threads']}, operations={shape['operations']}",
        "    )",
        f"    verdict = check(history, max_steps={profile.history_steps}, timeout=None)",
        "    assert verdict.ok, verdict.describe()",
    ]
    imports = [
        "from refqueue.conformance.contract import load_backend",
        "from refqueue.conformance.history import record",
        "from refqueue.conformance.linearizability import check",
    ]
    return replay_module(doc, imports, body, target=cert.backend, constants=constants)


def _producers_phase(
    cert: Certificate, backend: Backend, profile: Profile, seed: int, steps: int | None, exhaustive: bool, bar: Progress
) -> bool:
    from refqueue.conformance.producers import CHECKS, check_producers

    bar.start("producers", len(CHECKS))
    if not backend.capabilities.abort_when:
        cert.phases["producers"] = {"steps": 0, "skipped": "every wait of the phase is bounded by abort_when, not declared"}
        return True
    report = check_producers(backend, seed=seed, bound=profile.producer_bound, samples=profile.producer_samples)
    bar.update(len(report.checks), "checks")
    if report.skipped is not None:
        cert.phases["producers"] = {"steps": 0, "skipped": report.skipped}
        return True
    checks = report.checks
    stress = checks.get("stress", {})
    cert.phases["producers"] = _checks_timed(
        report,
        bounded=True,
        blocking_puts=sum(c["blocking_puts"] for c in checks.values()),
        slowest_put_s=max((c["slowest_put_s"] for c in checks.values()), default=0.0),
        max_work_bytes=stress.get("max_work_bytes"),
        work_bound_bytes=stress.get("work_bound_bytes"),
        max_resident_bytes=stress.get("max_resident_bytes"),
        resident_bound_bytes=stress.get("resident_bound_bytes"),
    )
    return _checks_verdict(cert, "producers", report, lambda cert, report: _render_producers(cert, report, seed, profile))


def _render_producers(cert: Certificate, report: Any, seed: int, profile: Profile) -> str:
    """A pytest module that runs the failing check of the producers phase again.

    Threads cannot be replayed call by call: the test runs the check again
    with the same seed and bound; on the backend that failed it fails again.
    """
    notes = [
        "Threads cannot be replayed call by call: this test runs the failing check again (same seed and",
        "bound, new threads); every wait in it is bounded.",
    ]
    return replay_module(
        _checks_doc(cert, "producers", report, "diverges from the reference model.", notes),
        ["from refqueue.conformance.producers import check_producers"],
        [
            "report = check_producers(",
            f"    {cert.backend!r}, seed={seed!r}, bound={report.bound!r}, samples={profile.producer_samples!r},",
            f"    checks=({report.failed_check!r},),",
            ")",
            "assert report.ok, report.failure",
        ],
    )


def _blocking_phase(
    cert: Certificate, backend: Backend, profile: Profile, seed: int, steps: int | None, exhaustive: bool, bar: Progress
) -> bool:
    from refqueue.conformance.blocking import CHECKS, check_blocking

    bar.start("blocking", len(CHECKS))
    report = check_blocking(backend, bound=profile.wake_bound)
    bar.update(len(report.checks) + len(report.not_run), "checks")
    checks = report.checks
    latencies = [t for c in checks.values() for t in c.get("latencies_s", ())]
    cert.phases["blocking"] = _checks_timed(
        report,
        bounded=True,
        latencies_s={name: c["latencies_s"] for name, c in checks.items() if "latencies_s" in c},
        slowest_wake_s=max(latencies, default=0.0),
        not_run=dict(report.not_run),
    )
    return _checks_verdict(cert, "blocking", report, _render_blocking)


def _render_blocking(cert: Certificate, report: Any) -> str:
    """A pytest module that runs the failing check of the blocking phase again
    (threads cannot be replayed call by call; every wait in it is bounded)."""
    notes = [
        "Threads cannot be replayed call by call: this test runs the failing check again (same bound, new",
        "threads); every wait in it is bounded.",
    ]
    return replay_module(
        _checks_doc(cert, "blocking", report, "does not block and wake as docs/API.md says.", notes),
        ["from refqueue.conformance.blocking import check_blocking", "from refqueue.conformance.contract import load_backend"],
        [
            f"report = check_blocking(BACKEND, bound={report.bound!r}, checks=({report.failed_check!r},))",
            "assert report.ok, report.failure",
        ],
        target=cert.backend,
    )


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
