"""Issue 21, defects 14-16: the log readers (``trace-check``, ``report``, ``top``)
under hostile logs.

On 7655507:

14. records with wrongly typed fields, or JSON nested too deep, made
    ``trace-check`` print a traceback and exit 1 (its "violation" status)
    instead of 2 ("cannot be checked"); ``report`` on a FIFO hung for ever;
15. one malformed line (a JSON array, bytes that are not UTF-8, a string
    ``t``) killed ``top``;
16. the violation header of ``trace-check`` printed sample ids raw: an id
    holding escape sequences set the terminal's title and wrote its
    clipboard (OSC 52).

Each log is a real queue's, written by ``JsonlSink`` and then damaged.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import threading

import pytest

from refqueue._bench_queue import CounterStore, clone_refs
from refqueue.cli import main
from refqueue.clock import ManualClock
from refqueue.events import EventLog, JsonlSink
from refqueue.queue import SampleRefQueue, VisibilityTimeout
from refqueue.top import CLEAR
from refqueue.top import run as run_top

pytestmark = pytest.mark.timeout(120)

# What a title-setting (OSC 0) and clipboard-writing (OSC 52) id looks like.
HOSTILE_ID = "s\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202e"


def write_log(path, sample_ids=("a", "b")) -> list[dict]:
    """A real queue's log: put, acquire, ack each sample; the records."""
    sink = JsonlSink(path)
    log = EventLog(sink)
    store = CounterStore()
    queue = SampleRefQueue(store, VisibilityTimeout(5.0), clock=ManualClock(0.0), events=log)
    refs = [type(r).from_dict({**r.to_dict(), "sample_id": sid}) for r, sid in zip(clone_refs(len(sample_ids), "x"), sample_ids)]
    for ref in refs:
        store.hold(ref)
        queue.put(ref)
    for _ in refs:
        queue.ack(queue.acquire_nowait())
    sink.close()
    return [json.loads(line) for line in path.read_text().splitlines()]


def rewrite(path, records, lines_after=()) -> None:
    with open(path, "wb") as out:
        for record in records:
            out.write(json.dumps(record).encode() + b"\n")
        for line in lines_after:
            out.write(line + b"\n")


def cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# -- 14. trace-check and report on wrongly typed or deep records ------------------------------


def _retype(records, ev, field, value):
    out = [dict(r) for r in records]
    next(r for r in out if r["ev"] == ev)[field] = value
    return out


WRONG = {
    "t a string": ("acquire", "t", "abc"),
    "t a list": ("ack", "t", [1]),
    "sample an int": ("put", "sample", 5),
    "sample a dict": ("acquire", "sample", {"a": 1}),
    "lease a string": ("ack", "lease", "1"),
    "lease a float": ("acquire", "lease", 1.5),
    "live a string": ("ack", "live", "yes"),
    "ev a list": ("put", "ev", ["put"]),
    "seq a string": ("put", "seq", "2"),
    "seq a bool": ("put", "seq", True),
    "pid a float": ("put", "pid", 1.5),
    "q a list": ("put", "q", [1]),
    "deadline a string": ("acquire", "deadline", "soon"),
    "visibility_timeout a string": ("open", "visibility_timeout", "5"),
    "pending negative": ("put", "pending", -1),
    "pending past int64": ("put", "pending", 2**70),
    "epoch an int": ("open", "epoch", 7),
}


@pytest.mark.parametrize("how", sorted(WRONG))
def test_trace_check_and_report_on_a_wrongly_typed_field_exit_2_naming_it(tmp_path, how):
    path = tmp_path / "run.jsonl"
    ev, field, value = WRONG[how]
    rewrite(path, _retype(write_log(path), ev, field, value))
    code, out, err = cli("trace-check", str(path))
    assert code == 2, (code, out, err)
    assert err.startswith("refqueue trace-check: ") and repr(field) in err and "Traceback" not in err, err
    code, out, err = cli("report", str(path), "--html", str(tmp_path / "out.html"))
    assert code == 2 and err.startswith("refqueue report: ") and repr(field) in err, (code, err)


@pytest.mark.parametrize("deep", [b'{"ev": "put", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
                                  b"[" * 100_000, b'{"a": ' * 50_000 + b"1" + b"}" * 50_000])
def test_trace_check_and_report_on_json_nested_too_deep_exit_2_naming_the_line(tmp_path, deep):
    path = tmp_path / "run.jsonl"
    records = write_log(path)
    rewrite(path, records, [deep])
    line = len(records) + 1
    code, out, err = cli("trace-check", str(path))
    assert code == 2 and f"{path}:{line}: " in err and "too deep" in err, (code, err[:300])
    code, out, err = cli("report", str(path), "--html", str(tmp_path / "out.html"))
    assert code == 2 and f"{path}:{line}: " in err, (code, err[:300])


