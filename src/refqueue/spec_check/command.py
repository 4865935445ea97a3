"""``refqueue check-spec``: model-check every config of spec/manifest.json
with TLC, compare with the manifest, and check that the spec and the Python
model agree.

Per config it prints progress while TLC runs, then one table row; for each
counterexample config the violated property and the trace TLC printed.  A
config whose manifest entry has ``agreement`` also has its state graph
dumped and compared with the Python model's (``refqueue.spec_check.agreement``),
so the default run proves the agreement too.  Exit status: 0 when every
config came out as the manifest says, 1 on any mismatch or unknown verdict,
2 when it cannot run (bad arguments, no java, no TLC jar, a bad manifest).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

from refqueue.spec_check.agreement import AgreementError, AgreementResult, check
from refqueue.spec_check.coverage import NEVER_FIRES, check_coverage, config_problems
from refqueue.spec_check.manifest import ConfigEntry, ManifestError, load_manifest, mismatches, spec_dir_of
from refqueue.spec_check.simulate import SIMULATION_MODULE, simulate
from refqueue.spec_check.tlc import TlcRun, TlcUnavailable, find_jar, find_java, jvm_args_for, run_tlc

__all__ = ["add_arguments", "run", "check_config", "ConfigReport"]


# TLC worker threads at most (each a thread of one JVM; 100,000 ran TLC out of open files, reported as a mismatch).
MAX_WORKERS = 256


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an int; pass a number of TLC worker threads >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is < 1; pass a number of TLC worker threads >= 1")
    if value > MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"{value} is outside 1..{MAX_WORKERS}; pass a number of TLC worker threads "
                                         f"(about the machine's cores: {os.cpu_count()})")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; pass seconds > 0") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number > 0; pass seconds > 0")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--spec-dir", default=None, type=Path,
        help="directory with SampleRefQueue.tla, the MC configs and manifest.json (default: the spec installed "
        "with refqueue: the package's refqueue/spec from a wheel, the checkout's spec/ from a source tree)",
    )
    parser.add_argument(
        "--workers", default=2, type=_positive_int,
        help="TLC worker threads (default 2; counterexample configs always use the manifest's 1); with "
        "--mutants, how many mutants run at once (each TLC run on one worker)",
    )
    parser.add_argument(
        "--config", nargs="+", metavar="NAME", default=None,
        help="check only these configs (names from manifest.json); default: all",
    )
    parser.add_argument(
        "--agreement", action="store_true",
        help="check only the configs with an agreement entry: TLC's state graph against the Python model's",
    )
    parser.add_argument(
        "--timeout", default=600.0, type=_positive_seconds,
        help="seconds one TLC run may take before it is stopped and reported unknown (default 600)",
    )
    parser.add_argument(
        "--simulate-seconds", default=None, type=_positive_seconds, metavar="S",
        help=f"after the configs, simulate {SIMULATION_MODULE} (production-like constants) with TLC -simulate "
        f"for S seconds (default {SIMULATE_SECONDS:g} in a full run; not run when --config or --agreement "
        f"selects configs, unless given)",
    )
    parser.add_argument(
        "--deep", action="store_true",
        help=f"simulate for {DEEP_SIMULATE_SECONDS:g} seconds instead (a longer random search)",
    )
    parser.add_argument("--no-simulate", action="store_true", help="skip the simulation")
    parser.add_argument(
        "--mutants", nargs="*", metavar="NAME", default=None,
        help="instead of the configs: mutation testing, every mutant of spec/mutants.json (or these) must be "
        "killed by TLC and by the Python explorer (refqueue.spec_check.mutants); each mutated spec's whole "
        "graph is also compared with the unmutated model's on an agreement config, and the table says whether "
        "it differs",
    )
    parser.add_argument(
        "--mutants-without-graphs", action="store_true",
        help="with --mutants: skip the graph comparison (faster; the named-property kills are still required)",
    )


class ConfigReport:
    """One config's run: TLC's answer, the manifest comparison, the agreement."""

    def __init__(self, entry: ConfigEntry, run: TlcRun, problems: list[str], agreement: AgreementResult | None):
        self.entry = entry
        self.run = run
        self.problems = problems
        self.agreement = agreement

    @property
    def ok(self) -> bool:
        return not self.problems


def check_config(
    spec_dir: Path,
    entry: ConfigEntry,
    *,
    workers: int = 2,
    timeout: float | None = 600.0,
    out: TextIO | None = None,
    java: str | None = None,
    jar: Path | None = None,
) -> ConfigReport:
    """Run TLC on one manifest entry (dumping and comparing its graph when it
    has an agreement entry) and compare the result with the manifest."""

    def say(line: str) -> None:
        if out is not None:
            print(line, file=out, flush=True)

    def progress(line: str) -> None:
        if line.startswith(("Progress(", "Checking temporal properties", "Finished checking temporal")):
            say(f"    tlc: {line}")

    world = None
    if entry.agreement is not None:
        from refqueue.model.world import make_world

        try:
            world = make_world(**entry.agreement["world"])
        except (TypeError, ValueError) as exc:
            raise ManifestError(f"{entry.name}: agreement.world is not valid for make_world: {exc}") from None
    with tempfile.TemporaryDirectory(prefix=f"refqueue-tlc-{entry.name}-") as tmp:
        workdir = Path(tmp)
        dump = workdir / "states.dot" if world is not None else None
        complete = entry.mode in ("safety", "liveness")  # the whole state space: its coverage means something
        run = run_tlc(
            spec_dir, entry.module, entry.config, workdir,
            workers=entry.workers or workers, dump=dump, timeout=timeout, on_line=progress, java=java, jar=jar,
            tlc_args=COVERAGE_ARGS if complete else (), jvm_args=jvm_args_for(entry.distinct_states),
        )
        problems = mismatches(entry, run)
        agreement = None
        if world is not None and run.outcome == "ok":
            say(f"    agreement: comparing TLC's graph with the Python model's (make_world(**{entry.agreement['world']}))")
            start = time.monotonic()
            try:
                agreement = check(dump, world)  # type: ignore[arg-type]
            except AgreementError as exc:
                problems.append(f"agreement could not be checked: {exc}")
            else:
                say(f"    agreement: {agreement.summary()} ({time.monotonic() - start:.1f} s)")
                if not agreement.ok:
                    problems.append(f"agreement: {agreement.message}")
                    problems.extend(f"  {line}" for line in agreement.details)
        elif world is not None:
            problems.append("agreement not checked: TLC did not complete the state space")
    if entry.witness is not None:
        problems.extend(_python_witness(entry, say))
    return ConfigReport(entry, run, problems, agreement)


def _python_witness(entry: ConfigEntry, say) -> list[str]:
    """The Python explorer must reach the witness TLC reached (the same state, by the model's twin)."""
    from refqueue.model.explorer import explore
    from refqueue.model.invariants import WITNESSES
    from refqueue.model.world import make_world

    goal, kwargs = entry.witness["goal"], entry.witness["world"]  # type: ignore[index]
    try:
        world = make_world(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ManifestError(f"{entry.name}: witness.world is not valid for make_world: {exc}") from None
    start = time.monotonic()
    result = explore(world, goals={goal: WITNESSES[goal]}, stop_on_violation=False)
    seconds = time.monotonic() - start
    if goal not in result.goals:
        return [f"witness: the Python explorer never reached {goal} on make_world(**{kwargs}) "
                f"({result.distinct_states} states, {seconds:.1f} s); the model refuses what D5 allows"]
    trace = " -> ".join(s.label() for s in result.goals[goal][1:])
    say(f"    witness: the Python explorer reached {goal} too ({seconds:.1f} s): {trace}")
    return [f"witness: the Python explorer found {sorted(result.violations)} violated on the way"] if result.violations else []


def _fmt(value: object) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def _table(reports: list[ConfigReport]) -> list[str]:
    head = ("config", "mode", "expected", "TLC found", "distinct", "generated", "depth", "trace", "seconds", "check")
    rows = [head]
    for r in reports:
        trace = r.run.trace_states if r.run.outcome == "violation" else None
        rows.append(
            (
                r.entry.name, r.entry.mode, r.entry.expected, r.run.result, _fmt(r.run.distinct_states),
                _fmt(r.run.total_states), _fmt(r.run.depth), _fmt(trace), f"{r.run.seconds:.1f}",
                "ok" if r.ok else "MISMATCH",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def _select(entries: list[ConfigEntry], names: list[str] | None, agreement_only: bool) -> list[ConfigEntry]:
    if names is not None:
        known = {e.name: e for e in entries}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ManifestError(f"unknown config {unknown}; manifest.json lists {sorted(known)}")
        entries = [known[n] for n in dict.fromkeys(names)]
    if agreement_only:
        without = [e.name for e in entries if e.agreement is None]
        if names is not None and without:
            raise ManifestError(f"--agreement with --config {without}: those configs have no agreement entry")
        entries = [e for e in entries if e.agreement is not None]
        if not entries:
            raise ManifestError("--agreement: no config in manifest.json has an agreement entry")
    return entries


def _conflict(args: argparse.Namespace) -> str | None:
    """Why the options given do not go together (one would be silently ignored), or None."""
    given = [
        option for option, on in (
            ("--config", getattr(args, "config", None) is not None),
            ("--agreement", getattr(args, "agreement", False)),
            ("--simulate-seconds", getattr(args, "simulate_seconds", None) is not None),
            ("--deep", getattr(args, "deep", False)),
            ("--no-simulate", getattr(args, "no_simulate", False)),
        ) if on
    ]  # fmt: skip
    if getattr(args, "mutants", None) is not None:
        if given:
            return (f"{', '.join(given)} applies to the configs, not to the mutants; with --mutants name the "
                    f"mutants to run after it (names from spec/mutants.json), or drop --mutants")
        return None
    if getattr(args, "mutants_without_graphs", False):
        return "--mutants-without-graphs applies only with --mutants; add --mutants or drop it"
    if getattr(args, "no_simulate", False) and ("--simulate-seconds" in given or "--deep" in given):
        return "--no-simulate contradicts --simulate-seconds and --deep; give one of them"
    if "--simulate-seconds" in given and "--deep" in given:
        return (f"--deep simulates for {DEEP_SIMULATE_SECONDS:g} s and --simulate-seconds for the seconds it gives; "
                f"give one of them")
    return None


def run(args: argparse.Namespace) -> int:
    conflict = _conflict(args)
    if conflict is not None:
        print(f"refqueue check-spec: {conflict}", file=sys.stderr)
        return 2
    if getattr(args, "mutants", None) is not None:
        from refqueue.spec_check.mutants import run_mutants

        return run_mutants(args)
    out = sys.stdout
    try:
        spec_dir = spec_dir_of(args)
        entries = _select(load_manifest(spec_dir), args.config, args.agreement)
        java, jar = find_java(), find_jar()
    except (ManifestError, TlcUnavailable) as exc:
        print(f"refqueue check-spec: {exc}", file=sys.stderr)
        return 2
    print(f"check-spec: {len(entries)} config(s) from {spec_dir / 'manifest.json'}; TLC {jar}", file=out, flush=True)
    reports: list[ConfigReport] = []
    start = time.monotonic()
    for i, entry in enumerate(entries, 1):
        workers = entry.workers or args.workers
        print(f"[{i}/{len(entries)}] {entry.name} ({entry.mode}, {workers} worker(s)): running TLC", file=out, flush=True)
        try:
            report = check_config(spec_dir, entry, workers=args.workers, timeout=args.timeout, out=out, java=java, jar=jar)
        except ManifestError as exc:
            print(f"refqueue check-spec: {exc}", file=sys.stderr)
            return 2
        verdict = "as expected" if report.ok else "MISMATCH"
        print(f"[{i}/{len(entries)}] {entry.name}: {report.run.result} in {report.run.seconds:.1f} s, {verdict}", file=out, flush=True)
        reports.append(report)
    print(file=out)
    for line in _table(reports):
        print(line, file=out)
    print(f"total {time.monotonic() - start:.1f} s", file=out)
    for r in reports:
        if r.entry.mode in ("counterexample", "witness") and r.run.outcome == "violation":
            print(file=out)
            found = (f"reached the witness ({r.entry.witness['goal']}: {r.run.violated} violated)"  # type: ignore[index]
                     if r.entry.mode == "witness" else f"found {r.run.violated} violated")
            print(f"{r.entry.name}: TLC {found}; the trace it printed ({r.run.trace_states} states):", file=out)
            for line in r.run.trace:
                print(f"    {line}", file=out)
    coverage_ok = _coverage(spec_dir, reports, whole=args.config is None and not args.agreement, out=out)
    failed = [r for r in reports if not r.ok]
    if failed:
        print(file=out)
        for r in failed:
            print(f"MISMATCH {r.entry.name} ({r.entry.config}):", file=out)
            for problem in r.problems:
                print(f"    {problem}", file=out)
            if r.run.outcome == "unknown" and r.run.output:
                tail = r.run.output.splitlines()[-15:]
                print("    TLC's last lines:", file=out)
                for line in tail:
                    print(f"      {line}", file=out)
        print(f"check-spec: {len(failed)} of {len(reports)} config(s) did not come out as manifest.json says", file=out)
        return 1
    if not coverage_ok:
        print(f"check-spec: all {len(reports)} config(s) as manifest.json says, but the coverage check failed "
              f"(above): a property checked where it cannot fail, or an action never exercised", file=out)
        return 1
    print(f"check-spec: all {len(reports)} config(s) as manifest.json says", file=out)
    return _simulate(args, spec_dir, java, jar, out)


def _coverage(spec_dir: Path, reports: list[ConfigReport], *, whole: bool, out: TextIO) -> bool:
    """The coverage check (refqueue.spec_check.coverage) of the complete configs run: each one's
    vacuous properties, and, when every config ran (``whole``), the actions no config fires."""
    runs = [(r.entry.name, r.entry.config, r.run) for r in reports
            if r.entry.mode in ("safety", "liveness") and r.run.outcome == "ok"]
    if not runs:
        return True
    if whole:
        report = check_coverage(spec_dir, runs)
        problems = report.problems
        print(file=out)
        print(f"coverage: the actions of Next and the configs where each fired ({len(runs)} complete configs):",
              file=out)
        for action, where in sorted(report.fired_in.items(), key=lambda kv: (len(kv[1]), kv[0])):
            note = f"  (must never fire: {NEVER_FIRES[action]})" if action in NEVER_FIRES else ""
            print(f"    {action:20} {len(where):2} config(s): {', '.join(where) or '-'}{note}", file=out)
    else:
        problems = [p for name, cfg, run in runs for p in config_problems(spec_dir, name, cfg, run)]
    if problems:
        print(file=out)
        for problem in problems:
            print(f"COVERAGE {problem}", file=out)
        return False
    print(f"coverage: no vacuous property in {len(runs)} complete config(s)"
          + ("; every action of Next fires somewhere (but those that must not)" if whole else ""), file=out)
    return True


COVERAGE_ARGS = ("-coverage", "600")  # report action coverage (every 600 minutes, and at the end)
SIMULATE_SECONDS = 60.0
DEEP_SIMULATE_SECONDS = 600.0


def _simulate(args: argparse.Namespace, spec_dir: Path, java: str, jar: Path, out) -> int:
    """The bounded random simulation after the configs (``refqueue.spec_check.simulate``)."""
    seconds = args.simulate_seconds
    if args.deep:
        seconds = DEEP_SIMULATE_SECONDS
    elif seconds is None and not (args.config or args.agreement):
        seconds = SIMULATE_SECONDS
    if args.no_simulate or seconds is None:
        return 0
    print(f"simulate: {SIMULATION_MODULE} with TLC -simulate for {seconds:g} s", file=out, flush=True)
    last = [0.0]

    def progress(line: str) -> None:
        now = time.monotonic()
        if line.startswith("Progress") and now - last[0] >= 10:
            last[0] = now
            print(f"    tlc: {line}", file=out, flush=True)

    with tempfile.TemporaryDirectory(prefix="refqueue-simulate-") as tmp:
        result = simulate(spec_dir, Path(tmp), seconds=seconds, workers=args.workers, java=java, jar=jar,
                          on_line=progress)
    print(result.summary(), file=out)
    if result.outcome == "violation":
        print(f"{SIMULATION_MODULE}: the behaviour TLC printed ({result.run.trace_states} states):", file=out)
        for line in result.run.trace:
            print(f"    {line}", file=out)
        return 1
    if result.outcome != "ok":
        for line in result.run.output.splitlines()[-15:]:
            print(f"    {line}", file=out)
        return 1
    return 0
