"""Structured events of a queue and its store: one ordered stream (issue 13).

An ``EventLog`` is handed to ``SampleRefQueue(store, events=log)`` (and, for
store events, ``LocalFeatureStore(..., events=log)``).  Each state change
then emits one record, a plain dict of JSON values, with a sequence number
``seq`` taken while the emitter holds its own lock (the queue's for queue
events) and, when several sources share the log, the log's lock too:
``seq`` order is the order in which the queue's lock was held, so replaying
records by ``seq`` replays the run.
With no log (the default) the queue's only cost is one ``is not None`` test
per operation.

Every record has ``seq``, ``ev`` (the event name), ``t`` (seconds: the
queue's clock for queue events, ``time.monotonic()`` for store events),
``pid`` and ``tid`` (process and thread of the caller), and ``q`` (the
queue's number in this log) or ``s`` (the store's).  ``docs/EVENTS.md``
lists every event and its fields.

Sinks receive each record in ``seq`` order:

* ``RingSink(capacity)``: the newest ``capacity`` records in memory.
* ``JsonlSink(path, max_bytes, backups)``: one JSON object a line, rotated
  to ``path.1`` ... ``path.<backups>`` past ``max_bytes``.
* ``CallbackSink(fn)``: ``fn(record)`` on the sink's own thread, in order,
  outside every lock (a slow callback never stalls the queue; ``flush``
  waits for the backlog).

A sink's ``write`` runs with the emitter's lock held, so it must be quick
and must never call back into the queue or store.  No pickle: records are
JSON values only.

**A failing sink never fails a call** (issue 21).  A record is emitted after
its state change committed, so an exception from a sink's ``write`` (a log
on a full disk, a network log that is down) is caught by the ``EventLog``,
counted (``sink_errors``, ``last_sink_error``), logged once per sink
(logger ``refqueue.events``), and the other sinks and the call carry on: a
state change either happens and returns, or does not happen and raises.
The failed sink misses that record (``trace-check`` then reports the gap in
``seq``).  Only a sink that sets ``propagate_errors = True`` (the
``Monitor`` with ``on_violation="raise"``) has its exception raised out of
the call.  ``JsonlSink`` reopens its file at the next write after a failed
write or rotation, so it writes again once space is freed; ``CallbackSink``
keeps at most ``max_backlog`` records waiting for its callback and none once
the callback raised (the rest are counted in ``dropped``).
"""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
import threading
import time
from collections import deque
from operator import itemgetter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, TextIO

from refqueue._checks import check_count

__all__ = ["EventLog", "Sink", "RingSink", "JsonlSink", "CallbackSink", "QUEUE_EVENTS", "STORE_EVENTS",
           "LOADER_EVENTS"]

# Queue events, in the order of spec/SampleRefQueue.tla's actions.
QUEUE_EVENTS = (
    "open", "put", "try_put", "park", "unpark", "pause", "resume", "acquire", "wait", "ack", "fail",
    "dead_letter", "extend", "reclaim", "close",
)
STORE_EVENTS = ("store_open", "store_put", "get", "release", "scrub", "store_close")
# A FeatureDataLoader's events, recorded as records of the queue it reads
# (``SampleRefQueue.emit_event``): they change no queue state, and the trace
# checkers step over them.
LOADER_EVENTS = ("loader_wait", "loader_batch", "loader_retry")

_get_ident = threading.get_ident
logger = logging.getLogger(__name__)


class Sink(Protocol):
    def write(self, record: dict[str, Any]) -> None: ...


def _check_positive_int(name: str, value: object, fix: str) -> int:
    """An int from 1 to ``sys.maxsize`` (more than a deque, a list or a file offset holds)."""
    return check_count(name, value, 1, fix, sys.maxsize)


