"""A refqueue backend whose queue state lives in SQLite (stdlib ``sqlite3``),
written for docs/CERTIFYING.md.  Certify it from the repository root with

    refqueue certify examples.sqlite_backend:make

It is small and plain rather than fast: one in-memory database, one
``threading.Lock`` around every use of it, and two conditions for the calls
that wait.  The samples' data stays in the ``FeatureStore`` the factory is
given; the database holds only the control plane (refs as JSON, leases,
dead letters, the dedup memory).  ``Lease``, ``VisibilityTimeout`` and
``DeadLetter`` are refqueue's public types, so leases round-trip through
JSON as docs/API.md says.

Locking rule: ``self._lock`` guards the database and every field below it;
methods named ``_*_nowait`` and the helpers they call run with it held and
are the only code that changes state.  ``on_pause``/``on_resume`` are called
after the lock is released (D4), and ``store.scrub``/``store.health`` (O(1)
bookkeeping, docs/API.md) with it held, so that an ack and its scrub are one
step.
"""

from __future__ import annotations

import collections
import itertools
import math
import sqlite3
import sys
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from typing import Any

from refqueue import DeadLetter, Lease, SampleRef, VisibilityTimeout
from refqueue.clock import MonotonicClock
from refqueue.conformance import Capabilities
from refqueue.errors import DuplicateSample, ForeignLease, PutAborted, QueueClosed, ReplayedSample

__all__ = ["SqliteQueue", "make"]

_SCHEMA = """
CREATE TABLE samples (              -- one row per sample the queue holds, pending or leased
    sample_id    TEXT PRIMARY KEY,
    ref          TEXT NOT NULL,     -- SampleRef.to_json()
    queued       INTEGER,           -- position in the pending FIFO; NULL while leased
    lease_id     INTEGER,           -- the live lease; NULL while pending
    deadline     REAL,              -- the live lease's deadline (extend moves it)
    deliveries   INTEGER NOT NULL,  -- acquires of this incarnation
    redeliveries INTEGER NOT NULL   -- fails and reclaims of this incarnation
);
CREATE INDEX pending ON samples (queued) WHERE queued IS NOT NULL;
CREATE INDEX leased ON samples (deadline, sample_id) WHERE deadline IS NOT NULL;
CREATE TABLE dead (n INTEGER PRIMARY KEY, ref TEXT NOT NULL, reason TEXT NOT NULL, deliveries INTEGER NOT NULL);
CREATE TABLE completed (n INTEGER PRIMARY KEY, sample_id TEXT NOT NULL);  -- acked or dead, newest last
"""


