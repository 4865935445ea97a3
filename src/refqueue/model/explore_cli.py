"""``refqueue explore``: exhaustive search of the reference model at small bounds.

Two runs by default:

1. the protocol as designed, which must finish with every invariant holding
   in every reachable state (verdict ``ok``);
2. the same world with the anchor's consumer loop (stop when ``acquire`` is
   None and ``is_closed``), which must *fail*: it prints the shortest trace to
   a ``TerminalNoneMeansDrained`` violation and to a state where every consumer
   has stopped with work left (lost work).  This shows the invariants bite.

Exit status: 0 when run 1 is ok and run 2 found its counterexample; 1 on a
violation in run 1 (or no counterexample in run 2); 3 when a budget ran out
(verdict ``unknown``, never a pass).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from refqueue.model.explorer import ExploreResult, Step, explore, work_lost
from refqueue.model.world import Node, World, make_world


def add_arguments(parser: argparse.ArgumentParser) -> None:
    b = parser.add_argument_group("bounds")
    b.add_argument("--samples", type=_count("--samples", 1, MAX_SAMPLES), default=3,
                   help=f"samples the producers make, 1..{MAX_SAMPLES} (default 3)")
    b.add_argument("--consumers", type=_count("--consumers", 1, MAX_THREADS), default=2,
                   help=f"consumer threads, 1..{MAX_THREADS} (default 2)")
    b.add_argument("--producers", type=_count("--producers", 1, MAX_THREADS), default=1,
                   help=f"producer threads, 1..{MAX_THREADS} (default 1)")
    b.add_argument(
        "--sizes", type=_sizes, default=None, metavar="N,N,...",
        help="bytes of each sample, one per sample (default: 1 byte each)",
    )
    b.add_argument(
        "--reput", action="store_true",
        help="the last production re-puts the first sample's id once it completed (D5)",
    )
    b.add_argument(
        "--producer-crash", action="store_true",
        help="producers may die between store put and queue put (orphans, collected by the environment)",
    )
    b.add_argument(
        "--retain-copies", action="store_true",
        help="consumers keep a copy of each lease they gave back and ack or fail it later (D1)",
    )
    d = parser.add_argument_group("the deployment over two systems (D9)")
    d.add_argument("--two-step-ack", action="store_true",
                   help="acks and dead-letters commit with a scrub intent; anyone scrubs it later (ScrubIntent)")
    d.add_argument("--lost-replies", action="store_true",
                   help="acquire, ack, fail and put steps may take effect with their reply lost, then be retried")
    d.add_argument("--max-restarts", type=_count("--max-restarts", 0, 3), default=0,
                   help="lossy restarts of the queue server (a new epoch), each recovered by an operator (default 0)")
    b.add_argument(
        "--max-deliveries", type=_count("--max-deliveries", 0, MAX_DELIVERIES), default=2,
        help=f"deliveries before dead-lettering, 1..{MAX_DELIVERIES} (default 2); 0 for no limit, an infinite world "
             f"(a sample failed again and again is a new state each time): only with --max-states or --max-seconds",
    )
    b.add_argument("--horizon", type=_count("--horizon", 0, MAX_HORIZON), default=3,
                   help=f"the clock stops at this time, 0..{MAX_HORIZON} (default 3)")
    b.add_argument("--visibility", type=int, default=1, help="visibility timeout in clock ticks (default 1)")
    b.add_argument("--high", type=int, default=2, help="high watermark in bytes (default 2)")
    b.add_argument("--low", type=int, default=1, help="low watermark in bytes (default 1)")
    b.add_argument("--capacity", type=int, default=None, help="store capacity in bytes (default: all samples)")
    r = parser.add_argument_group("run")
    r.add_argument("--max-states", type=_count("--max-states", 1, 10**12), default=None, help="stop (verdict unknown) after this many states")
    r.add_argument("--max-seconds", type=_seconds, default=None, help="stop (verdict unknown) after this long")
    r.add_argument("--no-anchor", action="store_true", help="skip the anchor-consumer counterexample run")
    r.add_argument("--anchor-only", action="store_true", help="run only the anchor-consumer counterexample")
    r.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    r.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


# Bounds of the world's size arguments.  The graph grows exponentially in
# them (3 samples and 2 consumers already give 133,944 states), so a value far
# beyond these is a typo, not a request: it is refused at once instead of
# running for ever.  --max-states/--max-seconds bound a run within them.
MAX_SAMPLES = 12
MAX_THREADS = 8
MAX_HORIZON = 64
MAX_DELIVERIES = 16
MAX_BYTES = 2**40


def _count(flag: str, lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} {text!r} is not a whole number; give one in {lo}..{hi}") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"{flag} {text!r} is below {lo}; give a number in {lo}..{hi}")
        if value > hi:
            raise argparse.ArgumentTypeError(
                f"{flag} {text!r} is outside {lo}..{hi}: the state space grows exponentially with it; "
                f"give at most {hi} (and bound long runs with --max-states or --max-seconds)"
            )
        return value

    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--max-seconds {text!r} is not a number of seconds, e.g. 30") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"--max-seconds {text!r} must be a finite number of seconds > 0, e.g. 30")
    return value


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of byte counts, e.g. 1,3,1") from None
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: every size must be >= 1 byte")
    if any(n > MAX_BYTES for n in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: every size must be at most {MAX_BYTES} bytes (2**40)")
    return sizes


def _world(args: argparse.Namespace, anchor: bool) -> World:
    samples: int | tuple[str, ...] = args.samples
    if args.reput:
        if args.samples < 2:
            raise ValueError("--reput needs --samples >= 2 (the last production re-puts s0)")
        samples = tuple(f"s{i}" for i in range(args.samples - 1)) + ("s0",)
    if args.sizes is not None and len(args.sizes) != args.samples:
        raise ValueError(f"--sizes gives {len(args.sizes)} sizes for --samples {args.samples}; give one per sample")
    return make_world(
        samples=samples,
        sample_bytes=args.sizes or 1,
        producers=args.producers,
        producer_crash=args.producer_crash,
        retain_copies=args.retain_copies,
        consumers=args.consumers,
        max_deliveries=args.max_deliveries or None,
        horizon=args.horizon,
        visibility_timeout=args.visibility,
        high=args.high,
        low=args.low,
        capacity=args.capacity,
        anchor_consumer=anchor,
        two_step_ack=args.two_step_ack,
        lost_replies=args.lost_replies,
        max_restarts=args.max_restarts,
    )


def render_node(node: Node) -> str:
    """One line per node: clock, flags, pending, samples, consumers."""
    s = node.state
    samples = []
    for sid, r in zip(s.ids, s.recs):
        bits = f"{sid}:{r.status}"
        if r.deliveries:
            bits += f" d={r.deliveries}"
        if r.deadline is not None:
            bits += f" dl={r.deadline}"
        if not r.resident and r.status not in ("acked", "dead", "dropped"):
            bits += " NOT-RESIDENT"
        if r.resident and r.status in ("acked", "dead", "dropped"):
            bits += " intent" if sid in s.intents else " RESIDENT"
        samples.append(bits)
    consumers = []
    for c, me in enumerate(node.consumers):
        if me.stopped:
            consumers.append(f"c{c}:stopped")
        elif me.lease is None:
            consumers.append(f"c{c}:idle")
        else:
            held = "+data" if me.holding else ""
            consumers.append(f"c{c}:{me.lease.sample_id}#{me.lease.redelivery_count}{held}")
    flags = ",".join(f for f, on in (("closed", s.closed), ("paused", s.paused)) if on) or "open"
    if s.epoch:
        flags += f" epoch={s.epoch}"
    producers = [f"p{p}:{sid or 'idle'}" + ("(parked)" if any(x[0] == sid for x in s.parked) else "")
                 for p, sid in enumerate(node.producers)]
    return (
        f"now={s.now} {flags} resident={s.resident_bytes} pending={list(s.pending)} "
        f"[{'; '.join(samples)}] [{', '.join(consumers)}] [{', '.join(producers)}]"
    )


def render_trace(trace: list[Step]) -> list[str]:
    return [f"{i:3d}. {step.label():<22} {render_node(step.node)}" for i, step in enumerate(trace)]


def _summary(name: str, world: World, result: ExploreResult) -> dict[str, Any]:
    return {
        "run": name,
        "verdict": result.verdict,
        "reason": result.reason,
        "distinct_states": result.distinct_states,
        "transitions": result.transitions,
        "depth": result.depth,
        "seconds": round(result.seconds, 3),
        "states_per_second": round(result.states_per_second),
        "transitions_per_second": round(result.transitions / result.seconds) if result.seconds else None,
        "bounds": {
            "samples": list(world.samples),
            "sizes": list(world.sizes),
            "producers": world.producers,
            "producer_crash": world.producer_crash,
            "retain_copies": world.retain_copies,
            "consumers": world.consumers,
            "max_deliveries": world.cfg.max_deliveries,
            "horizon": world.horizon,
            "visibility": world.cfg.visibility_timeout,
            "high": world.cfg.high,
            "low": world.cfg.low,
            "capacity": world.cfg.capacity_bytes,
            "two_step_ack": world.cfg.two_step_ack,
            "lost_replies": world.lost_replies,
            "max_restarts": world.max_restarts,
        },
        "violations": {k: [s.label() for s in v] for k, v in result.violations.items()},
        "goals": {k: [s.label() for s in v] for k, v in result.goals.items()},
    }


def _progress(quiet: bool, name: str):
    if quiet:
        return None

    def report(distinct: int, transitions: int, depth: int, seconds: float) -> None:
        print(
            f"  [{name}] {distinct:,} states, {transitions:,} transitions, depth {depth}, "
            f"{seconds:.1f} s ({distinct / seconds:,.0f} states/s)",
            file=sys.stderr,
        )

    return report


def run(args: argparse.Namespace) -> int:
    if args.no_anchor and args.anchor_only:
        print("refqueue explore: --no-anchor and --anchor-only together leave nothing to explore; pass one of them",
              file=sys.stderr)
        return 2
    if args.max_deliveries == 0 and args.max_states is None and args.max_seconds is None:
        print("refqueue explore: --max-deliveries 0 (no limit) makes the world infinite (a sample failed again and "
              "again is a new state each time), so the search would never end; give a limit (1.."
              f"{MAX_DELIVERIES}) or bound the run with --max-states or --max-seconds", file=sys.stderr)
        return 2
    try:
        worlds = []
        if not args.anchor_only:
            worlds.append(("protocol", _world(args, anchor=False)))
        if not args.no_anchor:
            worlds.append(("anchor-consumer", _world(args, anchor=True)))
    except (TypeError, ValueError) as exc:
        print(f"refqueue explore: {exc}", file=sys.stderr)
        return 2
    status = 0
    report: list[dict[str, Any]] = []
    for name, world in worlds:
        anchor = world.anchor_consumer
        if not args.quiet:
            print(f"exploring {name} ...", file=sys.stderr)
        result = explore(
            world,
            max_states=args.max_states,
            max_seconds=args.max_seconds,
            stop_on_violation=not anchor,
            goals={"WorkLost": work_lost} if anchor else None,
            progress=_progress(args.quiet, name),
        )
        summary = _summary(name, world, result)
        report.append(summary)
        if anchor:
            found = "TerminalNoneMeansDrained" in result.violations
            summary["expected_counterexample_found"] = found
            if not found:
                status = max(status, 3 if result.verdict == "unknown" else 1)
        elif result.verdict == "violation":
            status = max(status, 1)
        elif result.verdict == "unknown":
            status = max(status, 3)
        if not args.json:
            _print_text(name, result)
    if args.json:
        print(json.dumps(report if len(report) > 1 else report[0], indent=2))
    return status


def _print_text(name: str, result: ExploreResult) -> None:
    print(f"== {name}: {result.verdict}" + (f" ({result.reason})" if result.reason else ""))
    print(
        f"   distinct states {result.distinct_states:,}   transitions {result.transitions:,}   "
        f"depth {result.depth}   {result.seconds:.2f} s   {result.states_per_second:,.0f} states/s"
    )
    for inv, trace in result.violations.items():
        print(f"   VIOLATION of {inv}: shortest trace, {len(trace) - 1} steps")
        for line in render_trace(trace):
            print("     " + line)
    for goal, trace in result.goals.items():
        print(f"   reached {goal}: shortest trace, {len(trace) - 1} steps")
        for line in render_trace(trace):
            print("     " + line)