@pytest.mark.parametrize("command", ["report", "trace-check"])
def test_a_log_that_is_a_fifo_is_refused_at_once(tmp_path, command):
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    argv = [command, str(fifo)] + (["--html", str(tmp_path / "out.html")] if command == "report" else [])
    done = threading.Event()
    result: list = []

    def run():
        result.append(cli(*argv))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    try:
        assert done.wait(30), f"refqueue {command} blocked reading a FIFO"
    finally:
        if not done.is_set():
            os.close(os.open(fifo, os.O_WRONLY))  # let the stuck reader go
    code, _, err = result[0]
    assert code == 2 and "not a regular file" in err and "Traceback" not in err, err


@pytest.mark.parametrize("content", [b"", b"\n\n"], ids=["empty", "blank lines"])
def test_a_log_with_no_records_is_not_a_pass(tmp_path, content):
    # a run whose sink wrote elsewhere leaves an empty file; "OK: 0 events" would pass it
    path = tmp_path / "run.jsonl"
    path.write_bytes(content)
    code, out, err = cli("trace-check", str(path))
    assert code == 2 and "no records to check" in err and str(path) in err and "OK" not in out, (code, out, err)
    code, out, err = cli("report", str(path), "--html", str(tmp_path / "out.html"))
    assert code == 2 and err.startswith("refqueue report: ") and not (tmp_path / "out.html").exists(), (code, err)


def test_a_record_broken_over_two_lines_is_refused_though_the_count_matches(tmp_path):
    # (one record split in two and two joined by a comma on one line kept the count of objects, and the log
    # passed: "OK: 6 events", exit 0)
    path = tmp_path / "run.jsonl"
    write_log(path)
    lines = path.read_text().splitlines()
    cut = lines[2].index(',"')
    merged = lines[:2] + [lines[2][:cut], lines[2][cut + 1:]] + [lines[3] + "," + lines[4]] + lines[5:]
    path.write_text("\n".join(merged) + "\n")
    code, out, err = cli("trace-check", str(path))
    assert code == 2 and f"{path}:3: not a JSON line" in err and "OK" not in out, (code, out, err)
    path.write_text("\n".join(lines[:3] + [lines[3] + "," + lines[4]] + lines[5:]) + "\n")  # joined only
    code, out, err = cli("trace-check", str(path))
    assert code == 2 and f"{path}:4: not a JSON line (Extra data" in err, (code, out, err)


def test_trace_check_refuses_a_tla_bound_below_one(tmp_path):
    path = tmp_path / "run.jsonl"
    write_log(path)
    code, out, err = cli("trace-check", str(path), "--tla", "--tla-max-events", "0")
    assert code == 2 and "--tla-max-events must be >= 1, got 0" in err and out == "", (code, out, err)


# -- 15. top on malformed lines ---------------------------------------------------------------


def test_top_skips_malformed_lines_and_keeps_drawing(tmp_path):
    path = tmp_path / "run.jsonl"
    records = write_log(path, ("a", "b", "c"))
    bad = [b"[1, 2]", b"\xff\xfe\xfd", json.dumps({**records[2], "t": "x", "seq": 99}).encode(),
           b"[" * 100_000, b'"a string"', b"12", json.dumps({**records[2], "ev": ["put"]}).encode(),
           json.dumps({"ev": "ack", "q": 1, "pid": records[0]["pid"], "seq": 100, "live": True}).encode()]
    with open(path, "wb") as out:
        out.write(json.dumps(records[0]).encode() + b"\n")
        for line in bad:
            out.write(line + b"\n")
        for record in records[1:]:
            out.write(json.dumps(record).encode() + b"\n")
    view = io.StringIO()
    args = argparse.Namespace(log=str(path), interval=0.01, iterations=2, no_clear=False)
    assert run_top(args, view) == 0
    first = view.getvalue().split(CLEAR)[1]
    assert re.search(r"^puts +3 ", first, re.M) and re.search(r"^acks_live +3 ", first, re.M), first
    assert "8 malformed lines skipped" in first, first


# -- 16. escape sequences in the violation report ------------------------------------------------


def test_a_violation_naming_a_hostile_sample_id_prints_no_control_characters(tmp_path):
    path = tmp_path / "run.jsonl"
    records = write_log(path, (HOSTILE_ID, "b"))
    ack = next(r for r in records if r["ev"] == "ack" and r["sample"] == HOSTILE_ID)
    ack["live"] = False  # the model says this ack was live: a violation at it
    rewrite(path, records)
    code, out, err = cli("trace-check", str(path))
    assert code == 1 and "VIOLATION" in out, (code, out, err)
    shown = out + err
    assert not any(ord(c) < 0x20 and c != "\n" or 0x7F <= ord(c) < 0xA0 or c == "\u202e" for c in shown), repr(shown)
    assert "\\x1b]0;pwned\\x07" in out  # named, escaped
