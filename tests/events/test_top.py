"""refqueue top: follows a growing (and rotated) log and redraws the metrics."""

from __future__ import annotations

import argparse
import io
import json

from events_helpers import refs

from refqueue._bench_queue import CounterStore
from refqueue.events import EventLog, JsonlSink
from refqueue.queue import SampleRefQueue
from refqueue.top import CLEAR, _Follower, run


def test_follower_reads_appended_lines_waits_for_a_partial_one_and_reopens_a_rotated_file(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": 3')
    follower = _Follower(str(path))
    assert follower.read() == [{"a": 1}, {"a": 2}]
    with open(path, "a") as f:
        f.write('}\n{"a": 4}\n')
    assert follower.read() == [{"a": 3}, {"a": 4}]
    assert follower.read() == []
    rotated = tmp_path / "new.jsonl"
    rotated.write_text('{"b": 1}\n')
    rotated.replace(path)
    assert follower.read() == [{"b": 1}]


def test_top_draws_the_metrics_of_a_live_log(tmp_path):
    path = tmp_path / "run.jsonl"
    sink = JsonlSink(path, flush_every=0)
    log = EventLog(sink)
    store = CounterStore()
    live = SampleRefQueue(store, events=log)
    for ref in refs(5):
        store.hold(ref)
        live.put(ref)
    live.ack(live.acquire())
    # flush_every=0: every record is in the file already, without close()
    assert len(path.read_text().splitlines()) == log.seq
    out = io.StringIO()
    args = argparse.Namespace(log=str(path), interval=0.01, iterations=2, no_clear=False)
    assert run(args, out) == 0
    views = out.getvalue().split(CLEAR)[1:]
    assert len(views) == 2
    assert "pending        4" in views[0] and "acks_live                1" in views[0]
    assert "0.0/s" in views[1]  # the second view has rates (nothing new arrived)
    sink.close()
    json.loads(path.read_text().splitlines()[0])


def test_top_refuses_bad_arguments(tmp_path, capsys):
    args = argparse.Namespace(log=str(tmp_path / "missing.jsonl"), interval=1.0, iterations=1, no_clear=True)
    assert run(args, io.StringIO()) == 2
    assert "no such file" in capsys.readouterr().err
    args = argparse.Namespace(log=str(tmp_path), interval=0, iterations=1, no_clear=True)
    assert run(args, io.StringIO()) == 2
