"""Must-refuse logs of the trace spec (issue 28, item 3): ``refqueue trace-check --tla``
refuses each at the one record edited in it.

Each check ``spec/SampleRefQueueTrace.tla`` makes (a conjunct that can refuse a record)
has a must-refuse log here: a real recorded log (``lease_run`` or ``put_run``, which TLC
accepts) with one record edited so that exactly that check fails.  The default tests
run the CLI on each and assert TLC's refusal names the edited record's seq.  The slow
tests take each check out of a copy of the trace spec (``Case.removed``: the text that
goes, and what stands in its place) and show that the same log is then not refused
there: accepted, or refused only at a later record.  So each log pins its check, and a
check deleted from the spec fails its slow test; a table entry whose text is no longer
in the spec fails ``test_each_removed_check_is_in_the_trace_spec_once``.
"""

from __future__ import annotations

import json
import math
import shutil
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest
from events_helpers import recorded_queue, refs

from refqueue.cli import main
from refqueue.events import RingSink
from refqueue.trace_check.tla import run_tlc_on_trace, spec_dir

pytestmark = [pytest.mark.tlc, pytest.mark.skipif(shutil.which("java") is None, reason="TLC needs java")]

TRACE_SPEC = "SampleRefQueueTrace.tla"


def lease_run() -> list[dict[str, Any]]:
    """Leases: live and stale acks, fails, copies and extends, a requeue and a dead-letter
    by fail and by reclaim, an idle reclaim and an empty acquire (26 records, 2 s)."""
    q, store, ring, clock = recorded_queue(max_deliveries=2)
    for ref in refs(3):
        store.hold(ref)
        q.put(ref)
    a = q.acquire()  # s0, consumer c1
    assert q.fail(a)  # live: s0 requeued
    b = q.acquire()  # s1, c1
    clock.advance(1.0)
    assert q.extend(b)  # live: deadline 2
    clock.advance(1.0)
    assert q.reclaim_expired() == 1  # s1 requeued
    c = q.acquire()  # s2, c2 (c1 still holds b)
    assert q.ack(c) and not q.ack(c)  # live, then a stale copy
    e = q.acquire()  # s0, second delivery
    assert q.fail(e)  # live: s0 dead-lettered
    f = q.acquire()  # s1, second delivery, deadline 3
    assert not q.extend(b)  # stale: s1 is f's now, with deadline now + 1
    assert not q.ack(b)  # stale: c1 gives b back
    assert not q.fail(b)  # a stale copy
    assert q.extend(f)  # live, to the deadline it has
    clock.advance(2.0)
    assert q.reclaim_expired() == 1  # s1 dead-lettered
    assert q.reclaim_expired() == 0  # idle
    last = refs(4)[3]
    store.hold(last)
    q.put(last)
    assert q.acquire().ref.sample_id == "s3"
    assert q.acquire_nowait() is None  # nothing pending (s3 is leased)
    q.close()
    return ring.records()


def put_run() -> list[dict[str, Any]]:
    """Blocking puts (high 3 refs, low 2): three admitted; s3 pauses, is not admitted and
    gives up at once; s4 parks, steps again after an ack (still paused: a step that
    changes nothing) and gives up; s5 resumes and is admitted (18 records, 2 s)."""
    from refqueue._bench_queue import CounterStore
    from refqueue.clock import ManualClock
    from refqueue.events import EventLog
    from refqueue.queue import PutAborted, SampleRefQueue

    ring = RingSink()
    store = CounterStore()
    rs = refs(6)
    n = rs[0].estimated_bytes
    q = SampleRefQueue(store, high_watermark_bytes=3 * n, low_watermark_bytes=2 * n, clock=ManualClock(0.0),
                       events=EventLog(ring))
    for ref in rs[:3]:
        store.hold(ref)
        q.put_blocks_until_below(ref)  # admitted, not paused
    store.hold(rs[3])
    with pytest.raises(PutAborted):
        q.put_blocks_until_below(rs[3], abort_when=lambda: True)  # pauses; one step, then gives up
    store.hold(rs[4])
    asked = []
    parked = threading.Event()  # set after s4's first step

    def abort_when() -> bool:
        asked.append(True)
        parked.set()
        return len(asked) >= 2  # wait after the first step, give up after the second

    outcome = []

    def produce() -> None:
        try:
            q.put_blocks_until_below(rs[4], poll_interval=math.inf, abort_when=abort_when)
        except PutAborted:
            outcome.append("aborted")
        except BaseException as exc:  # noqa: BLE001 - kept for the assertion below
            outcome.append(exc)

    producer = threading.Thread(target=produce)
    producer.start()
    assert parked.wait(10)
    q.ack(q.acquire())  # wakes the producer: its second step is still paused and changes nothing
    producer.join(10)
    assert not producer.is_alive() and outcome == ["aborted"], outcome
    q.ack(q.acquire())
    q.ack(q.acquire())
    store.hold(rs[5])
    q.put_blocks_until_below(rs[5])  # resumes, admitted
    q.close()
    records = ring.records()
    steps = [(r["ev"], r.get("sample")) for r in records if r["ev"] in ("pause", "park", "try_put", "unpark", "resume")]
    assert steps == [("try_put", "s0"), ("try_put", "s1"), ("try_put", "s2"), ("pause", None), ("try_put", "s3"),
                     ("try_put", "s4"), ("park", "s4"), ("try_put", "s4"), ("unpark", "s4"), ("resume", None),
                     ("try_put", "s5")], steps
    return records


