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


def _count(flag: str, lo: int) -> Any:
    """argparse type of a whole number >= ``lo`` (exit 2 naming ``flag`` and the value)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} {text!r} is not a whole number; give one >= {lo}") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"{flag} {value} is below {lo}; give a whole number >= {lo}")
        return value

    return parse


def _counts(flag: str, example: str) -> Any:
    """argparse type of a comma-separated list of whole numbers >= 1."""
    one = _count(flag, 1)

    def parse(text: str) -> list[int]:
        try:
            return [one(x) for x in text.split(",")]
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"{exc} (in {text!r}: a comma-separated list, e.g. {example})") from None

    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", choices=TARGETS, help="what to benchmark")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--repeats", type=_count("--repeats", 1), default=5,
                        help="runs per figure; the median is kept (default 5)")
    parser.add_argument(
        "--backlogs",
        type=_counts("--backlogs", "1000,10000"),
        default=[1_000, 10_000, 100_000, 1_000_000],
        help="comma-separated pending backlogs (default 1000,10000,100000,1000000)",
    )
    parser.add_argument("--ops", type=_count("--ops", 1), default=20_000, help="operations per timed run (default 20000)")
    parser.add_argument(
        "--reclaim-outstanding", type=_count("--reclaim-outstanding", 1), default=100_000, help="leases out for the reclaim figures (default 100000)"
    )
    parser.add_argument("--wakes", type=_count("--wakes", 1), default=300, help="wakeups per latency run (default 300)")
    parser.add_argument(
        "--convoy-mb", type=_count("--convoy-mb", 0), default=400, help="size of the sample copied during the convoy run; 0 skips it"
    )
    parser.add_argument("--convoy-ops", type=_count("--convoy-ops", 1), default=5_000, help="acquire+acks per convoy run, at least")
    parser.add_argument("--quick", action="store_true", help="small sizes, one run each: a smoke test")
    parser.add_argument(
        "--sizes",
        type=lambda text: tuple(_counts("--sizes", "16,100")(text)),
        default=(16, 100, 512),
        help="gpu: comma-separated sample sizes in MiB (default 16,100,512)",
    )
    parser.add_argument("--steps", type=_count("--steps", 1), default=200, help="gpu: loader steps per run (default 200)")


def run(args: argparse.Namespace) -> int:
    if args.target == "redis":
        return _run_redis(args)
    if args.target == "gpu":
        return _run_gpu(args)
    from refqueue._bench_queue import measure

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
