"""``refqueue report LOG [LOG ...] --html out.html``: one self-contained page.

The page opens with the diagnosis (``refqueue.diagnose`` of the metrics at
the log's last record: what is wrong, with the evidence), then draws the
recorded event log with inline SVG (no script, no network, no external
file): residency (MB, the last reading held to the log's end) over time with the high/low band and the paused
intervals shaded; acquire/ack/fail/reclaim rates; the lease-age histogram;
redeliveries and dead letters over time; producer-blocked vs consumer-idle
time (which side is the bottleneck); and the metrics snapshot as a table.
Time is the queue's clock, in seconds from the queue's open record.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["add_arguments", "run", "render_html"]

W, H = 760, 220  # plot size in px
PAD_L, PAD_R, PAD_T, PAD_B = 64, 16, 16, 32
MAX_BINS = 10_000  # more bins than a plot has pixels show nothing more, and cost memory by the bin
COLORS = {"acquire": "#1f77b4", "ack": "#2ca02c", "fail": "#d62728", "reclaim": "#ff7f0e",
          "redeliveries": "#9467bd", "dead_letters": "#8c564b", "resident": "#1f77b4"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("logs", nargs="+", help="JSONL event logs (every file of the run)")
    parser.add_argument("--html", required=True, help="the HTML file to write")
    parser.add_argument("--bins", type=int, default=60, help=f"time bins of the rate plots (default 60, at most {MAX_BINS:,})")
    parser.add_argument("--queue", type=int, default=None,
                        help="the queue's number in the log (its records' q; default: the first queue opened)")


def run(args: argparse.Namespace) -> int:
    from refqueue.event_records import printable
    from refqueue.events import read_jsonl

    if not 1 <= args.bins <= MAX_BINS:
        print(f"refqueue report: --bins must be from 1 to {MAX_BINS:,} (a plot is {W} px wide), got {args.bins}",
              file=sys.stderr)
        return 2
    out = Path(args.html)
    if not out.parent.is_dir():
        print(printable(f"refqueue report: folder {str(out.parent)!r} does not exist; create it or pass another "
                        f"--html"), file=sys.stderr)
        return 2
    if out.is_symlink() or (out.exists() and not out.is_file()):
        print(printable(f"refqueue report: --html {str(out)!r} exists and is not a regular file (a FIFO, a folder, "
                        f"a symlink); pass a new file"), file=sys.stderr)
        return 2
    for log in args.logs if out.exists() else ():
        with contextlib.suppress(OSError):  # (a log that cannot be read is read_jsonl's to report)
            if os.path.samefile(out, log):
                print(printable(f"refqueue report: --html {str(out)!r} is the log {log!r} it reads; writing the "
                                f"page would destroy the log: pass another file"), file=sys.stderr)
                return 2
    try:
        records = read_jsonl(args.logs, check=True)
    except (OSError, ValueError) as exc:
        print(printable(f"refqueue report: {exc}"), file=sys.stderr)
        return 2
    try:
        page = render_html(records, bins=args.bins, title=", ".join(Path(p).name for p in args.logs),
                           queue=args.queue)
    except ValueError as exc:
        print(printable(f"refqueue report: {exc}"), file=sys.stderr)
        return 2
    try:
        _write_whole(out, page)
    except OSError as exc:
        print(printable(f"refqueue report: cannot write {str(out)!r} ({exc}); nothing was written (a file that was "
                        f"there is as it was): free space or fix the folder's permissions, or pass another --html"),
              file=sys.stderr)
        return 2
    print(f"refqueue report: wrote {out} ({len(records)} records)")
    return 0


def _write_whole(out: Path, page: str) -> None:
    """``page`` into ``out`` whole or not at all: written beside it under a
    temporary name, then renamed over it."""
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# -- SVG helpers -------------------------------------------------------------------


def _scale(lo: float, hi: float, a: float, b: float):  # type: ignore[no-untyped-def]
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def _axes(x0: float, x1: float, y0: float, y1: float, xlabel: str, ylabel: str, xticks: bool = True,
          yfmt=lambda v: f"{v:.3g}") -> list[str]:  # type: ignore[no-untyped-def]
    parts = [
        f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" stroke="#333"/>',
        f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" stroke="#333"/>',
        f'<text x="{(PAD_L + W - PAD_R) / 2}" y="{H - 4}" text-anchor="middle" font-size="11">{html.escape(xlabel)}</text>',
        f'<text x="12" y="{(PAD_T + H - PAD_B) / 2}" font-size="11" transform="rotate(-90 12 {(PAD_T + H - PAD_B) / 2})" '
        f'text-anchor="middle">{html.escape(ylabel)}</text>',
    ]
    for k in range(5):
        xv = x0 + (x1 - x0) * k / 4
        yv = y0 + (y1 - y0) * k / 4
        sx = PAD_L + (W - PAD_L - PAD_R) * k / 4
        sy = H - PAD_B - (H - PAD_T - PAD_B) * k / 4
        if xticks:
            parts.append(f'<text x="{sx:.1f}" y="{H - PAD_B + 13}" font-size="10" text-anchor="middle">{xv:.3g}</text>')
        parts.append(f'<text x="{PAD_L - 4}" y="{sy + 3:.1f}" font-size="10" text-anchor="end">{yfmt(yv)}</text>')
    return parts


def _svg(name: str, parts: list[str]) -> str:
    return (f'<svg class="plot" id="{name}" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
            f'xmlns="http://www.w3.org/2000/svg">' + "".join(parts) + "</svg>")


def _legend(items: list[tuple[str, str]]) -> list[str]:
    parts = []
    for k, (label, color) in enumerate(items):
        x = PAD_L + 10 + k * 120
        parts.append(f'<rect x="{x}" y="{PAD_T}" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{x + 14}" y="{PAD_T + 9}" font-size="11">{html.escape(label)}</text>')
    return parts


def _polyline(points: list[tuple[float, float]], color: str, sx, sy, step: bool = False) -> str:  # type: ignore[no-untyped-def]
    if not points:
        return ""
    coords = []
    prev_y = None
    for x, y in points:
        if step and prev_y is not None:
            coords.append(f"{sx(x):.1f},{sy(prev_y):.1f}")
        coords.append(f"{sx(x):.1f},{sy(y):.1f}")
        prev_y = y
    return f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{" ".join(coords)}"/>'


# -- the page ----------------------------------------------------------------------


def render_html(records: list[dict[str, Any]], bins: int = 60, title: str = "event log",
                queue: int | None = None) -> str:
    """The page for queue number ``queue`` (default: the first queue opened in the log)."""
    from refqueue.diagnosis import diagnose
    from refqueue.metrics import Metrics

    queue_records = sorted((r for r in records if "q" in r and r.get("t") is not None),
                           key=lambda r: (r.get("pid", 0), r.get("seq", 0)))
    opens = [r for r in queue_records if r.get("ev") == "open"]
    if not opens:
        raise ValueError("the log has no queue open record; pass the files a JsonlSink wrote (all of them)")
    if queue is not None:
        opens = [r for r in opens if r.get("q") == queue]
        if not opens:
            numbers = sorted({r.get("q") for r in queue_records if r.get("ev") == "open"})
            raise ValueError(f"no queue {queue} in the log (its queues: {numbers}); pass one of them to --queue")
    first = opens[0]
    key = (first.get("pid"), first.get("q"))
    mine = [r for r in queue_records if (r.get("pid"), r.get("q")) == key]
    t0 = first["t"]
    t_end = max(r["t"] for r in mine)
    span = max(t_end - t0, 1e-9)
    store_records = sorted((r for r in records if "s" in r and r.get("pid") == first.get("pid")),
                           key=lambda r: r.get("seq", 0))
    metrics = Metrics.from_records(records).snapshot(first.get("q"), first.get("pid"))
    # what is wrong at the log's end; "growing" compares with the snapshot at three quarters of the span
    earlier = [r for r in records if r.get("t") is None or "q" not in r or r["t"] <= t0 + 0.75 * span]
    try:
        previous = Metrics.from_records(earlier).snapshot(first.get("q"), first.get("pid"))
    except ValueError:
        previous = None
    conditions = diagnose(metrics, previous)

    # residency: store records where the store logs, else the queue's health reads
    seq_t = {r["seq"]: r["t"] - t0 for r in mine}
    seqs = sorted(seq_t)
    resident: list[tuple[float, float]] = []
    import bisect

    for r in store_records:
        if "resident_bytes" in r:
            i = bisect.bisect_right(seqs, r["seq"]) - 1
            resident.append((seq_t[seqs[i]] if i >= 0 else 0.0, r["resident_bytes"]))
    if not resident:
        resident = [(r["t"] - t0, r["resident_bytes"]) for r in mine if "resident_bytes" in r]
    if resident and resident[-1][0] < span:
        resident.append((span, resident[-1][1]))  # the last reading holds to the log's end
    paused_spans: list[tuple[float, float]] = []
    since = None
    for r in mine:
        if r["ev"] == "pause":
            since = r["t"] - t0
        elif r["ev"] == "resume" and since is not None:
            paused_spans.append((since, r["t"] - t0))
            since = None
    if since is not None:
        paused_spans.append((since, span))

    sections = [
        _residency_plot(resident, paused_spans, first.get("high"), first.get("low"), span),
        _rates_plot(mine, t0, span, bins),
        _lease_age_plot(metrics["lease_age_seconds"]),
        _cumulative_plot(mine, t0, span),
        _bottleneck_plot(metrics),
    ]
    rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape(_fmt(v))}</td></tr>"
        for k, v in metrics.items() if k != "lease_age_seconds"
    )
    body = "".join(f'<section><h2>{html.escape(h)}</h2><p class="note">{html.escape(note)}</p>{svg}</section>'
                   for h, note, svg in sections)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>refqueue report: {html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; max-width: 820px; }}
h1 {{ font-size: 20px; }} h2 {{ font-size: 16px; margin-bottom: 2px; }}
.note {{ font-size: 12px; color: #555; margin-top: 0; }}
svg.plot {{ border: 1px solid #ddd; background: #fff; display: block; }}
.diagnosis {{ border: 2px solid #d62728; background: #fff5f5; padding: 8px 12px; }}
.diagnosis.ok {{ border-color: #2ca02c; background: #f5fff5; }}
.diagnosis h2 {{ margin-top: 0; }} .diagnosis li {{ margin-bottom: 6px; }}
table {{ border-collapse: collapse; font-size: 12px; }} td {{ border: 1px solid #ddd; padding: 2px 8px; }}
</style></head>
<body>
<h1>refqueue report: {html.escape(title)}</h1>
{_diagnosis_section(conditions)}
<p class="note">queue epoch {html.escape(str(first.get("epoch")))}, store {html.escape(str(first.get("store")))};
{len(mine)} queue records over {span:.3f} s of queue clock; bottleneck: <b id="bottleneck">{html.escape(metrics["bottleneck"])}</b>
(producers blocked {metrics["producer_blocked_seconds"]:.3f} s, consumers waited on an empty queue
{metrics["consumer_empty_wait_seconds"]:.3f} s).</p>
{body}
<section><h2>Metrics snapshot</h2><table>{rows}</table></section>
</body></html>
"""


