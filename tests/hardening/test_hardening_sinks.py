"""Issue 21, defects 17-19: the event sinks under a full disk and a callback
that raises or blocks.

On 7655507:

17. a sink that raised (a ``JsonlSink`` on a full disk) made a queue call
    raise *after* it took effect: a producer that scrubs its "rejected" put,
    as docs/API.md advises, lost the sample; a "failed" acquire left a lease
    nobody held;
18. a ``JsonlSink`` rotation on a full disk left the sink holding a closed
    file: after space was freed every call still took effect and then
    raised, for ever;
19. a ``CallbackSink`` whose callback raised or blocked kept every record in
    memory (27 -> 81 MB over 60,000 operations; here 30,000 records kept 14 MB).

The full disk is a real one (a small tmpfs); the queue is the production
``SampleRefQueue``.
"""

from __future__ import annotations

import json
import threading
import tracemalloc

import pytest
from disk_helpers import fill, free, small_disk

from refqueue._bench_queue import CounterStore, clone_refs
from refqueue.events import CallbackSink, EventLog, JsonlSink, RingSink
from refqueue.queue import SampleRefQueue, VisibilityTimeout

pytestmark = pytest.mark.timeout(120)


def queue_on(*sinks):
    log = EventLog(*sinks)
    store = CounterStore()
    return SampleRefQueue(store, VisibilityTimeout(30.0), events=log), store, log


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# -- 17. a sink that raises never fails a call that took effect ------------------------------------


def test_a_full_disk_under_the_log_fails_no_queue_call_and_loses_no_sample(tmp_path):
    with small_disk(tmp_path / "disk", "256k") as disk:
        path = disk / "run.jsonl"
        ring = RingSink()
        queue, store, log = queue_on(JsonlSink(path, flush_every=0), ring)
        refs = clone_refs(300, "s")
        for ref in refs:
            store.hold(ref)
        filler = fill(disk)
        put = 0
        while getattr(log, "sink_errors", 0) == 0 and put < 200:  # the log file's last page fills up, then the disk is full
            queue.put(refs[put])  # a record that cannot be written never fails the put: it took effect
            put += 1
        assert log.sink_errors == 1 and isinstance(log.last_sink_error, OSError)
        assert queue.pending_count() == put
        for _ in range(put):
            lease = queue.acquire_nowait()
            assert lease is not None and queue.ack(lease) is True
        assert queue.pending_count() == 0 and queue.outstanding_count() == 0
        assert log.sink_errors == 1 + 2 * put
        assert [r["ev"] for r in ring.records()][-2:] == ["acquire", "ack"]  # the other sinks got every record
        free(filler)
        queue.put(refs[put])
        log.flush()
        assert lines(path)[-1]["ev"] == "put" and lines(path)[-1]["sample"] == refs[put].sample_id


class RaisingSink:
    """A user's sink whose write raises (a network log that is down)."""

    def __init__(self):
        self.calls = 0

    def write(self, record):
        self.calls += 1
        raise ConnectionError("the log server is down")


def test_a_sink_that_raises_fails_no_call_and_the_calls_change_state_exactly_once():
    sink = RaisingSink()
    queue, store, log = queue_on(sink)
    (ref,) = clone_refs(1, "s")
    store.hold(ref)
    queue.put(ref)
    lease = queue.acquire_nowait()
    assert queue.fail(lease) is True
    lease = queue.acquire_nowait()
    assert lease.redelivery_count == 1 and queue.ack(lease) is True
    assert queue.pending_count() == 0 and queue.outstanding_count() == 0
    assert log.sink_errors == sink.calls == 6  # open, put, acquire, fail, acquire, ack


# -- 18. a rotation on a full disk ----------------------------------------------------------------------


def test_a_rotation_on_a_full_disk_recovers_once_space_is_freed(tmp_path):
    with small_disk(tmp_path / "disk", "256k") as disk:
        path = disk / "run.jsonl"
        sink = JsonlSink(path, max_bytes=4096, backups=1)
        queue, store, log = queue_on(sink)
        refs = clone_refs(200, "s")
        for ref in refs:
            store.hold(ref)
        filler = fill(disk)
        for ref in refs[:60]:  # past max_bytes: a rotation, whose close cannot flush
            queue.put(ref)
        assert queue.pending_count() == 60 and log.sink_errors >= 1
        free(filler)
        for ref in refs[60:70]:
            queue.put(ref)
        sink.flush()
        assert queue.pending_count() == 70
        written = [r["sample"] for f in sink.files() for r in lines(f) if r["ev"] == "put"]
        assert written[-10:] == [r.sample_id for r in refs[60:70]]  # the sink writes again


# -- 19. a callback sink that raises or blocks ----------------------------------------------------------


def _grown_by(operations) -> int:
    """Bytes still allocated after ``operations()`` that were not before."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        operations()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def _churn(queue, store, n):
    def run():
        for ref in clone_refs(n, "c"):
            store.hold(ref)
            queue.put(ref)
            queue.ack(queue.acquire_nowait())
    return run


def test_a_callback_that_raised_keeps_no_records(tmp_path):
    def boom(record):
        raise RuntimeError("callback failed")

    sink = CallbackSink(boom)
    queue, store, log = queue_on(sink)
    grown = _grown_by(_churn(queue, store, 10_000))  # 30,000 records: 14 MB kept on 7655507
    assert grown < 4_000_000, f"{grown:,} bytes kept"
    assert sink.backlog == 0 and sink.dropped == 30_000
    with pytest.raises(RuntimeError, match="callback raised RuntimeError"):
        sink.flush(timeout=10)
    sink.close()


def test_a_callback_that_blocks_keeps_at_most_max_backlog_records(tmp_path):
    release = threading.Event()
    delivered = []

    def slow(record):
        release.wait(60)
        delivered.append(record["seq"])

    sink = CallbackSink(slow, max_backlog=1_000)
    queue, store, log = queue_on(sink)
    grown = _grown_by(_churn(queue, store, 10_000))  # 30,000 records
    assert grown < 4_000_000, f"{grown:,} bytes kept"
    assert sink.backlog <= 1_000 and sink.dropped >= 29_000
    release.set()
    with pytest.raises(RuntimeError, match=r"dropped \d+ records"):
        sink.flush(timeout=30)
    assert len(delivered) == 30_001 - sink.dropped  # the open record and what the backlog kept
    sink.flush(timeout=30)  # the drops were reported once
    sink.close()
