"""Fuzz: the log readers (``trace-check``, ``report``, ``top``, ``read_jsonl``)
on a real queue's log damaged by Hypothesis (issue 21, defects 14-16).

A field of a record replaced by any JSON value, a line replaced or inserted
(any bytes, any JSON, JSON nested deeply), a line dropped or repeated: every
command ends with its documented status (``trace-check``: 0, 1 or 2;
``report``: 0 or 2; ``top``: 0), never a traceback, with a one-line message
on status 2, and prints nothing a terminal would act on (no control
character but the newline; ``top``'s own screen clearing aside).
``read_jsonl(check=True)`` returns only records ``event_records.problem``
accepts, or raises ``ValueError`` naming the file.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_helpers import hostile_text

from refqueue._bench_queue import CounterStore, clone_refs
from refqueue.cli import main
from refqueue.clock import ManualClock
from refqueue.event_records import problem
from refqueue.events import EventLog, RingSink, read_jsonl
from refqueue.queue import SampleRefQueue, VisibilityTimeout
from refqueue.top import CLEAR
from refqueue.top import run as run_top

pytestmark = pytest.mark.timeout(300)
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
# Each example makes files (a store, a log; tens of ms under load): half the
# profile's examples (50 in CI; the deep profile's 2,000 give 1,000).
HALF = settings(SETTINGS, max_examples=max(1, settings.default.max_examples // 2))


def _log() -> list[bytes]:
    """The JSON lines of a real queue's run: puts, acquires, a fail, acks, a dead letter, a reclaim."""
    ring = RingSink()
    clock = ManualClock(0.0)
    store = CounterStore()
    queue = SampleRefQueue(store, VisibilityTimeout(5.0), clock=clock, events=EventLog(ring), max_deliveries=3)
    refs = clone_refs(4, "s")
    for ref in refs:
        store.hold(ref)
        queue.put(ref)
    queue.fail(queue.acquire_nowait())
    queue.ack(queue.acquire_nowait())
    queue.dead_letter(queue.acquire_nowait(), "poison")
    queue.acquire_nowait()
    clock.advance(10.0)
    queue.reclaim_expired()
    queue.close()
    return [json.dumps(r).encode() for r in ring.records()]


LINES = _log()

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), hostile_text),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(hostile_text, c, max_size=3)),
    max_leaves=5,
)
raw_lines = st.one_of(
    st.binary(max_size=40),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.integers(1, 30_000).map(lambda d: b'{"ev": "put", "x": ' + b"[" * d + b"]" * d + b"}"),
    st.integers(1, 30_000).map(lambda d: b"[" * d),
    st.sampled_from([b'{"ev": "acquire"}', b"{}", b"null", b'{"ev": "\\u001b]0;x\\u0007"}', b"\xff\xfe",
                     b'{"seq": 1e999}', b'{"seq": ' + b"9" * 5000 + b"}"]),
)


@st.composite
def damaged_log(draw) -> bytes:
    lines = list(LINES)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["field", "replace", "insert", "drop", "repeat"]))
        at = draw(st.integers(0, len(lines) - 1)) if lines else 0
        if kind == "field" and lines:
            try:
                record = json.loads(lines[at])
            except (ValueError, RecursionError):
                continue
            if type(record) is dict and record:
                key = draw(st.sampled_from(sorted(record) + ["sample", "t", "lease", "ev", "seq"]))
                record[key] = draw(json_values)
                lines[at] = json.dumps(record).encode()
        elif kind == "replace" and lines:
            lines[at] = draw(raw_lines)
        elif kind == "insert":
            lines.insert(at, draw(raw_lines))
        elif kind == "drop" and lines:
            del lines[at]
        elif kind == "repeat" and lines:
            lines.insert(at, lines[at])
    return b"\n".join(lines) + b"\n"


def terminal_safe(text: str) -> bool:
    return all(c == "\n" or c.isprintable() for c in text)


def cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@HALF
@given(content=damaged_log())
def test_trace_check_report_and_read_jsonl_on_a_damaged_log(content):
    with tempfile.TemporaryDirectory(prefix="fuzz-logs-") as folder:
        path = Path(folder) / "run.jsonl"
        path.write_bytes(content)
        code, out, err = cli("trace-check", str(path))
        assert code in (0, 1, 2), (code, out, err)
        assert terminal_safe(out) and terminal_safe(err), (out, err)
        if code == 2:
            assert err.startswith("refqueue trace-check: ") and err.count("\n") == 1, err
        code, out, err = cli("report", str(path), "--html", str(Path(folder) / "out.html"))
        assert code in (0, 2) and terminal_safe(err), (code, err)
        if code == 2:
            assert err.startswith("refqueue report: ") and err.count("\n") == 1, err
        else:
            assert (Path(folder) / "out.html").read_text().startswith("<!DOCTYPE html>")
        try:
            records = read_jsonl([path], check=True)
        except ValueError as exc:
            assert str(path) in str(exc)
        else:
            assert all(problem(r) is None for r in records)


@SETTINGS
@given(content=damaged_log())
def test_top_on_a_damaged_log_draws_and_never_dies(content):
    with tempfile.TemporaryDirectory(prefix="fuzz-top-") as folder:
        path = Path(folder) / "run.jsonl"
        path.write_bytes(content)
        view = io.StringIO()
        args = argparse.Namespace(log=str(path), interval=0.001, iterations=1, no_clear=False)
        assert run_top(args, view) == 0
        shown = view.getvalue()
        assert shown.startswith(CLEAR) and terminal_safe(shown[len(CLEAR):]), shown
