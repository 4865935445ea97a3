"""``refqueue torture``: producer and consumer processes over a Redis queue
and a shared directory, a nemesis, a recorded history and its checker.

    refqueue torture                                   # all faults, 60 s, a throwaway redis-server
    refqueue torture --faults kill,drop --duration 15 --seed 7
    refqueue torture --faults kill --faults drop --faults restart --faults pause --baseline
    refqueue torture --url redis://127.0.0.1:6379/0 --faults kill,drop

Each ``--faults`` is one run (a comma-separated mix of kill, drop, restart,
pause, or ``none``); ``--baseline`` adds a run without faults (through the
proxy when any run drops replies, so the two differ in their faults only)
and the table compares each run's throughput with it.  Every run replays
its fault schedule from ``--seed`` (printed; random when not given).

Progress goes to stderr.  The table and each anomaly, with the excerpt of
the history around it, go to stdout (with ``--json``: one JSON object).
Exit status: 0 when every run is valid, 1 on any anomaly, 2 when a rule
could not decide (e.g. the queue never drained) or the arguments are wrong.
A run's folder (store, histories, logs) is removed when the run is valid
and ``--dir`` was not given, and kept (and named) otherwise.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import sys
from typing import Any

__all__ = ["add_arguments", "run", "configs_from"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="a redis:// URL of your server on a loopback address (default: a throwaway "
                                      "redis-server on a free 127.0.0.1 port; restart and pause need that one)")
    parser.add_argument("--faults", action="append", metavar="MIX",
                        help="comma-separated subset of kill,drop,restart,pause, or none; repeat for several runs "
                             "(default: all four; with --url: kill,drop)")
    parser.add_argument("--baseline", action="store_true", help="also run without faults and compare throughput")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load and faults per run (default 60)")
    parser.add_argument("--seed", type=int, default=None, help="the fault schedule's seed (default: a random one)")
    parser.add_argument("--persistence", default="always", choices=("always", "everysec", "none"),
                        help="the throwaway server's: AOF with appendfsync always (default) or everysec, or none "
                             "(a restart loses the state)")
    parser.add_argument("--producers", type=int, default=2, help="producer processes (default 2)")
    parser.add_argument("--consumers", type=int, default=3, help="consumer processes (default 3)")
    parser.add_argument("--visibility-timeout", type=float, default=3.0, help="lease seconds (default 3)")
    parser.add_argument("--socket-timeout", type=float, default=2.5,
                        help="the clients' socket timeout in seconds; a pause outlasts it (default 2.5)")
    parser.add_argument("--stall-every", type=float, default=20.0,
                        help="mean seconds between a consumer's stalls with a lease past the visibility timeout "
                             "(its late ack must be refused); 0: never (default 20)")
    parser.add_argument("--dir", help="a folder for the runs (store, histories, logs); kept")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders of valid runs too")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def configs_from(args: argparse.Namespace) -> tuple[Any, list[Any]]:
    """The baseline configuration (or None) and one configuration per ``--faults``; ``ValueError``/``TypeError``
    with the fix for a wrong argument."""
    import os

    from refqueue.torture.config import FAULTS, TortureConfig, parse_faults

    if args.persistence != "always" and args.url is not None:
        raise ValueError(f"--persistence {args.persistence} sets up the throwaway server; with --url the server's "
                         f"own persistence applies (the report shows it): leave --persistence out")
    mixes = [parse_faults(text) for text in (args.faults or [])]
    if not mixes:
        mixes = [FAULTS if args.url is None else ("kill", "drop")]
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    common = dict(duration=args.duration, seed=seed, url=args.url, persistence=args.persistence,
                  producers=args.producers, consumers=args.consumers, visibility_timeout=args.visibility_timeout,
                  socket_timeout=args.socket_timeout, stall_every=args.stall_every)

    def folder(label: str) -> str | None:
        return None if args.dir is None else os.path.join(args.dir, label.replace(",", "-"))

    runs = [TortureConfig(faults=mix, directory=folder(",".join(mix) or "none"), **common) for mix in mixes]
    baseline = None
    if args.baseline:
        baseline = TortureConfig(faults=(), directory=folder("baseline"), proxy=any(r.uses_proxy for r in runs),
                                 **common)
    if args.dir is not None:  # every run's folder, checked before the first run starts
        named = [("--baseline", baseline)] if baseline is not None else []
        _check_folders(args.dir, named + [(f"--faults {run.label}", run) for run in runs])
    return baseline, runs


def _check_folders(root: str, configs: list[tuple[str, Any]]) -> None:
    """``ValueError`` for a ``--dir`` that is not a folder, two runs sharing a folder
    (``--faults kill,drop --faults drop,kill``) or a run's folder holding a history."""
    import os

    if os.path.exists(root) and not os.path.isdir(root):
        raise ValueError(f"--dir {root!r} exists and is not a folder; pass a new or empty folder")
    seen: dict[str, str] = {}
    for label, config in configs:
        folder = config.directory
        if folder in seen:
            raise ValueError(f"{seen[folder]} and {label} are the same run (both would write {folder!r}); give "
                             f"each mix of faults once")
        seen[folder] = label
        history = os.path.join(folder, "history")
        if os.path.isdir(history) and os.listdir(history):
            raise ValueError(f"--dir {folder!r} already holds a run's history; pass an empty or new folder")
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise ValueError(f"--dir {folder!r} (the {label} run's folder) exists and is not a folder; pass another "
                             f"--dir")