def _diagnosis_section(conditions) -> str:  # type: ignore[no-untyped-def]
    """What is wrong at the log's end (``refqueue.diagnose``), first on the page."""
    if not conditions:
        return ('<section class="diagnosis ok" id="diagnosis"><h2>Diagnosis: no condition found</h2>'
                '<p class="note">none of refqueue.diagnose\'s conditions holds at the log\'s last record</p></section>')
    items = "".join(f'<li class="condition" data-name="{html.escape(c.name)}"><b>{html.escape(c.title)}</b><br>'
                    f'{html.escape(c.detail)}</li>' for c in conditions)
    return (f'<section class="diagnosis" id="diagnosis"><h2>Diagnosis: {len(conditions)} condition(s) at the '
            f'log\'s last record</h2><ul>{items}</ul></section>')


def _mb(v: float) -> str:
    return f"{v / 1e6:.3g}"


def _fmt(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _residency_plot(points, paused, high, low, span) -> tuple[str, str, str]:  # type: ignore[no-untyped-def]
    top = max([p[1] for p in points] + [high or 0, 1])
    sx = _scale(0.0, span, PAD_L, W - PAD_R)
    sy = _scale(0.0, top * 1.05, H - PAD_B, PAD_T)
    parts = _axes(0.0, span, 0.0, top * 1.05, "time (s)", "resident MB", yfmt=_mb)
    for a, b in paused:
        parts.append(f'<rect class="paused" x="{sx(a):.1f}" y="{PAD_T}" width="{max(1.0, sx(b) - sx(a)):.1f}" '
                     f'height="{H - PAD_T - PAD_B}" fill="#d62728" fill-opacity="0.15"/>')
    if high is not None and low is not None:
        parts.append(f'<rect class="band" x="{PAD_L}" y="{sy(high):.1f}" width="{W - PAD_L - PAD_R}" '
                     f'height="{max(1.0, sy(low) - sy(high)):.1f}" fill="#2ca02c" fill-opacity="0.12"/>')
        for v, label in ((high, "high"), (low, "low")):
            parts.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{sy(v):.1f}" y2="{sy(v):.1f}" stroke="#2ca02c" '
                         f'stroke-dasharray="4 3"/><text x="{W - PAD_R - 2}" y="{sy(v) - 2:.1f}" font-size="10" '
                         f'text-anchor="end">{label} {_mb(v)} MB</text>')
    parts.append(_polyline(_thin(points, span), COLORS["resident"], sx, sy, step=True))
    note = (f"{len(points)} residency readings; green band: low..high watermarks; red: paused intervals "
            f"({len(paused)})." if points else "no residency readings in this log (no store events, no blocking puts)")
    return "Residency over time", note, _svg("residency", parts)


