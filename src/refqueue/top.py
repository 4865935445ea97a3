"""``refqueue top LOG``: a live terminal view of a queue's metrics, redrawn in place.

Follows a JSONL event log as a running queue writes it (``JsonlSink``; give
it ``flush_every`` seconds so lines reach the file promptly), folds the new
records into ``refqueue.metrics.Metrics`` every ``--interval`` seconds and
redraws the screen: counters, rates over the last interval, pending and
outstanding, residency against the watermarks, paused state and the
bottleneck side.  A rotated file (it shrank or was replaced) is reopened from
its start.  ``--iterations N`` stops after N redraws (0: until Ctrl-C).

A live view never dies of its input: a line that is not UTF-8, not one JSON
object, nested too deeply, or not a record ``refqueue.events`` writes
(``refqueue.event_records.problem``), and a record the metrics cannot fold,
is skipped, counted and shown on the screen ("N malformed lines skipped;
the last: line L: why").  A line longer than ``MAX_LINE`` bytes without its
end is dropped as one.  Started before the log exists, it waits for it.
The screen opens with the diagnosis (``refqueue.diagnose`` of the metrics at
the last record) and says how long ago the last record came: values that
stop changing while that grows mean the writer stopped writing (or died).
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import time
from typing import Any, BinaryIO, TextIO

from refqueue.event_records import printable

__all__ = ["add_arguments", "run", "render"]

CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear screen
# The longest line kept waiting for its end (bytes); a longer one is skipped.
MAX_LINE = 1 << 20
MAX_INTERVAL = 86_400.0  # --interval: a day (time.sleep overflows past threading.TIMEOUT_MAX)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("log", help="the JSONL event log a running queue writes (JsonlSink)")
    parser.add_argument("--interval", type=float, default=1.0,
                        help=f"seconds between redraws (default 1, at most {MAX_INTERVAL:g}: a day)")
    parser.add_argument("--iterations", type=int, default=0, help="stop after this many redraws (0: never)")
    parser.add_argument("--no-clear", action="store_true", help="print each view below the last (no redraw)")


class _Follower:
    """Reads the JSON objects of the lines appended to a file since the last
    call; ``skipped`` counts the lines that were not one (never raises)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file: BinaryIO | None = None
        self._inode: int | None = None
        self._partial = b""
        self.skipped = 0
        self.line = 0  # lines read from the current file
        self.last_problem: str | None = None  # the last malformed line: where and why

    def skip(self, why: str) -> None:
        self.skipped += 1
        self.last_problem = f"line {self.line}: {why}"

    def read(self) -> list[dict[str, Any]]:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return []
        if not stat.S_ISREG(info.st_mode):
            return []  # a FIFO or a device: never opened (it could block)
        if self._file is None or info.st_ino != self._inode or info.st_size < self._file.tell():
            if self._file is not None:
                self._file.close()
            try:
                self._file = open(self.path, "rb")
            except OSError as exc:  # (unreadable: permissions) shown on the screen, tried again at the next redraw
                self.last_problem = f"cannot open the log: {exc.strerror or exc}"
                return []
            self._inode = info.st_ino
            self._partial = b""
            self.line = 0
        data = self._partial + self._file.read()
        lines = data.split(b"\n")
        self._partial = lines.pop()  # an unfinished last line waits for the next read
        if len(self._partial) > MAX_LINE:
            self._partial = b""
            self.line += 1
            self.skip(f"longer than {MAX_LINE} bytes")
        records = []
        for line in lines:
            self.line += 1
            if not line.strip():
                continue
            try:
                record = json.loads(line.decode("utf-8"))
            except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, too deep; a torn line
                self.skip(f"not one JSON object ({type(exc).__name__})")
                continue
            if type(record) is not dict:
                self.skip(f"a JSON {type(record).__name__}, not an object")
                continue
            records.append(record)
        return records


