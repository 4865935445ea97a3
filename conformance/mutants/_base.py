"""A small, plainly correct backend that the conformance kit certifies, and
that every mutant breaks in exactly one place.

It is written for reading, not speed: one ``threading.Lock``, plain lists
and dicts, linear scans.  It shares no code with ``refqueue.queue`` (so a
mutant never depends on the production queue's internals) nor with the
reference model (so certifying it checks something).  Each rule of
``docs/API.md`` lives in one small method a mutant can override:

``_validate_put``   what a put refuses            ``_live``        which lease is live
``_duplicate``      which ids are taken            ``_window``      the dedup memory
``_requeue``        fail and reclaim               ``_expired``     what reclaim takes back
``_finish``         ack and dead-letter (scrub)    ``_next_paused`` the hysteresis step
``_drained``        the terminal None              ``_remember``    the dedup window
``_effective``      residency the hysteresis sees  ``_admits``      whether a step enqueues
``_wake_producers`` who a change of room wakes     ``_wake_if_drained`` consumers at the drain
``_keep_dead``      which dead letters the limit drops

Backpressure (D8): a blocking put that goes to wait *parks* its ref (its
bytes join ``_parked_bytes``) until the call ends, however it ends, and wakes
the other waiting producers (their effective residency just dropped).  A
step looks at ``resident - parked - its own bytes`` (``_effective``: its own
are discounted whether parked yet or not, so a one-step call parks nothing
and is one atomic model ``put_step``), and enqueues its ref when not paused
afterwards or when nothing is pending or leased (``_admits``: no consumer
could free a byte; the pause stands).

Locking rule: ``self._lock`` guards every field; ``_*_nowait`` methods and
the helpers above run with it held and are the only code that changes
state.  Callbacks (``on_pause``/``on_resume``) run after the lock is
released, one at a time and in the order of the changes they report: a step
queues its callback with the lock held (``_announce``), and ``_fire`` calls
the queued ones unless another thread is already calling them.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from refqueue.conformance.contract import Capabilities
from refqueue.errors import DuplicateSample, ForeignLease, PutAborted, QueueClosed, ReplayedSample
from refqueue.refs import SampleRef, load_json

__all__ = ["BaseQueue", "DeadLetter", "Lease", "Timeout", "factory"]


def _check_seconds(what: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {value!r} ({type(value).__name__})")
    if isinstance(value, int) and value > threading.TIMEOUT_MAX:  # (before a float of it overflows)
        raise ValueError(f"{what} must be at most threading.TIMEOUT_MAX ({threading.TIMEOUT_MAX}), got an int of "
                         f"{len(str(value))} digits")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be finite and > 0, got {value!r}; pass a positive number of seconds")
    if value > threading.TIMEOUT_MAX:
        raise ValueError(f"{what} must be at most threading.TIMEOUT_MAX ({threading.TIMEOUT_MAX}), got {value!r}")
    return float(value)


def _check_poll(what: str, value: object) -> float:
    """A poll interval: as ``_check_seconds``, or ``math.inf`` (wait with no timeout)."""
    if isinstance(value, float) and value == math.inf:
        return value
    return _check_seconds(what, value)


def _wait(condition: threading.Condition, remaining: float) -> None:
    condition.wait(None if remaining == math.inf else remaining)


@dataclass(frozen=True)
class Timeout:
    """The visibility timeout of a lease (``VisibilityTimeout`` of docs/API.md)."""

    seconds: float = 30.0

    def __post_init__(self) -> None:
        _check_seconds("visibility timeout", self.seconds)


@dataclass(frozen=True)
class Lease:
    """One delivery of a sample; identity is ``(epoch, lease_id)``."""

    ref: SampleRef
    deadline: float
    visibility_timeout: Timeout
    redelivery_count: int = 0
    lease_id: int = 0
    epoch: str = ""

    def to_json(self) -> str:
        return json.dumps(
            {
                "ref": self.ref.to_dict(),
                "deadline": self.deadline,
                "visibility_timeout": self.visibility_timeout.seconds,
                "redelivery_count": self.redelivery_count,
                "lease_id": self.lease_id,
                "epoch": self.epoch,
            }
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Lease:
        data = load_json("Lease.from_json", text)  # TypeError/ValueError, never RecursionError
        try:
            return cls(
                ref=SampleRef.from_dict(data["ref"]),
                deadline=data["deadline"],
                visibility_timeout=Timeout(data["visibility_timeout"]),
                redelivery_count=data["redelivery_count"],
                lease_id=data["lease_id"],
                epoch=data["epoch"],
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"Lease.from_json got JSON that is no lease's ({type(exc).__name__}: {exc}); "
                             f"pass what Lease.to_json returned") from None


@dataclass(frozen=True)
class DeadLetter:
    ref: SampleRef
    reason: str
    deliveries: int


class _Parked:
    """One blocking put's share of ``_parked_bytes``: whether its bytes count now."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self.counted = False


