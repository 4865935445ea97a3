"""``SampleRefQueue``: the production in-process lease / ack / fail queue.

Contract: ``docs/API.md``; every state change is the reference model's action
of the same name (``refqueue/model/actions.py``: ``put``, ``try_put``,
``acquire``, ``ack``, ``fail``, ``dead_letter``, ``extend``,
``reclaim_expired``, ``close``), written again here and sharing no code with
it.  Thread-safe for any number of producer and consumer threads.

Design notes
------------
* **One lock, two named conditions.**  ``_ready`` wakes consumers blocked
  in ``acquire``; ``_room`` wakes producers blocked in
  ``put_blocks_until_below``.  The locking rule and when each condition is
  notified are stated in ``__init__``.  Methods named ``_*_nowait`` (and the
  helpers they call) are the only code that changes state, always with the
  lock held; the blocking methods are ``while predicate:
  cond.wait(remaining)`` loops on a ``time.monotonic`` deadline around them.
* **Costs.**  ``put``, ``acquire``, ``ack``, ``fail`` are O(1) (plus the O(log
  n) push of the deadline heap on acquire and extend): pending samples are a
  deque (fail and reclaim append at the tail, as the model does), live
  samples a dict ``sample_id -> _Sample``.  ``reclaim_expired`` pops a
  deadline heap with lazy deletion (``refqueue._deadlines``): O(k log n) for
  k expired leases, and an idle reclaim reads one heap entry.
* **Bounds.**  The queue keeps a record only of a live sample (pending or
  leased); a completed one leaves behind at most its id in the dedup window
  (``dedup_window`` ids) and its ``DeadLetter`` (the newest
  ``dead_letter_limit``, older ones dropped and counted).  The deadline heap
  holds at most ``max(2 * max(c, SLACK), live leases) + 1`` entries (c: the
  live leases at its last compaction), however often a lease is extended.
* **Commit last.**  Every state change first runs everything that can raise
  (the clock, the store's ``scrub``, building the lease or the dead letter,
  adding the new deadline entry, which is stale until the commit), and then
  commits with attribute stores and at most one C call at the end, so that
  neither a raising clock or store nor an asynchronous exception
  (``KeyboardInterrupt``, ``PyThreadState_SetAsyncExc``; CPython delivers
  those on entry to a Python function, after a call returns and on a
  backward jump) can lose a sample: ``acquire`` pops the pending ref only
  after the lease is recorded, so the sample is pending or leased, never
  neither.  What is left: an asynchronous exception just after the store's
  ``scrub`` returned leaves the lease live with its data gone (retrying the
  ``ack`` completes it).
* **Scrubbing under the lock (D2).**  A live ack or a dead-letter calls
  ``store.scrub(ref)`` *with the queue lock held*, before the queue's own
  state changes.  That makes "the ack commits and the data leaves the store"
  one atomic step, exactly the model's ``_finish``: no thread can observe the
  sample acked while its bytes are still resident (or the reverse), a re-put
  of the id cannot race the scrub, and a scrub that fails (a closed store)
  rejects the ack with nothing changed.  The price is that the store's scrub
  runs inside the queue's critical section, so a store's ``scrub`` must be
  O(1) bookkeeping that never waits on tensor I/O (``LocalFeatureStore``'s
  is a dict pop under its own lock, which is never held across a copy: D6).
  The queue calls the store only for ``health()`` and ``scrub()``, both
  counters; it never calls ``get``.  Lock order is queue lock, then store
  lock; a store never calls back into a queue.
* **Callbacks outside every lock (D4).**  ``on_pause``/``on_resume`` fire
  once per transition of the pause flag, in transition order, with no lock
  held.  Transitions are queued under the lock and delivered by whichever
  thread finds no delivery in progress; a callback may call back into the
  queue (its own further transitions are delivered after it returns).  A
  callback's exception propagates out of the call that delivered it, after
  the transition committed; the transitions behind it stay queued for the
  next delivery.
* **Backpressure that cannot deadlock (D8).**  The hysteresis reads the
  *effective* residency ``max(0, resident_bytes - parked_bytes)``, where
  ``_parked_bytes`` is the sum of ``estimated_bytes`` of the refs whose
  producers are inside ``put_blocks_until_below`` (the stepping ref's own
  included): data a blocked producer holds can only leave the store once it
  is admitted, so counting it against the watermarks is what let producers
  pause one another forever.  A step counts its own ref as parked; the ref
  joins ``_parked_bytes`` when its producer goes to wait (after
  ``abort_when`` said no, so a one-step call with ``abort_when=lambda:
  True`` is one atomic model ``put_step`` and parks nothing), and leaves it
  in the step that enqueues it, in the step that rejects it, or in the
  call's ``finally`` (``PutAborted``, an exception from ``abort_when`` or a
  callback, ``KeyboardInterrupt``).  Parking wakes the other waiting
  producers: their effective residency just dropped.  A
  step admits the ref when not paused afterwards, *or* when the queue holds
  no work (nothing pending, nothing leased: no consumer could ever free a
  byte); in that case the pause stands.  Hence the bound: bytes of work
  admitted by blocking puts stay ``< high + largest sample``, residency
  ``< high + (producers + 1) x largest`` plus orphans (data of puts that
  never completed); and the liveness: a blocked producer is admitted as
  soon as the queue holds no work, whatever the producers, sample sizes and
  orphans.  A resume wakes every blocked producer.
* **Time.**  Lease deadlines read the injected ``clock`` (default
  ``MonotonicClock``); ``poll_interval`` waits are real time.  Every
  duration is at most ``threading.TIMEOUT_MAX``; a poll interval may be
  ``math.inf`` (wait for the queue's signal, with no timeout).
* **The reclaimer** (``refqueue._reclaimer``) holds the queue by a weak
  reference and ends when the queue is closed and drained, or collected;
  ``close()`` on a drained queue stops it at once.  Its start and stop are
  serialised by ``_reclaimer_lock`` (never held with ``_lock``, never held
  across a join).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any

from refqueue._callbacks import OrderedCallbacks
from refqueue._checks import (  # noqa: F401  (DEFAULT_DEAD_LETTER_LIMIT: refqueue.queue's public name)
    DEFAULT_DEAD_LETTER_LIMIT,
    check_optional_callable,
    check_optional_count,
    check_poll_interval,
    check_queue_arguments,
    check_reason,
    check_seconds,
    describe,
)
from refqueue._deadlines import DeadlineHeap
from refqueue._decisions import next_paused
from refqueue._leases import (  # noqa: F401  (_next_lease_id, _lease_id_counter: the seed's module names)
    MAX_DELIVERIES_REASON,
    DeadLetter,
    Lease,
    VisibilityTimeout,
    _lease_id_counter,
    _next_lease_id,
    mint_lease,
)
from refqueue._reclaimer import Reclaimer, reclaimer_gauges
from refqueue.clock import Clock, MonotonicClock
from refqueue.events import EventLog, check_event_log
from refqueue.errors import DuplicateSample, ForeignLease, PutAborted, QueueClosed, ReplayedSample
from refqueue.refs import SampleRef
from refqueue.store import FeatureStore, StoreHealth

__all__ = ["SampleRefQueue", "Lease", "VisibilityTimeout", "DeadLetter", "MAX_DELIVERIES_REASON"]

logger = logging.getLogger(__name__)

# _Sample.lease_id of a pending sample.  A lease's id is checked to be an int
# >= 1 (minted ids count up from 1) before it is compared with a record's, so
# no lease, however built or altered, matches a pending record.
_NOT_LEASED = None
_monotonic = time.monotonic
_INF = float("inf")
_MAX_SECONDS = threading.TIMEOUT_MAX


class _Sample:
    """What the queue holds for one live (pending or leased) sample: the
    model's ``Rec`` without the fields a production queue does not keep.

    Invariants: ``lease_id is _NOT_LEASED`` (None) iff ``deadline is None``
    iff the sample is in ``_pending``; a leased sample's ``lease_id`` is a
    minted int >= 1; ``deliveries == redeliveries + (leased)``
    (RedeliveryCountsDeliveries).
    """

    __slots__ = ("ref", "lease_id", "deadline", "deliveries", "redeliveries", "leased_at")

    def __init__(self, ref: SampleRef) -> None:
        self.ref = ref
        self.lease_id: int | None = _NOT_LEASED
        self.deadline: float | None = None
        self.leased_at = 0.0  # the clock at its current lease's acquire (read by metrics() only)
        self.deliveries = 0  # acquires of this incarnation
        self.redeliveries = 0  # fails + reclaims of this incarnation


class _Parking:
    """One ``put_blocks_until_below`` call's share of ``_parked_bytes`` (D8):
    ``parked`` says whether ``nbytes`` is counted now.  Changed only with the
    queue lock held."""

    __slots__ = ("nbytes", "parked", "sample_id", "since")

    def __init__(self, nbytes: int, sample_id: str = "") -> None:
        self.nbytes = nbytes
        self.parked = False
        self.sample_id = sample_id  # named in the park/unpark events
        self.since: float | None = None  # the clock when it parked (None: the clock raised or gave NaN)


class SampleRefQueue:
    """Lease / ack / fail queue over ``SampleRef`` bound to one ``FeatureStore``.

    ``visibility_timeout`` (default 30 s) is how long a lease lives unacked;
    ``high_watermark_bytes``/``low_watermark_bytes`` override the store's own
    for the hysteresis of ``put_blocks_until_below`` (D4);
    ``on_pause(health)``/``on_resume(health)`` are told of each transition;
    ``max_deliveries`` dead-letters a sample delivered that often when it
    comes back again (D7); ``dedup_window=N`` rejects a re-put of one of the
    last N completed ids (D5); ``clock`` supplies lease time;
    ``dead_letter_limit`` (default 10,000) is how many ``DeadLetter`` records
    ``dead_letters()`` keeps (the oldest are dropped first and counted in
    ``dead_letters_dropped``; ``drain_dead_letters()`` takes them out);
    ``events`` (a ``refqueue.events.EventLog``, default None) records every
    state change as one ordered event (docs/EVENTS.md).

    Validated here, with nothing built on a rejection: the store, each
    argument's type and range, and the *effective* watermark pair (queue
    override else the store's, mixed included): both set or both unset,
    ``low < high``, ``high <= store.capacity_bytes`` when the store has a cap.

    Used as a context manager, the queue starts nothing on entry; on exit it
    stops the background reclaimer (if one was started) and closes itself.
    It never closes the store.
    """

    def __init__(
        self,
        store: FeatureStore,
        visibility_timeout: VisibilityTimeout | None = None,
        high_watermark_bytes: int | None = None,
        low_watermark_bytes: int | None = None,
        on_pause: Callable[[StoreHealth], Any] | None = None,
        on_resume: Callable[[StoreHealth], Any] | None = None,
        *,
        max_deliveries: int | None = None,
        dedup_window: int = 0,
        clock: Clock | None = None,
        dead_letter_limit: int = DEFAULT_DEAD_LETTER_LIMIT,
        events: EventLog | None = None,
    ) -> None:
        visibility_timeout, high_override, low_override = check_queue_arguments(
            "SampleRefQueue", store, visibility_timeout, high_watermark_bytes, low_watermark_bytes,
            on_pause, on_resume, max_deliveries, dedup_window, dead_letter_limit,
        )
        if clock is None:
            clock = MonotonicClock()
        elif not callable(getattr(clock, "now", None)):
            raise TypeError(
                f"SampleRefQueue(clock) must have a now() method returning seconds, got {describe(clock)}; "
                f"pass refqueue.clock.MonotonicClock() or ManualClock()"
            )
        store_uri = store.uri
        if not isinstance(store_uri, str):
            raise TypeError(f"the store's uri must be a str, got {describe(store_uri)}; fix the store's uri property")
        high, low = _effective_watermarks(store, high_override, low_override)
        event_log = check_event_log("SampleRefQueue", events)

        self._store = store
        self._store_uri = store_uri
        self._vt = visibility_timeout
        self._vt_seconds = visibility_timeout.seconds
        self._high = high
        self._low = low
        self._callbacks = {"pause": on_pause, "resume": on_resume}
        self._max_deliveries = max_deliveries
        self._dedup_window = dedup_window
        self._clock = clock
        # clock.now, bound once (the plain time.monotonic for the default clock)
        self._now: Callable[[], float] = _monotonic if type(clock) is MonotonicClock else clock.now
        self._epoch = uuid.uuid4().hex
        self._lease_ids = itertools.count(1)
        # Guards _reclaimer: start_reclaimer and stop_reclaimer are atomic.
        # Never held together with _lock, and never across a join.
        self._reclaimer_lock = threading.Lock()
        self._reclaimer: Reclaimer | None = None

        # Locking rule: every field below is read and written with _lock held.
        # With it held the queue calls only the store's health() and scrub()
        # (O(1) counters, D6) and never a callback.
        self._lock = threading.Lock()
        # Notify _ready (one waiter) whenever a ref becomes pending (put, fail,
        # reclaim), and (all waiters) whenever the queue becomes drained.
        self._ready = threading.Condition(self._lock)
        # Notify _room (all waiters) whenever a blocked producer may now be
        # admitted: residency may have dropped or the queue may have emptied of
        # work (a live ack, a dead-letter), the pause flag flipped to False (a
        # resume in another producer's step, D8), and on close.
        # _room_generation counts those events so that a producer never misses
        # one between its step and its wait.  A producer leaving unadmitted
        # notifies nothing: its parked bytes only raise effective residency.
        self._room = threading.Condition(self._lock)
        self._room_generation = 0
        # Sum of estimated_bytes of the refs parked by put_blocks_until_below
        # calls (each call's _Parking says whether its ref is counted); >= 0.
        self._parked_bytes = 0
        # The _Parking of every parked ref (len: producers blocked now), and the
        # clock-seconds of the waits that ended (metrics(): blocked time).
        self._parked: set[_Parking] = set()
        self._blocked_seconds = 0.0
        self._acquirers_waiting = 0  # threads in _ready.wait
        self._producers_waiting = 0  # threads in _room.wait

        # Invariants: _pending holds exactly the live samples that are not
        # leased, in delivery order; _outstanding == number of leased samples
        # in _live; no id is both live and in _completed_ids
        # (PendingAndLeasedDisjoint; dedup only while the window holds it).
        self._pending: deque[_Sample] = deque()
        self._live: dict[str, _Sample] = {}  # sample_id -> its pending or leased record
        self._outstanding = 0
        self._deadlines = DeadlineHeap(self._live)
        self._closed = False
        self._paused = False
        # The newest dead_letter_limit dead letters, oldest first; each one
        # the deque drops to make room is counted in _dead_dropped.
        self._dead: deque[DeadLetter] = deque(maxlen=dead_letter_limit)
        self._dead_dropped = 0
        self._dead_total = 0  # samples dead-lettered so far (metrics())
        self._completed: deque[str] = deque()  # the last dedup_window completed ids, oldest first
        self._completed_ids: set[str] = set()  # the same ids, for O(1) lookup
        self._callbacks_due = OrderedCallbacks()  # on_pause/on_resume, in the order of the changes
        # The event log (issue 13, refqueue.events) or None; every hook is one
        # `if self._event_log is not None` test, and emits with _lock held.
        self._event_log = event_log
        self._qid = 0 if event_log is None else event_log.register("queue", self._open_record())
        # _emit(record) stamps q, t (the clock, unless given), seq, pid, tid and writes the record
        # (None without a log: every call is behind an `if self._event_log is not None` test, which
        # mypy cannot connect to this attribute, hence the ignore)
        self._emit: Callable[[dict[str, Any]], None] = (
            None if event_log is None else event_log.emitter("q", self._qid, self._now)  # type: ignore[assignment]
        )

    # -- producer side -------------------------------------------------------------

    def put(self, ref: SampleRef) -> None:
        """Enqueue ``ref`` (model: ``put``) without looking at backpressure.

        Rejects, with nothing changed: ``TypeError`` (not a ``SampleRef``),
        ``ValueError`` (a ref of another store), ``QueueClosed``,
        ``DuplicateSample`` (the id is pending or leased), ``ReplayedSample``
        (completed within ``dedup_window``).  Wakes one waiting ``acquire``.
        """
        if type(ref) is not SampleRef or ref.store_uri != self._store_uri:
            self._check_ref("put", ref)
        sample_id = ref.sample_id
        with self._lock:
            if self._closed or sample_id in self._live or sample_id in self._completed_ids:
                self._check_put_nowait("put", sample_id)  # raises
            self._put_nowait(ref)
            if self._event_log is not None:
                self._emit({"ev": "put", "sample": sample_id, "pending": len(self._pending)})

    def put_blocks_until_below(
        self,
        ref: SampleRef,
        poll_interval: float = 0.05,
        abort_when: Callable[[], bool] | None = None,
    ) -> None:
        """Enqueue ``ref``, blocking while the producer is paused (D4, D8).

        Each step is the model's ``try_put``.  The ref is *parked* while its
        producer waits, until the call returns or raises: its bytes count in
        ``parked_bytes``.  A step computes the effective residency
        ``max(0, store.health().resident_bytes - parked_bytes)`` (this ref's
        own bytes included in ``parked_bytes``) and ``paused' = paused ? not
        (effective <= low) : (effective >= high)``; a change calls
        ``on_pause`` or ``on_resume`` (outside the lock).  The ref is
        enqueued as by ``put`` and the call returns when not paused
        afterwards, or when the queue holds no work (nothing pending, nothing
        outstanding), in which case the pause stands.  Otherwise
        ``abort_when()`` is asked (a true answer raises ``PutAborted``, the
        ref not enqueued), then the producer waits until an ack, a
        dead-letter, a resume, ``close`` (or ``poll_interval`` seconds) and
        steps again.  So ``abort_when=lambda: True`` performs exactly one
        step.  Every step rejects as ``put`` does, before parking anything,
        so a queue closed while the producer waits raises ``QueueClosed``.
        However the call ends, the ref is no longer parked afterwards.  An
        exception raised by a callback propagates out of the call that
        delivered it, after the step committed (the ref may be enqueued).
        ``poll_interval`` is real time: it bounds how stale a pause can get
        when residency drops without the queue's knowledge (another queue on
        the same store, or an orphan's data scrubbed by its owner).  It is at
        most ``threading.TIMEOUT_MAX``, or ``math.inf``: step again only on
        the queue's own signals (an ack, a dead-letter, a resume, ``close``),
        which D8's liveness needs and no more.

        Never deadlocks (D8): the producer is admitted at the latest when the
        consumers have drained the queue, however many producers block and
        whatever the sample sizes or orphaned data in the store.
        """
        self._check_ref("put_blocks_until_below", ref)
        poll_interval = check_poll_interval("put_blocks_until_below(poll_interval)", poll_interval)
        check_optional_callable(
            "put_blocks_until_below(abort_when)", abort_when, "pass a function returning True to give up"
        )
        parking = _Parking(ref.estimated_bytes, ref.sample_id)
        try:
            while True:
                with self._lock:
                    health, effective, generation = self._try_put_nowait(ref, parking)
                self._callbacks_due.deliver()
                if health is None:
                    return
                if abort_when is not None and abort_when():
                    raise PutAborted(
                        f"put_blocks_until_below({ref.sample_id!r}): abort_when() returned True while the "
                        f"producer is paused (the store holds {health.resident_bytes} bytes, {effective} of "
                        f"them not held by blocked producers; paused at >= {self._high}, resumes at <= "
                        f"{self._low}); the ref was not enqueued"
                    )
                deadline = _monotonic() + poll_interval
                with self._lock:
                    if not parking.parked:
                        # Park only now that the producer waits (a one-step call never
                        # parks, so it is one atomic model put_step).  Parking lowers
                        # the others' effective residency: let them step again.
                        since = self._clock_or_none()
                        parking.since = since
                        self._parked.add(parking)
                        parking.parked = True
                        self._parked_bytes += parking.nbytes
                        if self._event_log is not None:
                            self._emit({"ev": "park", "t": since, "sample": ref.sample_id,
                                        "nbytes": parking.nbytes})
                        missed = self._room_generation != generation
                        self._room_generation += 1
                        if self._producers_waiting:
                            self._room.notify_all()
                        generation = -1 if missed else self._room_generation
                    self._producers_waiting += 1
                    try:
                        while self._room_generation == generation and not self._closed:
                            remaining = deadline - _monotonic()
                            if remaining <= 0:
                                break
                            self._room.wait(None if remaining == _INF else remaining)
                    finally:
                        self._producers_waiting -= 1
        finally:
            if parking.parked:
                with self._lock:
                    self._unpark_nowait(parking)

    # -- consumer side -------------------------------------------------------------

    def acquire(self, poll_interval: float = 0.05) -> Lease | None:
        """Lease the oldest pending ref (model: ``acquire``), or None.

        None comes at once when the queue is drained (closed, nothing pending,
        nothing outstanding: D3); otherwise the call waits up to
        ``poll_interval`` seconds for a ref and returns None if none came.
        ``poll_interval=math.inf`` waits until a ref comes or the queue
        drains (a lease outstanding on a closed queue comes back only by a
        reclaim: run the reclaimer).  A put or requeue wakes it at once
        (D6).  A consumer stops on ``is_drained``, not on ``is_closed``.
        Rejects a ``poll_interval`` that is not a number > 0 and at most
        ``threading.TIMEOUT_MAX`` (or ``math.inf``).

        The clock is read before anything changes, so a clock that raises
        leaves the ref pending; see ``_acquire_nowait``.
        """
        if type(poll_interval) is not float or not 0.0 < poll_interval <= _MAX_SECONDS:
            poll_interval = check_poll_interval("acquire(poll_interval)", poll_interval)
        with self._lock:
            if not self._pending:
                started = _monotonic()
                deadline = started + poll_interval
                while not self._pending and not (self._closed and self._outstanding == 0):
                    remaining = deadline - _monotonic()
                    if remaining <= 0:
                        if self._event_log is not None:
                            self._emit({"ev": "wait", "waited": _monotonic() - started})
                            self._emit({"ev": "acquire", "sample": None})
                        return None
                    self._acquirers_waiting += 1
                    try:
                        self._ready.wait(None if remaining == _INF else remaining)
                    finally:
                        self._acquirers_waiting -= 1
                if self._event_log is not None:
                    self._emit({"ev": "wait", "waited": _monotonic() - started})
            return self._acquire_nowait()

    def acquire_nowait(self) -> Lease | None:
        """Lease the oldest pending ref, or None at once when nothing is pending."""
        with self._lock:
            return self._acquire_nowait()

    def ack(self, lease: Lease) -> bool:
        """The consumer finished the sample (model: ``ack``).

        Live lease: the store scrubs the sample's data (D2), the sample is
        done (and joins the dedup window); True.  Stale lease (reclaimed,
        acked, failed, superseded): nothing changes; False (D1).  Rejects
        ``TypeError`` (not a ``Lease``, or one altered to hold a ref that is
        not a ``SampleRef`` or a ``lease_id`` that is not an int),
        ``ValueError`` (a ``lease_id`` below 1, which no queue mints) and
        ``ForeignLease`` (another queue's).  A pending sample is never acked,
        whatever lease is passed.
        """
        if (
            type(lease) is Lease
            and lease.epoch == self._epoch
            and type(lease_id := lease.lease_id) is int
            and lease_id > 0
            and type(ref := lease.ref) is SampleRef
        ):
            sample_id = ref.sample_id
        else:
            sample_id, lease_id = self._check_lease("ack", lease)
        with self._lock:
            rec = self._live.get(sample_id)
            # a pending record's lease_id is None: no lease matches it
            if rec is not None and rec.lease_id == lease_id:
                self._finish_nowait(rec, None)
                if self._event_log is not None:
                    self._emit({"ev": "ack", "sample": sample_id, "lease": lease_id, "live": True})
                return True
            if self._event_log is not None:
                self._emit({"ev": "ack", "sample": sample_id, "lease": lease_id, "live": False})
        logger.debug("ack of a stale lease %d of %r ignored (D1)", lease_id, sample_id)
        return False

    def fail(self, lease: Lease) -> bool:
        """The consumer gives the sample back for a retry (model: ``fail``).

        Live lease: the sample goes to the tail of the pending queue with one
        more redelivery, or is dead-lettered (reason ``"max_deliveries"``,
        data scrubbed) once delivered ``max_deliveries`` times; True.  Stale:
        False.  Rejects as ``ack``.
        """
        if (
            type(lease) is Lease
            and lease.epoch == self._epoch
            and type(lease_id := lease.lease_id) is int
            and lease_id > 0
            and type(ref := lease.ref) is SampleRef
        ):
            sample_id = ref.sample_id
        else:
            sample_id, lease_id = self._check_lease("fail", lease)
        with self._lock:
            rec = self._live.get(sample_id)
            if rec is not None and rec.lease_id == lease_id:
                self._requeue_nowait(rec)
                if self._event_log is not None:
                    dead = rec.lease_id is not _NOT_LEASED  # dead-lettered at max_deliveries
                    self._emit({"ev": "fail", "sample": sample_id, "lease": lease_id, "live": True, "dead": dead})
                return True
            if self._event_log is not None:
                self._emit({"ev": "fail", "sample": sample_id, "lease": lease_id, "live": False})
        logger.debug("fail of a stale lease %d of %r ignored (D1)", lease_id, sample_id)
        return False

    def dead_letter(self, lease: Lease, reason: str) -> bool:
        """The consumer declares the sample poison (model: ``dead_letter``).

        Live lease: the sample's data is scrubbed and ``DeadLetter(ref,
        reason, deliveries)`` joins ``dead_letters()``; True.  Stale: False.
        Rejects as ``ack``, and ``TypeError``/``ValueError`` for a reason that
        is not a non-empty str with a UTF-8 form (no lone surrogate).
        """
        sample_id, lease_id = self._check_lease("dead_letter", lease)
        check_reason(reason, " (an event log's reader or another backend could not carry it)")
        with self._lock:
            rec = self._live.get(sample_id)
            if rec is None or rec.lease_id != lease_id:
                if self._event_log is not None:
                    self._emit({"ev": "dead_letter", "sample": sample_id, "lease": lease_id, "live": False})
                return False
            self._finish_nowait(rec, reason)
            if self._event_log is not None:
                self._emit({"ev": "dead_letter", "sample": sample_id, "lease": lease_id, "live": True,
                            "reason": reason})
            return True

    def extend(self, lease: Lease, seconds: float | None = None) -> bool:
        """Heartbeat (model: ``extend``, D7): a live lease's deadline becomes
        ``clock.now() + seconds`` (default: the visibility timeout), even if it
        already passed but was not yet reclaimed; True.  Stale: False.
        Rejects as ``ack``, and ``TypeError``/``ValueError`` for ``seconds``
        that is not a finite number > 0 and at most ``threading.TIMEOUT_MAX``.
        A clock that raises changes nothing.  However often a lease is
        extended, the deadline heap stays bounded (``refqueue._deadlines``).
        """
        sample_id, lease_id = self._check_lease("extend", lease)
        seconds = self._vt_seconds if seconds is None else check_seconds("extend(seconds)", seconds)
        with self._lock:
            rec = self._live.get(sample_id)
            if rec is None or rec.lease_id != lease_id:
                if self._event_log is not None:
                    self._emit({"ev": "extend", "sample": sample_id, "lease": lease_id, "live": False})
                return False
            now = self._now()  # may raise: nothing has changed
            deadline = now + seconds
            if deadline != rec.deadline:
                entry = (deadline, sample_id, lease_id)
                self._deadlines.add(entry)  # stale until the commit below
                rec.deadline = deadline  # the commit
                self._deadlines.settle(entry, self._outstanding)
            if self._event_log is not None:
                self._emit({"ev": "extend", "t": now, "sample": sample_id, "lease": lease_id, "live": True,
                            "seconds": seconds, "deadline": deadline})
            return True

    # -- environment -----------------------------------------------------------------

    def reclaim_expired(self) -> int:
        """Take back every lease whose deadline is ``<= clock.now()`` (model:
        ``reclaim_expired``), in order of deadline, ties by sample id: each
        is requeued as by ``fail`` (or dead-lettered at ``max_deliveries``).
        Returns how many.  O(k log n) for k expired leases; an idle call reads
        one heap entry.  If a dead-letter's scrub raises, the leases taken
        back before it stay taken back and the error propagates.  The clock
        is read first: a clock that raises changes nothing.
        """
        with self._lock:
            return self._reclaim_nowait()

    def close(self) -> None:
        """No more puts (model: ``close``); what is pending or leased still
        drains.  Idempotent.  Blocked producers raise ``QueueClosed``; waiting
        consumers return None at once if that leaves the queue drained.

        The background reclaimer stops: at once (joined, unless ``close`` is
        called from the reclaimer thread itself) when the queue is drained,
        else by itself once the last lease is acked or dead-lettered (it
        still reclaims the leases of consumers that crashed, so that the
        queue can drain: D3).  An error that stopped it early is kept for
        ``stop_reclaimer()`` to report; ``close`` never raises it."""
        with self._lock:
            if not self._closed:
                self._closed = True
                if self._event_log is not None:
                    self._emit({"ev": "close", "pending": len(self._pending), "outstanding": self._outstanding})
                self._room_generation += 1
                if self._producers_waiting:
                    self._room.notify_all()
                self._notify_if_drained()
            drained = not self._pending and self._outstanding == 0
        if drained:
            with self._reclaimer_lock:
                reclaimer = self._reclaimer
            if reclaimer is not None:
                reclaimer.stop(report=False)  # kept in _reclaimer: stop_reclaimer reports its error

    def start_reclaimer(self, interval: float | None = None) -> None:
        """Start a daemon thread that calls ``reclaim_expired`` every
        ``interval`` seconds (default: a quarter of the visibility timeout),
        so a lease is reclaimed at most ``interval`` after its deadline.

        The thread holds the queue by a weak reference only (a forgotten
        queue is collected, and its reclaimer ends), and ends by itself once
        the queue is closed and drained.  Atomic: of two threads starting a
        reclaimer at once, one starts it and the other gets ``RuntimeError``
        (as does any call while one is running).  ``interval`` is a number
        of seconds > 0 and at most ``threading.TIMEOUT_MAX``."""
        if interval is None:
            interval = self._vt_seconds / 4
        interval = check_seconds("start_reclaimer(interval)", interval)
        with self._reclaimer_lock:
            current = self._reclaimer
            if current is not None and current.running:
                raise RuntimeError(
                    f"start_reclaimer: a reclaimer is already running every {current.interval} s; "
                    f"call stop_reclaimer() first"
                )
            reclaimer = Reclaimer(self, interval, name=f"refqueue-reclaimer-{self._epoch[:8]}")
            reclaimer.start()
            self._reclaimer = reclaimer

    @property
    def reclaimer_running(self) -> bool:
        """True while the background reclaimer runs."""
        with self._reclaimer_lock:
            reclaimer = self._reclaimer
        return reclaimer is not None and reclaimer.running

    def reclaimer_status(self) -> dict[str, Any]:
        """The background reclaimer: running, interval, leases reclaimed, and
        what stopped it early (``stopped_by``); ``{"running": False}`` when
        none was started (``Reclaimer.status``)."""
        with self._reclaimer_lock:
            reclaimer = self._reclaimer
        if reclaimer is None:
            return {"running": False}
        return reclaimer.status()

    def stop_reclaimer(self) -> None:
        """Stop the background reclaimer and wait for it (no-op if none; it
        does not wait when called from the reclaimer thread itself).
        Re-raises, as ``RuntimeError``, an error that stopped it early."""
        with self._reclaimer_lock:
            reclaimer = self._reclaimer
        if reclaimer is None:
            return
        try:
            reclaimer.stop()  # joined outside the lock: the thread may call back into the queue
        finally:
            with self._reclaimer_lock:
                if self._reclaimer is reclaimer:
                    self._reclaimer = None

    def __enter__(self) -> SampleRefQueue:
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.stop_reclaimer()
        finally:
            self.close()

    # -- observers -----------------------------------------------------------------

    def metrics(self) -> dict[str, Any]:
        """The queue's state now (``gauges()``), and, when the queue's
        ``EventLog`` has a ``refqueue.metrics.Metrics`` sink, the counters and
        histograms folded from its events (docs/EVENTS.md): one plain dict,
        the live gauges winning where both have a key.  ``"counters"`` says
        whether the event-folded keys are there.  ``refqueue.diagnose`` reads
        it; ``refqueue.prometheus.RefqueueCollector`` exports it."""
        from refqueue.metrics import Metrics

        gauges = self.gauges()
        log = self._event_log
        sink = None if log is None else next((s for s in log.sinks if isinstance(s, Metrics)), None)
        if sink is None:
            return {**gauges, "counters": False}
        snapshot = sink.snapshot(self._qid, log.pid, now=gauges["clock"])  # type: ignore[union-attr]
        snapshot.update(gauges)
        snapshot["counters"] = True
        return snapshot

    def gauges(self) -> dict[str, Any]:
        """What the queue holds and who waits on it, read now with the lock
        held (no events needed), for ``metrics()``: O(live samples) (one scan
        of the pending and leased records), plus one ``store.health()``.

        ``clock`` (the queue's clock now; None if it raised), ``pending``,
        ``outstanding``, ``closed``, ``paused``; ``dead_letters`` (samples
        dead-lettered so far), ``dead_letters_kept``, ``dead_letters_dropped``;
        ``producers_blocked`` (producers parked in ``put_blocks_until_below``
        now), ``parked_bytes`` (their refs' bytes), ``producer_blocked_seconds``
        (clock-seconds parked, summed over producers, the waits still in
        progress included); ``consumers_waiting`` (consumers in ``acquire``
        on an empty queue now); ``oldest_open_lease_age_seconds`` (since the
        oldest outstanding lease's acquire; 0.0 with none),
        ``leases_past_deadline`` (outstanding leases whose deadline passed:
        only a reclaim takes them back), ``most_overdue_lease_seconds``,
        ``leases_older_than_timeout`` (leased longer than the visibility
        timeout: kept by ``extend``, or overdue), ``visibility_timeout_seconds``;
        ``reclaimer_running``, ``reclaimer_interval``, ``reclaimer_errors``,
        ``reclaimer_consecutive_errors``, ``reclaimer_last_error`` (None: no error; for this queue: what
        stopped it); ``resident_bytes``, ``resident_samples``,
        ``capacity_bytes`` (the store's ``health()``; None, with
        ``store_error``, if it raised), ``high_watermark_bytes``,
        ``low_watermark_bytes`` (effective), ``effective_resident_bytes``
        (resident - parked, what the hysteresis judges, D8), ``live_bytes``
        (``estimated_bytes`` of the pending and leased samples) and
        ``unaccounted_bytes`` (resident bytes that neither a live sample nor a
        parked ref accounts for: orphans of puts that never completed, or
        data of another queue or producer on the same store)."""
        status = self.reclaimer_status()
        with self._lock:
            now = self._clock_or_none()
            live_bytes = 0
            oldest: float | None = None
            overdue = older = 0
            most_overdue = 0.0
            vt = self._vt_seconds
            for rec in self._live.values():
                live_bytes += rec.ref.estimated_bytes
                deadline = rec.deadline
                if deadline is None or now is None:
                    continue
                if oldest is None or rec.leased_at < oldest:
                    oldest = rec.leased_at
                if deadline <= now:
                    overdue += 1
                    most_overdue = max(most_overdue, now - deadline)
                if now - rec.leased_at > vt:
                    older += 1
            blocked = self._blocked_seconds
            if now is not None:
                blocked += sum(max(0.0, now - p.since) for p in self._parked if p.since is not None)
            store_error = None
            try:
                health = self._store.health()
                resident: int | None = health.resident_bytes
                samples: int | None = health.sample_count
                capacity: int | None = health.capacity_bytes
            except Exception as exc:  # a closed store: the gauges still answer
                resident = samples = capacity = None
                store_error = repr(exc)
            gauges = {
                "clock": now,
                "pending": len(self._pending),
                "outstanding": self._outstanding,
                "closed": self._closed,
                "paused": self._paused,
                "dead_letters": self._dead_total,
                "dead_letters_kept": len(self._dead),
                "dead_letters_dropped": self._dead_dropped,
                "producers_blocked": len(self._parked),
                "parked_bytes": self._parked_bytes,
                "producer_blocked_seconds": blocked,
                "consumers_waiting": self._acquirers_waiting,
                "oldest_open_lease_age_seconds": 0.0 if oldest is None or now is None else max(0.0, now - oldest),
                "leases_past_deadline": overdue,
                "most_overdue_lease_seconds": most_overdue,
                "leases_older_than_timeout": older,
                "visibility_timeout_seconds": vt,
                **reclaimer_gauges(status),
                "resident_bytes": resident,
                "resident_samples": samples,
                "capacity_bytes": capacity,
                "store_error": store_error,
                "high_watermark_bytes": self._high,
                "low_watermark_bytes": self._low,
                "effective_resident_bytes": None if resident is None else max(0, resident - self._parked_bytes),
                "live_bytes": live_bytes,
                "unaccounted_bytes": (
                    None if resident is None else max(0, resident - live_bytes - self._parked_bytes)
                ),
            }
        return gauges

    @property
    def event_log(self) -> EventLog | None:
        """The ``EventLog`` this queue records into (``events=``), or None."""
        return self._event_log

    def emit_event(self, record: dict[str, Any]) -> bool:
        """Record ``record`` (a dict of JSON values with an ``"ev"`` of
        another component reading this queue: the loader's ``loader_*``
        events, docs/EVENTS.md) in this queue's ``EventLog`` as one of this
        queue's records (``q``, ``t`` from the queue's clock, ``seq`` taken
        under the queue's lock, so it falls between the queue's own steps,
        never inside one).  False, recording nothing, without a log.  A
        failing sink never fails it (as for the queue's own records)."""
        if self._emit is None:
            return False
        ev = record.get("ev") if isinstance(record, dict) else None
        if not isinstance(ev, str) or not ev.startswith("loader_"):
            raise ValueError(
                f"SampleRefQueue.emit_event records another component's events (\"ev\": \"loader_...\"), got "
                f"{record!r}; the queue's own events are its own to write"
            )
        with self._lock:
            self._emit(dict(record))
        return True

    @property
    def epoch(self) -> str:
        """This queue's identity (uuid4 hex), carried by every lease it mints."""
        return self._epoch

    @property
    def visibility_timeout(self) -> VisibilityTimeout:
        return self._vt

    @property
    def store(self) -> FeatureStore:
        return self._store

    @property
    def _sample_counters(self) -> dict[str, int]:
        """The seed's private per-sample redelivery map, for code written
        against the seed that inspects it: a snapshot ``{sample_id:
        redeliveries so far}`` of the samples the queue holds (pending or
        leased).  A completed or dead-lettered sample is absent, so it never
        grows with the run.  Read-only: changing the dict changes nothing."""
        with self._lock:
            return {sample_id: rec.redeliveries for sample_id, rec in self._live.items()}

    @property
    def is_closed(self) -> bool:
        """``close()`` was called (not: nothing is left; see ``is_drained``)."""
        with self._lock:
            return self._closed

    @property
    def is_drained(self) -> bool:
        """Closed, nothing pending and nothing outstanding (D3)."""
        with self._lock:
            return self._closed and not self._pending and self._outstanding == 0

    @property
    def is_paused(self) -> bool:
        """The producer-side pause flag of the hysteresis (D4)."""
        with self._lock:
            return self._paused

    @property
    def parked_bytes(self) -> int:
        """Sum of ``estimated_bytes`` of the refs whose producers are inside
        ``put_blocks_until_below`` now (D8): residency the hysteresis does not
        count.  0 when no producer is blocked."""
        with self._lock:
            return self._parked_bytes

    def pending_count(self) -> int:
        with self._lock:
            return len(self._pending)

    def outstanding_count(self) -> int:
        with self._lock:
            return self._outstanding

    def dead_letters(self) -> list[DeadLetter]:
        """The dead-lettered samples kept (the newest ``dead_letter_limit``
        not yet drained), in dead-letter order.  O(dead_letter_limit)."""
        with self._lock:
            return list(self._dead)

    def drain_dead_letters(self) -> list[DeadLetter]:
        """Take out the dead letters kept, in dead-letter order: the list
        ``dead_letters()`` would return; afterwards it is empty.
        ``dead_letters_dropped`` is not reset."""
        with self._lock:
            drained = list(self._dead)
            self._dead.clear()
            return drained

    @property
    def dead_letter_limit(self) -> int:
        """How many dead letters the queue keeps (a constructor argument)."""
        return self._dead.maxlen  # type: ignore[return-value]

    @property
    def dead_letters_dropped(self) -> int:
        """Dead letters dropped, oldest first, to keep ``dead_letter_limit``
        (not counting those taken out by ``drain_dead_letters``)."""
        with self._lock:
            return self._dead_dropped

    def __repr__(self) -> str:
        with self._lock:
            state = "closed" if self._closed else "open"
            return (
                f"SampleRefQueue({self._store_uri!r}, {state}, pending={len(self._pending)}, "
                f"outstanding={self._outstanding}, dead={len(self._dead)}, epoch={self._epoch!r})"
            )

    # -- argument checks (no lock, no state) ------------------------------------------

    def _check_ref(self, call: str, ref: object) -> None:
        if not isinstance(ref, SampleRef):
            raise TypeError(
                f"{call} needs a SampleRef, got {describe(ref)}; pass the ref FeatureStore.put returned"
            )
        if ref.store_uri != self._store_uri:
            raise ValueError(
                f"{call}({ref.sample_id!r}): the ref names store {ref.store_uri!r}, but this queue is "
                f"bound to {self._store_uri!r}; put refs of the queue's store"
            )

    def _check_lease(self, call: str, lease: object) -> tuple[str, int]:
        """``(sample_id, lease_id)`` of a lease this queue may have minted,
        each field read once; else the error that names what is wrong."""
        if not isinstance(lease, Lease):
            raise TypeError(
                f"{call} needs a Lease, got {describe(lease)}; pass what acquire returned "
                f"(or Lease.from_json of it)"
            )
        epoch, ref, lease_id = lease.epoch, lease.ref, lease.lease_id
        if type(epoch) is not str or epoch != self._epoch:
            raise ForeignLease(
                f"{call} got a lease of queue epoch {epoch!r}, but this queue's epoch is "
                f"{self._epoch!r}; hand a lease back to the queue that issued it"
            )
        if not isinstance(ref, SampleRef):
            raise TypeError(
                f"{call} got a lease whose ref is {describe(ref)}, not a SampleRef; pass the lease "
                f"acquire returned, unaltered"
            )
        if type(lease_id) is not int:
            raise TypeError(
                f"{call} got a lease whose lease_id is {describe(lease_id)}, not an int; pass the lease "
                f"acquire returned, unaltered"
            )
        if lease_id < 1:
            raise ValueError(
                f"{call} got a lease with lease_id={lease_id}, which no queue mints (lease ids count up "
                f"from 1); pass the lease acquire returned, unaltered"
            )
        return ref.sample_id, lease_id

    # -- state changes: each runs with self._lock held ------------------------------

    def _check_put_nowait(self, call: str, sample_id: str) -> None:
        """The rejections every put step makes, in the model's order."""
        if self._closed:
            raise QueueClosed(f"{call}({sample_id!r}) after close(); the queue takes no more refs")
        rec = self._live.get(sample_id)
        if rec is not None:
            status = "pending" if rec.deadline is None else "leased"
            raise DuplicateSample(
                f"{call}({sample_id!r}): that sample is already {status} (already present in this queue); "
                f"put it again only after its lease is acked or it is dead-lettered"
            )
        if self._dedup_window and sample_id in self._completed_ids:
            raise ReplayedSample(
                f"{call}({sample_id!r}): that sample completed within the last {self._dedup_window} "
                f"(dedup_window); a restarted producer is replaying it, skip it"
            )

    def _put_nowait(self, ref: SampleRef) -> None:
        """Model ``put`` after its checks: a new incarnation at the tail."""
        rec = _Sample(ref)
        self._live[ref.sample_id] = rec
        self._pending.append(rec)
        if self._acquirers_waiting:
            self._ready.notify()

    def _try_put_nowait(self, ref: SampleRef, parking: _Parking) -> tuple[StoreHealth | None, int, int]:
        """Model ``try_put`` (D4, D8): one hysteresis step of the blocking put
        that owns ``parking``.  Returns ``(None, _, _)`` when the ref was
        enqueued (and unparked), else the health read, the effective
        residency and the room generation the producer waits on (the ref
        stays parked).  A rejection unparks the ref and changes nothing else.
        """
        try:
            self._check_put_nowait("put_blocks_until_below", ref.sample_id)
        except BaseException:
            self._unpark_nowait(parking)
            raise
        health = self._store.health()
        effective = 0
        if self._high is not None:
            own = 0 if parking.parked else parking.nbytes  # a first step counts its ref as parked
            effective = max(0, health.resident_bytes - self._parked_bytes - own)
            paused = next_paused(self._paused, effective, self._high, self._low)  # refqueue._decisions
            if paused != self._paused:
                self._paused = paused
                self._transition("pause" if paused else "resume", health)
                if not paused:  # the other blocked producers may go now
                    self._room_generation += 1
                    if self._producers_waiting:
                        self._room.notify_all()
            if self._paused and (self._pending or self._outstanding):
                if self._event_log is not None:
                    self._emit_try_put(ref, parking, health, False)
                return health, effective, self._room_generation
            # not paused, or paused with no work left: admitted (a pause stands)
        self._unpark_nowait(parking)
        self._put_nowait(ref)
        if self._event_log is not None:
            self._emit_try_put(ref, parking, health, True)
        return None, effective, self._room_generation

    def _unpark_nowait(self, parking: _Parking) -> None:
        """The ref of ``parking`` no longer counts as parked (idempotent)."""
        if parking.parked:
            now = self._clock_or_none()
            if now is not None and parking.since is not None:
                self._blocked_seconds += max(0.0, now - parking.since)
            self._parked.discard(parking)
            self._parked_bytes -= parking.nbytes
            parking.parked = False
            if self._event_log is not None:
                self._emit({"ev": "unpark", "t": now, "sample": parking.sample_id, "nbytes": parking.nbytes})

    def _clock_or_none(self) -> float | None:
        """The clock's reading, or None if it raised or gave NaN (for the
        metrics of blocked time: never a reason for a put to fail)."""
        try:
            now = self._now()
        except Exception:
            return None
        return now if now == now else None

    def _transition(self, event: str, health: StoreHealth) -> None:
        if self._event_log is not None:
            self._emit({"ev": event, "resident_bytes": health.resident_bytes})
        self._callbacks_due.add(self._callbacks[event], health)

    def _acquire_nowait(self) -> Lease | None:
        """Model ``acquire``: the head of pending becomes leased.

        Everything that can raise runs before anything changes: the clock,
        the lease, the new deadline entry (stale until the commit).  The
        commit is attribute stores and then the ``popleft`` of the head: no
        call between them, so no exception (a raising clock, an asynchronous
        one) can leave the sample neither pending nor leased.  An exception
        after the ``popleft`` leaves the sample leased, and reclaim brings it
        back, as for a consumer that crashed.
        """
        pending = self._pending
        if not pending:
            if self._event_log is not None:
                self._emit({"ev": "acquire", "sample": None})
            return None
        now = self._now()  # may raise: nothing has changed
        deadline = now + self._vt_seconds
        rec = pending[0]
        ref = rec.ref
        lease_id = next(self._lease_ids)
        lease = mint_lease(ref, deadline, self._vt, rec.redeliveries, lease_id, self._epoch)
        entry = (deadline, ref.sample_id, lease_id)
        self._deadlines.add(entry)
        # the commit
        rec.lease_id = lease_id
        rec.deadline = deadline
        rec.leased_at = now
        rec.deliveries += 1
        self._outstanding += 1
        pending.popleft()
        self._deadlines.settle(entry, self._outstanding)
        if self._event_log is not None:
            self._emit({"ev": "acquire", "t": now, "sample": ref.sample_id, "lease": lease_id,
                        "redeliveries": rec.redeliveries, "deadline": deadline, "pending": len(pending),
                        "outstanding": self._outstanding})
        return lease

    def _requeue_nowait(self, rec: _Sample) -> None:
        """Model ``_requeue``: a live lease comes back (fail or reclaim).
        The commit is attribute stores and then the append: no call between."""
        if self._max_deliveries is not None and rec.deliveries >= self._max_deliveries:
            self._finish_nowait(rec, MAX_DELIVERIES_REASON)
            return
        rec.lease_id = _NOT_LEASED
        rec.deadline = None
        rec.redeliveries += 1
        self._outstanding -= 1
        self._pending.append(rec)
        if self._acquirers_waiting:
            self._ready.notify()

    def _finish_nowait(self, rec: _Sample, reason: str | None) -> None:
        """Model ``_finish``: a leased sample is acked (``reason`` None) or
        dead-lettered.  The dead letter is built and the store scrubs first:
        if either raises, nothing here has changed.  Then the commit (the
        record leaves; no call in between), then the bookkeeping."""
        ref = rec.ref
        letter = None if reason is None else DeadLetter(ref, reason, rec.deliveries)
        self._store.scrub(ref)
        sample_id = ref.sample_id
        del self._live[sample_id]
        self._outstanding -= 1
        if letter is not None:
            dead = self._dead
            if len(dead) == dead.maxlen:
                self._dead_dropped += 1  # the deque drops its oldest to make room
            dead.append(letter)
            self._dead_total += 1
        if self._dedup_window:
            if len(self._completed) == self._dedup_window:
                self._completed_ids.discard(self._completed.popleft())
            self._completed.append(sample_id)
            self._completed_ids.add(sample_id)
        self._room_generation += 1
        if self._producers_waiting:
            self._room.notify_all()
        if self._closed:
            self._notify_if_drained()

    def _reclaim_nowait(self) -> int:
        """Model ``reclaim_expired``.  The clock is read before anything
        changes; each expired lease's heap entry stays in place until its
        requeue commits (which makes it stale), so a requeue that raises
        leaves that lease expired and due, and nothing is lost."""
        now = self._now()
        deadlines = self._deadlines
        live = self._live
        count = 0
        taken: list[tuple[str, int, bool]] | None = None if self._event_log is None else []
        while True:
            entry = deadlines.peek_expired(now)
            if entry is None:
                if taken is not None:
                    self._emit_reclaim(now, taken)
                return count
            rec = live[entry[1]]
            self._requeue_nowait(rec)
            if taken is not None:
                taken.append((entry[1], entry[2], rec.lease_id is not _NOT_LEASED))
            count += 1

    def _notify_if_drained(self) -> None:
        if self._closed and not self._pending and self._outstanding == 0 and self._acquirers_waiting:
            self._ready.notify_all()

    # -- events (issue 13): with self._lock held, only when _event_log is set ---------

    def _open_record(self) -> dict[str, Any]:
        store = self._store
        return {
            "ev": "open", "t": self._now(), "epoch": self._epoch, "store": self._store_uri,
            "visibility_timeout": self._vt_seconds, "high": self._high, "low": self._low,
            "store_high": store.high_watermark_bytes, "store_low": store.low_watermark_bytes,
            "capacity_bytes": store.capacity_bytes, "max_deliveries": self._max_deliveries,
            "dedup_window": self._dedup_window, "dead_letter_limit": self._dead.maxlen, "fifo": True,
        }

    def _emit_try_put(self, ref: SampleRef, parking: _Parking, health: StoreHealth, enqueued: bool) -> None:
        self._emit({
            "ev": "try_put", "sample": ref.sample_id, "nbytes": parking.nbytes, "enqueued": enqueued,
            "paused": self._paused, "resident_bytes": health.resident_bytes, "parked_bytes": self._parked_bytes,
            "pending": len(self._pending),
        })

    def _emit_reclaim(self, now: float, taken: list[tuple[str, int, bool]]) -> None:
        self._emit({
            "ev": "reclaim", "t": now, "samples": [s for s, _, _ in taken], "leases": [lid for _, lid, _ in taken],
            "dead": [s for s, _, dead in taken if dead], "pending": len(self._pending),
        })


def _effective_watermarks(
    store: FeatureStore, high_override: int | None, low_override: int | None
) -> tuple[int | None, int | None]:
    """The queue's override where given, else the store's own (D4), validated as a pair."""
    fix = "fix the store's watermark configuration"
    store_high = check_optional_count("store.high_watermark_bytes", store.high_watermark_bytes, 0, fix)
    store_low = check_optional_count("store.low_watermark_bytes", store.low_watermark_bytes, 0, fix)
    capacity = check_optional_count("store.capacity_bytes", store.capacity_bytes, 1, "fix the store's byte cap")
    high, high_from = (high_override, "queue") if high_override is not None else (store_high, "store")
    low, low_from = (low_override, "queue") if low_override is not None else (store_low, "store")
    if (high is None) != (low is None):
        raise ValueError(
            f"the effective watermark pair is half set: high={high!r} ({high_from}), low={low!r} "
            f"({low_from}); pass both high_watermark_bytes and low_watermark_bytes, or neither and "
            f"configure both on the store"
        )
    if high is not None and low is not None:
        if not low < high:
            raise ValueError(
                f"the effective low watermark {low} ({low_from}) must be strictly less than the effective "
                f"high watermark {high} ({high_from}); lower low_watermark_bytes or raise high_watermark_bytes"
            )
        if capacity is not None and high > capacity:
            raise ValueError(
                f"the effective high watermark {high} ({high_from}) exceeds the store's capacity_bytes="
                f"{capacity}, so the producer could never pause; pass high_watermark_bytes <= {capacity}"
            )
    return high, low
