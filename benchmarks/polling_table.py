"""The polling mutants' table (issue 20): for a consumer that polls every P and
is never woken, how many blocking checks ran before the verdict, the escape
probability the timing model states for the whole ci blocking phase, and the
verdict of the blocking phase in each of five seeds.

    python benchmarks/polling_table.py [--seeds 0 1 2 3 4]

Run from the repository root (the mutants import as ``conformance.*``).
"""

from __future__ import annotations

import argparse
import sys

from refqueue.conformance.certify import certify
from refqueue.conformance.profiles import PROFILES
from refqueue.conformance.timing import SPAN, escape

TARGETS = (
    (0.06, "conformance.mutants.acquire_polls_60ms:make", "reject"),
    (0.10, "conformance.mutants.acquire_polls_100ms:make", "reject"),
    (0.20, "conformance.mutants.acquire_polls_200ms:make", "reject"),
    (0.01, "conformance.legal.poll_10ms:make", "accept"),
)
ACQUIRE_WAKING_CALLS_PER_TRIAL = 8  # put, fail, reclaim, close, drain by ack and by dead_letter, two puts, close


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = parser.parse_args(argv)
    profile = PROFILES["ci"]
    bound = profile.wake_bound
    calls = ACQUIRE_WAKING_CALLS_PER_TRIAL * profile.wake_trials
    lines = [
        f"| poll interval | expected | checks run (per seed) | stated escape (all {calls} waking calls of acquire, ci) "
        f"| verdicts ({len(args.seeds)} seeds) | failing check (trial) |",
        "|---|---|---|---|---|---|",
    ]
    wrong = 0
    for period, target, expected in TARGETS:
        runs, verdicts, where = [], [], []
        for seed in args.seeds:
            cert = certify(target, profile="ci", seed=seed, phases=("blocking",))
            phase = cert.phases["blocking"]
            runs.append(str(len(phase["checks"])))
            verdicts.append("PASS" if cert.passed else "FAIL")
            if not cert.passed:
                trial = cert.failure["message"].split(": ", 2)[1]
                where.append(f"{cert.failure['check']} ({trial})")
            wrong += (cert.passed) != (expected == "accept")
        stated = escape(period, bound, SPAN * bound, calls)
        lines.append(
            f"| {round(period * 1000)} ms | {expected} | {', '.join(runs)} | {stated:.3g} | {', '.join(verdicts)} | "
            f"{'; '.join(where) or '-'} |"
        )
    print("\n".join(lines))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
