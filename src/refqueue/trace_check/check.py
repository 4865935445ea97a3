"""Check a whole event log: merge files, order by sequence, replay each queue.

Records of several files (a rotated set, several processes) are merged and
ordered by ``(pid, seq)``; each process's records must number 1, 2, 3, ...
with no gap or repeat (a gap means records were lost: a dropped rotated file
or an overflowed ring) and each queue must start with its ``open`` record.
Within a process, queue records go to that queue's ``QueueReplay`` and store
records to the replay of the queue bound to that store (by uri); store
records before the queue opened are replayed when it opens.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from refqueue._collector import collector_paused
from refqueue.event_records import printable, problem as record_problem
from refqueue.trace_check.replay import BadTrace, QueueReplay, describe_state

__all__ = ["Violation", "TraceResult", "check_records", "order_records", "TraceChecker", "printable"]


@dataclass
class Violation:
    """The first record the model does not allow."""

    record: dict[str, Any]
    message: str
    state: str  # the model state before the record, described
    window: list[dict[str, Any]] = field(default_factory=list)  # records around it, in order

    def render(self) -> str:
        r = self.record
        lines = [
            f"VIOLATION at seq {r.get('seq')} (pid {r.get('pid')}, {'queue ' + str(r['q']) if 'q' in r else 'store ' + str(r.get('s'))}): "
            f"{r.get('ev')} {r.get('sample', '')}",
            f"  {self.message}",
            "  model state before it:",
            *("    " + line for line in self.state.splitlines()),
            "  events around it:",
        ]
        for w in self.window:
            mark = ">>" if w is r else "  "
            lines.append(f"  {mark} {_short(w)}")
        return printable("\n".join(lines))


def _short(record: dict[str, Any]) -> str:
    skip = {"pid", "tid"}
    return " ".join(f"{k}={_repr(v)}" for k, v in record.items() if k not in skip)


def _repr(value: Any) -> str:
    try:
        text = repr(value)
    except RecursionError:
        return f"<a {type(value).__name__} nested too deeply>"
    return text if len(text) <= 200 else text[:200] + "..."


@dataclass
class TraceResult:
    events: int = 0
    samples: int = 0
    leases: int = 0
    redeliveries: int = 0
    dead_letters: int = 0
    queues: int = 0
    processes: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    violation: Violation | None = None

    @property
    def ok(self) -> bool:
        return self.violation is None

    def counts(self) -> dict[str, Any]:
        rate = self.events / self.seconds if self.seconds > 0 else 0.0
        return {
            "events": self.events, "samples": self.samples, "leases": self.leases,
            "redeliveries": self.redeliveries, "dead_letters": self.dead_letters, "queues": self.queues,
            "processes": self.processes, "seconds": round(self.seconds, 4), "events_per_s": round(rate),
            "events_per_cpu_s": round(self.events / self.cpu_seconds) if self.cpu_seconds > 0 else 0,
        }


def order_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` ordered by ``(pid, seq)``; ``BadTrace`` on a record
    without them, a repeated seq, or a gap."""
    if _in_order(records):
        return records
    try:
        records = sorted(records, key=lambda r: (r["pid"], r["seq"]))
    except KeyError:
        bad = next(r for r in records if "pid" not in r or "seq" not in r)
        raise BadTrace(f"a record without pid/seq: {bad!r}; pass logs written by refqueue.events") from None
    except TypeError:
        raise BadTrace("pid and seq must be integers in every record; pass logs written by refqueue.events") from None
    last_pid, last_seq = None, 0
    for r in records:
        pid, seq = r["pid"], r["seq"]
        if pid != last_pid:
            if seq != 1:
                raise BadTrace(
                    f"the records of process {pid} start at seq {seq}, not 1: the first {seq - 1} were lost "
                    f"(a rotated file left out, or a ring that overflowed); pass every file of the log"
                )
            last_pid, last_seq = pid, seq
            continue
        if seq == last_seq:
            raise BadTrace(f"two records with seq {seq} in process {pid}: a file given twice, or two EventLogs "
                           f"in one process writing to one set of files")
        if seq != last_seq + 1:
            raise BadTrace(f"process {pid}: records {last_seq + 1}..{seq - 1} are missing (a rotated file left out?)")
        last_seq = seq
    return records


def _in_order(records: list[dict[str, Any]]) -> bool:
    """Whether ``records`` are already sorted by ``(pid, seq)`` and pass every
    check of ``order_records``: each process's seqs 1, 2, 3, ... in a row,
    the processes one after another by pid.  One pass with no sort, for the
    usual log (one file, or files read in order); anything else (a record
    without pid/seq, a gap, a repeat, another order, pids that do not
    compare) answers False and goes the sorting way, which raises what it
    always raised."""
    last_pid: Any = None
    last_seq = 0
    try:
        for r in records:
            pid, seq = r["pid"], r["seq"]
            if pid == last_pid:
                if seq != last_seq + 1:
                    return False
            elif seq != 1 or (last_pid is not None and not pid > last_pid):
                return False
            else:
                last_pid = pid
            last_seq = seq
    except (KeyError, TypeError):
        return False
    return True


