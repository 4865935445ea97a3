"""``refqueue trace-check LOG [LOG ...]``: check recorded event logs against the model.

Exit 0: every record is allowed; 1: a violation (the first refused record,
the model state before it and the records around it are printed); 2: the
input cannot be checked (a missing or unreadable file, a line that is not
JSON, lost records, no records at all), with a message saying why.  Prints the counts (events,
samples, leases, redeliveries, dead letters) and events/s (reading and
checking; the check alone, per wall and per CPU second).  ``--json`` prints one JSON object instead.
``--tla`` also runs TLC on ``spec/SampleRefQueueTrace.tla`` with the log as
its trace (short logs only: TLC explores the trace's states), whether or not
the model refused it; a refusal names the log seq of the first record the
spec has no step for (JSON: ``tla.refused_seq``).  Exit 1 if either refuses;
2 if TLC gave no verdict (it failed: ``tla.verdict`` false) and the model accepted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("logs", nargs="+", help="JSONL event logs (JsonlSink files; all files of a rotated set "
                                                "and of every process to merge)")
    parser.add_argument("--window", type=int, default=5, help="records shown each side of a violation (default 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--tla", action="store_true", help="also check the trace with TLC against the TLA+ spec")
    parser.add_argument("--tla-max-events", type=int, default=200,
                        help="refuse --tla for logs longer than this (default 200)")


def run(args: argparse.Namespace) -> int:
    from refqueue.events import read_jsonl
    from refqueue.trace_check.check import check_records, printable
    from refqueue.trace_check.replay import BadTrace

    if args.window < 0:
        print(f"refqueue trace-check: --window must be >= 0, got {args.window}", file=sys.stderr)
        return 2
    if args.tla_max_events < 1:
        print(f"refqueue trace-check: --tla-max-events must be >= 1, got {args.tla_max_events}; "
              f"pass the longest log --tla may take, e.g. 200", file=sys.stderr)
        return 2
    for path in args.logs:
        if not Path(path).exists():
            print(printable(f"refqueue trace-check: {path}: no such file; pass the JSONL files a JsonlSink wrote"),
                  file=sys.stderr)
            return 2
    started = time.perf_counter()
    try:
        records = read_jsonl(args.logs, check=True)
        read_s = time.perf_counter() - started
        if not records:  # a pass here would say nothing was wrong with a run nobody recorded
            raise ValueError(f"{', '.join(args.logs)}: no records to check; pass the JSONL files a JsonlSink wrote "
                             f"(an empty file is a run that recorded nothing: is its sink written elsewhere?)")
        result = check_records(records, window=args.window)
    except (BadTrace, ValueError, OSError) as exc:
        print(printable(f"refqueue trace-check: {exc}"), file=sys.stderr)
        return 2
    total_s = time.perf_counter() - started
    counts = result.counts()
    counts["read_seconds"] = round(read_s, 4)
    counts["total_seconds"] = round(total_s, 4)
    counts["events_per_s_total"] = round(len(records) / total_s) if total_s > 0 else 0
    counts["ok"] = result.ok
    tla = None
    if args.tla:
        # TLC checks the log whatever the model said: two checkers, two verdicts (a log the model
        # refuses is still one the spec must refuse, at its own first refused record).
        from refqueue.trace_check.tla import run_tlc_on_trace

        try:
            tla = run_tlc_on_trace(records, max_events=args.tla_max_events)
        except ValueError as exc:
            print(printable(f"refqueue trace-check --tla: {exc}"), file=sys.stderr)
            if result.ok:
                return 2
        if tla is not None:
            counts["tla"] = {"ok": tla.ok, "verdict": tla.verdict, "seconds": round(tla.seconds, 2),
                             "states": tla.states, "summary": tla.summary, "refused_seq": tla.refused_seq,
                             "matched": tla.matched}
    if args.json:
        if result.violation is not None:
            v = result.violation
            counts["violation"] = {"seq": v.record.get("seq"), "ev": v.record.get("ev"), "message": v.message,
                                   "state": v.state, "window": v.window}
        print(json.dumps(counts))
    else:
        if result.violation is not None:
            print(result.violation.render())
        print(
            f"{'FAIL' if result.violation else 'OK'}: {counts['events']} events checked ({len(records)} read), "
            f"{counts['samples']} samples, {counts['leases']} leases, {counts['redeliveries']} redeliveries, "
            f"{counts['dead_letters']} dead letters, {counts['queues']} queue(s) in {counts['processes']} process(es)"
        )
        print(f"check: {counts['events_per_s']:,} events/s ({counts['events_per_cpu_s']:,} per CPU second); "
              f"read+check: {counts['events_per_s_total']:,} events/s ({total_s:.3f} s)")
        if tla is not None:
            word = "OK" if tla.ok else "FAIL" if tla.verdict else "NO VERDICT"
            print(f"TLC: {word} ({tla.summary}, {tla.seconds:.1f} s)")
    if result.violation is not None:
        return 1
    if tla is not None and not tla.verdict:  # TLC failed: nothing refused the log, nothing accepted it either
        print(printable(f"refqueue trace-check --tla: {tla.summary}; the log was not checked against the spec"),
              file=sys.stderr)
        return 2
    if tla is not None and not tla.ok:
        return 1
    return 0
