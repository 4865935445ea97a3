"""The history of a torture run: every call of every process, and every
fault, as operations (Jepsen's history, faults included).

Each process writes its own file ``<process>.jsonl`` with one JSON object a
line, flushed before the call and after it, so a process SIGKILLed in the
middle of a call still leaves the call's *invoke* behind:

``{"process": "c1.0", "seq": 7, "type": "invoke", "call": "ack", "args": {...}, "ns": 123}``
``{"process": "c1.0", "seq": 7, "type": "ok", "call": "ack", "result": true, "ns": 456}``
``{"process": "c1.0", "seq": 7, "type": "error", "call": "ack", "error": "RedisUnavailable", "refqueue": true, "message": "...", "ns": 456}``

``ns`` is ``time.monotonic_ns()``: one clock for every process of the
machine, so the files merge into one order.  ``load`` merges them into
``Op``s sorted by invoke time; an invoke with no completion is an op whose
``outcome`` is ``"unknown"`` (the process died in it, or the run ended).

Process names: ``p<slot>.<incarnation>`` (producers), ``c<slot>.<incarnation>``
(consumers; a killed process's replacement is the next incarnation of its
slot), ``nemesis`` (faults), ``supervisor`` (process starts and exits) and
``final`` (the end of the run: close, drain, residency).

Invariant: within one file, ``seq`` counts up from 0 and a completion
follows its own invoke.  Calls may nest (the ``store.scrub`` an ``ack``
runs) and may come from another thread of the process (a reclaimer's
dead-letter scrubs): the file's lock keeps each line whole.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Recorder", "Op", "History", "load", "OK", "ERROR", "UNKNOWN"]

OK, ERROR, UNKNOWN = "ok", "error", "unknown"


class Recorder:
    """Writes one process's history file (append, a line per record, flushed)."""

    def __init__(self, path: str | os.PathLike[str], process: str) -> None:
        self.process = process
        self.path = Path(path)
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (lives as long as the process)
        self._seq = 0
        self._calls: dict[int, str] = {}  # seq -> call, of the invokes not completed yet
        # Guards _seq, _calls and the file: a process's threads may record at once.
        self._lock = threading.Lock()

    def _write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, separators=(",", ":"), default=str) + "\n")
        self._file.flush()

    def invoke(self, call: str, args: dict[str, Any]) -> int:
        """Record the start of ``call``; returns its ``seq`` for ``ok``/``error``."""
        with self._lock:
            seq = self._seq
            self._seq += 1
            self._calls[seq] = call
            self._write({"process": self.process, "seq": seq, "type": "invoke", "call": call, "args": args,
                         "ns": time.monotonic_ns()})
        return seq

    def ok(self, seq: int, result: Any) -> None:
        with self._lock:
            self._write({"process": self.process, "seq": seq, "type": OK, "call": self._calls.pop(seq, "?"),
                         "result": result, "ns": time.monotonic_ns()})

    def error(self, seq: int, exc: BaseException) -> None:
        from refqueue.errors import RefQueueError

        with self._lock:
            self._write({
                "process": self.process, "seq": seq, "type": ERROR, "call": self._calls.pop(seq, "?"),
                "error": type(exc).__name__,
                "refqueue": isinstance(exc, RefQueueError), "message": str(exc)[:400], "ns": time.monotonic_ns(),
            })

    def call(self, call: str, args: dict[str, Any], fn: Callable[[], Any],
             encode: Callable[[Any], Any] = lambda value: value) -> Any:
        """Run ``fn()`` recorded as ``call(args)``: its result (``encode``d)
        or its error is recorded, and the result returned or the error re-raised."""
        seq = self.invoke(call, args)
        try:
            value = fn()
        except BaseException as exc:
            self.error(seq, exc)
            raise
        self.ok(seq, encode(value))
        return value

    def close(self) -> None:
        with self._lock:
            self._file.close()


@dataclass(frozen=True)
class Op:
    """One call, merged from its invoke and its completion."""

    index: int  # position in the merged history (by invoke time)
    process: str
    seq: int
    call: str
    args: dict[str, Any]
    invoke_ns: int
    return_ns: int | None  # None: never completed (the process died in it, or the run ended)
    outcome: str  # OK, ERROR or UNKNOWN
    result: Any = None
    error: str | None = None  # the exception's class name
    refqueue_error: bool = True  # whether that exception is a RefQueueError
    message: str = ""

    @property
    def slot(self) -> str:
        """The process slot: ``c1`` for ``c1.3``."""
        return self.process.split(".", 1)[0]

    @property
    def sample(self) -> str | None:
        """The sample id the call is about, if any (argument or result)."""
        sample = self.args.get("sample")
        if sample is None and isinstance(self.result, dict):
            sample = self.result.get("sample")
        return sample


@dataclass
class History:
    """The merged history of a run, ``ops`` in invoke order, and what could not be read."""

    ops: list[Op]
    truncated: list[str] = field(default_factory=list)  # "file: line" of records cut by a kill mid-write
    start_ns: int | None = None  # the run's time zero (the nemesis schedule's), if recorded

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def __len__(self) -> int:
        return len(self.ops)

    def by_process(self, process: str) -> list[Op]:
        return [op for op in self.ops if op.process == process]

    def seconds(self, ns: int | None) -> float | None:
        """``ns`` as seconds after the run's time zero (or the first op)."""
        if ns is None:
            return None
        zero = self.start_ns if self.start_ns is not None else (self.ops[0].invoke_ns if self.ops else ns)
        return (ns - zero) / 1e9


def load(directory: str | os.PathLike[str]) -> History:
    """Merge every ``*.jsonl`` history file under ``directory`` into one ``History``."""
    pending: list[dict[str, Any]] = []
    truncated: list[str] = []
    start_ns = None
    for path in sorted(Path(directory).glob("*.jsonl")):
        invokes: dict[int, dict[str, Any]] = {}
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        for number, line in enumerate(lines, 1):
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                truncated.append(f"{path.name}: {number}")  # the last line of a process killed mid-write
                continue
            if record["type"] == "invoke":
                invokes[record["seq"]] = {"invoke": record, "done": None}
                if record["call"] == "start" and record["process"] == "nemesis":
                    start_ns = record["ns"]
            elif record["seq"] in invokes:
                invokes[record["seq"]]["done"] = record
        pending.extend(invokes.values())
    pending.sort(key=lambda pair: (pair["invoke"]["ns"], pair["invoke"]["process"], pair["invoke"]["seq"]))
    ops = []
    for index, pair in enumerate(pending):
        invoke, done = pair["invoke"], pair["done"]
        ops.append(Op(
            index=index, process=invoke["process"], seq=invoke["seq"], call=invoke["call"], args=invoke["args"],
            invoke_ns=invoke["ns"], return_ns=None if done is None else done["ns"],
            outcome=UNKNOWN if done is None else done["type"],
            result=None if done is None else done.get("result"),
            error=None if done is None else done.get("error"),
            refqueue_error=True if done is None else done.get("refqueue", True),
            message="" if done is None else done.get("message", ""),
        ))
    return History(ops, truncated, start_ns)
