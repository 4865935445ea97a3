"""Hand-made torture histories: a ``Story`` writes the JSONL files a run
would (one per process, invoke and completion records, explicit times), and
``load``s them back as the checker sees them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from refqueue.torture.history import History, load

EPOCH = "e" * 32
MS = 1_000_000  # nanoseconds


class Story:
    """Calls at explicit times (milliseconds after time zero, which ``start`` records)."""

    def __init__(self, directory: Path, faults: list[str] | None = None) -> None:
        """``faults``: the kinds the run asked for, as the nemesis's start
        record lists them (None: a start record without the list)."""
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self._seq: dict[str, int] = {}
        self._lines: dict[str, list[dict[str, Any]]] = {}
        start: dict[str, Any] = {"seed": 1} if faults is None else {"seed": 1, "faults": list(faults)}
        self.call("nemesis", 0, "start", start, result={"steps": 0})

    def _record(self, process: str, record: dict[str, Any]) -> None:
        self._lines.setdefault(process, []).append(record)

    def call(self, process: str, at_ms: float, call: str, args: dict[str, Any] | None = None, *,
             result: Any = None, error: str | None = None, refqueue: bool = True, took_ms: float = 1.0,
             unknown: bool = False) -> None:
        """One call of ``process`` at ``at_ms``: answered ``result``, raised ``error``, or never answered."""
        seq = self._seq.get(process, 0)
        self._seq[process] = seq + 1
        ns = int(1_000_000_000_000 + at_ms * MS)
        self._record(process, {"process": process, "seq": seq, "type": "invoke", "call": call, "args": args or {},
                               "ns": ns})
        if unknown:
            return
        done = {"process": process, "seq": seq, "call": call, "ns": ns + int(took_ms * MS)}
        if error is None:
            done.update(type="ok", result=result)
        else:
            done.update(type="error", error=error, refqueue=refqueue, message=f"{error} (made up)")
        self._record(process, done)

    # -- the calls of a run, by what they mean ----------------------------------------

    def put(self, producer: str, at: float, sample: str, checksum: str = "c0ffee", **kw: Any) -> None:
        self.call(producer, at, "store.put", {"sample": sample, "checksum": checksum}, result={"bytes": 100})
        self.call(producer, at + 2, "put", {"sample": sample, "attempt": 0}, **kw)

    def lease(self, consumer: str, at: float, sample: str, lease_id: int, redeliveries: int = 0) -> None:
        self.call(consumer, at, "acquire", result={"sample": sample, "epoch": EPOCH, "lease_id": lease_id,
                                                   "redeliveries": redeliveries})

    def get(self, consumer: str, at: float, sample: str, lease_id: int, checksum: str = "c0ffee", **kw: Any) -> None:
        if "error" in kw:
            self.call(consumer, at, "get", self.lease_args(sample, lease_id), **kw)
        else:
            self.call(consumer, at, "get", self.lease_args(sample, lease_id), result={"checksum": checksum})

    def ack(self, consumer: str, at: float, sample: str, lease_id: int, answer: Any = True, *,
            scrub: bool = True, **kw: Any) -> None:
        self.call(consumer, at, "ack", self.lease_args(sample, lease_id), result=answer, **kw)
        if answer is True and scrub and not kw:
            self.call(consumer, at + 0.5, "store.scrub", {"sample": sample}, result=True)

    @staticmethod
    def lease_args(sample: str, lease_id: int) -> dict[str, Any]:
        return {"sample": sample, "epoch": EPOCH, "lease_id": lease_id}

    def exit(self, process: str, at: float, code: int) -> None:
        self.call("supervisor", at, "exit", {"process": process}, result={"code": code})

    def fault(self, at: float, fault: str, result: dict[str, Any], took_ms: float = 1.0, **args: Any) -> None:
        self.call("nemesis", at, fault, dict(args, fault=fault), result=result, took_ms=took_ms)

    def end(self, at: float, files: list[str] = (), *, dead: list[str] = (), drained: bool = True,
            sample_count: int | None = None) -> None:
        """The end of a run: close, drained, dead letters, residency (as ``refqueue.torture.final``)."""
        self.call("final", at, "close", result=None)
        self.call("final", at + 1, "is_drained", result=drained)
        self.call("final", at + 2, "dead_letters", result=list(dead))
        count = len(files) if sample_count is None else sample_count
        self.call("final", at + 3, "residency", result={"files": list(files), "sample_count": count,
                                                        "resident_bytes": 100 * count})

    def history(self) -> History:
        for process, records in self._lines.items():
            with open(self.directory / f"{process}.jsonl", "w") as f:
                f.writelines(json.dumps(record) + "\n" for record in records)
        return load(self.directory)


def clean_story(directory: Path) -> Story:
    """Two samples put, leased, read and acked once each; one stale ack refused; the run ends clean (no
    faults asked for)."""
    s = Story(directory, faults=[])
    s.put("p0.0", 10, "a")
    s.put("p0.0", 20, "b")
    s.lease("c0.0", 30, "a", 1)
    s.get("c0.0", 31, "a", 1)
    s.ack("c0.0", 32, "a", 1)
    s.lease("c1.0", 40, "b", 2)
    s.get("c1.0", 41, "b", 2)
    s.ack("c1.0", 42, "b", 2)
    s.ack("c0.0", 50, "b", 2, answer=False)  # a stale copy: refused
    s.call("c0.0", 60, "stop_reclaimer", result=None)
    s.call("c1.0", 60, "stop_reclaimer", result=None)
    s.end(100)
    return s
