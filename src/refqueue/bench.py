"""``refqueue bench``: benchmarks that print numbers (never pass/fail).

``refqueue bench queue [--json]`` measures the in-process ``SampleRefQueue``
(``refqueue._bench_queue`` says how): ``put_us`` and ``acquire_ack_us`` at
backlogs of 1,000 to 1,000,000 pending refs, idle and full
``reclaim_expired`` with 100,000 leases out, put-to-wake latency of a blocked
``acquire``, acquire+ack p99 while another thread copies a 400 MB sample out
of the same ``LocalFeatureStore`` (the convoy of D6), and the CPython floor of
the same acquire+ack work.  Every value is a median over ``--repeats`` runs.

``refqueue bench redis [--json]`` measures ``RedisSampleRefQueue`` and
``SharedDirFeatureStore`` (``refqueue._bench_redis`` says how): fenced
lease+ack/s for one client and 8 consumer processes against a raw redis-py
``XREADGROUP``+``XACK`` loop, and shared-dir put/get MB/s against plain
safetensors ``save_file``/``load_file``; ``--ops`` (at most 5,000 here) is
the leases per one-client run.

``refqueue bench gpu [--json]`` measures the data plane on a CUDA device
(``refqueue._bench_gpu`` says how): ``LocalFeatureStore(device="cuda")`` put
from pinned and pageable host memory and from the device, get with
``copy=True`` and ``copy=False``, at ``--sizes`` MiB, and the loader's
per-step overhead, each next to the copy limits measured in the same run and
as the ratios issue 24 sets targets for (``scripts/gpu.sh`` runs it after the
``gpu`` tests).

Progress goes to stderr; with ``--json`` stdout carries exactly one JSON
object.  Heavy imports (torch) happen inside the measurement that needs them.
The numbers depend on the machine and on whatever else it runs.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["add_arguments", "run"]

TARGETS = ("queue", "redis", "gpu")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", choices=TARGETS, help="what to benchmark")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--repeats", type=int, default=5, help="runs per figure; the median is kept (default 5)")
    parser.add_argument(
        "--backlogs",
        type=lambda text: [int(x) for x in text.split(",")],
        default=[1_000, 10_000, 100_000, 1_000_000],
        help="comma-separated pending backlogs (default 1000,10000,100000,1000000)",
    )
    parser.add_argument("--ops", type=int, default=20_000, help="operations per timed run (default 20000)")
    parser.add_argument(
        "--reclaim-outstanding", type=int, default=100_000, help="leases out for the reclaim figures (default 100000)"
    )
    parser.add_argument("--wakes", type=int, default=300, help="wakeups per latency run (default 300)")
    parser.add_argument(
        "--convoy-mb", type=int, default=400, help="size of the sample copied during the convoy run; 0 skips it"
    )
    parser.add_argument("--convoy-ops", type=int, default=5_000, help="acquire+acks per convoy run, at least")
    parser.add_argument("--quick", action="store_true", help="small sizes, one run each: a smoke test")
    parser.add_argument(
        "--sizes",
        type=lambda text: tuple(int(x) for x in text.split(",")),
        default=(16, 100, 512),
        help="gpu: comma-separated sample sizes in MiB (default 16,100,512)",
    )
    parser.add_argument("--steps", type=int, default=200, help="gpu: loader steps per run (default 200)")


def run(args: argparse.Namespace) -> int:
    if args.target == "redis":
        return _run_redis(args)
    if args.target == "gpu":
        return _run_gpu(args)
    from refqueue._bench_queue import measure

    for name in ("repeats", "ops", "reclaim_outstanding", "wakes", "convoy_ops"):
        value = getattr(args, name)
        if value < 1:
            raise SystemExit(f"refqueue bench: --{name.replace('_', '-')} must be >= 1, got {value}")
    if args.convoy_mb < 0 or any(b < 1 for b in args.backlogs):
        raise SystemExit("refqueue bench: --convoy-mb must be >= 0 and every backlog >= 1")
    if args.quick:
        settings: dict[str, Any] = dict(
            backlogs=[1_000, 10_000], ops=2_000, repeats=1, reclaim_outstanding=10_000, wakes=50,
            convoy_mb=min(args.convoy_mb, 8), convoy_ops=500,
        )
    else:
        settings = dict(
            backlogs=sorted(args.backlogs), ops=args.ops, repeats=args.repeats,
            reclaim_outstanding=args.reclaim_outstanding, wakes=args.wakes, convoy_mb=args.convoy_mb,
            convoy_ops=args.convoy_ops,
        )
    result = measure(**settings)
    if args.json:
        print(json.dumps(result, sort_keys=False))
    else:
        for key, value in result.items():
            print(f"{key:40} {value}")
    return 0


def _run_redis(args: argparse.Namespace) -> int:
    """``refqueue bench redis``: the Redis queue and the shared-dir store (``refqueue._bench_redis``)."""
    import sys

    from refqueue._bench_redis import measure

    if args.repeats < 1 or args.ops < 1:
        raise SystemExit("refqueue bench: --repeats and --ops must be >= 1")
    ops, repeats = (500, 1) if args.quick else (min(args.ops, 5_000), args.repeats)
    result = measure(ops=ops, repeats=repeats, samples=2 if args.quick else 4, sample_mb=8 if args.quick else 32,
                     progress=lambda text: print(f"bench redis: {text}", file=sys.stderr))
    if args.json:
        print(json.dumps(result, sort_keys=False))
    else:
        for key, value in result.items():
            print(f"{key:40} {value}")
    return 0


def _run_gpu(args: argparse.Namespace) -> int:
    """``refqueue bench gpu``: the store and loader on a CUDA device (``refqueue._bench_gpu``)."""
    import sys

    from refqueue._bench_gpu import measure

    if args.repeats < 1 or args.steps < 1 or not args.sizes or any(size < 1 for size in args.sizes):
        raise SystemExit("refqueue bench gpu: --repeats, --steps and every --sizes value must be >= 1")
    sizes, repeats, steps = ((16,), 2, 40) if args.quick else (args.sizes, args.repeats, args.steps)
    result = measure(sizes_mib=sizes, repeats=repeats, steps=steps,
                     progress=lambda text: print(f"bench gpu: {text}", file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps(result, sort_keys=False))
    else:
        print(table(result))
    return 0


def table(result: dict[str, Any]) -> str:
    """The gpu result as a text table: rates per size, then the ratios."""
    lines = [f"{result['device']} (torch {result['torch']}), median of {result['repeats']}"]
    for mib, row in result["sizes"].items():
        lines.append(f"{mib} MiB sample ({row['sample_bytes']:,} bytes):")
        for key, value in row.items():
            if key != "sample_bytes":
                lines.append(f"  {key:28} {value:10.2f}")
    loader = result.get("loader", {})
    for key, value in loader.items():
        lines.append(f"loader {key:32} {value:.4g}" if isinstance(value, float) else f"loader {key:32} {value}")
    for key, value in result.get("ratios", {}).items():
        if isinstance(value, dict):
            lines.append(f"ratios {key:>5} MiB " + "  ".join(f"{k} {v:.3f}" for k, v in value.items()))
        else:
            lines.append(f"ratios {key} {value:.4f}")
    return "\n".join(lines)