@dataclass(frozen=True)
class Case:
    name: str
    check: str  # what the trace spec checks, in words
    base: str  # "lease" or "put"
    find: dict[str, Any]  # the fields that pick out the one record edited
    edit: dict[str, Any]  # its new field values
    removed: tuple[str, str]  # the check's text in SampleRefQueueTrace.tla, and its stand-in without it
    drop: tuple[str, ...] = field(default=())  # fields the edit removes
    again: bool = False  # a second log for a check another one exercises: run with the slow tests


STALE_EXTEND = ("       /\\ \\/ consumers[Rec.c].lease = NoLease\n"
                "          \\/ ~IsLive(consumers[Rec.c].lease)\n"
                "          \\/ consumers[Rec.c].lease.sample_id # Rec.sample\n", "")

CASES = [
    # live flags: acks and fails (one conjunct), copies (another)
    Case("ack-stale-reported-live", "an ack's live flag: IsLive(lease) = Rec.live", "lease",
         {"ev": "ack", "lease": 2}, {"live": True},
         ("       /\\ IsLive(consumers[Rec.c].lease) = Rec.live\n", "")),
    Case("fail-live-reported-stale", "a fail's live flag: IsLive(lease) = Rec.live", "lease",
         {"ev": "fail", "lease": 1}, {"live": False},
         ("       /\\ IsLive(consumers[Rec.c].lease) = Rec.live\n", "")),
    Case("ack-copy-reported-live", "a copy's live flag: IsLive(kept) = Rec.live", "lease",
         {"ev": "ack", "lease": 3, "live": False}, {"live": True},
         ("       /\\ IsLive(consumers[Rec.c].kept) = Rec.live\n", "")),
    Case("fail-copy-reported-live", "a copy's live flag: IsLive(kept) = Rec.live", "lease",
         {"ev": "fail", "lease": 2}, {"live": True, "dead": False},
         ("       /\\ IsLive(consumers[Rec.c].kept) = Rec.live\n", ""), again=True),
    # the dead-letter flag of a live fail
    Case("dead-letter-reported-requeued", "a live fail's dead flag: (status' = Dead) = Rec.dead", "lease",
         {"ev": "fail", "lease": 4}, {"dead": False},
         ("       /\\ (Rec.ev = \"fail\" /\\ Rec.live) => ((recs'[Rec.sample].status = Dead) = Rec.dead)\n", "")),
    # reclaims
    Case("reclaim-reported-idle", "'reclaim took nothing': Due = {}", "lease",
         {"ev": "reclaim", "samples": ["s1"], "dead": []}, {"samples": [], "leases": []},
         ("       /\\ Rec.samples = {}\n       /\\ Due = {}\n", "       /\\ Rec.samples = {}\n")),
    Case("reclaim-of-a-sample-not-due", "what a reclaim took: Due = Rec.samples", "lease",
         {"ev": "reclaim", "samples": ["s1"], "dead": ["s1"]}, {"samples": ["s1", "s2"], "leases": [5, 3]},
         ("       /\\ Due = Rec.samples\n", "")),
    Case("reclaim-dead-letter-reported-requeued", "what a reclaim dead-lettered: the dead ones = Rec.deads",
         "lease", {"ev": "reclaim", "samples": ["s1"], "dead": ["s1"]}, {"dead": []},
         ("       /\\ {s \\in Rec.samples : recs'[s].status = Dead} = Rec.deads\n", "")),
    # acquires
    Case("redelivery-count", "an acquire's redelivery count: recs[s].redeliveries = Rec.redeliveries", "lease",
         {"ev": "acquire", "lease": 4}, {"redeliveries": 0},
         ("       /\\ recs[Rec.sample].redeliveries = Rec.redeliveries\n", "")),
    Case("acquire-not-the-head", "FIFO: Head(pending) = Rec.sample", "lease",
         {"ev": "acquire", "lease": 1}, {"sample": "s1"},
         ("       /\\ Head(pending) = Rec.sample\n", "")),
    Case("acquire-found-nothing-with-work-pending", "an empty acquire: pending = <<>>", "lease",
         {"ev": "acquire", "sample": "s3"}, {"sample": None},
         ("       /\\ Rec.sample = \"\"\n       /\\ pending = <<>>\n", "       /\\ Rec.sample = \"\"\n"),
         drop=("lease", "redeliveries", "deadline", "pending", "outstanding")),
    # which sample a lease is of
    Case("ack-of-another-sample", "an ack's sample: lease.sample_id = Rec.sample", "lease",
         {"ev": "ack", "lease": 3, "live": True}, {"sample": "s0"},
         ("       /\\ consumers[Rec.c].lease # NoLease\n       /\\ consumers[Rec.c].lease.sample_id = Rec.sample\n",
          "       /\\ consumers[Rec.c].lease # NoLease\n")),
    Case("copy-of-another-sample", "a copy's sample: kept.sample_id = Rec.sample", "lease",
         {"ev": "ack", "lease": 3, "live": False}, {"sample": "s0"},
         ("       /\\ consumers[Rec.c].kept.sample_id = Rec.sample\n", "")),
    # extends
    Case("live-extend-reported-stale", "a stale extend: the lease is not live, or of another sample", "lease",
         {"ev": "extend", "lease": 2, "live": True}, {"live": False}, STALE_EXTEND),
    Case("stale-extend-reported-live", "a live extend: IsLive(lease)", "lease",
         {"ev": "extend", "lease": 2, "live": False}, {"live": True, "seconds": 1.0, "deadline": 3.0},
         ("       /\\ Rec.live\n       /\\ IsLive(consumers[Rec.c].lease)\n", "       /\\ Rec.live\n")),
    Case("extend-of-another-sample", "a live extend's sample: lease.sample_id = Rec.sample", "lease",
         {"ev": "extend", "lease": 2, "live": True}, {"sample": "s0"},
         ("       /\\ IsLive(consumers[Rec.c].lease)\n       /\\ consumers[Rec.c].lease.sample_id = Rec.sample\n",
          "       /\\ IsLive(consumers[Rec.c].lease)\n")),
    Case("reclaim-before-the-extended-deadline",
         "an extend moves the deadline: only one to the deadline it has is a stutter", "lease",
         {"ev": "reclaim", "samples": ["s1"], "dead": []}, {"t": 1.0},
         ("          \\/ /\\ recs[Rec.sample].deadline = now + VisibilityTimeout  \\* an extend to the same deadline\n"
          "             /\\ Stutter\n", "          \\/ Stutter\n")),
    # time
    Case("time-runs-backwards", "a record's time: now = Rec.t (time only moves forward)", "lease",
         {"ev": "reclaim", "samples": []}, {"t": 2.0},
         ("             /\\ now = Rec.t\n             /\\ ~(Rec.store", "             /\\ ~(Rec.store")),
    # blocking puts
    Case("admitted-put-reported-paused", "an enqueuing put step's paused flag: paused' = Rec.paused", "put",
         {"ev": "try_put", "sample": "s5"}, {"paused": True},
         ("       /\\ producers'[Rec.p] = NoSample\n       /\\ paused' = Rec.paused\n",
          "       /\\ producers'[Rec.p] = NoSample\n")),
    Case("parking-put-reported-not-paused", "a parking put step's paused flag: paused' = Rec.paused", "put",
         {"ev": "try_put", "sample": "s3"}, {"paused": False},
         ("             /\\ producers'[Rec.p] # NoSample\n             /\\ paused' = Rec.paused\n",
          "             /\\ producers'[Rec.p] # NoSample\n")),
    Case("blocked-step-reported-not-paused", "a put step that changes nothing: paused = Rec.paused", "put",
         {"ev": "try_put", "sample": "s4", "parked_bytes": 128}, {"paused": False},
         ("             /\\ paused = Rec.paused\n", "")),
    Case("parking-put-reported-enqueued", "an enqueuing put step: producers'[p] = NoSample", "put",
         {"ev": "try_put", "sample": "s3"}, {"enqueued": True},
         ("       /\\ Rec.enqueued\n       /\\ TryPut(Rec.p)\n       /\\ producers'[Rec.p] = NoSample\n",
          "       /\\ Rec.enqueued\n       /\\ TryPut(Rec.p)\n")),
]


