"""Events of the queue and the store: fields, order, sinks, and no events when off."""

from __future__ import annotations

import json
import sys
import threading

import pytest
from events_helpers import recorded_queue, refs

from refqueue.events import CallbackSink, EventLog, JsonlSink, RingSink, read_jsonl
from refqueue.queue import SampleRefQueue


def test_each_operation_emits_one_record_with_its_fields_in_seq_order():
    q, store, ring, clock = recorded_queue()
    a, b = refs(2)
    for ref in (a, b):
        store.hold(ref)
        q.put(ref)
    lease = q.acquire()
    assert q.fail(lease)
    lease2 = q.acquire()
    clock.advance(0.5)
    assert q.extend(lease2, 2.0)
    assert q.ack(lease2) and not q.ack(lease2)
    clock.advance(5.0)
    assert q.reclaim_expired() == 0
    q.close()
    records = ring.records()
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert [r["ev"] for r in records] == [
        "open", "put", "put", "acquire", "fail", "acquire", "extend", "ack", "ack", "reclaim", "close"]
    acquire = records[3]
    assert acquire["sample"] == "s0" and acquire["lease"] == lease.lease_id and acquire["redeliveries"] == 0
    assert acquire["deadline"] == lease.deadline and acquire["t"] == 0.0
    assert records[5]["sample"] == "s1"  # s0 went to the tail
    assert records[6]["deadline"] == 2.5 and records[6]["t"] == 0.5
    assert records[7]["live"] is True and records[8]["live"] is False
    assert records[9]["samples"] == [] and records[9]["t"] == 5.5
    assert records[0]["epoch"] == q.epoch and records[0]["visibility_timeout"] == 1.0
    assert all(r["q"] == 1 and isinstance(r["tid"], int) for r in records)
    json.dumps(records)  # plain JSON values only


def test_no_log_means_no_records_and_a_bad_events_argument_is_refused():
    from refqueue._bench_queue import CounterStore

    with pytest.raises(TypeError, match="EventLog"):
        SampleRefQueue(CounterStore(), events=[])
    assert SampleRefQueue(CounterStore()).event_log is None


def test_jsonl_sink_rotates_and_the_rotated_set_reads_back_in_full(tmp_path):
    path = tmp_path / "run.jsonl"
    sink = JsonlSink(path, max_bytes=2_000, backups=50)
    log = EventLog(sink)
    q, store, _, _ = recorded_queue()
    q2 = SampleRefQueue(store, events=log)
    for ref in refs(60):
        store.hold(ref)
        q2.put(ref)
    sink.close()
    files = sink.files()
    assert len(files) > 2 and files[-1] == path
    records = read_jsonl(files)
    assert sorted(r["seq"] for r in records) == list(range(1, 62))


def test_jsonl_sink_refuses_a_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        JsonlSink(tmp_path / "nope" / "run.jsonl")


def test_callback_sink_delivers_in_order_outside_the_queue_lock():
    seen = []
    lock_free = []
    q_holder = {}

    def callback(record):
        q = q_holder.get("q")
        if q is not None:
            # the queue's lock is free: a call into the queue from here must not deadlock
            lock_free.append(q.pending_count() >= 0)
        seen.append(record["seq"])

    sink = CallbackSink(callback)
    log = EventLog(sink)
    from refqueue._bench_queue import CounterStore

    store = CounterStore()
    q = SampleRefQueue(store, events=log)
    q_holder["q"] = q
    for ref in refs(50):
        store.hold(ref)
        q.put(ref)
    sink.flush(timeout=10)
    assert seen == list(range(1, 52))
    assert lock_free and all(lock_free)
    sink.close()


def test_callback_sink_keeps_the_callbacks_error_and_flush_raises_it():
    def boom(record):
        raise RuntimeError("callback failed")

    sink = CallbackSink(boom)
    EventLog(sink).register("queue", {"ev": "open"})
    with pytest.raises(RuntimeError, match="callback raised"):
        sink.flush(timeout=10)


def test_ring_keeps_the_newest_and_sinks_are_validated():
    ring = RingSink(3)
    log = EventLog(ring)
    for _ in range(5):
        log.emit({"ev": "wait"})
    assert [r["seq"] for r in ring.records()] == [3, 4, 5]
    with pytest.raises(ValueError, match="RingSink\\(capacity\\)"):
        RingSink(0)
    with pytest.raises(TypeError, match="write"):
        EventLog(object())
    # more than a deque holds: an OverflowError from the deque before
    with pytest.raises(ValueError, match=rf"^RingSink\(capacity\) must be <= {sys.maxsize}, got {2**70}; pass how many"):
        RingSink(2**70)


