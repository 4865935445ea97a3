"""trace-check --tla: real TLC runs the trace spec on short logs."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from events_helpers import ROOT, recorded_queue, refs
from test_trace_check import drive_fail_then_acquire, recorded_mutant

from refqueue.trace_check.tla import run_tlc_on_trace, to_tla

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="TLC needs java")


def short_run():
    q, store, ring, clock = recorded_queue(max_deliveries=3)
    for ref in refs(3):
        store.hold(ref)
        q.put(ref)
    q.fail(q.acquire())  # s0 to the tail
    b = q.acquire()  # s1
    clock.advance(1.0)
    assert q.extend(b)
    clock.advance(2.0)
    assert q.reclaim_expired() == 1
    assert not q.ack(b)  # stale after the reclaim
    c = q.acquire()  # s2
    assert q.ack(c) and not q.ack(c)  # the second is a stale copy
    assert q.acquire_nowait().ref.sample_id == "s0"
    q.close()
    return ring.records()


def test_tlc_accepts_a_correct_queues_trace():
    result = run_tlc_on_trace(short_run())
    assert result.ok, result.summary + "\n" + result.output[-3000:]
    assert "accepted: all 15 records matched" in result.summary


def test_tlc_refuses_a_mutants_trace_at_the_right_record():
    backend, store, ring, _ = recorded_mutant("fail_to_head")
    drive_fail_then_acquire(backend, store)
    result = run_tlc_on_trace(ring.records())
    assert not result.ok
    assert result.refused_seq == 9 and result.matched == 8, result.summary + result.output[-2000:]
    assert "acquire s0" in result.summary


def test_what_the_spec_cannot_express_is_refused_with_a_message():
    q, store, ring, clock = recorded_queue()
    ref = refs(1)[0]
    store.hold(ref)
    q.put(ref)
    clock.advance(0.5)
    q.acquire()
    with pytest.raises(ValueError, match="whole seconds"):
        to_tla(ring.records())
    with pytest.raises(ValueError, match="at most 2"):
        to_tla(ring.records(), max_events=2)


def test_ids_tla_cannot_write_and_a_gib_sized_band_are_traced_the_same():
    # ("样本-é-0" and an id with a newline broke TLC's parser, and a 2 GiB watermark its 32-bit
    # integers: both were "TLC: FAIL", exit 1, on logs the model accepted)
    gib = 1 << 30
    q, store, ring, clock = recorded_queue(max_deliveries=3, high_watermark_bytes=3 * gib, low_watermark_bytes=gib)
    samples = refs(2, "样本-é-") + refs(1, "a\nb-") + refs(1, "id")  # ("id0": a stand-in must not take its name)
    for ref in samples:
        store.hold(ref)
        q.put_blocks_until_below(ref)
    q.fail(q.acquire())
    for _ in samples:
        q.ack(q.acquire())
    q.close()
    records = ring.records()
    module = to_tla(records).module()
    assert module.isascii() and '"id1"' in module and '"id0"' in module and str(3 * gib) not in module
    result = run_tlc_on_trace(records)
    assert result.ok and result.verdict, result.summary + "\n" + result.output[-3000:]
    # the same log with its first acquire handing out the third sample, not the head of pending: refused there
    first = next(r for r in records if r.get("ev") == "acquire" and r.get("sample"))
    broken = [dict(r, sample="a\nb-0") if r is first else r for r in records]
    result = run_tlc_on_trace(broken)
    assert not result.ok and result.verdict and result.refused_seq == first["seq"], result.summary


def test_a_tlc_without_a_verdict_is_exit_2_not_a_refusal(tmp_path, monkeypatch, capsys):
    import refqueue.trace_check.tla as tla
    from refqueue.cli import main
    from refqueue.events import RingSink

    path = tmp_path / "short.jsonl"
    ring = RingSink()
    for r in short_run():
        ring.write(r)
    ring.dump(path)
    failed = tla.TlaResult(False, "TLC gave no verdict: TLC failed: Error: out of memory", 0.1, None, None, None, "",
                           verdict=False)
    monkeypatch.setattr(tla, "run_tlc_on_trace", lambda records, max_events: failed)
    assert main(["trace-check", str(path), "--tla"]) == 2
    out, err = capsys.readouterr()
    assert "TLC: NO VERDICT (TLC gave no verdict" in out and "the log was not checked against the spec" in err


def test_cli_tla_mode(tmp_path):
    from refqueue.events import RingSink

    path = tmp_path / "short.jsonl"
    ring = RingSink()
    for r in short_run():
        ring.write(r)
    ring.dump(path)
    proc = subprocess.run([sys.executable, "-m", "refqueue.cli", "trace-check", str(path), "--tla"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "TLC: OK (accepted: all 15 records matched" in proc.stdout


@pytest.mark.torch
def test_tlc_accepts_a_paused_blocked_producer_with_a_logged_store():
    """A producer pauses at high, parks, and is admitted when consumers ack down to low
    (LocalFeatureStore and queue logging into one EventLog; real threads)."""
    import threading

    torch = pytest.importorskip("torch")
    from refqueue.clock import ManualClock
    from refqueue.events import EventLog, RingSink
    from refqueue.queue import SampleRefQueue, VisibilityTimeout
    from refqueue.stores.local import LocalFeatureStore

    ring = RingSink()
    log = EventLog(ring)
    tensors = {"aux_hidden_states": torch.zeros(4, dtype=torch.uint8), "input_ids": torch.zeros(1, dtype=torch.uint8),
               "attention_mask": torch.zeros(1, dtype=torch.uint8), "loss_mask": torch.zeros(1, dtype=torch.uint8)}
    n = 7  # bytes per sample
    store = LocalFeatureStore(max_samples=None, high_watermark_bytes=3 * n, low_watermark_bytes=n, device="cpu",
                              events=log)
    q = SampleRefQueue(store, VisibilityTimeout(5.0), clock=ManualClock(0.0), events=log)

    def stored(i):
        return store.put(f"s{i}", tensors, run_id="r", algorithm="eagle3", schema_version=1,
                         target_model_version="t", draft_weight_version=0, num_tokens=1)

    for i in range(3):
        q.put_blocks_until_below(stored(i))
    waiting = threading.Event()
    blocked = threading.Thread(
        target=lambda: q.put_blocks_until_below(stored(3), poll_interval=10.0,
                                                abort_when=lambda: waiting.set() or False))
    blocked.start()
    assert waiting.wait(10)  # paused at high with work in the queue: the producer waits
    for _ in range(2):
        q.ack(q.acquire())
    blocked.join(10)
    assert not blocked.is_alive()
    q.ack(q.acquire())
    q.ack(q.acquire())
    q.close()
    records = ring.records()
    evs = [r["ev"] for r in records]
    assert "pause" in evs and "park" in evs and "resume" in evs
    from refqueue.trace_check import check_records

    assert check_records(records).ok
    result = run_tlc_on_trace(records)
    assert result.ok, result.summary + "\n" + result.output[-3000:]


def test_a_store_holding_data_the_log_does_not_show_is_refused_for_tla():
    from refqueue._bench_queue import CounterStore
    from refqueue.events import EventLog, RingSink
    from refqueue.queue import SampleRefQueue

    ring = RingSink()
    store = CounterStore()
    orphan, ref = refs(2)
    store.hold(orphan)  # data the log never shows
    from refqueue.clock import ManualClock

    q = SampleRefQueue(store, high_watermark_bytes=10 * orphan.estimated_bytes,
                       low_watermark_bytes=orphan.estimated_bytes, clock=ManualClock(0.0), events=EventLog(ring))
    store.hold(ref)
    q.put_blocks_until_below(ref)
    with pytest.raises(ValueError, match="holds data the log does not show"):
        to_tla(ring.records())