@pytest.fixture(scope="module")
def logs() -> dict[str, list[dict[str, Any]]]:
    return {"lease": lease_run(), "put": put_run()}


def edited(records: list[dict[str, Any]], case: Case) -> tuple[list[dict[str, Any]], int]:
    """``records`` with the one record ``case.find`` picks edited; and that record's seq."""
    out = [dict(r) for r in records]
    hits = [r for r in out if all(r.get(k) == v for k, v in case.find.items())]
    assert len(hits) == 1, f"{case.name}: {case.find} picks {len(hits)} records, not one"
    record = hits[0]
    for key in case.drop:
        record.pop(key)
    record.update(case.edit)
    return out, record["seq"]


def trace_check_tla(records: list[dict[str, Any]], tmp_path, capsys) -> tuple[int, dict[str, Any]]:
    """``refqueue trace-check LOG --tla --json`` on ``records``: the exit status and the JSON."""
    path = tmp_path / "log.jsonl"
    ring = RingSink()
    for r in records:
        ring.write(r)
    ring.dump(path)
    capsys.readouterr()
    status = main(["trace-check", str(path), "--tla", "--json"])
    captured = capsys.readouterr()
    assert captured.out, captured.err
    return status, json.loads(captured.out)


@pytest.mark.parametrize("base", ["lease", "put"])
def test_trace_check_tla_accepts_the_unedited_log(base, logs, tmp_path, capsys):
    status, out = trace_check_tla(logs[base], tmp_path, capsys)
    assert status == 0 and out["ok"], out
    assert out["tla"]["ok"] and out["tla"]["refused_seq"] is None, out["tla"]["summary"]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.again else [])
                                  for c in CASES])
