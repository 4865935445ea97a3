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


def live_log(path):
    """(log, queue, store): a queue writing every record to ``path`` at once."""
    log = EventLog(JsonlSink(path, flush_every=0))
    store = CounterStore()
    return log, SampleRefQueue(store, events=log), store


class _Screen(io.StringIO):
    """top's output; ``after_first(view)`` runs once the first view is written (between two redraws)."""

    def __init__(self, after_first):
        super().__init__()
        self._after_first = after_first

    def flush(self):
        super().flush()
        if self._after_first is not None:
            hook, self._after_first = self._after_first, None
            hook()


def test_top_waits_for_the_log_to_appear(tmp_path):
    path = tmp_path / "later.jsonl"
    holder = []

    def start_the_writer():  # the log appears after top's first view
        log, q, store = live_log(path)
        [ref] = refs(1)
        store.hold(ref)
        q.put(ref)
        holder.append(log)

    screen = _Screen(start_the_writer)
    args = argparse.Namespace(log=str(path), interval=0.01, iterations=2, no_clear=True)
    assert run(args, screen) == 0
    first, second = screen.getvalue().split("refqueue top  ")[1:]
    assert first == f"{path}: waiting for the file to appear\n"
    assert "pending        1" in second and "diagnosis: no condition found" in second
    holder[0].close()


def test_top_survives_a_malformed_line_and_says_how_old_the_last_record_is(tmp_path):
    recorded = tmp_path / "recorded.jsonl"
    log, q, store = live_log(recorded)
    for ref in refs(2):
        store.hold(ref)
        q.put(ref)
    lease = q.acquire_nowait()
    log.close()  # the writer is gone
    lines = recorded.read_text().splitlines(keepends=True)
    path = tmp_path / "run.jsonl"
    path.write_text("".join(lines[:3] + ['{"torn": \n'] + lines[3:]))  # line 4: not JSON; the acquire after it
    args = argparse.Namespace(log=str(path), interval=0.2, iterations=2, no_clear=True)
    screen = io.StringIO()
    assert run(args, screen) == 0
    first, second = screen.getvalue().split("refqueue top  ")[1:]
    assert "1 malformed lines skipped; the last: line 4: not one JSON object (JSONDecodeError)" in first
    assert "pending        1   outstanding        1" in first  # the records after it were read
    ages = [float(view.split("(last record ")[1].split(" s ago")[0]) for view in (first, second)]
    assert ages[0] < 0.2 <= ages[1]  # nothing new: the last record gets older
    del lease


def test_top_refuses_bad_arguments(tmp_path, capsys):
    args = argparse.Namespace(log=str(tmp_path), interval=0, iterations=1, no_clear=True)
    assert run(args, io.StringIO()) == 2


def test_top_refuses_an_interval_time_cannot_sleep_and_says_why_a_log_cannot_be_read(tmp_path, monkeypatch):
    args = argparse.Namespace(log=str(tmp_path / "x.jsonl"), interval=1e10, iterations=1, no_clear=True)
    assert run(args, io.StringIO()) == 2  # (it raised OverflowError after the first redraw)
    path = tmp_path / "run.jsonl"
    path.write_text("")

    def denied(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("builtins.open", denied)  # (a log top may not read: it raised PermissionError)
    screen = io.StringIO()
    assert run(argparse.Namespace(log=str(path), interval=0.01, iterations=2, no_clear=True), screen) == 0
    assert "waiting for a queue's open record (cannot open the log: Permission denied)" in screen.getvalue()
