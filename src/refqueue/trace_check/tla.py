"""``trace-check --tla``: check a short event log with TLC against the TLA+ spec.

``to_tla(records)`` converts one queue's log into the constants of
``spec/SampleRefQueueTrace.tla`` (a generated module
``SampleRefQueueTraceRun.tla``), assigning a spec consumer to each lease and
a spec producer to each put; ``run_tlc_on_trace`` runs TLC on it with
``spec/SampleRefQueueTrace.cfg``.  TLC reports ``TraceNotFinished``
violated when some behaviour of the spec matches every record (accepted);
otherwise ``TraceCanContinue``, where ``l`` counts the records matched
before the refused one.

TLC runs with ``-continue``: it explores every behaviour that follows the
log, so the verdict is right even where the trace spec offers two steps for
one record (one behaviour's dead end is no refusal while another matches
on).  Accepted iff some state violates ``TraceNotFinished``; otherwise the
log is refused at the record after the largest ``l`` any behaviour reached.

What the spec cannot express is refused with ``ValueError`` (exit 2): times
that are not whole seconds from the open record (a ``ManualClock`` advanced
by whole seconds gives those), a visibility timeout or extend that is not
whole seconds (extends must be by the visibility timeout), consumer
dead-letters and the dedup window (both left out of the spec), several
queues or processes, and more than ``max_events`` records.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from refqueue.events import LOADER_EVENTS
from refqueue.trace_check.check import order_records

__all__ = ["TlaTrace", "TlaResult", "to_tla", "run_tlc_on_trace", "spec_dir"]

_SKIP = {"open", "wait", "pause", "resume", "get", "release", "scrub", "store_open", "store_close", *LOADER_EVENTS}


def spec_dir() -> Path:
    """The spec installed with refqueue: the wheel's ``refqueue/spec/``, or a
    source checkout's ``spec/`` (``refqueue.spec_check.manifest.default_spec_dir``)."""
    from refqueue.spec_check.manifest import default_spec_dir

    return default_spec_dir()


def _whole(value: float, what: str) -> int:
    n = round(value)
    if abs(value - n) > 1e-9 or n < 0:
        raise ValueError(f"--tla needs whole seconds: {what} is {value!r}; record the run with a ManualClock "
                         f"advanced by whole seconds")
    return n


# TLC's integers are 32-bit.
_TLC_MAX_INT = 2**31 - 1


