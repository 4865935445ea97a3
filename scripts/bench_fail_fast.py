"""Time to the first failure of a certification, with and without --fail-fast.

    python scripts/bench_fail_fast.py [--target conformance.slow:put_no_wake] [--no-fail-fast] [-j N]

Certifies the target (the ci profile) and prints, as it goes, the time at
which each phase run starts, then the verdict, the failing phase and the
time the run took (it stops at the first failure: that is the time to the
first failure).  ``conformance.slow`` holds the backends whose every call
sleeps 1 ms.  Run from the repository root; on a shared machine the numbers
are noisy.
"""

from __future__ import annotations

import argparse
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default="conformance.slow:put_no_wake")
    parser.add_argument("--no-fail-fast", dest="fail_fast", action="store_false")
    parser.add_argument("-j", "--jobs", type=int, default=1)
    args = parser.parse_args()
    sys.path.insert(0, ".")

    from refqueue.conformance.certify import certify
    from refqueue.conformance.progress import Progress

    started = time.perf_counter()

    class Stamps(Progress):
        def start(self, phase: str, total: int) -> None:
            print(f"{time.perf_counter() - started:7.1f} s  {phase}", flush=True)
            super().start(phase, total)

    cert = certify(args.target, fail_fast=args.fail_fast, jobs=args.jobs, progress=Stamps(enabled=False))
    failed = f"failed in {cert.failure['phase']}" if cert.failure else "passed"
    short = " (short pass)" if cert.failure and cert.failure.get("short_pass") else ""
    print(
        f"{args.target}: {failed}{short} after {time.perf_counter() - started:.1f} s "
        f"(fail_fast={args.fail_fast}, jobs={args.jobs}); runs: "
        + ", ".join(f"{r['phase']}/{r['pass']}={r['verdict']}" for r in cert.runs)
    )


if __name__ == "__main__":
    main()
