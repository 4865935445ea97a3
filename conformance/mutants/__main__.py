"""``python -m conformance.mutants [--profile ci] [--seed S] [--report DIR]
[--legal-only] [--only NAME ...] [--phase PHASE ...]``: certify every mutant
and print (and save as Markdown and JSON) how each was caught, then certify
every legal variant (``conformance/legal``) and print that each passed and
what it did not check (``--legal-only``: the legal variants alone, e.g. under
``--profile deep``; ``--only``: just these mutants, by module name, and legal
variants, by target; ``--phase``: just these phases of each certification,
a partial run).  One line per target goes to stderr as it finishes.  Exit 0
only when every mutant is rejected and every legal variant certified; 2 on
bad arguments."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from conformance.legal import LEGAL
from conformance.mutants import MUTANTS
from refqueue.conformance.certify import PHASES, certify
from refqueue.conformance.cli import seed_argument


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.mutants", description=__doc__)
    parser.add_argument("--profile", choices=("ci", "deep"), default="ci")
    parser.add_argument("--seed", type=seed_argument, default=0)
    parser.add_argument("--report", default="reports/certify")
    parser.add_argument("--legal-only", action="store_true", help="certify the legal variants only")
    parser.add_argument("--only", nargs="+", metavar="NAME", default=None,
                        help="only these mutants (module names) and legal variants (targets)")
    parser.add_argument("--phase", nargs="+", choices=PHASES, default=None, help="only these phases (a partial run)")
    args = parser.parse_args(argv)
    mutants = () if args.legal_only else MUTANTS
    variants = LEGAL
    if args.only is not None:
        unknown = sorted(set(args.only) - set(MUTANTS) - set(LEGAL))
        if unknown:
            parser.error(f"--only: unknown {unknown}; mutants are {list(MUTANTS)}, legal variants {list(LEGAL)}")
        mutants = tuple(m for m in mutants if m in args.only)
        variants = tuple(v for v in LEGAL if v in args.only)
    phases = tuple(args.phase) if args.phase else PHASES
    rows = []
    targets = len(variants) + len(mutants)
    done = 0
    for name in mutants:
        started = time.perf_counter()
        cert = certify(f"conformance.mutants.{name}:make", profile=args.profile, seed=args.seed, phases=phases)
        seconds = time.perf_counter() - started
        failure = cert.failure or {}
        rows.append(
            {
                "mutant": name,
                "caught": not cert.passed,
                "phase": failure.get("phase"),
                "steps_to_catch": failure.get("steps_to_failure"),
                "steps_in_phase": failure.get("phase_steps_to_failure"),
                "counterexample_steps": failure.get("trace_steps"),
                "seconds": round(seconds, 2),
                "divergence": failure.get("message"),
                "bug": (sys.modules[f"conformance.mutants.{name}"].__doc__ or "").strip().splitlines()[0].removeprefix("Mutant: "),
            }
        )
        done += 1
        verdict = f"rejected in {failure.get('phase')}" if not cert.passed else "NOT REJECTED"
        print(f"[{done}/{targets}] {name}: {verdict} ({seconds:.1f} s)", file=sys.stderr, flush=True)
    partial = "" if phases == PHASES else f", phases {', '.join(phases)} only"
    lines = [] if not mutants else [
        f"# Mutants against the conformance kit (profile {args.profile}, seed {args.seed}{partial})",
        "",
        "| mutant | bug | caught | phase | steps to catch (all phases) | in that phase | counterexample steps | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        steps = "" if r["steps_to_catch"] is None else f"{r['steps_to_catch']:,}"
        in_phase = "" if r["steps_in_phase"] is None else f"{r['steps_in_phase']:,}"
        lines.append(
            f"| {r['mutant']} | {r['bug']} | {'yes' if r['caught'] else '**NO**'} | {r['phase'] or ''} | {steps} | "
            f"{in_phase} | {r['counterexample_steps'] or ''} | {r['seconds']} |"
        )
    legal = []
    for target in variants:
        started = time.perf_counter()
        cert = certify(target, profile=args.profile, seed=args.seed, phases=phases)
        legal.append(
            {
                "variant": target,
                "certified": cert.passed,
                "phases": {name: p.get("seconds", 0) for name, p in cert.phases.items()},
                "not_checked": [n["check"] for n in cert.not_checked],
                "seconds": round(time.perf_counter() - started, 2),
                "failure": (cert.failure or {}).get("message"),
            }
        )
        done += 1
        said = "certified" if cert.passed else f"NOT CERTIFIED: {legal[-1]['failure']}"
        print(f"[{done}/{targets}] {target}: {said} ({legal[-1]['seconds']:.1f} s)", file=sys.stderr, flush=True)
    lines += [] if not variants else [
        *([] if not mutants else [""]),
        f"# Legal variants (profile {args.profile}, seed {args.seed}{partial})",
        "",
        "| variant | certified | phases run (seconds) | checks not run | seconds |",
        "|---|---|---|---|---|",
    ]
    for r in legal:
        ran = ", ".join(f"{name} {seconds}" for name, seconds in r["phases"].items())
        lines.append(
            f"| {r['variant']} | {'yes' if r['certified'] else '**NO**: ' + str(r['failure'])} | {ran} | "
            f"{len(r['not_checked'])} | {r['seconds']} |"
        )
    table = "\n".join(lines) + "\n"
    print(table)
    report = Path(args.report)
    report.mkdir(parents=True, exist_ok=True)
    (report / "mutants.md").write_text(table)
    (report / "mutants.json").write_text(json.dumps({"mutants": rows, "legal": legal}, indent=2) + "\n")
    return 0 if all(r["caught"] for r in rows) and all(r["certified"] for r in legal) else 1


if __name__ == "__main__":
    sys.exit(main())