@dataclass
class _Entry:
    """A sample the queue holds (pending or leased)."""

    ref: SampleRef
    deliveries: int = 0  # acquires of this incarnation
    redeliveries: int = 0  # fails and reclaims of this incarnation
    lease: Lease | None = None  # the live lease while leased
    deadline: float | None = None  # the live lease's deadline (moved by extend)


class BaseQueue:
    """The whole public API of docs/API.md, plainly."""

    def __init__(
        self,
        store: Any,
        clock: Any,
        *,
        visibility_timeout: float = 30.0,
        high_watermark_bytes: int | None = None,
        low_watermark_bytes: int | None = None,
        on_pause: Callable[[Any], None] | None = None,
        on_resume: Callable[[Any], None] | None = None,
        max_deliveries: int | None = None,
        dedup_window: int = 0,
        dead_letter_limit: int = 10_000,
    ) -> None:
        self._vt = Timeout(visibility_timeout)
        high = high_watermark_bytes if high_watermark_bytes is not None else store.high_watermark_bytes
        low = low_watermark_bytes if low_watermark_bytes is not None else store.low_watermark_bytes
        if (high is None) != (low is None):
            raise ValueError(f"the effective watermarks are half set (high={high!r}, low={low!r}); set both or neither")
        if high is not None and not low < high:
            raise ValueError(f"effective low watermark {low} must be < high watermark {high}")
        if high is not None and store.capacity_bytes is not None and high > store.capacity_bytes:
            raise ValueError(f"high watermark {high} exceeds the store's capacity {store.capacity_bytes}")
        if max_deliveries is not None and (isinstance(max_deliveries, bool) or not isinstance(max_deliveries, int) or max_deliveries < 1):
            raise ValueError(f"max_deliveries must be None or an int >= 1, got {max_deliveries!r}")
        if isinstance(dedup_window, bool) or not isinstance(dedup_window, int) or dedup_window < 0:
            raise ValueError(f"dedup_window must be an int >= 0, got {dedup_window!r}")
        if (
            isinstance(dead_letter_limit, bool) or not isinstance(dead_letter_limit, int)
            or not 0 <= dead_letter_limit <= sys.maxsize
        ):
            raise ValueError(f"dead_letter_limit must be an int from 0 to sys.maxsize, got {dead_letter_limit!r}")
        self._store = store
        self._clock = clock
        self._high, self._low = high, low
        self._on_pause, self._on_resume = on_pause, on_resume
        self._max_deliveries = max_deliveries
        self._epoch = uuid.uuid4().hex
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        # Notified whenever a ref is enqueued or the queue closes (consumers wait on it).
        self._ready = threading.Condition(self._lock)
        # Notified whenever residency may have dropped (ack, dead-letter) or the queue closes;
        # _room_changes counts those notifications so a waiter can tell a wakeup from a spurious one.
        self._room = threading.Condition(self._lock)
        self._room_changes = 0
        self._pending: deque[str] = deque()
        self._entries: dict[str, _Entry] = {}  # sample id -> entry, pending or leased
        self._dead: list[DeadLetter] = []
        self._dead_limit = dead_letter_limit
        self._dead_dropped = 0  # dead letters dropped, oldest first, to keep the limit
        self._completed: deque[str] = self._window(dedup_window)
        self._dedup = dedup_window
        self._closed = False
        self._paused = False
        self._parked_bytes = 0  # estimated_bytes of the refs parked in blocking puts (D8)
        self._callbacks: deque[tuple[Callable[[Any], None], Any]] = deque()  # not yet called, oldest first
        self._calling = False  # a thread is calling the queued callbacks

    # -- rules a mutant may override (all run with the lock held) ------------------

    def _window(self, size: int) -> deque[str]:
        return deque(maxlen=size)

    def _validate_put(self, call: str, ref: object) -> None:
        if not isinstance(ref, SampleRef):
            raise TypeError(f"{call} needs a SampleRef, got {type(ref).__name__}")
        if ref.store_uri != self._store.uri:
            raise ValueError(f"{call}: ref {ref.sample_id!r} names store {ref.store_uri!r}, not {self._store.uri!r}")
        if self._closed:
            raise QueueClosed(f"{call}({ref.sample_id!r}) after close()")
        if self._duplicate(ref.sample_id):
            raise DuplicateSample(f"{call}({ref.sample_id!r}): already pending or leased")
        if self._dedup and ref.sample_id in self._completed:
            raise ReplayedSample(f"{call}({ref.sample_id!r}): completed within the dedup window")

    def _duplicate(self, sample_id: str) -> bool:
        return sample_id in self._entries

    def _check_lease(self, call: str, lease: object) -> None:
        if not isinstance(lease, Lease):
            raise TypeError(f"{call} needs a Lease, got {type(lease).__name__}")
        if type(lease.lease_id) is not int:
            raise TypeError(f"{call}: lease_id {lease.lease_id!r} is not an int; pass the lease acquire returned")
        if lease.lease_id < 1:
            raise ValueError(f"{call}: lease_id {lease.lease_id} is below 1, which no queue mints (ids count up from 1)")
        if lease.epoch != self._epoch:
            raise ForeignLease(f"{call}: lease of epoch {lease.epoch!r}, this queue is {self._epoch!r}")

    def _live(self, lease: Lease) -> _Entry | None:
        entry = self._entries.get(lease.ref.sample_id)
        if entry is None or entry.lease is None or entry.lease.lease_id != lease.lease_id:
            return None
        return entry

    def _remember(self, sample_id: str) -> None:
        if self._dedup:
            self._completed.append(sample_id)

    def _finish(self, entry: _Entry, reason: str | None) -> None:
        """Ack (reason None) or dead-letter: the sample leaves, its data is scrubbed.
        The scrub runs first: a scrub that raises leaves everything as it was."""
        self._store.scrub(entry.ref)
        del self._entries[entry.ref.sample_id]
        if reason is not None:
            self._dead.append(DeadLetter(entry.ref, reason, entry.deliveries))
            self._keep_dead()
        self._remember(entry.ref.sample_id)
        self._wake_producers("ack" if reason is None else "dead_letter")
        self._wake_if_drained("ack" if reason is None else "dead_letter")

    def _keep_dead(self) -> None:
        """Past the limit, drop the oldest dead letter and count it."""
        if len(self._dead) > self._dead_limit:
            del self._dead[0]
            self._dead_dropped += 1

    def _wake_producers(self, why: str) -> None:
        """Room may have changed (``why``: "ack", "dead_letter", "park", "resume"
        or "close"): every producer waiting in ``put_blocks_until_below`` steps
        again (``_room_changes`` tells it from a spurious wakeup)."""
        self._room_changes += 1
        self._room.notify_all()

    def _wake_if_drained(self, why: str) -> None:
        """If the last sample of a closed queue just finished (``why``: "ack" or
        "dead_letter"), every waiting consumer's ``acquire`` returns its terminal
        None now (D3)."""
        if self._drained():
            self._ready.notify_all()

    def _requeue(self, entry: _Entry) -> None:
        """Fail or reclaim: back to the tail, or dead-lettered at max_deliveries
        (the scrub first: a scrub that raises leaves the lease as it was)."""
        if self._max_deliveries is not None and entry.deliveries >= self._max_deliveries:
            self._finish(entry, "max_deliveries")
            entry.lease, entry.deadline = None, None
            entry.redeliveries += 1
            return
        entry.lease, entry.deadline = None, None
        entry.redeliveries += 1
        self._pending.append(entry.ref.sample_id)
        self._ready.notify()

    def _expired(self, now: float) -> list[_Entry]:
        hits = [e for e in self._entries.values() if e.deadline is not None and e.deadline <= now]
        return sorted(hits, key=lambda e: (e.deadline, e.ref.sample_id))

    def _next_paused(self, resident: int) -> bool:
        if self._high is None:
            return False
        return not resident <= self._low if self._paused else resident >= self._high

    def _effective(self, resident: int, own: int) -> int:
        """What the hysteresis compares: the parked refs' bytes and the stepping
        ref's own (``own``, when not parked yet) can only leave the store once
        their producers are admitted (D8)."""
        return max(0, resident - self._parked_bytes - own)

    def _admits(self, paused: bool) -> bool:
        """A step enqueues when not paused, or when the queue holds no work (D8)."""
        return not paused or not self._has_work()

    def _has_work(self) -> bool:
        return bool(self._pending) or any(e.lease is not None for e in self._entries.values())

    def _drained(self) -> bool:
        return self._closed and not self._pending and not any(e.lease for e in self._entries.values())

    # -- the producer --------------------------------------------------------------

    def put(self, ref: SampleRef) -> None:
        with self._lock:
            self._put_nowait("put", ref)

    def _put_nowait(self, call: str, ref: SampleRef) -> None:
        self._validate_put(call, ref)
        if ref.sample_id in self._pending:  # only a broken _duplicate lets a pending id through
            self._pending.remove(ref.sample_id)
        self._entries[ref.sample_id] = _Entry(ref)
        self._pending.append(ref.sample_id)
        self._ready.notify()

    def put_blocks_until_below(
        self, ref: SampleRef, poll_interval: float = 0.05, abort_when: Callable[[], bool] | None = None
    ) -> None:
        _check_poll("poll_interval", poll_interval)
        parked = _Parked(getattr(ref, "estimated_bytes", 0))
        try:
            self._step_until_enqueued(ref, parked, poll_interval, abort_when)
        finally:
            with self._lock:
                self._unpark(parked)

    def _step_until_enqueued(
        self, ref: SampleRef, parked: _Parked, poll_interval: float, abort_when: Callable[[], bool] | None
    ) -> None:
        """The steps of a blocking put until one enqueues (or ``PutAborted``);
        the caller unparks ``parked`` however it ends."""
        while True:
            enqueued, seen = self._try_put_nowait(ref, parked)
            self._fire()
            if enqueued:
                return
            if abort_when is not None and abort_when():
                raise PutAborted(f"put_blocks_until_below({ref.sample_id!r}): abort_when() is true")
            # Park (once), then wait for a change of residency, a resume, a parking,
            # close, or poll_interval, whichever comes first; then step again.
            deadline = time.monotonic() + poll_interval
            with self._lock:
                if not parked.counted:
                    news = self._room_changes != seen  # something changed since the step
                    self._park(parked)
                    if not news:
                        seen = self._room_changes  # our own parking is no news to us
                while self._room_changes == seen and (remaining := deadline - time.monotonic()) > 0:
                    _wait(self._room, remaining)

    def _try_put_nowait(self, ref: SampleRef, parked: _Parked) -> tuple[bool, int]:
        """One step (its callback queued): whether the ref was enqueued, and the
        count of room changes the step saw."""
        with self._lock:
            self._validate_put("put_blocks_until_below", ref)  # a rejection parks nothing
            health = self._store.health()
            own = 0 if parked.counted else parked.nbytes
            paused = self._next_paused(self._effective(health.resident_bytes, own))
            self._announce(self._transition(paused, health))
            admitted = self._admits(paused)
            if admitted:
                self._unpark(parked)
                self._put_nowait("put_blocks_until_below", ref)
            return admitted, self._room_changes

    def _park(self, parked: _Parked) -> None:
        parked.counted = True
        self._parked_bytes += parked.nbytes
        self._wake_producers("park")  # the others' effective residency just dropped

    def _unpark(self, parked: _Parked) -> None:
        if parked.counted:
            parked.counted = False
            self._parked_bytes -= parked.nbytes

    def _transition(self, paused: bool, health: Any) -> list[tuple[Callable[[Any], None] | None, Any]]:
        events = []
        if paused != self._paused:
            events.append((self._on_pause if paused else self._on_resume, health))
            if not paused:  # a resume lets the other blocked producers step at once
                self._wake_producers("resume")
        self._paused = paused
        return events

    def _announce(self, events: list[tuple[Callable[[Any], None] | None, Any]]) -> None:
        """Queue a step's callbacks (lock held, in the step that made the change)."""
        self._callbacks.extend((callback, health) for callback, health in events if callback is not None)

    def _fire(self) -> None:
        """Call the queued callbacks, oldest first, with no lock held; return at
        once if another thread is calling them (it calls these too)."""
        with self._lock:
            if self._calling:
                return
            self._calling = True
        try:
            while True:
                with self._lock:
                    if not self._callbacks:
                        self._calling = False
                        return
                    callback, health = self._callbacks.popleft()
                self._call(callback, health)
        except BaseException:
            with self._lock:
                self._calling = False
            raise

    @staticmethod
    def _call(callback: Callable[[Any], None], health: Any) -> None:
        callback(health)

    # -- the consumer --------------------------------------------------------------

    def acquire(self, poll_interval: float = 0.05) -> Lease | None:
        _check_poll("poll_interval", poll_interval)
        deadline = time.monotonic() + poll_interval
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
        if not self._pending:
            return None
        now = self._clock.now()  # (first: a clock that raises leaves the ref pending)
        entry = self._entries[self._pending.popleft()]
        entry.deliveries += 1
        entry.deadline = now + self._vt.seconds
        entry.lease = Lease(entry.ref, entry.deadline, self._vt, entry.redeliveries, next(self._ids), self._epoch)
        return entry.lease

    def ack(self, lease: Lease) -> bool:
        with self._lock:
            self._check_lease("ack", lease)
            entry = self._live(lease)
            if entry is None:
                return False
            self._finish(entry, None)
            return True

    def fail(self, lease: Lease) -> bool:
        with self._lock:
            self._check_lease("fail", lease)
            entry = self._live(lease)
            if entry is None:
                return False
            self._requeue(entry)
            return True

    def dead_letter(self, lease: Lease, reason: str) -> bool:
        with self._lock:
            self._check_lease("dead_letter", lease)
            self._check_reason(reason)
            entry = self._live(lease)
            if entry is None:
                return False
            self._finish(entry, reason)
            entry.lease, entry.deadline = None, None
            return True

    @staticmethod
    def _check_reason(reason: object) -> None:
        """A dead letter's reason: a non-empty str with a UTF-8 form (no lone surrogate)."""
        if not isinstance(reason, str) or not reason:
            raise ValueError(f"dead_letter needs a non-empty reason str, got {reason!r}")
        try:
            reason.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"dead_letter reason {reason!r} holds a lone surrogate: it has no UTF-8 form") from None

    def extend(self, lease: Lease, seconds: float | None = None) -> bool:
        with self._lock:
            self._check_lease("extend", lease)
            seconds = self._vt.seconds if seconds is None else _check_seconds("extend(seconds)", seconds)
            entry = self._live(lease)
            if entry is None:
                return False
            entry.deadline = self._clock.now() + seconds
            return True

    # -- the environment -----------------------------------------------------------

    def reclaim_expired(self) -> int:
        with self._lock:
            hits = self._expired(self._clock.now())
            for entry in hits:
                self._requeue(entry)
            return len(hits)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._ready.notify_all()
            self._wake_producers("close")
            # A drained queue's reclaimer has nothing left to do: stopped and joined now; its
            # error, if one stopped it, stays for the next stop_reclaimer (close never raises it).
            reclaimer = self._reclaimer if self._drained() else None
        if reclaimer is not None:
            thread, stop, _ = reclaimer
            stop.set()
            if thread is not threading.current_thread():
                thread.join()

    def __enter__(self) -> BaseQueue:
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.stop_reclaimer()
        finally:
            self.close()  # (closed even when the reclaimer's error is raised)

    # -- observers -----------------------------------------------------------------

    @property
    def epoch(self) -> str:
        return self._epoch

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
            return len(self._pending)

    def outstanding_count(self) -> int:
        with self._lock:
            return sum(1 for e in self._entries.values() if e.lease is not None)

    def dead_letters(self) -> list[DeadLetter]:
        with self._lock:
            return list(self._dead)

    @property
    def dead_letters_dropped(self) -> int:
        with self._lock:
            return self._dead_dropped

    @property
    def dead_letter_limit(self) -> int:
        return self._dead_limit

    def drain_dead_letters(self) -> list[DeadLetter]:
        with self._lock:
            drained, self._dead = self._dead, []  # the caller owns the old list; the queue starts a new one
            return drained

    # -- the background reclaimer --------------------------------------------------

    # (thread, its stop event) while one runs; guarded by self._lock.
    _reclaimer: tuple[threading.Thread, threading.Event, list[BaseException]] | None = None

    def start_reclaimer(self, interval: float | None = None) -> None:
        interval = self._vt.seconds / 4 if interval is None else _check_seconds("start_reclaimer(interval)", interval)
        stop = threading.Event()  # set by stop_reclaimer, by close at the drain, when the queue is collected, and at the end
        stopped_by: list[BaseException] = []  # the error that ended the thread early, if any
        thread = self._reclaimer_thread(interval, stop, stopped_by)
        with self._lock:
            if self._reclaimer is not None and not self._reclaimer[1].is_set():  # (set: stopping or ended)
                raise RuntimeError("start_reclaimer: a reclaimer is already running; call stop_reclaimer() first")
            self._reclaimer = (thread, stop, stopped_by)
        thread.start()

    def _reclaimer_thread(self, interval: float, stop: threading.Event, stopped_by: list[BaseException]) -> threading.Thread:
        """The reclaimer's thread, not started.  It holds this queue weakly (the
        reference's callback holds ``stop`` only): a queue dropped without
        ``close()`` is collected, and its reclaimer ends at once."""
        queue = weakref.ref(self, lambda _ref: stop.set())
        return threading.Thread(target=_reclaim_every, args=(queue, interval, stop, stopped_by), daemon=True)

    def _reclaim_tick(self) -> bool:
        """One pass of the background reclaimer; whether it goes on (not once
        the closed queue has drained: no lease is left, none can come)."""
        self.reclaim_expired()
        with self._lock:
            return not self._drained()

    def stop_reclaimer(self) -> None:
        with self._lock:
            reclaimer, self._reclaimer = self._reclaimer, None
        if reclaimer is not None:
            thread, stop, stopped_by = reclaimer
            stop.set()
            thread.join()
            if stopped_by:
                raise RuntimeError(f"the reclaimer stopped early: {stopped_by[0]!r}") from stopped_by[0]


def _reclaim_every(
    queue: weakref.ref[BaseQueue], interval: float, stop: threading.Event, stopped_by: list[BaseException]
) -> None:
    """The reclaimer thread: a tick every ``interval`` (``Event.wait`` is the
    period's timer and the stop signal), holding the queue for one tick only."""
    try:
        while not stop.wait(interval):
            q = queue()
            if q is None or not q._reclaim_tick():
                return
            del q
    except Exception as exc:  # kept for stop_reclaimer, which raises it
        stopped_by.append(exc)
    finally:
        stop.set()  # ended: a new start_reclaimer may start one


def factory(cls: type[BaseQueue], *, make_store: Callable[[], Any] | None = None) -> Callable[..., BaseQueue]:
    """The conformance factory ``make(store, clock, **config)`` of ``cls``."""

    def make(store: Any, clock: Any, **config: Any) -> BaseQueue:
        return cls(store, clock, **config)

    make.__qualname__ = f"make[{cls.__name__}]"
    make.capabilities = Capabilities(dead_letter_limit=True)  # type: ignore[attr-defined]
    if make_store is not None:
        make.make_store = make_store  # type: ignore[attr-defined]
    return make


make = factory(BaseQueue)
