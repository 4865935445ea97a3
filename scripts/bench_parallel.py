"""Time the exhaustive cover of one kit world serially and on N worker processes.

    python scripts/bench_parallel.py [--world reput] [-j 2] [--target refqueue.conformance.backends:inprocess]

Prints, for each, the wall time (graph building included: every worker builds
the world's graph, as the serial run does) and the coverage of the world
(transitions, nodes, actions, situations), which must be the same.  The two
runs are made back to back; on a shared machine the numbers are noisy.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--world", default="reput")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--target", default="refqueue.conformance.backends:inprocess")
    parser.add_argument("--skip-serial", action="store_true")
    args = parser.parse_args()

    from refqueue.conformance.contract import load_backend
    from refqueue.conformance.parallel import Workers, spec_of
    from refqueue.conformance.walker import cover
    from refqueue.conformance.worlds import Coverage, kit_world

    backend = load_backend(args.target)

    def show(label: str, seconds: float, result, coverage) -> None:
        d = coverage.to_dict()
        print(
            f"{label:<10} {seconds:8.1f} s  transitions {d['transitions']:,}/{d['transitions_total']:,}  nodes "
            f"{d['nodes']:,}/{d['nodes_total']:,}  actions {len(d['actions'])}  situations "
            f"{sorted(coverage.situations)}  steps {result.steps:,}  walks {result.walks:,}",
            flush=True,
        )

    if not args.skip_serial:
        started, cpu = time.perf_counter(), time.process_time()
        wg, _ = kit_world(args.world, backend.capabilities)
        coverage = Coverage.of(wg)
        result = cover(backend, coverage=coverage, wg=wg)
        show("serial", time.perf_counter() - started, result, coverage)
        print(f"{'':<10} CPU {time.process_time() - cpu:.1f} s", flush=True)

    spec, why = spec_of(backend, None)
    assert spec is not None, why
    workers = Workers(spec, args.jobs)
    started = time.perf_counter()
    tasks = [
        {"kind": "cover", "world": args.world, "share": [k, args.jobs], "target": args.target, "found_by": ""}
        for k in range(args.jobs)
    ]
    outcome = workers.drive(tasks, [args.world])[args.world]
    seconds = time.perf_counter() - started
    workers.close()
    assert outcome.error is None, outcome.error
    show(f"-j {args.jobs}", seconds, outcome.result, outcome.coverage)
    cpus = outcome.cpu_seconds
    print(f"{'':<10} CPU per worker {', '.join(f'{c:.1f} s' for c in cpus)} (spawn, imports and graph included)")


if __name__ == "__main__":
    main()