def _thin(points: list[tuple[float, float]], span: float, columns: int = W - PAD_L - PAD_R) -> list[tuple[float, float]]:
    """At most the first, lowest, highest and last point of each pixel column (keeps the page small)."""
    if len(points) <= 4 * columns:
        return points
    kept: list[tuple[float, float]] = []
    column: list[tuple[float, float]] = []
    current = None
    for p in points:
        k = int(p[0] / span * columns) if span > 0 else 0
        if k != current and column:
            kept.extend(sorted({column[0], min(column, key=lambda q: q[1]), max(column, key=lambda q: q[1]),
                                column[-1]}))
            column = []
        current = k
        column.append(p)
    if column:
        kept.extend(sorted({column[0], min(column, key=lambda q: q[1]), max(column, key=lambda q: q[1]), column[-1]}))
    return kept


def _rates_plot(mine, t0, span, bins) -> tuple[str, str, str]:  # type: ignore[no-untyped-def]
    width = span / bins
    counts = {k: [0] * bins for k in ("acquire", "ack", "fail", "reclaim")}
    for r in mine:
        ev = r["ev"]
        k = min(bins - 1, int((r["t"] - t0) / width)) if width > 0 else 0
        if ev == "acquire" and r.get("sample") is not None:
            counts["acquire"][k] += 1
        elif ev in ("ack", "fail") and r.get("live"):
            counts[ev][k] += 1
        elif ev == "reclaim":
            counts["reclaim"][k] += len(r.get("samples") or ()) or r.get("count", 0)
    rates = {k: [n / width if width > 0 else n for n in v] for k, v in counts.items()}
    top = max(max(v) for v in rates.values()) or 1.0
    sx = _scale(0.0, span, PAD_L, W - PAD_R)
    sy = _scale(0.0, top * 1.1, H - PAD_B, PAD_T)
    parts = _axes(0.0, span, 0.0, top * 1.1, "time (s)", "per second")
    for k, v in rates.items():
        parts.append(_polyline([(width * (i + 0.5), y) for i, y in enumerate(v)], COLORS[k], sx, sy))
    parts += _legend([(k, COLORS[k]) for k in rates])
    total = {k: sum(v) for k, v in counts.items()}
    note = f"in {bins} bins of {width:.3g} s; totals: " + ", ".join(f"{k} {n}" for k, n in total.items())
    return "Acquire / ack / fail / reclaim rates", note, _svg("rates", parts)


