"""What a torture run prints: the table (one row per run: faults injected,
samples, acks, dead letters, redeliveries, retries, anomalies, throughput,
and throughput against the no-fault run), each anomaly with the excerpt of
the history around it, faults included, and the same as JSON.

An excerpt shows, in history order: the anomaly's evidence (marked ``>``),
every other call on the same sample, and every fault and process exit from
two seconds before the first of those to half a second after the last
(marked ``!``), the window set by the calls of the run, not by the
end's checks; at most ``EXCERPT_LINES`` lines, the evidence and the faults
kept first.  Times are seconds after the run's time zero.  A run can hold
thousands of anomalies of one kind (every lease id reused after a lossy
restart): the text shows the first ``EXCERPTS_PER_KIND`` of each kind with
their excerpts and lists up to ``LINES_PER_KIND``; ``--json`` has them all.
"""

from __future__ import annotations

from typing import Any

from refqueue.torture.checker import Anomaly, CheckResult
from refqueue.torture.facts import derive
from refqueue.torture.history import ERROR, OK, History, Op

__all__ = ["run_stats", "table", "excerpt", "format_op", "render_run", "shown_anomalies", "EXCERPT_LINES"]

EXCERPT_LINES = 40
EXCERPTS_PER_KIND = 3  # anomalies of one kind shown with their excerpt
LINES_PER_KIND = 10  # anomalies of one kind listed in the text output
_CLIENT_ERRORS = ("RedisUnavailable",)
_COLUMNS = ("run", "persistence", "faults injected", "samples", "acked", "dead", "redelivered", "retries",
            "stale acks refused", "anomalies", "samples/s", "vs none")


def run_stats(history: History, check: CheckResult, *, label: str, persistence: str, start_ns: int,
              elapsed_s: float, injected: dict[str, int]) -> dict[str, Any]:
    """The table's row for one run (the throughput counts acks within the faulted part only)."""
    facts = derive(history)
    committed = [s for s in facts.samples.values() if s.put_committed]
    end_ns = start_ns + int(elapsed_s * 1e9)
    in_window = 0
    for s in facts.samples.values():
        for op in s.committed_acks.values():
            if op.process != "final" and op.return_ns is not None and start_ns <= op.return_ns <= end_ns:
                in_window += 1
    clients = [op for op in history if op.process not in ("nemesis", "supervisor")]
    return {
        "run": label,
        "persistence": persistence,
        "faults injected": dict(sorted(injected.items())),
        "samples": len(committed),
        "acked": sum(1 for s in committed if s.committed_acks),
        "dead": sum(1 for s in committed if s.dead),
        "redelivered": sum(1 for op in clients if op.call == "acquire" and op.outcome == OK and op.result
                           and op.result["redeliveries"] > 0),
        "retries": sum(1 for op in clients if op.outcome == ERROR and op.error in _CLIENT_ERRORS),
        "stale acks refused": sum(1 for op in clients if op.call == "ack" and op.outcome == OK and op.result is False),
        "anomalies": len(check.anomalies),
        "samples/s": round(in_window / elapsed_s, 1) if elapsed_s > 0 else 0.0,
        "valid": check.valid,
    }


