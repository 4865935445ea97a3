"""``refqueue certify [MODULE:FACTORY] [--profile ci|deep] [--steps N] [--seed S]
[--report DIR] [--exhaustive] [--producer-bound SECONDS] [--wake-bound SECONDS] [--timeout SECONDS]
[-o KEY=VALUE ...] [-j N] [--fail-fast | --no-fail-fast]``: certify a backend against the reference model.

``-j N`` (default: the number of cores) walks the worlds in N worker
processes, each loading the backend from ``MODULE:FACTORY`` (with ``-o``
options) and building its own instances; ``--exhaustive`` splits each
world's transitions among them.  The certificate's coverage is a serial
run's.  ``-j 1`` walks in this process (so does a backend that cannot be
loaded by name).  ``--fail-fast`` (the default) runs a short pass of every
phase (a few walks, each blocking check once, a few histories) before the
whole runs, so that any phase's first failure shows within a minute even on
a slow backend; ``--no-fail-fast`` runs each phase once, whole, in order.

``-o key=value`` (repeatable) passes a backend option to every factory call,
besides the kit's keys: the value is parsed as JSON when it parses
(``-o retries=3`` is an int, ``-o tls=true`` a bool), else kept as a string
(``-o url=redis://127.0.0.1:6380/0``).  Before the run the factory is called
once with the options; a ``TypeError``/``ValueError`` from it (an unknown
option, a bad value) exits 2 with its message.

Exit status: 0 with a certificate (JSON and Markdown) in the report folder;
1 when the backend diverges from the model or raises where it must not (a
call it lacks, an exception other than a documented rejection), after
printing the shortest failing run as a runnable pytest function (also saved
in the report folder); 2 when no verdict could be reached: the target cannot
be loaded or an option is wrong, the run did not finish within ``--timeout``
seconds (default 3600: a factory or backend call that hangs; the hung run is
left behind in a daemon thread, and the command ends its process without the
interpreter's shutdown, which would abort on a thread stuck in native code), a phase cannot judge the backend as given
(the certificate says "could not certify" and why, e.g. its own store too
small for the phase's samples), or the kit itself failed (a bug in the kit:
the message asks for a report and prints the traceback).  A multi-threaded
history the linearizability checker could not decide (``unknown``) also
exits 1: it is reported, never passed.  A progress bar is
drawn on stderr while it runs.  Importing this module imports nothing heavy.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from refqueue._redact import redacted_text as redact
from refqueue.conformance.phases import PHASES, phase, phase_of_entry
from refqueue.conformance.certificate import configuration_text, failing_run_text

__all__ = ["DEFAULT_BACKEND", "add_arguments", "run", "seconds_argument", "seed_argument"]

DEFAULT_BACKEND = "refqueue.conformance.backends:inprocess"
DEFAULT_TIMEOUT_S = 3600.0  # a deep run of a correct backend takes minutes, not an hour


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; pass a whole number >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1; pass a whole number >= 1")
    return value


# Worker processes at most (each an interpreter with its own backend: 100,000 had 566 alive, 5 GB, after 20 s).
MAX_JOBS = 64


def _jobs_argument(text: str) -> int:
    value = _positive_int(text)
    if value > MAX_JOBS:
        raise argparse.ArgumentTypeError(f"{value} is above {MAX_JOBS}; pass a number of worker processes about the "
                                         f"machine's cores ({os.cpu_count()})")
    return value


def seconds_argument(text: str) -> float:
    """argparse type of a bound in seconds, in (0, 3600) (``--producer-bound``, ``--wake-bound``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds; pass e.g. 1.0") from None
    if not 0 < value < 3600:
        raise argparse.ArgumentTypeError(f"{value} is not in (0, 3600); pass a number of seconds such as 1.0")
    return value


def _timeout(text: str) -> float:
    import math
    import threading

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds; pass e.g. --timeout 600") from None
    if not (math.isfinite(value) and 0 < value <= threading.TIMEOUT_MAX):
        raise argparse.ArgumentTypeError(
            f"{value} is not a finite number of seconds > 0 (at most threading.TIMEOUT_MAX); pass e.g. --timeout 600"
        )
    return value


def seed_argument(text: str) -> int:
    """argparse type of a seed: a whole number >= 0 (``--seed``; the mutants runner and the plugin take it too)."""
    try:
        seed = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer seed; pass a whole number >= 0, e.g. 0") from None
    if seed < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is below 0; pass a whole number >= 0, e.g. 0")
    return seed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "backend",
        nargs="?",
        default=DEFAULT_BACKEND,
        metavar="MODULE:FACTORY",
        help=f"the backend's factory make(store, clock, **config) (default: {DEFAULT_BACKEND})",
    )
    parser.add_argument("--profile", choices=("ci", "deep"), default="ci", help="how much to run (default: ci)")
    parser.add_argument(
        "--steps", type=_positive_int, default=None, metavar="N", help="rules per lockstep example (default: the profile's)"
    )
    parser.add_argument("--seed", type=seed_argument, default=0, metavar="S", help="seed of the walks and of Hypothesis (default: 0)")
    parser.add_argument(
        "--report", default="reports/certify", metavar="DIR", help="where the certificate goes (default: reports/certify)"
    )
    parser.add_argument(
        "--exhaustive",
        action="store_true",
        help="take every transition of the explorer's world graph instead of random walks",
    )
    parser.add_argument(
        "--producer-bound",
        type=seconds_argument,
        default=None,
        metavar="SECONDS",
        help="how long a producer blocked in put_blocks_until_below may wait once the consumers drained "
        "what they can, in the producers phase (default: the profile's, 1 s)",
    )
    parser.add_argument(
        "--wake-bound",
        type=seconds_argument,
        default=None,
        metavar="SECONDS",
        help="how long after a put, fail, reclaim, ack or close the call it wakes may take to return, in the "
        "blocking phase (default: the profile's, 0.05 s)",
    )
    parser.add_argument(
        "--timeout",
        type=_timeout,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="give up (exit 2) when the whole run has not finished after this many seconds: a factory or a "
        f"backend call that hangs (default: {DEFAULT_TIMEOUT_S:.0f})",
    )
    parser.add_argument(
        "--phase",
        dest="phases",
        action="append",
        choices=PHASES,
        default=None,
        metavar="PHASE",
        help=f"run only this phase (repeatable; one of {', '.join(PHASES)}); the certificate then says it is "
        f"partial and names the phases left out (default: every phase)",
    )
    parser.add_argument("--no-progress", action="store_true", help="draw no progress bar")
    parser.add_argument(
        "-j",
        "--jobs",
        type=_jobs_argument,
        default=None,
        metavar="N",
        help="worker processes that walk the worlds, each loading the backend from MODULE:FACTORY and building "
        "its own instances; --exhaustive splits each world's transitions among them, with the same coverage as "
        "one process (default: with --exhaustive the number of cores, else 1: walk in this process)",
    )
    parser.add_argument(
        "--fail-fast",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="first a short pass of every phase (two walks per world, each blocking check once, two histories, a "
        "few lockstep examples), then the whole runs: any phase's first failure within a minute on a slow "
        "backend (default: on; --no-fail-fast runs each phase once, whole, in order)",
    )
    parser.add_argument(
        "--clients",
        type=_positive_int,
        default=None,
        metavar="N",
        help="clients of one queue each run drives at once, on clocks skewed by +0.5 s, -0.5 s, ... (default: 2 "
        "where the factory has open_client, else 1; 1: one client)",
    )
    parser.add_argument(
        "-o",
        "--option",
        dest="options",
        action="append",
        type=_option,
        default=[],
        metavar="KEY=VALUE",
        help="a backend option passed to every factory call (repeatable); VALUE is parsed as JSON when it "
        "parses, else taken as a string, e.g. -o url=redis://127.0.0.1:6380/0",
    )


