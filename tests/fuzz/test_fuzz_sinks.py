"""Fuzz: the event sinks under failing writes, rotations and callbacks that
raise (issue 21, defects 17-19).

A queue records into a ``RingSink``, a sink that raises any exception on a
schedule Hypothesis draws, a ``JsonlSink`` rotating at a drawn size, and a
``CallbackSink`` whose callback raises at a drawn record with a drawn
``max_backlog``.  Whatever the schedule, every queue call returns what the
same calls return on a queue with no log (a state change either happens
and returns, or does not happen and raises), the ring sees every record,
``sink_errors`` counts exactly the failures, the JSONL files read back as
the newest records, contiguous, and the callback sink never holds more than
``max_backlog`` records, accounting for each one (delivered or dropped).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refqueue._bench_queue import CounterStore, clone_refs
from refqueue.clock import ManualClock
from refqueue.events import CallbackSink, EventLog, JsonlSink, RingSink, read_jsonl
from refqueue.queue import SampleRefQueue, VisibilityTimeout

pytestmark = pytest.mark.timeout(300)
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)

FAILURES = [OSError(28, "No space left on device"), ValueError("bad"), RuntimeError("down"), KeyError("k"),
            ConnectionError("log server gone"), UnicodeError("enc"), MemoryError(), AssertionError("a sink's own")]


class ScheduledSink:
    """Raises the drawn exception at the drawn writes."""

    def __init__(self, schedule: list[int | None]) -> None:
        self.schedule = schedule
        self.writes = 0
        self.raised = 0

    def write(self, record):
        k = self.schedule[self.writes % len(self.schedule)] if self.schedule else None
        self.writes += 1
        if k is not None:
            self.raised += 1
            raise FAILURES[k]


operations = st.lists(st.sampled_from(["put", "acquire", "ack", "fail", "extend", "reclaim", "tick"]),
                      min_size=1, max_size=40)


def run(ops, log):
    """Apply ``ops`` to a fresh queue (recording into ``log``, or not); each call's answer."""
    store = CounterStore()
    clock = ManualClock(0.0)
    queue = SampleRefQueue(store, VisibilityTimeout(2.0), clock=clock, events=log, max_deliveries=3)
    refs = iter(clone_refs(len(ops), "s"))
    leases, answers = [], []
    for op in ops:
        if op == "put":
            ref = next(refs)
            store.hold(ref)
            answers.append(queue.put(ref))
        elif op == "acquire":
            lease = queue.acquire_nowait()
            answers.append(None if lease is None else (lease.ref.sample_id, lease.lease_id, lease.redelivery_count))
            if lease is not None:
                leases.append(lease)
        elif op in ("ack", "fail", "extend") and leases:
            answers.append(getattr(queue, op)(leases.pop(0)))
        elif op == "reclaim":
            answers.append(queue.reclaim_expired())
        elif op == "tick":
            clock.advance(1.5)
    answers.append((queue.pending_count(), queue.outstanding_count(), len(queue.dead_letters())))
    return answers


@SETTINGS
@given(ops=operations,
       schedule=st.lists(st.one_of(st.none(), st.integers(0, len(FAILURES) - 1)), max_size=8),
       max_bytes=st.integers(1, 2_000), backups=st.integers(0, 3),
       raise_at=st.one_of(st.none(), st.integers(0, 30)), max_backlog=st.integers(1, 50))
def test_failing_sinks_never_change_what_a_call_does(ops, schedule, max_bytes, backups, raise_at, max_backlog):
    expected = run(ops, None)
    ring = RingSink()
    flaky = ScheduledSink(schedule)
    delivered: list[int] = []

    def callback(record):
        if raise_at is not None and len(delivered) == raise_at:
            raise RuntimeError("callback failed")
        delivered.append(record["seq"])

    calls = CallbackSink(callback, max_backlog=max_backlog)
    with tempfile.TemporaryDirectory(prefix="fuzz-sinks-") as folder:
        jsonl = JsonlSink(Path(folder) / "run.jsonl", max_bytes=max_bytes, backups=backups)
        log = EventLog(ring, flaky, jsonl, calls)
        assert run(ops, log) == expected
        seqs = [r["seq"] for r in ring.records()]
        assert seqs == list(range(1, log.seq + 1))
        assert log.sink_errors == flaky.raised
        jsonl.close()
        kept = [r["seq"] for r in read_jsonl(jsonl.files(), check=True)]
        assert kept == list(range(log.seq - len(kept) + 1, log.seq + 1))  # the newest, contiguous
    try:
        calls.flush(timeout=30)
    except RuntimeError:
        pass  # the callback raised, or records were dropped: both are counted
    calls.close()
    assert calls.backlog == 0 or calls.error is not None
    assert len(delivered) + calls.dropped + calls.backlog + (calls.error is not None) == log.seq
    assert delivered == sorted(delivered)