def _lease_age_plot(hist) -> tuple[str, str, str]:  # type: ignore[no-untyped-def]
    buckets = hist["buckets"]
    n = len(buckets)
    top = max([c for _, c in buckets] + [1])
    parts = _axes(0, n, 0, top, "lease age (s, bucket upper bound)", "leases", xticks=False)
    slot = (W - PAD_L - PAD_R) / n
    sy = _scale(0.0, top, H - PAD_B, PAD_T)
    for i, (bound, count) in enumerate(buckets):
        x = PAD_L + i * slot
        parts.append(f'<rect class="bar" x="{x + 2:.1f}" y="{sy(count):.1f}" width="{slot - 4:.1f}" '
                     f'height="{max(0.5, H - PAD_B - sy(count)):.1f}" fill="#1f77b4"/>')
        label = "inf" if bound == float("inf") else f"{bound:g}"
        parts.append(f'<text x="{x + slot / 2:.1f}" y="{H - PAD_B + 13}" font-size="9" text-anchor="middle">{label}</text>')
        if count:
            parts.append(f'<text x="{x + slot / 2:.1f}" y="{sy(count) - 3:.1f}" font-size="9" '
                         f'text-anchor="middle">{count}</text>')
    note = (f"acquire to live ack/fail/dead-letter: {hist['count']} leases, mean {hist['mean']:.4g} s, "
            f"max {hist['max']:.4g} s")
    return "Lease ages", note, _svg("lease-ages", parts)