def _tla(value: Any, names: dict[str, str] | None = None) -> str:
    """The TLA+ literal of ``value``; a str in ``names`` is written as its
    stand-in (``_stand_ins``)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        if not -_TLC_MAX_INT <= value <= _TLC_MAX_INT:
            raise ValueError(f"--tla: the log holds the number {value}, past TLC's largest ({_TLC_MAX_INT}, 32-bit "
                             f"integers); a sample of 2 GiB or more, or a run of as many seconds, cannot be traced")
        return str(value)
    if isinstance(value, str):
        value = names.get(value, value) if names else value
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, frozenset):
        return "{" + ", ".join(_tla(v, names) for v in sorted(value)) + "}"
    if isinstance(value, (list, tuple)):
        return "<<" + ", ".join(_tla(v, names) for v in value) + ">>"
    raise TypeError(f"no TLA+ literal for {value!r}")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (frozenset, list, tuple)):
        return [x for v in value for x in _strings(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _strings(v)]
    return []


def _stand_ins(strings: list[str]) -> dict[str, str]:
    """A stand-in for each string a TLA+ string literal cannot hold (beyond
    printable ASCII: a sample id "样本-é", one with a newline): ``id1``,
    ``id2``, ... in order of appearance, none equal to a string of the
    trace.  The spec only compares ids for equality, so the trace is the
    same one."""
    taken = set(strings)
    names: dict[str, str] = {}
    n = 0
    for text in strings:
        if text in names or all(" " <= ch <= "~" for ch in text):
            continue
        n += 1
        while f"id{n}" in taken:
            n += 1
        names[text] = f"id{n}"
    return names


@dataclass
class TlaTrace:
    samples: list[str]
    sizes: list[int]
    producers: list[str]
    consumers: list[str]
    max_deliveries: int
    visibility_timeout: int
    horizon: int
    high: int
    low: int
    capacity: int
    records: list[dict[str, Any]]  # the TLA+ records, all with the same fields
    seqs: list[int]  # the log's seq of each TLA+ record

    def module(self) -> str:
        names = _stand_ins(_strings([self.samples, self.producers, self.consumers, self.records]))
        recs = ",\n    ".join(
            "[" + ", ".join(f"{k} |-> {_tla(v, names)}" for k, v in r.items()) + "]" for r in self.records
        )
        return "\n".join([
            "---- MODULE SampleRefQueueTraceRun ----",
            "\\* Generated by refqueue.trace_check.tla from an event log.",
            "EXTENDS SampleRefQueueTrace",
            f"TraceSamples == {_tla(self.samples, names)}",
            f"TraceSizes == {_tla(self.sizes)}",
            f"TraceProducers == {_tla(frozenset(self.producers), names)}",
            f"TraceConsumers == {_tla(frozenset(self.consumers or ['c1']), names)}",
            f"TraceMaxDeliveries == {_tla(self.max_deliveries)}",
            f"TraceVisibilityTimeout == {_tla(self.visibility_timeout)}",
            f"TraceHorizon == {_tla(self.horizon)}",
            f"TraceHigh == {_tla(self.high)}",
            f"TraceLow == {_tla(self.low)}",
            f"TraceCapacity == {_tla(self.capacity)}",
            f"TraceRecords == <<\n    {recs}\n    >>",
            "====",
            "",
        ])


def to_tla(records: list[dict[str, Any]], max_events: int = 200) -> TlaTrace:
    """Convert one queue's log (``ValueError`` for what the spec cannot express)."""
    ordered = order_records(list(records))
    if len(ordered) > max_events:
        raise ValueError(f"the log has {len(ordered)} records; --tla checks at most {max_events} "
                         f"(TLC explores the trace's states): pass a shorter log or --tla-max-events")
    if len({r["pid"] for r in ordered}) != 1 or len({r["q"] for r in ordered if "q" in r}) != 1:
        raise ValueError("--tla checks the log of one queue in one process")
    opened = next((r for r in ordered if r.get("ev") == "open"), None)
    if opened is None or any("q" in r for r in ordered[: ordered.index(opened)]):
        raise ValueError("--tla needs the queue's open record before its other records")
    store_open = next((r for r in ordered if r.get("ev") == "store_open"), None)
    if opened.get("dedup_window"):
        raise ValueError("--tla: the spec leaves out the dedup window (D5); record with dedup_window=0")
    t0 = opened.get("t") or 0.0
    vt = _whole(opened["visibility_timeout"], "the visibility timeout")
    if vt < 1:
        raise ValueError("--tla needs a visibility timeout of at least 1 second")
    store_logged = any(r.get("ev") == "store_put" for r in ordered)
    out: list[dict[str, Any]] = []
    seqs: list[int] = []
    samples: list[str] = []
    sizes: list[int] = []
    producer_of: dict[str, str] = {}  # sample -> producer putting it
    free_producers: list[str] = []
    producers: list[str] = []
    holder: dict[int, str] = {}  # lease id -> consumer holding it
    lease_sample: dict[int, str] = {}
    kept: dict[str, int] = {}  # consumer -> the lease it gave back last
    busy: dict[str, int] = {}  # consumer -> lease held
    consumers: list[str] = []
    now = 0
    acquires = 0
    parked_now: set[str] = set()  # samples whose producer parked (park record, no unpark yet)
    orphans: set[str] = set()  # samples whose blocking put gave up with the data stored
    size_of: dict[str, int] = {}  # sample -> bytes its data holds in the spec's store
    resident = 0  # the spec's resident_bytes, to compare with what the store reported

    def check_residency(r: dict[str, Any], before: int) -> None:
        logged = r.get("resident_bytes")
        if logged is not None and logged != before:
            raise ValueError(
                f"--tla: at seq {r['seq']} the store held {logged} bytes, but the records before it account for "
                f"{before}: the store holds data the log does not show (put before the queue opened, or a store "
                f"that does not log its puts); the spec's residency would differ.  Log the store too "
                f"(LocalFeatureStore(events=...)) from before its first put"
            )

    def scrubbed(sample: str) -> None:
        nonlocal resident
        resident -= size_of.pop(sample, 0)

    def producer_for(sample: str) -> str:
        if sample in producer_of:
            return producer_of[sample]
        if free_producers:
            p = free_producers.pop(0)
        else:
            p = f"p{len(producers) + 1}"
            producers.append(p)
        producer_of[sample] = p
        return p

    def done_producing(sample: str) -> None:
        p = producer_of.pop(sample, None)
        if p is not None:
            free_producers.append(p)
            free_producers.sort()

    def emit(ev: str, r: dict[str, Any], **fields: Any) -> None:
        rec = {"ev": ev, "sample": "", "c": consumers[0] if consumers else "c1", "p": producers[0] if producers else "p1",
               "t": now, "live": False, "dead": False, "copy": False, "store": False, "enqueued": False,
               "paused": False, "redeliveries": 0, "samples": frozenset(), "deads": frozenset()}
        rec.update(fields)
        out.append(rec)
        seqs.append(r["seq"])

    for index, r in enumerate(ordered):
        ev = r.get("ev")
        if "q" in r and r.get("t") is not None:
            now = _whole(r["t"] - t0, f"the time of record seq {r['seq']} (from the open record)")
        if ev in _SKIP:
            emit("skip", r)
            continue
        if ev == "dead_letter":
            raise ValueError("--tla: the spec leaves out consumer dead-letters (DeadLetter); this log has one "
                             f"at seq {r['seq']}")
        if ev == "store_put":
            sample = r["sample"]
            samples.append(sample)
            sizes.append(max(1, r.get("nbytes", 1)))
            size_of[sample] = sizes[-1]
            resident += sizes[-1]
            check_residency(r, resident)
            emit("store_put", r, sample=sample, p=producer_for(sample))
        elif ev in ("put", "try_put"):
            sample = r["sample"]
            if sample in orphans:
                raise ValueError(f"--tla: seq {r['seq']} puts {sample!r} again after its blocking put gave up "
                                 f"with the data stored; the spec's producers cannot resume such a put")
            first = sample not in producer_of
            p = producer_for(sample)
            store = not store_logged and first
            if ev == "try_put" and not store_logged:
                check_residency(r, resident + (max(1, r.get("nbytes", 1)) if store else 0))
            if store:
                samples.append(sample)
                sizes.append(max(1, r.get("nbytes", 1)))
                size_of[sample] = sizes[-1]
                resident += sizes[-1]
            enqueued = ev == "put" or bool(r.get("enqueued"))
            emit(ev, r, sample=sample, p=p, store=store, enqueued=enqueued, paused=bool(r.get("paused", False)))
            if enqueued:
                done_producing(sample)
            elif ev == "try_put" and sample not in parked_now:
                # The spec parks the ref in this step; production parks it (a `park` record) only if the
                # producer goes on waiting.  If the call gave up here instead (abort_when said so), the
                # spec's producer gives up too: ProducerCrash, the data left stored.
                nxt = next((x for x in ordered[index + 1:] if x.get("sample") == sample and x.get("tid") == r.get("tid")
                            and x.get("ev") in ("park", "try_put", "unpark")), None)
                if nxt is None or nxt.get("ev") != "park":
                    emit("abort", r, sample=sample, p=p)
                    done_producing(sample)
                    orphans.add(sample)
        elif ev == "park":
            parked_now.add(r["sample"])
            emit("skip", r)
        elif ev == "unpark":
            sample = r["sample"]
            parked_now.discard(sample)
            nxt = next((x for x in ordered[index + 1:] if "q" in x and x.get("ev") not in _SKIP), None)
            if nxt is not None and nxt.get("ev") == "try_put" and nxt.get("sample") == sample and nxt.get("enqueued"):
                emit("skip", r)  # the unpark of a step that enqueues
            else:
                emit("abort", r, sample=sample, p=producer_for(sample))
                done_producing(sample)
        elif ev == "acquire":
            if r.get("sample") is None:
                emit("acquire", r)
                continue
            c = next((c for c in consumers if c not in busy), None)
            if c is None:
                c = f"c{len(consumers) + 1}"
                consumers.append(c)
            busy[c] = r["lease"]
            holder[r["lease"]] = c
            lease_sample[r["lease"]] = r["sample"]
            acquires += 1
            emit("acquire", r, sample=r["sample"], c=c, redeliveries=r.get("redeliveries", 0))
        elif ev in ("ack", "fail"):
            lease = r["lease"]
            c = holder.get(lease)
            if c is not None and busy.get(c) == lease:
                del busy[c]
                kept[c] = lease
                if r["live"] and (ev == "ack" or r.get("dead")):
                    scrubbed(r["sample"])
                emit(ev, r, sample=r["sample"], c=c, live=bool(r["live"]), dead=bool(r.get("dead", False)))
            else:
                c = next((c for c, k in kept.items() if k == lease), None)
                if c is None:
                    raise ValueError(f"--tla: record seq {r['seq']} gives back lease {lease}, which no spec consumer "
                                     f"holds or kept (its holder gave back another lease since)")
                del kept[c]
                emit(ev, r, sample=r["sample"], c=c, live=bool(r["live"]), copy=True)
        elif ev == "extend":
            if r.get("live"):
                _whole(r["seconds"], "an extend's seconds")
                if r["seconds"] != opened["visibility_timeout"]:
                    raise ValueError(f"--tla: the spec's consumers extend by the visibility timeout only; seq "
                                     f"{r['seq']} extends by {r['seconds']!r}")
            c = holder.get(r["lease"], consumers[0] if consumers else "c1")
            emit("extend", r, sample=r["sample"], c=c, live=bool(r["live"]))
        elif ev == "reclaim":
            if "samples" not in r:
                raise ValueError("--tla needs reclaim records that list their samples (a SampleRefQueue's log)")
            for sample in r.get("dead") or ():
                scrubbed(sample)
            emit("reclaim", r, samples=frozenset(r["samples"]), deads=frozenset(r.get("dead") or ()))
        elif ev == "close":
            emit("close", r)
        else:
            raise ValueError(f"--tla: record seq {r['seq']} has event {ev!r}, which the trace spec does not map")
    if not samples:
        samples, sizes = ["unused"], [1]
    if not producers:
        producers = ["p1"]
    high, low = opened.get("high"), opened.get("low")
    total = sum(sizes)
    store_cap = None if store_open is None else store_open.get("capacity_bytes")
    if high is None:
        capacity = total + 1 if store_cap is None else store_cap
        high, low = capacity, 0
    else:
        capacity = max(high, total) + 1 if store_cap is None else store_cap
    # A threshold above every residency the trace can reach (its sizes all
    # together) decides nothing the spec compares: it is lowered, in order, to
    # just above that, so a 2 GiB store fits TLC's 32-bit integers, same verdict.
    top = total + 2
    low, high, capacity = min(low, top), min(high, top + 1), min(capacity, top + 2)
    max_deliveries = opened.get("max_deliveries") or acquires + 1
    return TlaTrace(samples, sizes, producers, consumers, max_deliveries, vt, now, high, low, capacity, out, seqs)


