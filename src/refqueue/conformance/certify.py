"""``certify(backend)``: the phases of the kit composed into one certificate.

The phases (``refqueue.conformance.phases.PHASES``, the cheap ones first)
run in order on one ``Context`` and stop at the first failure; each is one
module with one small interface (``refqueue.conformance.phase``), and this
module knows nothing else of them: it validates the options, asks each phase
whether the backend lacks what it needs (then the phase is listed as
skipped, with why) or whether the options cannot be certified at all, runs
the phases asked for, and merges what each returns (its entry, coverage,
checks not run, failure and replay) into the ``Certificate``
(``refqueue.conformance.certificate``).  An exception that escapes a phase
is judged by ``refqueue.conformance.crash.blame``: the backend's (raised in
its code or its store, or an attribute or signature docs/API.md requires
that it lacks) is a failure of that phase, with a replay that runs the phase
again; the kit's own is raised as ``KitBug``, never reported as a verdict.  The package docstring of
``refqueue.conformance`` says what each phase checks.

The certificate records the backend, the kit's version, the profile, the
seed, examples and steps, each phase's numbers and coverage, the
capabilities checked and every check not run with why, and the duration.  A
failure carries the shortest failing run found, rendered as a pytest
function that replays it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from refqueue.conformance.certificate import KIT_VERSION, Certificate, configuration_of, write_certificate
from refqueue.conformance.construction import check_construction
from refqueue.conformance.contract import Backend, load_backend
from refqueue.conformance.crash import KitBug, blame
from refqueue.conformance.phase import Context, PhaseResult, crashed, lacking
from refqueue.conformance.phases import PHASES, phase, phase_of_entry
from refqueue.conformance.profiles import PROFILES, Profile
from refqueue.conformance.progress import Progress

__all__ = [
    "KIT_VERSION", "PHASES", "PROFILES", "Certificate", "KitBug", "Profile", "certify", "check_construction",
    "not_checked", "write_certificate",
]  # fmt: skip


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
    jobs: int = 1,
    fail_fast: bool = False,
    clients: int | None = None,
) -> Certificate:
    """Certify ``backend`` (a ``Backend`` or ``"module:factory"``); see the module docstring.

    ``steps`` overrides the profile's rules per lockstep example; ``phases``
    runs a subset of ``PHASES`` (the pytest plugin runs one per test);
    ``producer_bound`` overrides the profile's bound (seconds) on a blocked
    producer of the producers phase; ``wake_bound`` the profile's bound
    (seconds) on a wakeup of the blocking phase.  ``options`` are passed to
    every factory call besides the kit's keys (``refqueue certify -o key=value``).
    ``clients`` is how many clients of one queue the run drives at once (default
    ``CLIENTS`` where the backend's ``open_client`` opens more, else 1).
    ``jobs`` worker processes walk the worlds (``refqueue.conformance.parallel``;
    1: in this process).  ``fail_fast`` runs a short pass of every phase
    (``Profile.short()``) before the whole runs of the phases the profile sizes
    (``order``); the certificate's ``runs`` lists the runs in the order made.
    """
    _check_kinds(backend, profile, exhaustive, fail_fast, options, progress, phases)
    unknown = [p for p in phases if p not in PHASES]
    if unknown or not phases:
        raise ValueError(f"phases must be a non-empty subset of {PHASES}, got {phases!r}")
    if isinstance(backend, str):
        backend = load_backend(backend)
    if clients is not None:
        backend = with_clients(backend, clients)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an int >= 1 (worker processes of the walks), got {jobs!r}")
    spec, serial = None, None
    if jobs > 1:
        from refqueue.conformance.parallel import spec_of

        spec, serial = spec_of(backend, options)  # before the options are bound: a worker binds its own
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
    if seed < 0:
        raise ValueError(f"seed must be >= 0 (the walks, histories and examples derive their seeds from it), got {seed!r}")
    if producer_bound is not None:
        if isinstance(producer_bound, bool) or not isinstance(producer_bound, (int, float)) or not 0 < producer_bound < 3600:
            raise ValueError(f"producer_bound must be a number of seconds in (0, 3600), got {producer_bound!r}")
        profile = dataclasses.replace(profile, producer_bound=float(producer_bound))
    if wake_bound is not None:
        if isinstance(wake_bound, bool) or not isinstance(wake_bound, (int, float)) or not 0 < wake_bound < 3600:
            raise ValueError(f"wake_bound must be a number of seconds in (0, 3600), got {wake_bound!r}")
        profile = dataclasses.replace(profile, wake_bound=float(wake_bound))
    every = [phase(name) for name in PHASES]
    for each in every:
        refused = each.refuse(backend, exhaustive)
        if refused is not None:
            raise ValueError(refused)
    unfit = _unrepresentable(backend, every)
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
    cert.configuration = configuration_of(backend)
    cert.not_checked = not_checked(backend)
    cert.phases_not_requested = [p for p in PHASES if p not in phases]
    workers = None
    if spec is not None:
        from refqueue.conformance.parallel import Workers

        workers = Workers(spec, jobs)
    context = Context(backend, profile, seed, steps, exhaustive, bar, cert.kit_version, workers=workers, serial=serial)
    short = dataclasses.replace(context, profile=profile.short(), exhaustive=False, short=True)
    done = 0  # steps of every run so far, the short ones included
    provisional: dict[str, str] = {}  # phase -> the entry its passing short run left until its whole run
    try:
        for each in every:
            if each.name in phases and not lacking(backend, each.needs):
                each.prepare(context)
        for each, in_short in order([p for p in every if p.name in phases], fail_fast):
            missing = lacking(backend, each.needs)
            if missing and not in_short and fail_fast:
                continue  # listed as skipped in the short pass
            if missing:
                result = PhaseResult({"steps": 0, "skipped": each.skipped(missing)})
            else:
                result = _run_phase(each, dataclasses.replace(short if in_short else context, steps_before=done))
            done += result.steps
            cert.runs.append({
                "phase": each.name, "pass": "short" if in_short else "whole", "verdict": result.verdict,
                "steps": result.steps, "seconds": result.counts.get("seconds", 0),
            })  # fmt: skip
            if in_short and each.sized and result.failure is not None and result.failure.get("kind") == "unfit":
                continue  # what a phase cannot judge is judged on its whole run, with the whole run's needs
            if in_short and each.sized and result.failure is None:
                # Its whole run follows and replaces this entry; until then (a failure
                # in the short pass) the certificate shows what the short run did.
                result.counts["short_pass"] = True
                provisional[each.name] = result.key or each.name
                cert.phases[provisional[each.name]] = result.counts
                cert.coverage.update(result.coverage)
                continue
            if in_short and result.failure is not None:
                result.counts["short_pass"] = True
                result.failure["short_pass"] = True
            cert.phases.pop(provisional.pop(each.name, ""), None)
            if not _merge(cert, each.name, result):
                break
    finally:
        if workers is not None:
            workers.close()
        # In the kit's order, however the runs came (a short run's entry is replaced by its whole run's).
        rank = {name: PHASES.index(phase_of_entry(name).name) for name in cert.phases}
        cert.phases = dict(sorted(cert.phases.items(), key=lambda item: rank[item[0]]))
        bar.finish()
        cert.duration_s = time.perf_counter() - started
    return cert


def order(chosen: list[Any], fail_fast: bool) -> list[tuple[Any, bool]]:
    """The runs of the ``chosen`` phases, in order, as ``(phase, short)``: each
    phase once, whole; or with ``fail_fast`` a short pass of every phase first
    (``Profile.short()``: a phase that is not ``sized`` runs whole in it; one
    with a ``slow_start`` after the others, while what it needs is built),
    then the whole runs of the sized phases, so that any phase's first
    failure shows after the short pass at the latest."""
    if not fail_fast:
        return [(each, False) for each in chosen]
    short = [each for each in chosen if not each.slow_start] + [each for each in chosen if each.slow_start]
    return [(each, True) for each in short] + [(each, False) for each in chosen if each.sized]


def with_clients(backend: Backend, clients: int) -> Backend:
    """``backend`` driven through ``clients`` clients of one queue at once."""
    if isinstance(clients, bool) or not isinstance(clients, int) or clients < 1:
        raise ValueError(f"clients must be an int >= 1 (clients of one queue driven at once), got {clients!r}")
    if clients == 1:
        return dataclasses.replace(backend, open_client=None)
    if backend.open_client is None:
        raise ValueError(
            f"clients={clients}: {backend.target} has no open_client attribute, so the kit can drive only one client "
            f"of a queue; give the factory open_client(queue, store, clock) (docs/CERTIFYING.md) or pass clients=1"
        )
    return dataclasses.replace(backend, client_count=clients)


def _run_phase(each: Any, context: Context) -> PhaseResult:
    """``each.run(context)``; an exception of the backend that escapes it is a
    failure of the phase (``crash.blame``), one of the kit's own is a ``KitBug``."""
    started = time.perf_counter()
    try:
        return each.run(context)
    except Exception as exc:  # noqa: BLE001 - judged here: the backend's, or the kit's
        found = blame(exc)
        if found is None:
            raise KitBug(each.name, exc) from exc
        return crashed(context, each.name, found, time.perf_counter() - started)


def _merge(cert: Certificate, name: str, result: PhaseResult) -> bool:
    """Merge one phase's result into ``cert``; whether the run goes on."""
    cert.phases[result.key or name] = result.counts
    cert.coverage.update(result.coverage)
    cert.not_checked.extend(result.not_run)
    if result.failure is None:
        return True
    cert.failure = result.failure
    cert.counterexample = result.replay
    cert.history = result.history
    return False


def not_checked(backend: Backend) -> list[dict[str, str]]:
    """Each check the backend's capabilities rule out, and why (the certificate
    lists them before any phase runs): what the model-driven phases leave out
    for each capability declared absent, then each phase that cannot run."""
    out = backend.capabilities.left_out()
    for name in PHASES:
        each = phase(name)
        missing = lacking(backend, each.needs)
        if missing:
            out.append(each.not_checked(missing))
    return out


def _check_kinds(
    backend: object, profile: object, exhaustive: object, fail_fast: object, options: object, progress: object,
    phases: object,
) -> None:
    """A TypeError naming the first of ``certify``'s arguments of the wrong kind
    (before anything runs: a truthy list taken for ``fail_fast=True``, say)."""
    if not isinstance(backend, (Backend, str)):
        raise TypeError(
            f"backend must be a Backend or a 'module:factory' str, got {backend!r}; see refqueue.conformance.backend_of"
        )
    if not isinstance(profile, (str, Profile)):
        raise TypeError(f"profile must be a profile's name ({sorted(PROFILES)}) or a Profile, got {profile!r}")
    for name, value in (("exhaustive", exhaustive), ("fail_fast", fail_fast)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    if options is not None and (not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options)):
        raise TypeError(f"options must be a mapping of str keys to the factory's keyword values, or None, got {options!r}")
    if progress is not None and not isinstance(progress, Progress):
        raise TypeError(f"progress must be a refqueue.conformance.progress.Progress or None, got {progress!r}")
    if isinstance(phases, str) or not isinstance(phases, (tuple, list)) or not all(isinstance(p, str) for p in phases):
        raise TypeError(f"phases must be a tuple of phase names from {PHASES}, got {phases!r}")


def _unrepresentable(backend: Backend, every: list[Any]) -> str | None:
    """Why the model cannot stand for the backend's own store, if it cannot."""
    if backend.make_store is None:
        return None
    from refqueue.conformance.samples import unrepresentable

    reach = max(each.model_units(backend.capabilities) for each in every)
    store = backend.make_store()
    try:
        return unrepresentable(store, reach)
    finally:
        store.close()