def _option(text: str) -> tuple[str, Any]:
    """``key=value`` -> ``(key, value)``, the value JSON when it parses, else the string."""
    import json

    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KEY=VALUE with KEY a Python identifier; pass e.g. -o url=redis://127.0.0.1:6380/0"
        )
    from refqueue.conformance.contract import CONFIG_KEYS

    if key in CONFIG_KEYS:
        raise argparse.ArgumentTypeError(
            f"-o {key}=...: {key!r} is a key the kit passes itself ({', '.join(CONFIG_KEYS)}); pass backend options only"
        )
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    except RecursionError:
        raise argparse.ArgumentTypeError(
            f"-o {key}=...: the value nests JSON too deeply ({len(raw):,} characters); pass a flatter value"
        ) from None
    return key, value


def _options(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The options as a dict; a key given twice is an error (exit 2)."""
    options: dict[str, Any] = {}
    for key, value in pairs:
        if key in options:
            raise ValueError(f"-o {key}= is given twice ({options[key]!r} and {value!r}); pass each option once")
        options[key] = value
    return options


def _probe(backend: Any, options: dict[str, Any]) -> str | None:
    """Call the factory once with ``options`` (on the kit's default store):
    the factory's rejection of them as a message, or None when it accepts them."""
    from refqueue.clock import ManualClock
    from refqueue.conformance.samples import default_store

    store = backend.make_store() if backend.make_store is not None else default_store()
    config = {"visibility_timeout": 30.0, "on_pause": None, "on_resume": None}
    try:
        queue = backend.factory(store, ManualClock(100.0), **options, **config)
    except (TypeError, ValueError) as exc:
        return redact(f"{backend.target} rejects the options {options}: {exc}")
    except Exception as exc:  # e.g. a server named by an option that cannot be reached
        return redact(f"{backend.target} cannot be built with the options {options}: {type(exc).__name__}: {exc}")
    close = getattr(queue, "close", None)
    if callable(close):
        close()
    return None


def run(args: Any) -> int:
    from refqueue._torch import TorchMissing, require_torch
    from refqueue.conformance.certify import certify, write_certificate
    from refqueue.conformance.contract import load_backend
    from refqueue.conformance.crash import KitBug, blame
    from refqueue.conformance.progress import Progress

    try:  # the kit's samples are torch tensors: without torch, no run can start (exit 2, not a verdict)
        require_torch("refqueue certify (the kit writes torch tensors into the backend's store)")
    except TorchMissing as exc:
        print(f"refqueue certify: {exc}", file=sys.stderr)
        return 2
    try:
        backend = load_backend(args.backend)
    except (TypeError, ValueError) as exc:
        print(f"refqueue certify: {exc}", file=sys.stderr)
        return 2
    try:
        options = _options(getattr(args, "options", []))
    except ValueError as exc:
        print(f"refqueue certify: {redact(str(exc))}", file=sys.stderr)
        return 2
    if options:
        rejected = _probe(backend, options)
        if rejected is not None:
            print(f"refqueue certify: {rejected}", file=sys.stderr)
            return 2
    unwritable = _unwritable(args.report)
    if unwritable is not None:  # found before a run of minutes, not after it
        print(f"refqueue certify: {unwritable}", file=sys.stderr)
        return 2
    outcome = _run_with_timeout(
        lambda: certify(
            backend,
            profile=args.profile,
            seed=args.seed,
            steps=args.steps,
            exhaustive=args.exhaustive,
            progress=Progress(enabled=not args.no_progress),
            producer_bound=args.producer_bound,
            wake_bound=args.wake_bound,
            options=options or None,
            phases=tuple(getattr(args, "phases", None) or PHASES),
            jobs=_jobs(getattr(args, "jobs", None), args.exhaustive),
            fail_fast=getattr(args, "fail_fast", False),
            clients=getattr(args, "clients", None),
        ),
        getattr(args, "timeout", DEFAULT_TIMEOUT_S),
    )
    if outcome is None:
        print(
            f"refqueue certify: {args.backend} did not finish within --timeout {args.timeout:g} s (a factory or a "
            f"backend call that never returns?); fix the hang, or pass a larger --timeout for a slow backend",
            file=sys.stderr,
        )
        return 2
    error, cert = outcome
    if isinstance(error, ValueError):
        print(f"refqueue certify: {redact(str(error))}", file=sys.stderr)
        return 2
    if isinstance(error, KitBug):
        print(f"refqueue certify: {redact(str(error))}\n\n{redact(error.details())}", file=sys.stderr)
        return 2
    if error is not None:  # outside every phase: loading the backend's own store, writing the progress bar
        found = blame(error)
        if found is None:
            bug = KitBug("setup", error)
            print(f"refqueue certify: {redact(str(bug))}\n\n{redact(bug.details())}", file=sys.stderr)
        else:
            print(f"refqueue certify: could not certify {args.backend}: {redact(found.describe())}", file=sys.stderr)
        return 2
    try:
        paths = write_certificate(cert, args.report)
    except OSError as exc:
        print(f"refqueue certify: cannot write the certificate to {args.report!r} ({exc.strerror or exc}); "
              f"pass --report with a writable folder", file=sys.stderr)
        return 2
    print(summary(cert, paths))
    if not cert.passed:
        print()
        print(cert.counterexample)
        return 2 if cert.verdict == "could not certify" else 1
    return 0


# The runs left running past --timeout (``left_running``).
_ABANDONED: list[Any] = []


def left_running() -> bool:
    """Whether a run of this process was left running past ``--timeout``: its
    thread may be inside a backend's native code, which the interpreter's
    shutdown would abort (SIGABRT, status 134, instead of 2), so the command
    line's entry point (``refqueue.cli.entry``) ends the process without
    running that shutdown."""
    return any(thread.is_alive() for thread in _ABANDONED)


def _run_with_timeout(work: Any, timeout: float) -> tuple[BaseException | None, Any] | None:
    """``(error, result)`` of ``work()`` run in a daemon thread, or None when it
    did not finish within ``timeout`` seconds (the thread is left running, and
    ``left_running`` says so)."""
    import threading

    outcome: list[tuple[BaseException | None, Any]] = []
    done = threading.Event()

    def target() -> None:
        try:
            outcome.append((None, work()))
        except BaseException as exc:  # handed to the calling thread
            outcome.append((exc, None))
        finally:
            done.set()

    thread = threading.Thread(target=target, name="refqueue-certify", daemon=True)
    thread.start()
    if not done.wait(timeout):
        _ABANDONED.append(thread)
        return None
    return outcome[0]


def _jobs(jobs: int | None, exhaustive: bool) -> int:
    """``-j``; else, for ``--exhaustive``, the number of cores this process may
    run on, and 1 for the ci walks (workers each build the world graphs: on a
    fast backend that costs more than the walks, and it loads the machine the
    blocking phase times wakeups on)."""
    if jobs is not None:
        return jobs
    if not exhaustive:
        return 1
    from refqueue.conformance.parallel import default_jobs

    return default_jobs()


def _unwritable(report: str) -> str | None:
    """Why the report folder cannot take the certificate, or None."""
    import tempfile
    from pathlib import Path

    try:
        Path(report).mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=report):
            pass
    except OSError as exc:
        return f"cannot write the report folder {report!r} ({exc.strerror or exc}); pass --report with a writable folder"
    return None


def summary(cert: Any, paths: dict[str, Any]) -> str:
    """The human-readable outcome (what ``run`` prints)."""
    d = cert.to_dict()
    lines = [
        f"refqueue certify: {d['verdict'].upper()}{' (partial)' if d['partial'] else ''}  {cert.backend}  "
        f"(profile {cert.profile}{' + exhaustive' if cert.exhaustive else ''}, seed {cert.seed}, kit {cert.kit_version})"
    ]
    lines.append(f"  {'configuration':<13} {configuration_text(cert.configuration)}")
    if d["partial"]:
        lines.append(f"  {'not run':<13} phases {', '.join(cert.phases_not_requested)}: not requested (--phase)")
    for name, p in cert.phases.items():
        if "skipped" in p:
            lines.append(f"  {name:<13} skipped: {p['skipped']}")
            continue
        if "unfit" in p or "crashed" in p:  # the phase ended before its own numbers
            lines.append(f"  {name:<13} {'could not certify' if 'unfit' in p else 'the backend raised'}, {p['seconds']} s")
            continue
        lines += phase_of_entry(name).summary(name, p)
    for name in PHASES:
        lines += phase(name).coverage_summary(cert.coverage)
    lines.append(f"  {'duration':<13} {d['duration_s']} s")
    if cert.failure:
        f = cert.failure
        kind = f.get("kind", "divergence")
        check = f", check {f['check']}" if f.get("check") else ""
        if kind == "unfit":
            lines.append(f"  {'not judged':<13} {f['phase']}{check}: the phase cannot judge this backend as given")
        elif kind == "crash":
            lines.append(
                f"  {'failure':<13} {f['phase']}{check}: the backend raised after {f['steps_to_failure']:,} steps"
            )
        else:
            lines.append(
                f"  {'failure':<13} {f['phase']}: caught after {f['steps_to_failure']:,} steps; {failing_run_text(f)}"
            )
        lines.append(f"  {'':<13} {f['message']}")
        if f.get("short_pass"):
            lines.append(f"  {'':<13} found in the short pass (--fail-fast: a short run of every phase before the whole runs)")
    lines.append(f"  {'certificate':<13} {', '.join(str(p) for p in paths.values())}")
    return "\n".join(lines)