def replay_command(config: Any) -> str:
    parts = ["refqueue torture", f"--seed {config.seed}", f"--duration {config.duration:g}",
             f"--faults {config.label}", f"--producers {config.producers}", f"--consumers {config.consumers}"]
    parts.append(f"--url {config.url}" if config.url else f"--persistence {config.persistence}")
    if config.visibility_timeout != 3.0:
        parts.append(f"--visibility-timeout {config.visibility_timeout:g}")
    if config.socket_timeout != 2.5:
        parts.append(f"--socket-timeout {config.socket_timeout:g}")
    if config.stall_every != 20.0:
        parts.append(f"--stall-every {config.stall_every:g}")
    return " ".join(parts)


def run(args: argparse.Namespace) -> int:
    from refqueue.backends._redis_server import RedisServerError
    from refqueue.torture.checker import check
    from refqueue.torture.report import excerpt, render_run, run_stats, shown_anomalies, table
    from refqueue.torture.runner import run_torture

    try:
        baseline, runs = configs_from(args)
    except (ValueError, TypeError) as exc:
        print(f"refqueue torture: {exc}", file=sys.stderr)
        return 2
    out: list[str] = []
    rows, report = [], []
    baseline_rate = None
    statuses = []
    for config in ([baseline] if baseline is not None else []) + runs:
        label = "baseline" if config is baseline else config.label
        try:
            result = run_torture(config)
        except (ValueError, RedisServerError) as exc:
            print(f"refqueue torture: {exc}", file=sys.stderr)
            return 2
        verdict = check(result.history, persistence=result.persistence)
        row = run_stats(result.history, verdict, label=label, persistence=result.persistence,
                        start_ns=result.started_ns, elapsed_s=result.elapsed_s, injected=result.summary["injected"])
        rows.append(row)
        if config is baseline:
            baseline_rate = row["samples/s"] or None
        status = {True: 0, None: 2, False: 1}[verdict.valid]
        statuses.append(status)
        keep = args.keep or args.dir is not None or status != 0
        out.append(f"== {label}: {'valid' if status == 0 else 'ANOMALIES' if status == 1 else 'UNKNOWN'}  "
                   f"({replay_command(config)})")
        out += render_run(result.history, verdict)
        out.append(f"  history: {result.directory / 'history'}" if keep else "")
        report.append({
            "run": label, "replay": replay_command(config), "stats": row, "directory": str(result.directory) if keep
            else None, "summary": result.summary, "schedule": [s.to_dict() for s in result.steps],
            "verdicts": [v.to_dict() for v in verdict.verdicts],
            "anomalies": [dict(a.to_dict(), excerpt=excerpt(result.history, a) if with_excerpt else None)
                          for a, with_excerpt in shown_anomalies(verdict)],
        })
        if not keep:
            shutil.rmtree(result.directory, ignore_errors=True)
    text_table = table(rows, baseline_rate)
    worst = 1 if 1 in statuses else 2 if 2 in statuses else 0
    if args.json:
        print(json.dumps({"valid": worst == 0, "exit": worst, "table": rows, "baseline_samples_per_s": baseline_rate,
                          "runs": report}, indent=1, default=str))
    else:
        print("\n".join(line for line in out if line is not None))
        print()
        print(text_table)
    return worst