class RingSink:
    """The newest ``capacity`` records, in ``seq`` order (a bounded deque)."""

    def __init__(self, capacity: int = 100_000) -> None:
        _check_positive_int("RingSink(capacity)", capacity, "pass how many records to keep, e.g. 100000")
        self._records: deque[dict[str, Any]] = deque(maxlen=capacity)
        self.write = self._records.append  # called under the emitter's lock: one C call
        self._lock = threading.Lock()

    @property
    def capacity(self) -> int:
        return self._records.maxlen  # type: ignore[return-value]

    def records(self) -> list[dict[str, Any]]:
        """A copy of the records kept, oldest first."""
        while True:
            try:
                return list(self._records)
            except RuntimeError:  # appended to while copied: copy again
                continue

    def dump(self, path: str | os.PathLike[str]) -> int:
        """Write the records kept to ``path`` as JSON lines; returns how many."""
        records = self.records()
        with open(path, "w", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record, separators=(",", ":")))
                out.write("\n")
        return len(records)


class JsonlSink:
    """One JSON object a line in ``path``; past ``max_bytes`` the file is
    rotated (``path`` -> ``path.1`` -> ... -> ``path.<backups>``, the oldest
    dropped).  ``trace-check`` and ``report`` read a rotated set back when
    given all its files (records carry ``seq``).  Lines are buffered:
    ``flush()`` or ``close()`` makes them visible; with ``flush_every``
    (seconds) a write also flushes once the last flush is that old (for
    ``refqueue top`` following the file)."""

    def __init__(self, path: str | os.PathLike[str], max_bytes: int = 256 * 1024 * 1024, backups: int = 8,
                 flush_every: float | None = None) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"JsonlSink(path) must be a path, got {path!r}; pass the file to write, e.g. 'run.jsonl'")
        if os.fspath(path) == "":
            raise ValueError("JsonlSink(path) is empty; pass the file to write, e.g. 'run.jsonl'")
        _check_positive_int("JsonlSink(max_bytes)", max_bytes, "pass the size at which to rotate, in bytes")
        if isinstance(backups, bool) or not isinstance(backups, int) or backups < 0:
            raise ValueError(f"JsonlSink(backups) must be an int >= 0, got {backups!r}; pass how many old files to keep")
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise FileNotFoundError(
                f"JsonlSink(path={str(path)!r}): folder {str(self.path.parent)!r} does not exist; create it first"
            )
        if flush_every is not None and (isinstance(flush_every, bool) or not isinstance(flush_every, (int, float))
                                        or not flush_every >= 0):
            raise ValueError(f"JsonlSink(flush_every) must be None or seconds >= 0, got {flush_every!r}")
        self.max_bytes = max_bytes
        self.backups = backups
        self.flush_every = flush_every
        self._flushed_at = time.monotonic()
        self._file: TextIO | None = open(self.path, "w", encoding="utf-8")
        self._size = 0
        self._dumps = json.JSONEncoder(separators=(",", ":")).encode

    def write(self, record: dict[str, Any]) -> None:
        line = self._dumps(record) + "\n"
        file = self._file
        if file is None:  # a write or rotation failed (a full disk): open the file again
            file = self._reopen()
        try:
            file.write(line)
        except ValueError:  # closed under us: drop it, the next write reopens
            self._file = None
            raise
        self._size += len(line)
        if self._size >= self.max_bytes:
            self._rotate()
        if self.flush_every is not None:
            now = time.monotonic()
            if now - self._flushed_at >= self.flush_every:
                self._file.flush()  # type: ignore[union-attr]
                self._flushed_at = now

    def _reopen(self) -> Any:
        file = open(self.path, "a", encoding="utf-8")
        self._file = file
        self._size = file.tell()
        return file

    def files(self) -> list[Path]:
        """The files of this sink that exist, oldest first."""
        old = [self.path.with_name(f"{self.path.name}.{k}") for k in range(self.backups, 0, -1)]
        return [p for p in old + [self.path] if p.exists()]

    def _rotate(self) -> None:
        """Close the file and shift the backups.  If any step raises (a full
        disk cannot take the close's flush), the sink holds no file and the
        next write opens ``path`` again (append): it never keeps a closed one."""
        file, self._file = self._file, None
        if file is not None:
            file.close()
        if self.backups == 0:
            self.path.unlink()
        else:
            for k in range(self.backups - 1, 0, -1):
                older = self.path.with_name(f"{self.path.name}.{k}")
                if older.exists():
                    older.replace(self.path.with_name(f"{self.path.name}.{k + 1}"))
            self.path.replace(self.path.with_name(f"{self.path.name}.1"))
        self._file = open(self.path, "w", encoding="utf-8")
        self._size = 0

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            file.close()