@dataclass
class TlaResult:
    ok: bool
    summary: str
    seconds: float
    states: int | None
    matched: int | None  # records matched before the refused one (None when accepted)
    refused_seq: int | None
    output: str
    verdict: bool = True  # False: TLC ran but said neither accepted nor refused (it failed)


def run_tlc_on_trace(records: list[dict[str, Any]], max_events: int = 200, timeout: float = 600.0,
                     spec: Path | None = None) -> TlaResult:
    """Run TLC on the trace spec with ``records``; ``ValueError`` if the log cannot be expressed.

    ``spec`` is the folder holding the three spec files (default ``spec_dir()``;
    the must-refuse tests pass a copy with one check of the trace spec removed).
    """
    from refqueue.spec_check.tlc import SHORT_RUN_JVM_ARGS, run_tlc

    trace = to_tla(records, max_events)
    source = spec_dir() if spec is None else spec
    with tempfile.TemporaryDirectory(prefix="refqueue-trace-tla-") as tmp:
        spec = Path(tmp) / "spec"
        spec.mkdir()
        for name in ("SampleRefQueue.tla", "SampleRefQueueTrace.tla", "SampleRefQueueTrace.cfg"):
            shutil.copy2(source / name, spec / name)
        (spec / "SampleRefQueueTraceRun.tla").write_text(trace.module(), encoding="utf-8")
        started = time.monotonic()
        run = run_tlc(spec, "SampleRefQueueTraceRun.tla", "SampleRefQueueTrace.cfg", Path(tmp) / "work",
                      workers=1, timeout=timeout, tlc_args=["-continue"], jvm_args=SHORT_RUN_JVM_ARGS)
        seconds = time.monotonic() - started
    violated = set(_VIOLATED.findall(run.output)) if run.outcome == "violation" else set()
    others = sorted(violated - {"TraceNotFinished", "TraceCanContinue"})
    if others:
        return TlaResult(False, f"the spec's invariant {others[0]} is violated along the trace", seconds,
                         run.distinct_states, None, None, run.output)
    if "TraceNotFinished" in violated:
        return TlaResult(True, f"accepted: all {len(trace.records)} records matched ({run.distinct_states} "
                               f"distinct states)", seconds, run.distinct_states, None, None, run.output)
    matched = _matched(run.output)
    if "TraceCanContinue" in violated and matched is not None:
        seq = trace.seqs[matched] if matched < len(trace.seqs) else None
        record = trace.records[matched] if matched < len(trace.records) else {}
        return TlaResult(False, f"refused at log seq {seq} ({record.get('ev')} {record.get('sample', '')}): the "
                                f"spec has no step for it (record {matched + 1} of {len(trace.records)}; the "
                                f"{matched} before it matched)",
                         seconds, run.distinct_states, matched, seq, run.output)
    return TlaResult(False, f"TLC gave no verdict: {run.error or run.outcome}", seconds, run.distinct_states,
                     None, None, run.output, verdict=False)


_VIOLATED = re.compile(r"^Error: Invariant (\w+) is violated", re.M)


def _matched(output: str) -> int | None:
    """The largest ``l`` in the states TLC printed: the number of records matched by the
    behaviour that got furthest (``l`` only grows along a behaviour)."""
    values = [int(m.group(1)) for m in re.finditer(r"^\s*/\\ l = (\d+)\s*$", output, re.M)]
    return max(values) if values else None
