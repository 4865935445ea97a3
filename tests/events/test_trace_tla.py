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