class CallbackSink:
    """Calls ``fn(record)`` for every record, in ``seq`` order, on a daemon
    thread of its own: never under the queue's or the store's lock.  An
    exception from ``fn`` is kept (``error``) and stops delivery; ``flush``
    re-raises it.  At most ``max_backlog`` records wait for ``fn``: a record
    written while that many wait, or after ``fn`` raised, is dropped and
    counted (``dropped``; ``flush`` raises once for the drops since the last
    flush), so a callback that blocks or died never makes the sink keep
    every record in memory."""

    def __init__(self, fn: Callable[[dict[str, Any]], Any], max_backlog: int = 10_000) -> None:
        if not callable(fn):
            raise TypeError(f"CallbackSink(fn) must be callable, got {fn!r}; pass a function taking one record dict")
        _check_positive_int("CallbackSink(max_backlog)", max_backlog,
                            "pass how many records may wait for the callback, e.g. 10000")
        self._fn = fn
        self.max_backlog = max_backlog
        self.dropped = 0
        self._dropped_reported = 0
        self._backlog: deque[dict[str, Any]] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._written = 0
        self._delivered = 0
        self._closed = False
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._deliver, name="refqueue-events-callback", daemon=True)
        self._thread.start()

    def write(self, record: dict[str, Any]) -> None:
        with self._cond:
            if self._closed or len(self._backlog) >= self.max_backlog:
                self.dropped += 1
                return
            self._backlog.append(record)
            self._written += 1
            self._cond.notify()

    @property
    def backlog(self) -> int:
        """Records written and not yet delivered."""
        with self._cond:
            return len(self._backlog)

    def _deliver(self) -> None:
        while True:
            with self._cond:
                while not self._backlog and not self._closed:
                    self._cond.wait()
                if not self._backlog:
                    return
                record = self._backlog.popleft()
            try:
                self._fn(record)
            except BaseException as exc:  # kept for flush(); delivery stops, nothing more is kept
                with self._cond:
                    self.error = exc
                    self._closed = True
                    self.dropped += len(self._backlog)
                    self._backlog.clear()
                    self._cond.notify_all()
                logger.warning("CallbackSink: the callback raised %r; delivery stopped, later records are dropped "
                               "(flush() raises it)", exc)
                return
            with self._cond:
                self._delivered += 1
                self._cond.notify_all()

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until every record written so far was delivered (at most
        ``timeout`` seconds, then ``TimeoutError``)."""
        with self._cond:
            target = self._written
            if not self._cond.wait_for(lambda: self._delivered >= target or self.error is not None, timeout):
                raise TimeoutError(
                    f"CallbackSink.flush: {target - self._delivered} records still undelivered after {timeout} s; "
                    f"the callback is slow or blocked"
                )
            if self.error is not None:
                raise RuntimeError(f"CallbackSink: the callback raised {self.error!r}; delivery stopped") from self.error
            if self.dropped > self._dropped_reported:
                count, self._dropped_reported = self.dropped - self._dropped_reported, self.dropped
                raise RuntimeError(
                    f"CallbackSink: dropped {count} records since the last flush: more than max_backlog="
                    f"{self.max_backlog} waited for the callback; make the callback faster or max_backlog larger"
                )

    def close(self, timeout: float = 10.0) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)


class EventLog:
    """The ordered stream one or more queues and stores emit into.

    ``emit(record)`` stamps ``seq``, ``pid`` and ``tid`` and hands the record
    to every sink under the log's lock (a leaf lock: sinks never call back).
    ``register(kind, fields)`` numbers a queue (``kind="queue"``) or store and
    emits its ``open``/``store_open`` record.
    """

    def __init__(self, *sinks: Sink) -> None:
        for sink in sinks:
            if not callable(getattr(sink, "write", None)):
                raise TypeError(f"EventLog sinks need a write(record) method, got {sink!r}; pass RingSink(), "
                                f"JsonlSink(path) or CallbackSink(fn)")
        self._sinks: tuple[Sink, ...] = tuple(sinks)
        self._writes: tuple[Callable[[dict[str, Any]], None], ...] = tuple(s.write for s in sinks)
        # sink failures survived (see the module's notes), under the emitter's lock
        self.sink_errors = 0
        self.last_sink_error: BaseException | None = None
        self._warned: set[int] = set()
        self._lock = threading.Lock()
        self._seq = 0
        self._numbers = {"queue": 0, "store": 0}
        self._sources = 0  # queues and stores registered: more than one and emit locks
        self._opened: list[dict[str, Any]] = []  # the open/store_open records, for late sinks
        self._pid = os.getpid()

    @property
    def sinks(self) -> tuple[Sink, ...]:
        return self._sinks

    @property
    def pid(self) -> int:
        """The process id stamped on this log's records."""
        return self._pid

    @property
    def seq(self) -> int:
        """The last sequence number given out (0: nothing emitted yet)."""
        return self._seq

    def add_sink(self, sink: Sink) -> None:
        """Attach another sink; it sees the records emitted from now on."""
        if not callable(getattr(sink, "write", None)):
            raise TypeError(f"EventLog.add_sink needs a sink with write(record), got {sink!r}")
        with self._lock:
            self._sinks = self._sinks + (sink,)
            self._writes = self._writes + (sink.write,)

    def register(self, kind: str, record: dict[str, Any]) -> int:
        """Number a new queue or store in this log and emit its opening record."""
        with self._lock:
            self._numbers[kind] += 1
            number = self._numbers[kind]
            self._sources += 1
        record["q" if kind == "queue" else "s"] = number
        self.emit(record)
        self._opened.append(record)
        return number

    def opened(self) -> list[dict[str, Any]]:
        """The ``open``/``store_open`` records emitted so far, in order (a
        sink attached later, such as a ``Monitor``, starts from them)."""
        return list(self._opened)

    def emit(self, record: dict[str, Any]) -> None:
        """Stamp ``seq``, ``pid``, ``tid`` and write ``record`` to every sink.
        A log with one source (a queue alone) is only ever emitted to under
        that source's own lock, so it takes no lock of its own; with more
        (a queue and its store, several queues) it takes its lock.  So build
        every source of a log (stores, queues) before any of them is used."""
        if self._sources > 1:
            with self._lock:
                self._seq = seq = self._seq + 1
                record["seq"] = seq
                record["pid"] = self._pid
                record["tid"] = _get_ident()
                for write in self._writes:
                    try:
                        write(record)
                    except Exception as exc:
                        if self._sink_failed(write, exc):
                            raise
        else:
            self._seq = seq = self._seq + 1
            record["seq"] = seq
            record["pid"] = self._pid
            record["tid"] = _get_ident()
            for write in self._writes:
                try:
                    write(record)
                except Exception as exc:
                    if self._sink_failed(write, exc):
                        raise

    def emitter(self, key: str, number: int, now: Callable[[], float]) -> Callable[[dict[str, Any]], None]:
        """The ``emit`` of one source: stamps ``key`` (``"q"`` or ``"s"``) =
        ``number`` and ``t`` = ``now()`` unless the record has a ``t`` (``None``
        if ``now`` raises: the source's step has committed already), then as
        ``emit``.  One call per record, for the queue's hot path."""
        log = self
        pid = self._pid
        lock = self._lock
        get_ident = _get_ident

        def emit(record: dict[str, Any]) -> None:
            record[key] = number
            if "t" not in record:
                try:
                    record["t"] = now()
                except Exception:
                    record["t"] = None
            if log._sources > 1:
                with lock:
                    log._seq = seq = log._seq + 1
                    record["seq"] = seq
                    record["pid"] = pid
                    record["tid"] = get_ident()
                    for write in log._writes:
                        try:
                            write(record)
                        except Exception as exc:
                            if log._sink_failed(write, exc):
                                raise
            else:
                log._seq = seq = log._seq + 1
                record["seq"] = seq
                record["pid"] = pid
                record["tid"] = get_ident()
                for write in log._writes:
                    try:
                        write(record)
                    except Exception as exc:
                        if log._sink_failed(write, exc):
                            raise

        return emit

    def _sink_failed(self, write: Callable[[dict[str, Any]], None], exc: Exception) -> bool:
        """Count a sink's failure (emitter's lock held); True if the sink wants
        its exception raised out of the call (``propagate_errors``)."""
        sink = getattr(write, "__self__", None)
        if getattr(sink, "propagate_errors", False):
            return True
        self.sink_errors += 1
        self.last_sink_error = exc
        if id(sink) not in self._warned:
            self._warned.add(id(sink))
            logger.warning("refqueue.events: sink %r raised %s: %s; it misses that record and the queue carries on "
                           "(EventLog.sink_errors counts such failures)", sink, type(exc).__name__, exc)
        return False

    def flush(self) -> None:
        for sink in self._sinks:
            flush = getattr(sink, "flush", None)
            if flush is not None:
                flush()

    def close(self) -> None:
        for sink in self._sinks:
            close = getattr(sink, "close", None)
            if close is not None:
                close()