def test_trace_check_tla_refuses_the_must_refuse_log_at_the_edited_record(case, logs, tmp_path, capsys):
    records, seq = edited(logs[case.base], case)
    status, out = trace_check_tla(records, tmp_path, capsys)
    tla = out["tla"]
    assert status == 1 and not tla["ok"], tla["summary"]
    assert tla["refused_seq"] == seq, f"{case.name} ({case.check}): edited seq {seq}; TLC: {tla['summary']}"
    assert tla["summary"].startswith(f"refused at log seq {seq} ("), tla["summary"]


def test_each_removed_check_is_in_the_trace_spec_once():
    text = (spec_dir() / TRACE_SPEC).read_text(encoding="utf-8")
    for case in CASES:
        assert text.count(case.removed[0]) == 1, f"{case.name}: {case.removed[0]!r} is not in {TRACE_SPEC} once"


def weakened_spec(tmp_path, removed: tuple[str, str]):
    """A copy of the spec files whose trace spec has ``removed[0]`` replaced by ``removed[1]``."""
    weakened = tmp_path / "spec"
    weakened.mkdir()
    for name in ("SampleRefQueue.tla", "SampleRefQueueTrace.cfg"):
        shutil.copy2(spec_dir() / name, weakened / name)
    text = (spec_dir() / TRACE_SPEC).read_text(encoding="utf-8")
    assert text.count(removed[0]) == 1
    (weakened / TRACE_SPEC).write_text(text.replace(*removed), encoding="utf-8")
    return weakened


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_without_its_check_the_spec_does_not_refuse_the_log_there(case, logs, tmp_path):
    """Accepted, or refused at a later record: never at the edited one, and never a TLC error."""
    records, seq = edited(logs[case.base], case)
    result = run_tlc_on_trace(records, spec=weakened_spec(tmp_path, case.removed))
    assert result.ok or (result.refused_seq is not None and result.refused_seq > seq), (
        f"{case.name}: without its check TLC still says: {result.summary}\n{result.output[-2000:]}")


def test_one_behaviours_dead_end_is_no_refusal_while_another_matches_the_log(logs, tmp_path):
    """Without "an extend to the same deadline", a live extend is an Extend or a stutter: two
    behaviours.  The one that extended has no step for the reclaim before the extended
    deadline; the one that stuttered matches the whole log, so the log is accepted (TLC
    without -continue stopped at the first dead end and refused it at the reclaim)."""
    case = next(c for c in CASES if c.name == "reclaim-before-the-extended-deadline")
    records, seq = edited(logs["lease"], case)
    assert run_tlc_on_trace(records).refused_seq == seq
    result = run_tlc_on_trace(records, spec=weakened_spec(tmp_path, case.removed))
    assert result.ok, result.summary + "\n" + result.output[-2000:]
    assert "Invariant TraceCanContinue is violated" in result.output  # the dead end was there