def test_read_jsonl_and_jsonl_sink_name_a_path_argument_that_is_not_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r").write_text('{"ev": "wait"}\n')  # what read_jsonl("run.jsonl") opened: its first letter
    with pytest.raises(TypeError, match=r"^read_jsonl\(paths\) takes a list of paths, got the one path 'run.jsonl'; pass \['run.jsonl'\]$"):
        read_jsonl("run.jsonl")
    with pytest.raises(TypeError, match=r"^read_jsonl\(paths\) holds 3, which is not a path"):
        read_jsonl(["r", 3])
    with pytest.raises(TypeError, match=r"^read_jsonl\(paths\) must be a list of paths, got -1"):
        read_jsonl(-1)
    # an empty path was the working directory: IsADirectoryError before
    with pytest.raises(ValueError, match=r"^JsonlSink\(path\) is empty; pass the file to write"):
        JsonlSink("")


def test_seq_is_taken_under_the_queue_lock_across_threads():
    q, store, ring, _ = recorded_queue()
    all_refs = refs(2_000)
    for ref in all_refs:
        store.hold(ref)
    chunks = [all_refs[i::4] for i in range(4)]
    threads = [threading.Thread(target=lambda c=c: [q.put(r) for r in c]) for c in chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    puts = [r for r in ring.records() if r["ev"] == "put"]
    # the pending count each put saw grows by one per seq: seq order is the lock order
    assert [r["pending"] for r in puts] == list(range(1, 2_001))


@pytest.mark.torch
def test_local_store_emits_store_events_with_its_counters():
    torch = pytest.importorskip("torch")
    from refqueue.stores.local import LocalFeatureStore

    ring = RingSink()
    log = EventLog(ring)
    store = LocalFeatureStore(max_samples=8, device="cpu", events=log)
    tensors = {name: torch.zeros(4, dtype=torch.uint8) for name in
               ("aux_hidden_states", "input_ids", "attention_mask", "loss_mask")}
    ref = store.put("a", tensors, run_id="r", algorithm="eagle3", schema_version=1,
                    target_model_version="t", draft_weight_version=0, num_tokens=4)
    _, handle = store.get(ref)
    store.release(handle)
    assert store.scrub(ref)
    store.close()
    evs = [(r["ev"], r.get("resident_bytes")) for r in ring.records()]
    assert evs == [("store_open", None), ("store_put", 16), ("get", 16), ("release", 16), ("scrub", 0),
                   ("store_close", 0)]
    with pytest.raises(TypeError, match="EventLog"):
        LocalFeatureStore(max_samples=8, device="cpu", events="yes")


def test_a_consumer_wait_is_recorded_in_real_seconds_even_with_an_infinite_poll_interval():
    import math

    q, store, ring, _ = recorded_queue()
    ref = refs(1)[0]
    store.hold(ref)
    assert q.acquire(poll_interval=0.01) is None  # times out on an empty queue
    waiter_started = threading.Event()
    got = []

    def consumer():
        waiter_started.set()
        got.append(q.acquire(poll_interval=math.inf))

    thread = threading.Thread(target=consumer)
    thread.start()
    assert waiter_started.wait(10)
    while q._acquirers_waiting == 0:  # the test peeks at the queue's count of blocked consumers
        threading.Event().wait(0.001)
    q.put(ref)
    thread.join(10)
    assert got and got[0].ref.sample_id == "s0"
    waits = [r["waited"] for r in ring.records() if r["ev"] == "wait"]
    assert len(waits) == 2 and waits[0] >= 0.01 and 0 <= waits[1] < 10


def test_read_jsonl_names_the_line_that_is_not_one_object(tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text('{"seq": 1}\n\n{"seq": 2}\n')
    assert read_jsonl([good]) == [{"seq": 1}, {"seq": 2}]
    for text, line in (('{"seq": 1}\n{"seq": 2},{"seq": 3}\n', 2), ('{"seq": 1}\n[1]\n', 2), ("{oops\n", 1)):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(text)
        with pytest.raises(ValueError, match=f"bad.jsonl:{line}: "):
            read_jsonl([bad])
