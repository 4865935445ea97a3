"""Producer and consumer processes of a torture run (started with 'spawn').

Each behaves as a careful user following docs/REDIS.md:

* every call that raised ``RedisUnavailable`` is retried after a short,
  capped, jittered backoff (the client never retries by itself: a script
  whose reply was lost may have run);
* after an ``ack`` or ``fail`` that raised it, ``lease_state(lease)`` says
  whether it committed (``"acked"``; for a fail: the lease is no longer
  ``"live"``) or may be sent again (``"live"``);
* a ``put`` retried after a lost reply answers ``DuplicateSample`` (or
  ``ReplayedSample``: the queue's ``dedup_window`` remembers completed ids)
  when the first one committed: the put is done;
* consumers run ``start_reclaimer()``, and now and then (every
  ``stall_every`` seconds on average, from the process's seeded random
  stream) stall with a lease for longer than the visibility timeout, as a
  long training step or a GC pause would: the lease is reclaimed and
  redelivered meanwhile, and the late ack must answer False (fencing);
* ``QueueStateLost`` (from the backend, once it can tell) is recorded and
  the process stops (exit status 3); any error that is not a refqueue
  exception is recorded and ends the process (exit status 1).

Every call is recorded (``refqueue.torture.history``).  The process talks
to the run over a pipe, in JSON: it says ``{"ready": true}`` once its queue
is open, and reads orders between calls: ``stop`` (a producer stops
putting; any process leaves), ``die-mid-ack`` (the next scrub, which runs
right after an ack or dead-letter committed, SIGKILLs this process first:
the nemesis's kill in the window between the two systems).

A producer's sample ids are ``<process>-<n>`` (``p0.2-000017``): unique
across incarnations, so each id is put once and has one incarnation.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from refqueue.torture.history import Recorder

__all__ = ["producer_main", "consumer_main", "open_queue", "lease_args", "encode_lease", "STATE_LOST_EXIT"]

STATE_LOST_EXIT = 3  # a worker's exit status after QueueStateLost
_BACKOFF_FIRST, _BACKOFF_CAP = 0.05, 1.0  # seconds; doubled per retry, jittered


def open_queue(spec: dict[str, Any], store: Any) -> Any:
    """A client of the run's queue on ``spec["url"]`` with the run's socket timeout."""
    from refqueue.backends.redis import RedisSampleRefQueue
    from refqueue.queue import VisibilityTimeout

    return RedisSampleRefQueue(
        store, VisibilityTimeout(spec["visibility_timeout"]), url=spec["url"], name=spec["name"],
        max_deliveries=spec["max_deliveries"], dedup_window=spec["dedup_window"], socket_timeout=spec["socket_timeout"],
    )


def lease_args(lease: Any) -> dict[str, Any]:
    return {"sample": lease.ref.sample_id, "epoch": lease.epoch, "lease_id": lease.lease_id}


def encode_lease(lease: Any) -> dict[str, Any] | None:
    if lease is None:
        return None
    return {"sample": lease.ref.sample_id, "epoch": lease.epoch, "lease_id": lease.lease_id,
            "redeliveries": lease.redelivery_count}


class _Stop(Exception):
    """Leave the process: ordered to, or the queue's state was lost."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Orders:
    """The orders the run sent over the pipe, read between calls."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.stop = False
        self.die_mid_ack = False

    def check(self) -> bool:
        """Read what arrived; True once ``stop`` was ordered (or the run is gone)."""
        try:
            while self.conn.poll():
                order = json.loads(self.conn.recv_bytes())["order"]
                if order == "stop":
                    self.stop = True
                elif order == "die-mid-ack":
                    self.die_mid_ack = True
        except (EOFError, OSError):
            self.stop = True  # the run's end of the pipe is gone
        return self.stop


def _store_class() -> type:
    from refqueue.stores.shared_dir import SharedDirFeatureStore

    class TortureStore(SharedDirFeatureStore):
        """The shared directory, whose scrubs are recorded, and which
        SIGKILLs its process at a scrub when the nemesis ordered a mid-ack kill."""

        recorder: Recorder
        orders: _Orders

        def scrub(self, ref: Any) -> bool:
            self.orders.check()
            if self.orders.die_mid_ack:
                self.recorder.invoke("store.scrub", {"sample": ref.sample_id, "kill": "mid-ack"})
                os.kill(os.getpid(), signal.SIGKILL)
            return self.recorder.call("store.scrub", {"sample": ref.sample_id},
                                      lambda: SharedDirFeatureStore.scrub(self, ref))

    return TortureStore


class _Worker:
    """What producers and consumers share: the record, the orders, the store,
    the queue, and the careful retries."""

    def __init__(self, spec_json: str, name: str, conn: Any) -> None:
        spec = self.spec = json.loads(spec_json)
        log = open(Path(spec["logs"]) / f"{name}.log", "a", buffering=1)  # noqa: SIM115
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        self.name = name
        self.conn = conn
        self.rec = Recorder(Path(spec["history"]) / f"{name}.jsonl", name)
        self.orders = _Orders(conn)
        self.rng = random.Random(f"{spec['seed']}/{name}")
        from refqueue import errors

        self.state_lost = errors.QueueStateLost
        store = _store_class()(spec["root"], high_watermark_bytes=spec["high_bytes"],
                               low_watermark_bytes=spec["low_bytes"], fsync=False)
        store.recorder, store.orders = self.rec, self.orders
        self.store = store
        self.queue = self.careful("open", {"url": spec["url"], "name": spec["name"]}, lambda: open_queue(spec, store),
                                  encode=lambda q: {"epoch": q.epoch})

    def backoff(self, attempt: int) -> None:
        """Wait before retrying a call that lost its connection (a retry's
        backoff: capped, jittered, never a stand-in for synchronisation)."""
        time.sleep(min(_BACKOFF_CAP, _BACKOFF_FIRST * 2 ** min(attempt, 10)) * self.rng.uniform(0.5, 1.0))

    def is_unavailable(self, exc: BaseException) -> bool:
        from refqueue.backends.redis import RedisUnavailable

        return isinstance(exc, RedisUnavailable)

    def lost(self, exc: BaseException) -> bool:
        return isinstance(exc, self.state_lost)

    def careful(self, call: str, args: dict[str, Any], fn: Callable[[], Any],
                encode: Callable[[Any], Any] = lambda value: value) -> Any:
        """``fn()`` recorded as ``call``, retried while it raises ``RedisUnavailable``."""
        attempt = 0
        while True:
            try:
                return self.rec.call(call, args, fn, encode)
            except Exception as exc:
                if self.lost(exc):
                    raise _Stop(STATE_LOST_EXIT) from exc
                if not self.is_unavailable(exc):
                    raise
            attempt += 1
            self.backoff(attempt)

    def finish(self, call: str, lease: Any, fn: Callable[[], bool]) -> bool:
        """An ack or fail of ``lease``, sent again only while ``lease_state``
        says the lease is still ``"live"`` (the earlier one did not commit).
        True when one of them committed."""
        attempt = 0
        while True:
            try:
                return self.careful_once(call, lease_args(lease), fn)
            except _Unavailable:
                pass
            state = self.careful("lease_state", lease_args(lease), lambda: self.queue.lease_state(lease))
            if state != "live":
                return state == "acked" if call == "ack" else state in ("pending", "other", "gone")
            attempt += 1
            self.backoff(attempt)

    def careful_once(self, call: str, args: dict[str, Any], fn: Callable[[], Any]) -> Any:
        """``fn()`` recorded; ``_Unavailable`` for ``RedisUnavailable``, ``_Stop`` for a lost state."""
        try:
            return self.rec.call(call, args, fn)
        except Exception as exc:
            if self.lost(exc):
                raise _Stop(STATE_LOST_EXIT) from exc
            if self.is_unavailable(exc):
                raise _Unavailable from exc
            raise

    def ready(self) -> None:
        self.conn.send_bytes(json.dumps({"ready": True, "pid": os.getpid()}).encode())


class _Unavailable(Exception):
    """A call raised ``RedisUnavailable`` (recorded); the caller decides what follows."""


def _run(main: Callable[[_Worker], None], spec_json: str, name: str, conn: Any) -> None:
    from refqueue._parent import exit_with_parent

    exit_with_parent()  # a run killed outright takes its processes with it
    status = 0
    try:
        main(_Worker(spec_json, name, conn))
    except _Stop as stop:
        status = stop.status
    # Every record is flushed as written: leave without the interpreter's
    # teardown (with torch loaded, seconds on a busy machine).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def producer_main(spec_json: str, name: str, conn: Any) -> None:
    """Put samples until told to stop."""
    _run(_produce, spec_json, name, conn)


def consumer_main(spec_json: str, name: str, conn: Any) -> None:
    """Lease, read, ack (or now and then fail) until the queue is drained."""
    _run(_consume, spec_json, name, conn)


def _produce(w: _Worker) -> None:
    from refqueue.errors import DuplicateSample, PutAborted, QueueClosed
    from refqueue.torture.payload import PUT_FIELDS, checksum, tensors_for

    w.ready()
    number = 0
    while not w.orders.check():
        sample_id = f"{w.name}-{number:06d}"
        number += 1
        tensors = tensors_for(sample_id)
        ref = w.rec.call("store.put", {"sample": sample_id, "checksum": checksum(tensors)},
                         lambda: w.store.put(sample_id, tensors, **PUT_FIELDS),
                         encode=lambda r: {"bytes": r.estimated_bytes})
        attempt = 0
        while True:
            try:
                w.careful_once("put", {"sample": sample_id, "attempt": attempt},
                               lambda: w.queue.put_blocks_until_below(ref, poll_interval=0.2,
                                                                      abort_when=w.orders.check))
                break
            except _Unavailable:
                attempt += 1
                w.backoff(attempt)
            except DuplicateSample:
                if attempt == 0:
                    raise  # an id put for the first time cannot be a duplicate
                break  # an earlier attempt committed; its reply was lost
            except (PutAborted, QueueClosed):
                # Never enqueued: the data is this producer's to remove.
                w.careful("store.scrub", {"sample": sample_id, "why": "not enqueued"},
                          lambda: w.store.scrub(ref))
                return


def _consume(w: _Worker) -> None:
    from refqueue.errors import SampleMissing
    from refqueue.torture.payload import checksum

    q = w.queue
    interval = w.spec["visibility_timeout"] / 4
    w.careful("start_reclaimer", {"interval": interval}, lambda: q.start_reclaimer(interval))
    w.ready()
    watch = _ReclaimerWatch(w)
    stall_every = w.spec["stall_every"]
    next_stall = time.monotonic() + w.rng.expovariate(1 / stall_every) if stall_every else float("inf")
    try:
        while not w.orders.check():
            watch.look()
            lease = w.careful("acquire", {}, lambda: q.acquire(poll_interval=0.2), encode=encode_lease)
            if lease is None:
                if w.careful("is_drained", {}, lambda: q.is_drained):
                    break
                continue
            try:
                tensors, handle = w.rec.call("get", lease_args(lease), lambda: w.store.get(lease.ref),
                                             encode=lambda got: {"checksum": checksum(got[0])})
                w.store.release(handle)
                del tensors
                missing = False
            except SampleMissing:
                missing = True  # recorded; the lease is stale (or the data was lost): ack to drop it
            if time.monotonic() >= next_stall:
                seconds = w.spec["visibility_timeout"] + w.rng.uniform(0.5, 1.5)
                # The workload's slowness (a long step), recorded: not a wait for anything.
                w.rec.call("stall", dict(lease_args(lease), seconds=round(seconds, 3)), lambda: time.sleep(seconds))
                next_stall = time.monotonic() + w.rng.expovariate(1 / stall_every)
            if not missing and w.rng.random() < w.spec["fail_rate"]:
                w.finish("fail", lease, lambda: q.fail(lease))
            else:
                w.finish("ack", lease, lambda: q.ack(lease))
    finally:
        _stop_reclaimer(w)


class _ReclaimerWatch:
    """Records, once, the moment this consumer finds its reclaimer no longer
    running while the queue still has work (``reclaimer_stopped``, with what
    stopped it): in an excerpt it sits next to the fault that killed it.
    Looks at most once a second (an attribute read, no server call)."""

    def __init__(self, w: _Worker) -> None:
        self.w = w
        self.next = time.monotonic() + 1.0
        self.seen = False

    def look(self) -> None:
        if self.seen or time.monotonic() < self.next:
            return
        self.next = time.monotonic() + 1.0
        running, error = _reclaimer_state(self.w.queue)
        if not running:
            self.seen = True
            self.w.rec.ok(self.w.rec.invoke("reclaimer_stopped", {}), {"error": error})


def _reclaimer_state(q: Any) -> tuple[bool, str | None]:
    """(running, what stopped it) of ``q``'s reclaimer."""
    status = q.reclaimer_status()
    return bool(status.get("running")), status.get("stopped_by")


def _stop_reclaimer(w: _Worker) -> None:
    """Record whether the reclaimer was still running and what stopped it
    (``stop_reclaimer`` re-raises, as ``RuntimeError``, an error that ended it early)."""
    q = w.queue
    status = getattr(q, "reclaimer_status", None)
    if callable(status):
        try:
            w.rec.call("reclaimer_status", {}, status, encode=lambda s: s if isinstance(s, (dict, str)) else repr(s))
        except Exception:  # noqa: BLE001 (recorded)
            pass
    try:
        w.rec.call("stop_reclaimer", {}, q.stop_reclaimer)
    except Exception:  # noqa: BLE001 (recorded: the checker reads it)
        pass