def check_event_log(call: str, events: object) -> EventLog | None:
    """``events`` as an ``EventLog`` or None; else the error naming the fix."""
    if events is None or isinstance(events, EventLog):
        return events
    raise TypeError(
        f"{call}(events) must be a refqueue.events.EventLog or None, got {events!r} ({type(events).__name__}); "
        f"pass EventLog(RingSink()) or leave it out"
    )


def read_jsonl(paths: Iterable[str | os.PathLike[str]], *, check: bool = False) -> list[dict[str, Any]]:
    """Every record of the JSON-lines files ``paths`` (unsorted).  Raises
    ``ValueError`` naming the file (and the line) of a file that is not a
    regular file (a FIFO would block the read for ever), is not UTF-8, or
    has a line that is not one JSON object (JSON nested too deeply
    included); with ``check``, also of a record that is not one
    ``refqueue.events`` writes (``refqueue.event_records.problem``: a field
    of the wrong type, a missing one).  Each file is parsed as one JSON
    array of its lines, each line in brackets of its own (a single C parse);
    only a file that does not parse that way, or has a line holding other
    than one value, is read again line by line to find the bad line."""
    from refqueue.event_records import problem

    if isinstance(paths, (str, bytes, os.PathLike)):  # (a str would be read as its characters, each a file)
        raise TypeError(f"read_jsonl(paths) takes a list of paths, got the one path {paths!r}; pass [{paths!r}]")
    try:
        paths = list(paths)
    except TypeError:
        raise TypeError(f"read_jsonl(paths) must be a list of paths, got {paths!r}; pass e.g. ['run.jsonl']") from None
    records: list[dict[str, Any]] = []
    for path in paths:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"read_jsonl(paths) holds {path!r}, which is not a path; pass str or os.PathLike paths")
        text = _read_text(path)
        numbered = [(n, line) for n, line in enumerate(text.split("\n"), 1) if line and not line.isspace()]
        lines = [line for _, line in numbered]
        # Each line in brackets of its own: a line must hold whole values (a record broken over two
        # lines does not parse), and exactly one (two records joined on a line make a list of two).
        try:
            wrapped = json.loads("[[" + "],[".join(lines) + "]]") if lines else []
        except (ValueError, RecursionError):
            wrapped = None
        parsed = None if wrapped is None or set(map(len, wrapped)) - {1} else list(map(itemgetter(0), wrapped))
        if parsed is None or len(parsed) != len(lines) or any(type(r) is not dict for r in parsed):
            _find_bad_line(path, numbered)
            raise ValueError(f"{path}: not one JSON object a line; pass an event log written by JsonlSink")
        if check:
            for (number, _), record in zip(numbered, parsed):
                why = problem(record)
                if why is not None:
                    raise ValueError(f"{path}:{number}: record {why}; pass an event log written by refqueue.events")
        records.extend(parsed)
    return records