def table(rows: list[dict[str, Any]], baseline: float | None = None) -> str:
    """The rows as a fixed-width text table; ``vs none`` is samples/s over ``baseline``'s."""
    cells = []
    for row in rows:
        faults = " ".join(f"{k}={v}" for k, v in row["faults injected"].items()) or "-"
        ratio = f"{row['samples/s'] / baseline:.2f}" if baseline else "-"
        cells.append([row["run"], row["persistence"], faults] + [str(row[c]) for c in _COLUMNS[3:11]] + [ratio])
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(_COLUMNS)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(_COLUMNS, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


def _args_text(op: Op) -> str:
    args = dict(op.args)
    if "lease_id" in args:
        args.pop("epoch", None)
        args["lease"] = args.pop("lease_id")
    if op.process == "nemesis":  # the schedule's step: its kind is the call, its time the line's
        args = {k: v for k, v in args.items() if k not in ("at", "fault", "schedule") and v not in ("", 0, 0.0)}
    return " ".join(f"{k}={v}" for k, v in args.items())


def _result_text(op: Op) -> str:
    if op.outcome == OK:
        result = op.result
        if op.call == "acquire" and isinstance(result, dict):
            return f"lease {result['lease_id']} of {result['sample']} (redeliveries {result['redeliveries']})"
        text = str(result)
        return text if len(text) <= 100 else text[:97] + "..."
    if op.outcome == ERROR:
        return f"{op.error}" + ("" if op.refqueue_error else " (not a refqueue exception)")
    return "no answer (the process died, or the run ended)"


def format_op(history: History, op: Op, mark: str = " ") -> str:
    t = history.seconds(op.invoke_ns)
    took = "" if op.return_ns is None else f" [{(op.return_ns - op.invoke_ns) / 1e6:.1f} ms]"
    return f"{mark} #{op.index:<6} {t:+9.3f}s  {op.process:<10} {op.call}({_args_text(op)}) -> {_result_text(op)}{took}"


def excerpt(history: History, anomaly: Anomaly, limit: int = EXCERPT_LINES) -> list[str]:
    """The lines of the history that show ``anomaly`` (see the module's notes)."""
    ops = history.ops
    evidence = {i for i in anomaly.ops if 0 <= i < len(ops)}
    related = {op.index for op in ops if anomaly.sample is not None and op.sample == anomaly.sample}
    span = [ops[i] for i in evidence | related if ops[i].process != "final"] or \
        [ops[i] for i in evidence | related]  # the end's checks do not widen the window
    if not span:
        return []
    low = min(op.invoke_ns for op in span) - 2_000_000_000
    high = max(op.return_ns or op.invoke_ns for op in span) + 500_000_000
    faults = {op.index for op in ops if op.process in ("nemesis", "supervisor") and op.call not in ("spawn", "start")
              and low <= op.invoke_ns <= high}
    keep = sorted(evidence | faults)
    if len(keep) < limit:
        keep = sorted(set(keep) | set(sorted(related - evidence)[: limit - len(keep)]))
    shown = []
    for i in sorted(keep)[:limit]:
        op = ops[i]
        mark = ">" if i in evidence else "!" if i in faults else " "
        shown.append(format_op(history, op, mark))
    cut = len(evidence | faults | related) - len(shown)
    if cut > 0:
        shown.append(f"  ... {cut} more line(s) of this sample and its faults not shown")
    return shown


def shown_anomalies(check: CheckResult) -> list[tuple[Anomaly, bool]]:
    """Each anomaly, and whether it gets an excerpt: the first ``EXCERPTS_PER_KIND`` of each kind do."""
    seen: dict[str, int] = {}
    shown = []
    for anomaly in check.anomalies:
        seen[anomaly.kind] = seen.get(anomaly.kind, 0) + 1
        shown.append((anomaly, seen[anomaly.kind] <= EXCERPTS_PER_KIND))
    return shown


def render_run(history: History, check: CheckResult) -> list[str]:
    """Each verdict; then, kind by kind, each anomaly (the first few with their
    excerpts, then one line each, up to ``LINES_PER_KIND``, then a count)."""
    lines = []
    for v in check.verdicts:
        state = {True: "ok", False: "FAIL", None: "skipped" if v.skipped else "UNKNOWN"}[v.valid]
        lines.append(f"  {v.name:<15} {state:<8} {v.skipped or v.checked}")
        lines += [f"  {'':<15} {'':<8} note: {note}" for note in v.notes]
    kinds: dict[str, list[Anomaly]] = {}
    for anomaly in check.anomalies:
        kinds.setdefault(anomaly.kind, []).append(anomaly)
    for kind, anomalies in kinds.items():
        lines.append("")
        lines.append(f"{kind}: {len(anomalies)} anomal{'y' if len(anomalies) == 1 else 'ies'}")
        for number, anomaly in enumerate(anomalies[:LINES_PER_KIND], 1):
            lines.append(f"  {kind} {number}: {anomaly.message}")
            if number <= EXCERPTS_PER_KIND:
                lines += excerpt(history, anomaly)
        if len(anomalies) > LINES_PER_KIND:
            lines.append(f"  ... and {len(anomalies) - LINES_PER_KIND} more {kind} (all of them: --json)")
    return lines