def _cumulative_plot(mine, t0, span) -> tuple[str, str, str]:  # type: ignore[no-untyped-def]
    redeliveries, dead = [(0.0, 0)], [(0.0, 0)]
    for r in mine:
        t = r["t"] - t0
        ev = r["ev"]
        if ev == "fail" and r.get("live"):
            if r.get("dead"):
                dead.append((t, dead[-1][1] + 1))
            else:
                redeliveries.append((t, redeliveries[-1][1] + 1))
        elif ev == "reclaim":
            n = len(r.get("samples") or ()) or r.get("count", 0)
            d = len(r.get("dead") or ())
            if n - d:
                redeliveries.append((t, redeliveries[-1][1] + n - d))
            if d:
                dead.append((t, dead[-1][1] + d))
        elif ev == "dead_letter" and r.get("live"):
            dead.append((t, dead[-1][1] + 1))
    redeliveries.append((span, redeliveries[-1][1]))
    dead.append((span, dead[-1][1]))
    top = max(redeliveries[-1][1], dead[-1][1], 1)
    sx = _scale(0.0, span, PAD_L, W - PAD_R)
    sy = _scale(0.0, top * 1.1, H - PAD_B, PAD_T)
    parts = _axes(0.0, span, 0.0, top * 1.1, "time (s)", "count")
    parts.append(_polyline(redeliveries, COLORS["redeliveries"], sx, sy, step=True))
    parts.append(_polyline(dead, COLORS["dead_letters"], sx, sy, step=True))
    parts += _legend([("redeliveries", COLORS["redeliveries"]), ("dead letters", COLORS["dead_letters"])])
    note = f"cumulative: {redeliveries[-1][1]} redeliveries (fail or reclaim), {dead[-1][1]} dead letters"
    return "Redeliveries and dead letters", note, _svg("redeliveries", parts)


def _bottleneck_plot(metrics) -> tuple[str, str, str]:  # type: ignore[no-untyped-def]
    values = [("producers blocked (paused)", metrics["producer_blocked_seconds"], "#d62728"),
              ("consumers idle (empty queue)", metrics["consumer_empty_wait_seconds"], "#1f77b4")]
    # summed over threads: thread-seconds
    top = max(v for _, v, _ in values) or 1.0
    parts = []
    for i, (label, v, color) in enumerate(values):
        y = PAD_T + 30 + i * 70
        width = (W - 260) * v / top
        parts.append(f'<text x="8" y="{y + 22}" font-size="12">{html.escape(label)}</text>')
        parts.append(f'<rect class="bar" x="200" y="{y}" width="{max(1.0, width):.1f}" height="36" fill="{color}"/>')
        parts.append(f'<text x="{204 + width:.1f}" y="{y + 22}" font-size="12">{v:.3f} s</text>')
    side = {"consumer": "the consumers (producers wait for room)",
            "producer": "the producers (consumers wait for work)", "none": "neither side waited"}
    note = (f"bottleneck: {side[metrics['bottleneck']]}; thread-seconds summed over all producers / consumers "
            f"(paused time of the queue: {metrics['paused_seconds']:.3f} s)")
    return "Producer vs consumer bottleneck", note, _svg("bottleneck", parts)
