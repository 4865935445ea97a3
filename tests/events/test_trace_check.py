"""trace-check: correct runs pass, broken backends are refused at the right record."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from events_helpers import ROOT, recorded_queue, refs

from refqueue._bench_queue import CounterStore
from refqueue.clock import ManualClock
from refqueue.events import EventLog, RecordedBackend, RingSink
from refqueue.queue import SampleRefQueue, VisibilityTimeout
from refqueue.trace_check import BadTrace, Monitor, TraceViolation, check_records

REFQUEUE = [sys.executable, "-m", "refqueue.cli"]


def run_cli(*args):
    return subprocess.run([*REFQUEUE, *args], capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_a_correct_run_passes_with_counts():
    q, store, ring, clock = recorded_queue(max_deliveries=2)
    for ref in refs(6):
        store.hold(ref)
        q.put(ref)
    first = q.acquire()
    q.fail(first)
    for _ in range(3):
        q.ack(q.acquire())
    late = q.acquire()
    clock.advance(2.0)
    assert q.reclaim_expired() == 1
    assert not q.ack(late)  # stale
    q.ack(q.acquire())  # s5
    again = q.acquire()
    assert again.ref.sample_id == "s0"
    assert q.fail(again)  # s0's second delivery: dead at max_deliveries=2
    assert [d.ref.sample_id for d in q.dead_letters()] == ["s0"]
    result = check_records(ring.records())
    assert result.ok, result.violation.render()
    assert (result.samples, result.leases, result.redeliveries, result.dead_letters) == (6, 7, 2, 1)


def test_stress_test_log_passes_trace_check(stress_log):
    """The stress test of tests/queue, unchanged, recorded to JSONL (conftest.stress_log)."""
    import test_queue_stress as stress

    proc = run_cli("trace-check", str(stress_log), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    counts = json.loads(proc.stdout)
    assert counts["ok"] and counts["samples"] == stress.SAMPLES
    assert counts["leases"] >= stress.SAMPLES and counts["redeliveries"] > 0


def drive_fail_then_acquire(queue, store, n=5):
    """put n, acquire the head, fail it, acquire again: a FIFO queue hands out s1."""
    for ref in refs(n):
        store.hold(ref)
        queue.put(ref)
    queue.fail(queue.acquire())
    return queue.acquire()


def recorded_mutant(name, **config):
    import importlib

    module = importlib.import_module(f"conformance.mutants.{name}")
    clock = ManualClock(0.0)
    store = CounterStore()
    ring = RingSink()
    log = EventLog(ring)
    config.setdefault("visibility_timeout", 1.0)
    backend = RecordedBackend(module.make(store, clock, **config), log, clock, **config)
    return backend, store, ring, clock


def test_the_correct_base_backend_passes_through_the_recorder():
    backend, store, ring, clock = recorded_mutant("_base")
    assert drive_fail_then_acquire(backend, store).ref.sample_id == "s1"
    assert check_records(ring.records()).ok


def test_fail_to_head_mutant_is_refused_at_the_acquire_after_the_fail():
    backend, store, ring, _ = recorded_mutant("fail_to_head")
    drive_fail_then_acquire(backend, store)
    result = check_records(ring.records())
    v = result.violation
    assert v is not None
    # open, 5 puts, acquire, fail, then the acquire that hands s0 out again
    assert (v.record["seq"], v.record["ev"], v.record["sample"]) == (9, "acquire", "s0")
    assert "head of pending, 's1'" in v.message
    assert "pending (5): ['s1', 's2', 's3', 's4', 's0']" in v.state
    assert v.record in v.window


def test_stale_ack_mutant_is_refused_at_the_stale_ack():
    backend, store, ring, clock = recorded_mutant("stale_ack")
    for ref in refs(2):
        store.hold(ref)
        backend.put(ref)
    old = backend.acquire()  # s0, lease 1
    clock.advance(2.0)
    assert backend.reclaim_expired() == 1
    assert backend.acquire().ref.sample_id == "s1"
    assert backend.acquire().ref.sample_id == "s0"  # redelivered
    assert backend.ack(old) is True  # the mutant acks the new delivery
    v = check_records(ring.records()).violation
    assert v is not None and v.record["ev"] == "ack" and v.record["lease"] == old.lease_id
    assert "stale lease must change nothing" in v.message


def test_reclaim_early_mutant_is_refused_at_the_reclaim():
    backend, store, ring, clock = recorded_mutant("reclaim_early")
    for ref in refs(1):
        store.hold(ref)
        backend.put(ref)
    backend.acquire()
    clock.advance(0.75)  # due at 1.0: not yet
    backend.reclaim_expired()
    v = check_records(ring.records()).violation
    assert v is not None and v.record["ev"] == "reclaim" and "model takes back 0" in v.message


def test_cli_exit_codes_and_messages(tmp_path):
    backend, store, ring, _ = recorded_mutant("fail_to_head")
    drive_fail_then_acquire(backend, store)
    bad = tmp_path / "bad.jsonl"
    ring.dump(bad)
    proc = run_cli("trace-check", str(bad))
    assert proc.returncode == 1
    assert "VIOLATION at seq 9" in proc.stdout and "model state before it" in proc.stdout
    good_q, good_store, good_ring, _ = recorded_queue()
    drive_fail_then_acquire(good_q, good_store)
    good = tmp_path / "good.jsonl"
    good_ring.dump(good)
    proc = run_cli("trace-check", str(good))
    assert proc.returncode == 0 and "OK: 9 events" in proc.stdout and "events/s" in proc.stdout
    assert run_cli("trace-check", str(tmp_path / "missing.jsonl")).returncode == 2
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("{not json\n")
    proc = run_cli("trace-check", str(garbage))
    assert proc.returncode == 2 and "garbage.jsonl:1" in proc.stderr
    lines = good.read_text().splitlines()
    gap = tmp_path / "gap.jsonl"
    gap.write_text("\n".join(lines[:3] + lines[4:]) + "\n")
    proc = run_cli("trace-check", str(gap))
    assert proc.returncode == 2 and "missing" in proc.stderr


def test_records_of_two_processes_in_any_file_order_are_merged_by_sequence(tmp_path):
    files = []
    for k in range(2):
        q, store, ring, _ = recorded_queue()
        drive_fail_then_acquire(q, store)
        records = ring.records()
        for r in records:
            r["pid"] = 1000 + k  # two processes' logs
        files.append(records)
    mixed = list(reversed(files[0])) + files[1][::2] + files[1][1::2]
    result = check_records(mixed)
    assert result.ok and result.processes == 2 and result.queues == 2 and result.events == 18
    with pytest.raises(BadTrace, match="two records with seq"):
        check_records(files[0] + files[0])


def test_monitor_raises_on_the_first_illegal_step_and_passes_a_correct_queue():
    q, store, ring, _ = recorded_queue()
    monitor = Monitor(q, on_violation="raise")
    drive_fail_then_acquire(q, store)
    monitor.check()
    assert monitor.checked == 8

    class FailToHead(SampleRefQueue):
        """A broken queue: fail puts the sample back at the head of pending."""

        def _requeue_nowait(self, rec):
            super()._requeue_nowait(rec)
            if self._pending and self._pending[-1] is rec:
                self._pending.rotate(1)

    ring2 = RingSink()
    store2 = CounterStore()
    q2 = FailToHead(store2, events=EventLog(ring2))
    m2 = Monitor(q2, on_violation="raise")
    with pytest.raises(TraceViolation, match="head of pending, 's1'"):
        drive_fail_then_acquire(q2, store2)
    assert m2.violation is not None and "seq 9 acquire s0" in m2.violation
    with pytest.raises(TraceViolation):
        m2.check()
    # log mode: no raise, the violation is kept
    q3 = FailToHead(CounterStore(), events=EventLog(RingSink()))
    m3 = Monitor(q3)
    drive_fail_then_acquire(q3, q3.store)
    assert m3.violation is not None and "head of pending" in m3.violation


def test_monitor_must_attach_before_use():
    q, store, ring, _ = recorded_queue()
    for ref in refs(1):
        store.hold(ref)
        q.put(ref)
    with pytest.raises(ValueError, match="before the queue is used"):
        Monitor(q)
    with pytest.raises(ValueError, match="records no events"):
        Monitor(SampleRefQueue(CounterStore()))


def test_fail_to_head_mutant_under_a_threaded_workload_is_refused_at_a_redelivery_that_jumped_the_queue():
    import threading

    backend, store, ring, _ = recorded_mutant("fail_to_head")
    for ref in refs(200):
        store.hold(ref)
        backend.put(ref)
    done = threading.Event()
    counter = iter(range(10**9))
    lock = threading.Lock()

    def consume():
        while not done.is_set():
            lease = backend.acquire()
            if lease is None:
                done.set()
                return
            with lock:
                k = next(counter)
            if k % 5 == 4 and lease.redelivery_count == 0:
                backend.fail(lease)
            else:
                backend.ack(lease)

    threads = [threading.Thread(target=consume) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    records = ring.records()
    v = check_records(records).violation
    assert v is not None and v.record["ev"] == "acquire"
    sample = v.record["sample"]
    failed = [r for r in records if r["ev"] == "fail" and r["sample"] == sample and r["seq"] < v.record["seq"]]
    assert failed  # the mutant handed out a sample that was just failed ...
    head = v.message.split("head of pending, ")[1].strip("'")
    put_seq = next(r["seq"] for r in records if r["ev"] == "put" and r["sample"] == head)
    assert put_seq < failed[-1]["seq"]  # ... ahead of one that was waiting before it was failed
    # the right record: the first acquire after the first fail (with 200 samples, others were pending)
    first_fail = next(r["seq"] for r in records if r["ev"] == "fail")
    assert v.record is next(r for r in records if r["ev"] == "acquire" and r["seq"] > first_fail)


def test_a_record_missing_a_field_is_bad_input_not_a_violation(tmp_path):
    path = tmp_path / "missing.jsonl"
    path.write_text(
        '{"ev":"open","q":1,"t":0,"epoch":"e","visibility_timeout":1.0,"seq":1,"pid":1}\n'
        '{"ev":"put","q":1,"t":0,"seq":2,"pid":1}\n'
    )
    proc = run_cli("trace-check", str(path))
    assert proc.returncode == 2 and "seq=2 ev='put' has no 'sample' field" in proc.stderr
    with pytest.raises(BadTrace, match="queue 1 has no open record"):
        check_records([{"ev": "put", "q": 1, "seq": 1, "pid": 1, "sample": "s"}])


@pytest.mark.parametrize("ev", [None, "nope", ["put"], {"ev": "put"}])
def test_an_event_name_that_is_not_one_is_bad_input_of_the_queue_or_its_store(ev):
    # a list or a dict is not even hashable: still the checker's BadTrace, not a TypeError
    open_ = {"ev": "open", "q": 1, "t": 0, "epoch": "e", "visibility_timeout": 1.0, "store": "mem://a", "seq": 2, "pid": 1}
    with pytest.raises(BadTrace, match=r"seq=2: unknown queue event"):
        check_records([{**open_, "seq": 1}, {"ev": ev, "q": 1, "t": 0, "sample": "s", "seq": 2, "pid": 1}])
    store_open = {"ev": "store_open", "s": 1, "store": "mem://a", "seq": 1, "pid": 1}
    with pytest.raises(BadTrace, match=r"seq=3: unknown store event"):
        check_records([store_open, open_, {"ev": ev, "s": 1, "sample": "s", "seq": 3, "pid": 1}])


def _logged_run():
    """The records of a queue and its logged store: puts, a get, an ack, a fail, a dead letter, a reclaim, the closes."""
    from refqueue.stores.local import LocalFeatureStore
    from refqueue.torture.payload import PUT_FIELDS, tensors_for

    ring = RingSink()
    log = EventLog(ring)
    clock = ManualClock(0.0)
    store = LocalFeatureStore(max_samples=100, max_bytes=1 << 20, events=log)
    queue = SampleRefQueue(store, clock=clock, events=log, visibility_timeout=VisibilityTimeout(1.0), max_deliveries=3)
    for i in range(4):
        queue.put(store.put(f"s{i}", tensors_for(f"s{i}"), **PUT_FIELDS))
    lease = queue.acquire_nowait()
    _, handle = store.get(lease.ref)
    store.release(handle)
    queue.ack(lease)
    queue.fail(queue.acquire_nowait())
    queue.dead_letter(queue.acquire_nowait(), "poison")
    queue.extend(queue.acquire_nowait(), 1.0)
    clock.advance(10.0)
    queue.reclaim_expired()
    queue.close()
    store.close()
    return ring.records()


def test_a_field_of_any_record_replaced_by_a_value_of_another_kind_is_bad_input_never_a_type_error():
    # check_records takes records a caller built or damaged, not only what
    # read_jsonl has vetted: a list where an id goes, a str for the time, ...
    records = _logged_run()
    assert check_records(records).ok
    hostile = ([1], {"a": 1}, None, "x", -1, 1.5, float("nan"), True, 2**70, "")
    tried = 0
    for i, record in enumerate(records):
        for name in record:
            for value in hostile:
                damaged = [dict(r) for r in records]
                damaged[i][name] = value
                try:
                    check_records(damaged)  # a pass, or a violation: the record may say something else that is allowed
                except BadTrace as exc:
                    assert str(exc) and "\n" not in str(exc)  # one line that says what is wrong
                tried += 1
    assert tried > 1_000