def render(snapshot: dict[str, Any], previous: dict[str, Any] | None, interval: float, log: str,
           skipped: int = 0, *, last_record_age: float | None = None, last_problem: str | None = None) -> str:
    def rate(key: str) -> str:
        if previous is None or interval <= 0:
            return "     -"
        return f"{(snapshot[key] - previous[key]) / interval:8.1f}/s"

    high, low = snapshot["high_watermark_bytes"], snapshot["low_watermark_bytes"]
    band = "" if high is None else f"  (low {low:,} / high {high:,})"
    ages = snapshot["lease_age_seconds"]
    from refqueue.diagnosis import diagnose

    age = "no record yet" if last_record_age is None else f"last record {last_record_age:.1f} s ago"
    conditions = diagnose(snapshot, previous)
    lines = [f"refqueue top  {log}  {time.strftime('%H:%M:%S')}  ({age})", ""]
    if conditions:
        for c in conditions:
            lines += [f"!! {c.title}", f"   {c.detail}"]
    else:
        lines.append("diagnosis: no condition found")
    lines += [
        "",
        f"producers blocked {snapshot.get('producers_blocked', 0)} (parking "
        f"{snapshot.get('parked_bytes', 0) / 1e6:.3g} MB)   leases past deadline "
        f"{snapshot.get('leases_past_deadline', 0)}   older than the timeout {snapshot.get('leases_older_than_timeout', 0)}",
        f"pending {snapshot['pending']:>8,}   outstanding {snapshot['outstanding']:>8,}   "
        f"{'PAUSED' if snapshot['paused'] else 'running'}",
        f"resident {snapshot['resident_bytes']:>12,} bytes{band}",
        "",
        f"{'':14}{'total':>12}  {'rate':>12}",
    ]
    for key in ("puts", "acquires", "acks_live", "acks_stale", "fails", "reclaims", "redeliveries", "dead_letters"):
        lines.append(f"{key:14}{snapshot[key]:>12,}  {rate(key):>12}")
    lines += [
        "",
        f"lease age: mean {ages['mean'] * 1e3:.2f} ms, max {ages['max'] * 1e3:.2f} ms over {ages['count']:,} leases; "
        f"oldest open {snapshot['oldest_open_lease_age_seconds']:.3f} s",
        f"paused {snapshot['paused_seconds']:.3f} s; producers blocked {snapshot['producer_blocked_seconds']:.3f} s, "
        f"consumers idle {snapshot['consumer_empty_wait_seconds']:.3f} s -> bottleneck: {snapshot['bottleneck']}",
    ]
    if snapshot.get("loader_batches") or snapshot.get("loader_waiting") or snapshot.get("loader_retries"):
        lines.append(
            f"loader: {snapshot['loader_batches']:,} batches ({snapshot['loader_samples']:,} samples), "
            f"{snapshot['loader_retries']:,} retries; {snapshot['loader_waiting']} next() waiting now, the longest "
            f"{snapshot['loader_longest_wait_seconds']:.3f} s; the trainer waited {snapshot['loader_wait_seconds']:.3f} s "
            f"in all"
        )
    if skipped:
        lines.append(f"{skipped:,} malformed lines skipped" + (f"; the last: {last_problem}" if last_problem else ""))
    return printable("\n".join(lines)) + "\n"


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from refqueue.event_records import problem
    from refqueue.metrics import Metrics

    out = out or sys.stdout
    if not 0 < args.interval <= MAX_INTERVAL:
        print(f"refqueue top: --interval must be a number of seconds in (0, {MAX_INTERVAL:g}], got {args.interval}",
              file=sys.stderr)
        return 2
    if args.iterations < 0:
        print(f"refqueue top: --iterations must be >= 0, got {args.iterations}", file=sys.stderr)
        return 2
    follower = _Follower(args.log)
    metrics = Metrics()
    previous = None
    shown = 0
    last_record_at: float | None = None  # time.monotonic() when the last record came
    try:
        while True:
            for record in follower.read():
                last_record_at = time.monotonic()
                why = problem(record)
                if why is not None:
                    follower.skipped += 1
                    follower.last_problem = f"record seq {record.get('seq')!r}: {why}"
                    continue
                try:
                    metrics.write(record)
                except (KeyError, TypeError, ValueError, ArithmeticError) as exc:  # a record the metrics cannot fold
                    follower.skipped += 1
                    follower.last_problem = f"record seq {record.get('seq')!r}: {exc!r}"
            age = None if last_record_at is None else time.monotonic() - last_record_at
            try:
                snapshot = metrics.snapshot()
            except ValueError:
                wait_for = "the file to appear" if not os.path.exists(args.log) else "a queue's open record"
                why = f" ({follower.last_problem})" if follower.last_problem else ""
                view = printable(f"refqueue top  {args.log}: waiting for {wait_for}{why}") + "\n"
                snapshot = None
            else:
                view = render(snapshot, previous, args.interval, args.log, follower.skipped,
                              last_record_age=age, last_problem=follower.last_problem)
            out.write(view if args.no_clear else CLEAR + view)
            out.flush()
            previous = snapshot
            shown += 1
            if args.iterations and shown >= args.iterations:
                return 0
            time.sleep(args.interval)  # the redraw period of a terminal view
    except KeyboardInterrupt:
        return 0