def _read_text(path: str | os.PathLike[str]) -> str:
    """The UTF-8 text of the regular file ``path`` (opened without blocking: a
    FIFO or a device is refused, not read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path}: not a regular file (a FIFO, a folder or a device); pass the JSONL files a "
                             f"JsonlSink wrote")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read()
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ValueError(f"{path}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start}); pass an event log "
                         f"written by JsonlSink") from None


def _find_bad_line(path: str | os.PathLike[str], numbered: list[tuple[int, str]]) -> None:
    """Raise ``ValueError`` naming the first line of ``path`` that is not one JSON object."""
    for number, line in numbered:
        try:
            record = json.loads(line)
        except RecursionError:
            raise ValueError(f"{path}:{number}: JSON nested too deeply to read; pass an event log "
                             f"written by JsonlSink") from None
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: not a JSON line ({exc}); pass an event log "
                             f"written by JsonlSink") from None
        if type(record) is not dict:
            raise ValueError(f"{path}:{number}: a JSON {type(record).__name__}, not an event object")


class RecordedBackend:
    """Record the calls of any queue backend of docs/API.md from outside.

    For a backend with no event hooks of its own (a conformance-kit backend,
    a mutant): each call runs under this wrapper's lock and then emits the
    record of what it returned, so ``seq`` order is call order.  ``config``
    is what the backend was built with (``visibility_timeout``,
    ``max_deliveries``, ``dedup_window``, watermarks); ``clock`` is the
    backend's clock (read for ``t``).  A ``reclaim`` record carries only the
    ``count`` (a backend does not say which leases it took back), which
    trace-check compares with the model's.
    """

    def __init__(self, backend: Any, log: EventLog, clock: Any, **config: Any) -> None:
        if not isinstance(log, EventLog):
            raise TypeError(f"RecordedBackend(log) must be an EventLog, got {log!r}")
        if not callable(getattr(clock, "now", None)):
            raise TypeError(f"RecordedBackend(clock) needs a clock with now(), got {clock!r}; pass the backend's clock")
        self.backend = backend
        self._log = log
        self._clock = clock
        self._lock = threading.Lock()
        vt = config.get("visibility_timeout", 30.0)
        self._vt = float(getattr(vt, "seconds", vt))
        store = getattr(backend, "_store", None)
        self._q = log.register("queue", {
            "ev": "open", "t": clock.now(), "epoch": backend.epoch, "store": getattr(store, "uri", None),
            "visibility_timeout": self._vt, "high": config.get("high_watermark_bytes"),
            "low": config.get("low_watermark_bytes"), "store_high": None, "store_low": None,
            "capacity_bytes": None, "max_deliveries": config.get("max_deliveries"),
            "dedup_window": config.get("dedup_window", 0), "fifo": True,
        })

    def _emit(self, record: dict[str, Any]) -> None:
        record["q"] = self._q
        record.setdefault("t", self._clock.now())
        self._log.emit(record)

    def put(self, ref: Any) -> None:
        with self._lock:
            self.backend.put(ref)
            self._emit({"ev": "put", "sample": ref.sample_id})

    def acquire(self, poll_interval: float = 0.05) -> Any:
        with self._lock:
            now = self._clock.now()
            lease = self.backend.acquire_nowait()
            if lease is None:
                self._emit({"ev": "acquire", "t": now, "sample": None})
            else:
                self._emit({"ev": "acquire", "t": now, "sample": lease.ref.sample_id, "lease": lease.lease_id,
                            "redeliveries": lease.redelivery_count, "deadline": lease.deadline})
            return lease

    acquire_nowait = acquire

    def _lease_call(self, ev: str, lease: Any, *args: Any) -> bool:
        with self._lock:
            before = len(self.backend.dead_letters()) if ev == "fail" else 0
            live: bool = getattr(self.backend, ev)(lease, *args)
            record = {"ev": ev, "sample": lease.ref.sample_id, "lease": lease.lease_id, "live": bool(live)}
            if ev == "fail" and live:
                record["dead"] = len(self.backend.dead_letters()) > before
            if ev == "extend" and live:
                record["seconds"] = args[0] if args and args[0] is not None else self._vt
            if ev == "dead_letter":
                record["reason"] = args[0]
            self._emit(record)
            return live

    def ack(self, lease: Any) -> bool:
        return self._lease_call("ack", lease)

    def fail(self, lease: Any) -> bool:
        return self._lease_call("fail", lease)

    def dead_letter(self, lease: Any, reason: str) -> bool:
        return self._lease_call("dead_letter", lease, reason)

    def extend(self, lease: Any, seconds: float | None = None) -> bool:
        return self._lease_call("extend", lease, seconds)

    def reclaim_expired(self) -> int:
        with self._lock:
            now = self._clock.now()
            count: int = self.backend.reclaim_expired()
            self._emit({"ev": "reclaim", "t": now, "count": count})
            return count

    def close(self) -> None:
        with self._lock:
            self.backend.close()
            self._emit({"ev": "close"})