class TraceChecker:
    """Feeds records of one process, in seq order, to the queues' replays.
    ``feed(record)`` returns None or the violation message."""

    def __init__(self) -> None:
        self.queues: dict[int, QueueReplay] = {}
        self.stores: dict[int, dict[str, Any]] = {}  # store number -> its store_open record
        self.bound: dict[int, QueueReplay] = {}  # store number -> the replay of its queue
        self.early: dict[int, list[dict[str, Any]]] = {}  # store records before their queue opened
        self.unbound_store_records = 0

    def feed(self, record: dict[str, Any]) -> str | None:
        try:
            return self._feed(record)
        except (TypeError, ValueError, AttributeError) as exc:
            raise _malformed(record, exc) from None

    def _feed(self, record: dict[str, Any]) -> str | None:
        q = record.get("q")
        if q is not None:
            replay = self.queues.get(q)
            if replay is None:
                if record.get("ev") != "open":
                    raise BadTrace(f"record seq={record.get('seq')!r}: queue {q} has no open record before it")
                return self._open(record)
            return replay.step(record)
        s = record.get("s")
        if s is None:
            raise BadTrace(f"record seq={record.get('seq')!r} names neither a queue (q) nor a store (s)")
        replay = self.bound.get(s)
        if replay is not None:
            return replay.step(record)
        if record.get("ev") == "store_open":
            self.stores[s] = record
            self.early[s] = []
        elif s in self.early:
            self.early[s].append(record)
        else:
            raise BadTrace(f"record seq={record.get('seq')!r}: store {s} has no store_open record before it")
        return None

    def current_state(self, record: dict[str, Any]) -> str:
        replay = self.queues.get(record["q"]) if "q" in record else self.bound.get(record.get("s"))  # type: ignore[arg-type]
        return "(no queue open)" if replay is None else describe_state(replay.state)

    def _open(self, record: dict[str, Any]) -> str | None:
        # (the configuration and the time every later record of the queue is
        # read against: a bad one is named here, not at the record it trips)
        why = record_problem(record)
        if why is not None:
            raise _bad_record(record, why)
        store_number = next((n for n, r in self.stores.items() if r.get("store") == record.get("store")
                             and n not in self.bound), None)
        store_open = None if store_number is None else self.stores[store_number]
        replay = QueueReplay(record, store_open)
        self.queues[record["q"]] = replay
        if store_number is not None:
            self.bound[store_number] = replay
            for early in self.early.pop(store_number, []):
                problem = replay.step(early)
                if problem is not None:
                    return problem
        return None

    def totals(self) -> tuple[int, int, int, int]:
        samples = sum(len(r.samples) for r in self.queues.values())
        leases = sum(r.acquired for r in self.queues.values())
        redeliveries = sum(r.redeliveries for r in self.queues.values())
        dead = sum(r.dead for r in self.queues.values())
        return samples, leases, redeliveries, dead


def check_records(records: Iterable[dict[str, Any]], window: int = 5) -> TraceResult:
    """Order, replay and count ``records``; stops at the first violation.
    Raises ``BadTrace`` for records that cannot be replayed at all."""
    with collector_paused():  # (millions of small kept tuples: about 7 % of the time otherwise)
        return _check(records, window)


def _check(records: Iterable[dict[str, Any]], window: int) -> TraceResult:
    started = time.perf_counter()
    cpu_started = time.process_time()
    ordered = order_records(list(records))
    result = TraceResult(events=len(ordered))
    checkers: dict[int, TraceChecker] = {}
    checker: TraceChecker | None = None
    queues: dict[int, QueueReplay] = {}
    last_pid = None
    for index, record in enumerate(ordered):
        pid = record["pid"]
        if pid != last_pid:
            checker = checkers.setdefault(pid, TraceChecker())
            queues = checker.queues
            last_pid = pid
        # A record of a queue already open goes straight to its replay, as
        # feed would send it; feed takes every other record (and maps a
        # malformed one's exceptions itself).
        try:
            replay = queues.get(record.get("q"))
            problem = None if replay is None else replay.step_queue(record)
        except (TypeError, ValueError, AttributeError) as exc:
            raise _malformed(record, exc) from None
        if replay is None:
            problem = checker.feed(record)  # type: ignore[union-attr]
        if problem is not None:
            before = _state_before(ordered, index, record)
            lo, hi = max(0, index - window), min(len(ordered), index + window + 1)
            same_pid = [r for r in ordered[lo:hi] if r["pid"] == pid]
            result.violation = Violation(record, problem, before, same_pid)
            result.events = index + 1
            break
    for c in checkers.values():
        samples, leases, redeliveries, dead = c.totals()
        result.samples += samples
        result.leases += leases
        result.redeliveries += redeliveries
        result.dead_letters += dead
        result.queues += len(c.queues)
    result.processes = len(checkers)
    result.seconds = time.perf_counter() - started
    result.cpu_seconds = time.process_time() - cpu_started
    return result


def _malformed(record: dict[str, Any], exc: Exception) -> Exception:
    """What to raise for ``exc``, raised while replaying ``record``: a
    ``BadTrace`` naming the field when the record is not one
    ``refqueue.events`` writes (a hand-made or damaged record: a list where
    an id goes, a str for the time), else ``exc`` itself (a bug of the replay)."""
    if isinstance(exc, BadTrace):
        return exc
    why = record_problem(record)
    return exc if why is None else _bad_record(record, why)


def _bad_record(record: dict[str, Any], why: str) -> BadTrace:
    return BadTrace(f"record seq={record.get('seq')!r} ev={record.get('ev')!r}: {why}; pass records written by refqueue.events")


def _state_before(ordered: list[dict[str, Any]], index: int, record: dict[str, Any]) -> str:
    """Replay this process's records up to (not including) ``index`` again
    and describe the model state there (only on a violation)."""
    pid = record["pid"]
    checker = TraceChecker()
    for r in ordered[:index]:
        if r["pid"] == pid:
            checker.feed(r)
    return checker.current_state(record)