def _seconds(what: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {value!r} ({type(value).__name__})")
    if isinstance(value, int) and value > threading.TIMEOUT_MAX:  # (an int too large for a float: no OverflowError)
        raise ValueError(f"{what} must be at most threading.TIMEOUT_MAX ({threading.TIMEOUT_MAX}), got an int of "
                         f"{len(str(value))} digits")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be finite and > 0, got {value!r}")
    if value > threading.TIMEOUT_MAX:
        raise ValueError(f"{what} must be at most threading.TIMEOUT_MAX ({threading.TIMEOUT_MAX}), got {value!r}")
    return float(value)


def _poll(value: object) -> float:
    """A poll interval: seconds as ``_seconds``, or ``math.inf`` (no timeout)."""
    return math.inf if isinstance(value, float) and value == math.inf else _seconds("poll_interval", value)


def _wait(condition: threading.Condition, remaining: float) -> None:
    condition.wait(None if remaining == math.inf else remaining)


class SqliteQueue:
    """``SampleRefQueue``'s public API (docs/API.md) over an in-memory SQLite database."""

    def __init__(
        self,
        store: Any,
        visibility_timeout: VisibilityTimeout | None = None,
        high_watermark_bytes: int | None = None,
        low_watermark_bytes: int | None = None,
        on_pause: Callable[[Any], None] | None = None,
        on_resume: Callable[[Any], None] | None = None,
        *,
        max_deliveries: int | None = None,
        dedup_window: int = 0,
        clock: Any = None,
        dead_letter_limit: int = 10_000,
    ) -> None:
        # Argument errors (TypeError/ValueError) before anything is made.
        vt = VisibilityTimeout() if visibility_timeout is None else visibility_timeout
        if not isinstance(vt, VisibilityTimeout):
            raise TypeError(f"visibility_timeout must be a VisibilityTimeout, got {vt!r}")
        high = store.high_watermark_bytes if high_watermark_bytes is None else high_watermark_bytes
        low = store.low_watermark_bytes if low_watermark_bytes is None else low_watermark_bytes
        if (high is None) != (low is None):
            raise ValueError(f"the effective watermarks are half set (high={high!r}, low={low!r}); set both or neither")
        if high is not None and not low < high:
            raise ValueError(f"the effective low watermark {low} must be < the high watermark {high}")
        if high is not None and store.capacity_bytes is not None and high > store.capacity_bytes:
            raise ValueError(f"the high watermark {high} exceeds the store's capacity {store.capacity_bytes}")
        if max_deliveries is not None and (
            isinstance(max_deliveries, bool) or not isinstance(max_deliveries, int) or max_deliveries < 1
        ):
            raise ValueError(f"max_deliveries must be None or an int >= 1, got {max_deliveries!r}")
        if isinstance(dedup_window, bool) or not isinstance(dedup_window, int) or dedup_window < 0:
            raise ValueError(f"dedup_window must be an int >= 0, got {dedup_window!r}")
        if isinstance(dead_letter_limit, bool) or not isinstance(dead_letter_limit, int):
            raise TypeError(f"dead_letter_limit must be an int, got {dead_letter_limit!r}")
        if not 0 <= dead_letter_limit <= sys.maxsize:
            raise ValueError(f"dead_letter_limit must be from 0 (keep none) to sys.maxsize, got {dead_letter_limit!r}")
        self._store = store
        self._vt = vt
        self._clock = MonotonicClock() if clock is None else clock
        self._high, self._low = high, low
        self._on_pause, self._on_resume = on_pause, on_resume
        self._max_deliveries = max_deliveries
        self._dedup = dedup_window
        self._dead_limit = dead_letter_limit
        self._dead_dropped = 0  # dead letters dropped, oldest first, to keep the limit
        self._epoch = uuid.uuid4().hex

        self._lock = threading.Lock()
        # Notified when a ref becomes pending (put, fail, reclaim) and when the queue
        # becomes drained (close, the last ack): consumers in acquire wait on it.
        self._ready = threading.Condition(self._lock)
        # Notified when a producer may be admitted now (an ack or dead-letter freed
        # bytes, a resume, a producer parked, close); _room_changes counts those, so a
        # producer tells a notification from a spurious wakeup.
        self._room = threading.Condition(self._lock)
        self._room_changes = 0
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._db.executescript(_SCHEMA)
        self._positions = itertools.count(1)  # pending order
        self._lease_ids = itertools.count(1)
        self._closed = False
        self._paused = False
        self._parked_bytes = 0  # estimated_bytes of the refs whose producers wait in put_blocks_until_below (D8)
        self._reclaimer: tuple[threading.Thread, threading.Event, list[BaseException]] | None = None
        # Callbacks not yet called, in the order of the changes they report, and whether
        # a thread is calling them: one thread at a time calls them, so a pause that
        # commits after a resume is never reported before it, whichever thread runs first.
        self._callbacks: collections.deque[tuple[Callable[[Any], None], Any]] = collections.deque()
        self._calling = False

    # -- producers -----------------------------------------------------------------------

    def put(self, ref: SampleRef) -> None:
        with self._lock:
            self._put_nowait("put", ref)

    def put_blocks_until_below(
        self, ref: SampleRef, poll_interval: float = 0.05, abort_when: Callable[[], bool] | None = None
    ) -> None:
        """Steps of the hysteresis (D4) on the effective residency (D8) until the ref
        is admitted; waits between steps, parked, for a change of room or
        ``poll_interval``."""
        poll = _poll(poll_interval)
        parked = [0]  # bytes this call has parked (0 or the ref's), read and written under the lock
        try:
            while True:
                with self._lock:
                    admitted, seen = self._step_nowait(ref, parked)
                self._call_back()  # outside the lock; an exception reaches the caller
                if admitted:
                    return
                if abort_when is not None and abort_when():
                    raise PutAborted(f"put_blocks_until_below({ref.sample_id!r}): abort_when() is true")
                deadline = time.monotonic() + poll
                with self._lock:
                    if not parked[0]:
                        news = self._room_changes != seen
                        self._park_nowait(parked, ref.estimated_bytes)
                        if not news:
                            seen = self._room_changes  # its own parking is no news to it
                    while self._room_changes == seen and (remaining := deadline - time.monotonic()) > 0:
                        _wait(self._room, remaining)
        finally:
            if parked[0]:
                with self._lock:
                    self._parked_bytes -= parked[0]
                    parked[0] = 0

    def _step_nowait(self, ref: SampleRef, parked: list[int]) -> tuple[bool, int]:
        self._validate_put("put_blocks_until_below", ref)  # a rejection parks nothing
        health = self._store.health()
        own = 0 if parked[0] else ref.estimated_bytes  # a step counts its own ref as parked
        effective = max(0, health.resident_bytes - self._parked_bytes - own)
        if self._high is None:
            paused = False
        elif self._paused:
            paused = not effective <= self._low
        else:
            paused = effective >= self._high
        if paused != self._paused:
            callback = self._on_pause if paused else self._on_resume
            if callback is not None:
                self._callbacks.append((callback, health))
            if not paused:
                self._notify_room()  # a resume lets the other producers step
        self._paused = paused
        admitted = not paused or not self._has_work()  # D8: nothing a consumer could free
        if admitted:
            self._parked_bytes -= parked[0]
            parked[0] = 0
            self._put_nowait("put_blocks_until_below", ref)
        return admitted, self._room_changes

    def _park_nowait(self, parked: list[int], nbytes: int) -> None:
        parked[0] = nbytes
        self._parked_bytes += nbytes
        self._notify_room()  # the other producers' effective residency just dropped

    def _validate_put(self, call: str, ref: object) -> None:
        if not isinstance(ref, SampleRef):
            raise TypeError(f"{call} needs a SampleRef, got {type(ref).__name__}")
        if ref.store_uri != self._store.uri:
            raise ValueError(f"{call}: ref {ref.sample_id!r} names store {ref.store_uri!r}, not {self._store.uri!r}")
        if self._closed:
            raise QueueClosed(f"{call}({ref.sample_id!r}) after close()")
        if self._row(ref.sample_id) is not None:
            raise DuplicateSample(f"{call}({ref.sample_id!r}): already pending or leased")
        if self._dedup and self._db.execute(
            "SELECT 1 FROM (SELECT sample_id FROM completed ORDER BY n DESC LIMIT ?) WHERE sample_id = ?",
            (self._dedup, ref.sample_id),
        ).fetchone():
            raise ReplayedSample(f"{call}({ref.sample_id!r}): completed within the last {self._dedup} samples")

    def _put_nowait(self, call: str, ref: SampleRef) -> None:
        self._validate_put(call, ref)
        self._db.execute(
            "INSERT INTO samples VALUES (?, ?, ?, NULL, NULL, 0, 0)", (ref.sample_id, ref.to_json(), next(self._positions))
        )
        self._ready.notify()

    # -- consumers -----------------------------------------------------------------------

    def acquire(self, poll_interval: float = 0.05) -> Lease | None:
        deadline = time.monotonic() + _poll(poll_interval)
        with self._lock:
            while True:
                lease = self._acquire_nowait()
                if lease is not None or self._drained():
                    return lease
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                _wait(self._ready, remaining)

    def acquire_nowait(self) -> Lease | None:
        with self._lock:
            return self._acquire_nowait()

    def _acquire_nowait(self) -> Lease | None:
        row = self._db.execute(
            "SELECT sample_id, ref, redeliveries FROM samples WHERE queued IS NOT NULL ORDER BY queued LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        sample_id, ref, redeliveries = row
        lease_id, deadline = next(self._lease_ids), self._clock.now() + self._vt.seconds
        self._db.execute(
            "UPDATE samples SET queued = NULL, lease_id = ?, deadline = ?, deliveries = deliveries + 1 "
            "WHERE sample_id = ?",
            (lease_id, deadline, sample_id),
        )
        return Lease(SampleRef.from_json(ref), deadline, self._vt, redeliveries, lease_id, self._epoch)

    def ack(self, lease: Lease) -> bool:
        with self._lock:
            if not self._live(lease, "ack"):
                return False
            self._finish_nowait(lease.ref.sample_id, None)
            return True

    def fail(self, lease: Lease) -> bool:
        with self._lock:
            if not self._live(lease, "fail"):
                return False
            self._requeue_nowait(lease.ref.sample_id)
            return True

    def dead_letter(self, lease: Lease, reason: str) -> bool:
        with self._lock:
            self._check_lease("dead_letter", lease)
            if not isinstance(reason, str) or not reason:
                raise ValueError(f"dead_letter needs a non-empty reason str, got {reason!r}")
            try:  # SQLite stores UTF-8: refuse here what its INSERT would raise on after the sample is gone
                reason.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(f"dead_letter reason {reason!r} holds a lone surrogate: it has no UTF-8 form") from None
            if not self._live(lease, "dead_letter"):
                return False
            self._finish_nowait(lease.ref.sample_id, reason)
            return True

    def extend(self, lease: Lease, seconds: float | None = None) -> bool:
        with self._lock:
            self._check_lease("extend", lease)
            seconds = self._vt.seconds if seconds is None else _seconds("extend(seconds)", seconds)
            if not self._live(lease, "extend"):
                return False
            deadline = self._clock.now() + seconds
            self._db.execute("UPDATE samples SET deadline = ? WHERE sample_id = ?", (deadline, lease.ref.sample_id))
            return True

    def _check_lease(self, call: str, lease: object) -> None:
        if not isinstance(lease, Lease):
            raise TypeError(f"{call} needs a Lease, got {type(lease).__name__}")
        if type(lease.lease_id) is not int:
            raise TypeError(f"{call}: lease_id {lease.lease_id!r} is not an int; pass the lease acquire returned")
        if lease.lease_id < 1:
            raise ValueError(f"{call}: lease_id {lease.lease_id} is below 1, which no queue mints (ids count up from 1)")
        if lease.epoch != self._epoch:
            raise ForeignLease(f"{call}: the lease is of queue {lease.epoch!r}, this queue is {self._epoch!r}")

    def _live(self, lease: Lease, call: str) -> bool:
        """Whether ``lease`` is its sample's live lease (identity: epoch and lease_id, D1)."""
        self._check_lease(call, lease)
        row = self._db.execute("SELECT lease_id FROM samples WHERE sample_id = ?", (lease.ref.sample_id,)).fetchone()
        return row is not None and row[0] == lease.lease_id

    def _finish_nowait(self, sample_id: str, reason: str | None) -> None:
        """Ack (``reason`` None) or dead-letter: the data is scrubbed first (a scrub that
        raises changes nothing), then the sample leaves (D2)."""
        ref, deliveries = self._db.execute("SELECT ref, deliveries FROM samples WHERE sample_id = ?", (sample_id,)).fetchone()
        self._store.scrub(SampleRef.from_json(ref))
        self._db.execute("DELETE FROM samples WHERE sample_id = ?", (sample_id,))
        if reason is not None:
            self._db.execute("INSERT INTO dead (ref, reason, deliveries) VALUES (?, ?, ?)", (ref, reason, deliveries))
            (kept,) = self._db.execute("SELECT count(*) FROM dead").fetchone()
            if kept > self._dead_limit:  # past the limit: the oldest goes, counted
                self._db.execute("DELETE FROM dead WHERE n = (SELECT min(n) FROM dead)")
                self._dead_dropped += 1
        if self._dedup:
            self._db.execute("INSERT INTO completed (sample_id) VALUES (?)", (sample_id,))
        self._notify_room()
        if self._drained():
            self._ready.notify_all()

    def _requeue_nowait(self, sample_id: str) -> None:
        """Fail or reclaim: to the tail of pending, or dead-lettered at ``max_deliveries`` (D7)."""
        (deliveries,) = self._db.execute("SELECT deliveries FROM samples WHERE sample_id = ?", (sample_id,)).fetchone()
        if self._max_deliveries is not None and deliveries >= self._max_deliveries:
            self._finish_nowait(sample_id, "max_deliveries")  # (its scrub first: one that raises changes nothing)
            return
        self._db.execute(
            "UPDATE samples SET lease_id = NULL, deadline = NULL, redeliveries = redeliveries + 1 WHERE sample_id = ?",
            (sample_id,),
        )
        self._db.execute("UPDATE samples SET queued = ? WHERE sample_id = ?", (next(self._positions), sample_id))
        self._ready.notify()

    # -- the environment -------------------------------------------------------------------

    def reclaim_expired(self) -> int:
        with self._lock:
            due = self._db.execute(
                "SELECT sample_id FROM samples WHERE deadline IS NOT NULL AND deadline <= ? ORDER BY deadline, sample_id",
                (self._clock.now(),),
            ).fetchall()
            for (sample_id,) in due:
                self._requeue_nowait(sample_id)
            return len(due)

    def __enter__(self) -> SqliteQueue:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop_reclaimer()
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._ready.notify_all()
            self._notify_room()
            # a drained queue's reclaimer is done: stopped and joined here; an error that
            # stopped it stays for the next stop_reclaimer (close never raises it)
            reclaimer = self._reclaimer if self._drained() else None
        if reclaimer is not None:
            thread, stop, _ = reclaimer
            stop.set()
            if thread is not threading.current_thread():
                thread.join()

    def start_reclaimer(self, interval: float | None = None) -> None:
        interval = self._vt.seconds / 4 if interval is None else _seconds("start_reclaimer(interval)", interval)
        stop = threading.Event()  # set by stop_reclaimer, by close at the drain, when the queue is collected, and at the end
        stopped_by: list[BaseException] = []  # the error that ended the thread early, for stop_reclaimer
        # The thread holds the queue weakly (the reference's callback holds the event only),
        # so a queue dropped without close() is collected and its reclaimer ends at once.
        queue = weakref.ref(self, lambda _ref: stop.set())
        thread = threading.Thread(target=_reclaim_every, args=(queue, interval, stop, stopped_by), daemon=True)
        with self._lock:
            if self._reclaimer is not None and not self._reclaimer[1].is_set():  # (set: stopping or ended)
                raise RuntimeError("start_reclaimer: a reclaimer is already running; call stop_reclaimer() first")
            self._reclaimer = (thread, stop, stopped_by)
        thread.start()

    def stop_reclaimer(self) -> None:
        """Stop the reclaimer and wait for it; an error that stopped it early
        is raised here, as ``RuntimeError`` (docs/API.md)."""
        with self._lock:
            reclaimer, self._reclaimer = self._reclaimer, None
        if reclaimer is not None:
            thread, stop, stopped_by = reclaimer
            stop.set()
            thread.join()
            if stopped_by:
                raise RuntimeError(f"the reclaimer stopped early: {stopped_by[0]!r}") from stopped_by[0]

    # -- observers ---------------------------------------------------------------------------

    @property
    def epoch(self) -> str:
        return self._epoch

    @property
    def store(self) -> Any:
        return self._store

    @property
    def visibility_timeout(self) -> VisibilityTimeout:
        return self._vt

    @property
    def is_closed(self) -> bool:
        return self._closed

    @property
    def is_drained(self) -> bool:
        with self._lock:
            return self._drained()

    @property
    def is_paused(self) -> bool:
        return self._paused

    @property
    def parked_bytes(self) -> int:
        with self._lock:
            return self._parked_bytes

    def pending_count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM samples WHERE queued IS NOT NULL").fetchone()[0]

    def outstanding_count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM samples WHERE lease_id IS NOT NULL").fetchone()[0]

    def dead_letters(self) -> list[DeadLetter]:
        with self._lock:
            rows = self._db.execute("SELECT ref, reason, deliveries FROM dead ORDER BY n").fetchall()
        return [DeadLetter(SampleRef.from_json(ref), reason, deliveries) for ref, reason, deliveries in rows]

    def drain_dead_letters(self) -> list[DeadLetter]:
        """The dead letters kept, oldest first, taken out of the queue (draining drops none)."""
        with self._lock:
            rows = self._db.execute("SELECT ref, reason, deliveries FROM dead ORDER BY n").fetchall()
            self._db.execute("DELETE FROM dead")
        return [DeadLetter(SampleRef.from_json(ref), reason, deliveries) for ref, reason, deliveries in rows]

    @property
    def dead_letters_dropped(self) -> int:
        with self._lock:
            return self._dead_dropped

    @property
    def dead_letter_limit(self) -> int:
        return self._dead_limit

    # -- helpers (lock held) -------------------------------------------------------------------

    def _row(self, sample_id: str) -> tuple[Any, ...] | None:
        return self._db.execute("SELECT 1 FROM samples WHERE sample_id = ?", (sample_id,)).fetchone()

    def _has_work(self) -> bool:
        return self._db.execute("SELECT 1 FROM samples LIMIT 1").fetchone() is not None  # pending or leased

    def _drained(self) -> bool:
        return self._closed and not self._has_work()

    def _notify_room(self) -> None:
        self._room_changes += 1
        self._room.notify_all()

    def _call_back(self) -> None:
        """Call the waiting callbacks in order, with no lock held, unless another
        thread is calling them already (it calls this thread's too)."""
        with self._lock:
            if self._calling or not self._callbacks:
                return
            self._calling = True
        try:
            while True:
                with self._lock:
                    if not self._callbacks:
                        self._calling = False
                        return
                    callback, health = self._callbacks.popleft()
                callback(health)
        except BaseException:
            with self._lock:
                self._calling = False
            raise


def _reclaim_every(
    queue: weakref.ref[SqliteQueue], interval: float, stop: threading.Event, stopped_by: list[BaseException]
) -> None:
    """The reclaimer thread: a reclaim every ``interval`` (``Event.wait`` is the period's
    timer and the stop signal), the queue held for one reclaim only; it ends once the
    closed queue has drained (no lease left, none can come) or the queue is collected."""
    try:
        while not stop.wait(interval):
            q = queue()
            if q is None:
                return
            q.reclaim_expired()
            if q.is_drained:
                return
            del q
    except Exception as exc:  # a reclaim that raised (a dead-letter's scrub): kept, never lost
        stopped_by.append(exc)
    finally:
        stop.set()  # ended: a new start_reclaimer may start one


def make(store: Any, clock: Any, **config: Any) -> SqliteQueue:
    """The conformance factory: ``visibility_timeout`` arrives as seconds (a
    number) and is wrapped here; the other keys are the queue's keywords."""
    seconds = config.pop("visibility_timeout", None)
    return SqliteQueue(store, None if seconds is None else VisibilityTimeout(seconds), clock=clock, **config)


# Everything docs/API.md specifies (the default, spelled out for the reader).
make.capabilities = Capabilities(dead_letter_limit=True)  # type: ignore[attr-defined]
