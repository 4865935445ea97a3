"""``RedisSampleRefQueue``: the ``SampleRefQueue`` API of docs/API.md with the
queue's state in a Redis 7 server, shared by every process (on any machine)
that opens the same queue: same URL, same ``name``.

Contract: docs/API.md; how it maps onto Redis: docs/REDIS.md.  Every state
change is one Lua script (``refqueue.backends._redis_scripts``) run by
``EVALSHA``, so it is atomic across all clients: put, the hysteresis step,
acquire, ack, fail, dead_letter, extend, reclaim_expired, close.

Design notes
------------
* **Fencing.**  A lease's id is a per-queue counter (``HINCRBY``) minted by
  the acquire that delivers it, and the sample's record holds the id of its
  live lease.  Ack, fail, extend and dead_letter compare the two inside the
  script: a stale lease (reclaimed and redelivered, acked, failed) changes
  nothing and answers ``False``.  No raw stream ``XACK`` is involved: a plain
  XACK from an old owner after XCLAIM would complete the new owner's lease.
* **Time.**  With ``clock=None`` the scripts read the server's ``TIME``:
  every client agrees on one clock.  With an injected clock (the conformance
  kit's ``ManualClock``), ``now`` and the new deadline are computed here and
  passed in as decimal strings, so a lease's deadline is exactly
  ``clock.now() + seconds`` and no test sleeps to cross one.
* **The store.**  The store is the caller's (``SharedDirFeatureStore`` for
  many machines, any ``FeatureStore`` in one process).  A live ack or a
  dead-letter is one fenced script that commits, and then
  ``store.scrub(ref)`` (D2): never the other way round, which could scrub
  the data of a sample that another process has just had reclaimed and
  redelivered.  The script returns an *undo record*; if the scrub raises,
  the ``undo`` script puts the queue back exactly as it was (the lease
  live, the dead letter and dedup entry gone) and the error propagates, so a
  failed scrub commits nothing, as docs/API.md requires.  Within one client,
  a lock (``_store_lock``) makes "commit, scrub (or undo)" one step with
  respect to this client's other calls that read the store or, with an
  injected clock, any call at all; other processes may observe the short
  window between a commit and its undo (only when a scrub fails).
* **Wakeups across processes.**  A consumer blocked in ``acquire`` waits in
  ``BLPOP`` on the queue's wake list (a put or requeue pushes a token while
  there are fewer tokens than pending refs; a drained queue keeps one, each
  woken consumer handing it on); a producer blocked in
  ``put_blocks_until_below`` waits in ``BLPOP`` on its own list, which
  every ack, dead-letter, resume, park and close pushes to.  Each wait is a
  slice of at most ``BLOCK_SLICE`` seconds, so a server that went away is
  noticed; the slices are not a poll: a token wakes the waiter at once.
* **Errors.**  Argument errors, rejections and their order are those of the
  in-process queue (its own validation helpers are reused).  A lost
  connection raises ``RedisUnavailable``, naming the URL without its
  password; nothing the server acknowledged is lost, since the server holds
  all state.  After an ack whose reply was lost, ``lease_state(lease)``
  says whether it committed (``"acked"``) or may be retried (``"live"``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis as redis_py
from redis.backoff import NoBackoff
from redis.retry import Retry

from refqueue._callbacks import OrderedCallbacks
from refqueue._checks import (
    DEFAULT_DEAD_LETTER_LIMIT,
    check_optional_callable,
    check_poll_interval,
    check_queue_arguments,
    check_seconds,
    describe,
)
from refqueue._leases import MAX_DELIVERIES_REASON, DeadLetter, Lease, VisibilityTimeout, mint_lease
from refqueue._reclaimer import Reclaimer
from refqueue.backends._redis_scripts import KEYS, PRELUDE, SCRIPTS
from refqueue.errors import DuplicateSample, ForeignLease, PutAborted, QueueClosed, RefQueueError, ReplayedSample
from refqueue.queue import _effective_watermarks
from refqueue.refs import SampleRef
from refqueue.store import FeatureStore, StoreHealth

__all__ = ["RedisSampleRefQueue", "RedisUnavailable", "make", "build", "BLOCK_SLICE"]

# The longest one blocking command waits before the client looks again
# (seconds): bounds how long a vanished server goes unnoticed.
BLOCK_SLICE = 1.0
# How long a waiting producer's registration lives without being renewed (ms):
# a producer that crashed while waiting stops being notified after this.
_PRODUCER_TTL_MS = 10_000
# How the queue's own clients connect: str answers; a blocked call's socket
# outlives its BLPOP slice; a server that does not answer is an error, not a hang.
# No automatic retry: a script whose reply was lost may have committed, and
# running it again is the caller's decision (lease_state says where a lease stands).
_CLIENT_OPTIONS = {
    "decode_responses": True,
    "socket_timeout": BLOCK_SLICE + 10.0,
    "socket_connect_timeout": 10.0,
    "retry": Retry(NoBackoff(), 0),
}
_monotonic = time.monotonic
_NAME = re.compile(r"[A-Za-z0-9._:-]{1,200}")
# How many parsed refs of its leases a client keeps for their ack (the oldest go first).
_REFS_KEPT = 4096
# Each script's full source and its SHA1 (what EVALSHA names it by).
_SOURCES = {op: PRELUDE + body for op, body in SCRIPTS.items()}
_SHAS = {op: hashlib.sha1(source.encode()).hexdigest() for op, source in _SOURCES.items()}


class RedisUnavailable(RefQueueError, ConnectionError):
    """The Redis server could not be reached, or the connection dropped.

    Not a rejection: the call may or may not have taken effect when the
    connection dropped while its reply was on the way (see
    ``RedisSampleRefQueue.lease_state``)."""

    KIND = "unavailable"


def redacted(url: str) -> str:
    """``url`` with its password replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, f"{user}:***@{host}", parts.path, parts.query, parts.fragment))


def _check_url(url: object) -> str:
    if not isinstance(url, str):
        raise TypeError(f"RedisSampleRefQueue(url) must be a str, got {describe(url)}; pass e.g. 'redis://127.0.0.1:6379/0'")
    scheme = urlsplit(url).scheme
    if scheme not in ("redis", "rediss", "unix"):
        raise ValueError(
            f"RedisSampleRefQueue(url={redacted(url)!r}) has scheme {scheme!r}; pass a redis://, rediss:// "
            f"(TLS) or unix:// URL, e.g. 'redis://user:password@host:6379/0'"
        )
    return url


def _check_name(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"RedisSampleRefQueue(name) must be a str, got {describe(name)}; pass e.g. 'train-run-7'")
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"RedisSampleRefQueue(name={name!r}) must be 1-200 letters, digits, '.', '_', ':' or '-' (no "
            f"spaces, braces or glob characters); pass e.g. 'train-run-7'"
        )
    return name


class RedisSampleRefQueue:
    """Lease / ack / fail queue over ``SampleRef`` whose state lives in Redis.

    ``store``, ``visibility_timeout``, the watermarks, the callbacks,
    ``max_deliveries``, ``dedup_window`` and ``dead_letter_limit`` are those
    of ``SampleRefQueue``.  ``url`` (``redis://`` or ``rediss://``, user and
    password in it) or ``client`` (a ``redis.Redis``) names the server;
    ``name`` the queue: every client that opens the same name on the same
    server is a client of the same queue (the first creates it; the others
    must pass the same ``visibility_timeout``, ``max_deliveries``,
    ``dedup_window`` and ``dead_letter_limit``, else ``ValueError``).  Keys
    are ``{prefix}{{name}}:...``.  ``clock=None`` reads lease time from the
    server's ``TIME``; an injected clock (``now()``) is for tests and
    certification, and every client of the queue must then share it.
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
        url: str | None = None,
        client: Any = None,
        name: str = "default",
        prefix: str = "refqueue:",
        max_deliveries: int | None = None,
        dedup_window: int = 0,
        clock: Any = None,
        dead_letter_limit: int = DEFAULT_DEAD_LETTER_LIMIT,
    ) -> None:
        visibility_timeout, high_override, low_override = check_queue_arguments(
            "RedisSampleRefQueue", store, visibility_timeout, high_watermark_bytes, low_watermark_bytes,
            on_pause, on_resume, max_deliveries, dedup_window, dead_letter_limit,
            store_hint=" (SharedDirFeatureStore across machines)",
        )
        if clock is not None and not callable(getattr(clock, "now", None)):
            raise TypeError(
                f"RedisSampleRefQueue(clock) must be None (the server's TIME) or have a now() method, got "
                f"{describe(clock)}; pass refqueue.clock.ManualClock() in tests"
            )
        name = _check_name(name)
        if not isinstance(prefix, str):
            raise TypeError(f"RedisSampleRefQueue(prefix) must be a str, got {describe(prefix)}; pass e.g. 'refqueue:'")
        if (url is None) == (client is None):
            raise ValueError(
                "RedisSampleRefQueue needs exactly one of url= (e.g. 'redis://user:password@host:6379/0') "
                "and client= (a redis.Redis)"
            )
        if client is not None and not isinstance(client, redis_py.Redis):
            raise TypeError(f"RedisSampleRefQueue(client) must be a redis.Redis, got {describe(client)}")
        store_uri = store.uri
        if not isinstance(store_uri, str):
            raise TypeError(f"the store's uri must be a str, got {describe(store_uri)}; fix the store's uri property")
        high, low = _effective_watermarks(store, high_override, low_override)

        if url is not None:
            url = _check_url(url)
            client = redis_py.Redis.from_url(url, **_CLIENT_OPTIONS)
            self._url = redacted(url)
        else:
            kwargs = client.connection_pool.connection_kwargs
            self._url = f"redis://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"
            if not kwargs.get("decode_responses"):
                raise ValueError(
                    "RedisSampleRefQueue(client) must be made with decode_responses=True; "
                    "pass redis.Redis(..., decode_responses=True) or url="
                )
        self._redis = client
        # Each thread's own connection for the scripts (see _evalsha).
        self._held = _held_for(client.connection_pool)
        self._heads: dict[str, bytes] = {}  # each script's packed command head, by SHA (see _packed)
        self._store = store
        self._store_uri = store_uri
        self._vt = visibility_timeout
        self._vt_seconds = visibility_timeout.seconds
        self._vt_text = repr(visibility_timeout.seconds)
        self._high, self._low = high, low
        self._high_text = "" if high is None else str(high)
        self._low_text = "" if low is None else str(low)
        self._callbacks = {"pause": on_pause, "resume": on_resume}
        # This client's on_pause/on_resume, queued under _store_lock by the step that
        # made the change, so they are called in the order of this client's changes.
        self._callbacks_due = OrderedCallbacks()
        self._max_deliveries = max_deliveries
        self._dedup_window = dedup_window
        self._dead_limit = dead_letter_limit
        self._clock = clock
        self._now: Callable[[], float] | None = None if clock is None else clock.now
        self._prefix = f"{prefix}{{{name}}}:"
        self._name = name
        self._config_args = ("" if max_deliveries is None else str(max_deliveries), str(dedup_window), str(dead_letter_limit))
        # Held across "health(), then the hysteresis step" and across "commit, then
        # scrub" of this client's calls (see the module's notes); never across a wait.
        self._store_lock = threading.Lock()
        # With an injected clock, every call of this client runs its script with
        # _store_lock held, from the clock read to the answer (observers too): the
        # clock lives in this process and moves by itself, and reading it and the
        # script that uses the reading must be one step for this process's
        # threads, else another thread may change or observe the queue between
        # them after time moved, and the lease carries a deadline of a time before
        # that.  With the server's TIME the script reads the time itself: no lock.
        self._step_lock: Any = contextlib.nullcontext() if clock is None else self._store_lock
        self._reclaimer_lock = threading.Lock()
        self._reclaimer: Reclaimer | None = None
        # The refs of this client's recent leases, by their JSON (see _ref).
        self._refs: dict[str, SampleRef] = {}
        self._refs_lock = threading.Lock()
        config = json.dumps(
            {
                "visibility_timeout": visibility_timeout.seconds,
                "max_deliveries": max_deliveries,
                "dedup_window": dedup_window,
                "dead_letter_limit": dead_letter_limit,
                "store_uri": store_uri,
            },
            sort_keys=True,
        )
        with self._connection("RedisSampleRefQueue()"):
            epoch, existing = self._run("create", uuid.uuid4().hex, config)
        if existing != config:
            raise ValueError(
                f"queue {name!r} on {self._url} already exists with configuration {existing}, not {config}; "
                f"open it with the same visibility_timeout, max_deliveries, dedup_window, dead_letter_limit "
                f"and store, or use another name"
            )
        self._epoch: str = epoch

    # -- Redis plumbing ---------------------------------------------------------------

    def _connection(self, call: str) -> _Connection:
        return _Connection(self, call)

    def _run(self, op: str, *args: object) -> Any:
        """Run script ``op`` by its SHA1 on this thread's own connection,
        loading it first where the server does not know it (a new server, or
        one restarted)."""
        try:
            return self._evalsha(_SHAS[op], args)
        except redis_py.exceptions.NoScriptError:
            self._redis.script_load(_SOURCES[op])
            return self._evalsha(_SHAS[op], args)

    def _evalsha(self, sha: str, args: tuple[object, ...]) -> Any:
        """``EVALSHA sha`` on a connection this thread holds for its scripts.

        A pool's get and release cost more than the round trip itself (about
        25 us each call with redis-py 8), so each thread keeps one connection
        of the pool's settings for the scripts of every queue on that pool
        (``_held_for``; the blocking waits and the plain reads still use the
        pool, and so does a call made while this thread's connection is
        mid-command, e.g. from a signal handler).  A reply that is not read
        whole (lost connection, timeout, an interrupt) drops the connection:
        the next call connects afresh, never reading a stale reply.  Before
        each command, as the pool does when it hands one out, a connection
        with something to read while idle (the server closed it, e.g. it
        restarted) is replaced by a fresh one: nothing was sent on it, so
        nothing runs twice.  A child process (fork) makes its own."""
        held = self._held
        if getattr(held, "busy", False):  # re-entered mid-command: the pool's way
            return self._redis.evalsha(sha, 1, self._prefix, *self._config_args, *args)
        conn = getattr(held, "conn", None)
        if conn is None or held.pid != os.getpid():
            pool = self._redis.connection_pool
            conn = pool.connection_class(**pool.connection_kwargs)
            held.conn, held.pid = conn, os.getpid()
        held.busy = True
        try:
            _ready(conn)
            packed = self._packed(conn, sha, args)
            try:
                conn.send_packed_command(packed, check_health=False)
                return conn.read_response()
            except redis_py.exceptions.ResponseError:
                raise  # a whole reply was read: the connection is in step
            except BaseException:
                conn.disconnect()
                raise
        finally:
            held.busy = False

    def _packed(self, conn: Any, sha: str, args: tuple[object, ...]) -> list[bytes]:
        """The RESP bytes (one chunk) of ``EVALSHA sha 1 prefix *config *args``: the
        constant head made once per script, each str (UTF-8) or int argument
        a bulk string, as redis-py's own packing writes them (an argument of
        another type is left to redis-py's packing)."""
        for arg in args:
            if type(arg) is not str and type(arg) is not int:
                return conn.pack_command("EVALSHA", sha, 1, self._prefix, *self._config_args, *args)
        head = self._heads.get(sha)
        if head is None:
            head = self._heads[sha] = b"".join(_bulk(part) for part in ("EVALSHA", sha, "1", self._prefix, *self._config_args))
        parts = [b"*%d\r\n" % (4 + len(self._config_args) + len(args)), head]
        for arg in args:
            parts.append(_bulk(arg))
        return [b"".join(parts)]  # send_packed_command takes a list of chunks

    def _times(self, seconds: float) -> tuple[str, str]:
        """(now, deadline) for a script: the injected clock's, or "" for the server's TIME."""
        if self._now is None:
            return "", ""
        now = self._now()
        return repr(float(now)), repr(float(now + seconds))

    # -- producer side ----------------------------------------------------------------

    def put(self, ref: SampleRef) -> None:
        """Enqueue ``ref`` (model: ``put``); rejects as ``SampleRefQueue.put``."""
        self._check_ref("put", ref)
        ref_json = ref.to_json()
        with self._step_lock, self._connection("put"):
            outcome = self._run("put", ref.sample_id, ref_json)
        if outcome != "ok":
            self._raise_put_rejection("put", ref.sample_id, outcome)

    def _raise_put_rejection(self, call: str, sample_id: str, outcome: str) -> None:
        if outcome == "closed":
            raise QueueClosed(f"{call}({sample_id!r}) after close(); the queue takes no more refs")
        if outcome in ("pending", "leased"):
            raise DuplicateSample(
                f"{call}({sample_id!r}): that sample is already {outcome}; "
                f"put it again only after its lease is acked or it is dead-lettered"
            )
        if outcome == "replay":
            raise ReplayedSample(
                f"{call}({sample_id!r}): that sample completed within the last {self._dedup_window} "
                f"(dedup_window); a restarted producer is replaying it, skip it"
            )
        raise RuntimeError(f"{call}({sample_id!r}): unexpected answer {outcome!r} from the server")  # pragma: no cover

    def put_blocks_until_below(
        self,
        ref: SampleRef,
        poll_interval: float = 0.05,
        abort_when: Callable[[], bool] | None = None,
    ) -> None:
        """Enqueue ``ref``, blocking while the producer is paused (D4, D8), as
        ``SampleRefQueue.put_blocks_until_below``.  The pause flag, the parked
        bytes and the room generation are the queue's, shared by every
        client; the residency is ``store.health()`` of this client's store."""
        self._check_ref("put_blocks_until_below", ref)
        poll_interval = check_poll_interval("put_blocks_until_below(poll_interval)", poll_interval)
        check_optional_callable(
            "put_blocks_until_below(abort_when)", abort_when, "pass a function returning True to give up"
        )
        token = uuid.uuid4().hex
        nbytes = ref.estimated_bytes
        parked = False
        registered = False
        ref_json = ref.to_json()
        try:
            while True:
                with self._store_lock:
                    health = self._store.health()
                    with self._connection("put_blocks_until_below"):
                        outcome, event, effective, room = self._run(
                            "try_put", ref.sample_id, ref_json, health.resident_bytes, nbytes,
                            "1" if parked else "0", self._high_text, self._low_text, token,
                        )
                    if event:
                        self._callbacks_due.add(self._callbacks[event], health)
                if outcome not in ("ok", "wait"):
                    parked = False  # the script unparked it
                    self._raise_put_rejection("put_blocks_until_below", ref.sample_id, outcome)
                if outcome == "ok":
                    parked = False
                self._callbacks_due.deliver()
                if outcome == "ok":
                    return
                if abort_when is not None and abort_when():
                    raise PutAborted(
                        f"put_blocks_until_below({ref.sample_id!r}): abort_when() returned True while the "
                        f"producer is paused (the store holds {health.resident_bytes} bytes, {effective} of "
                        f"them not held by blocked producers; paused at >= {self._high}, resumes at <= "
                        f"{self._low}); the ref was not enqueued"
                    )
                registered = True
                park_now = not parked
                parked = True
                self._wait_for_room(token, nbytes, park_now, room, poll_interval)
        finally:
            if registered or parked:
                with self._step_lock, self._connection("put_blocks_until_below"):
                    self._run("unpark", token)

    def _wait_for_room(self, token: str, nbytes: int, park_now: bool, room: str, poll_interval: float) -> None:
        """Register as a waiting producer (parking the ref on the first wait),
        then block until notified (an ack, a dead-letter, a resume, a park,
        close) or ``poll_interval`` passes."""
        deadline = _monotonic() + poll_interval
        key = self._prefix + "room:" + token
        while True:
            with self._step_lock, self._connection("put_blocks_until_below"):
                step_now = self._run("park", token, nbytes, "1" if park_now else "0", room, _PRODUCER_TTL_MS)
            park_now = False
            if step_now:
                return
            remaining = deadline - _monotonic()
            if remaining <= 0:
                return
            with self._connection("put_blocks_until_below"):
                if self._redis.blpop([key], timeout=_slice(remaining)) is not None:
                    return
            if deadline - _monotonic() <= 0:
                return

    # -- consumer side ----------------------------------------------------------------

    def acquire(self, poll_interval: float = 0.05) -> Lease | None:
        """Lease the oldest pending ref, or None (D3: at once when drained;
        else after ``poll_interval`` seconds with nothing put).  Woken at
        once by a put or requeue from any client."""
        poll_interval = check_poll_interval("acquire(poll_interval)", poll_interval)
        deadline = _monotonic() + poll_interval
        wake = self._prefix + "wake"
        while True:
            answer = self._acquire_once()
            if not isinstance(answer, str):
                return answer
            if answer == "drained":
                return None
            remaining = deadline - _monotonic()
            if remaining <= 0:
                return None
            with self._connection("acquire"):
                self._redis.blpop([wake], timeout=_slice(remaining))

    def acquire_nowait(self) -> Lease | None:
        """Lease the oldest pending ref, or None at once when nothing is pending."""
        answer = self._acquire_once()
        return None if isinstance(answer, str) else answer

    def _acquire_once(self) -> Lease | str:
        with self._step_lock:
            now, deadline = self._times(self._vt_seconds)  # a raising clock changes nothing
            with self._connection("acquire"):
                answer = self._run("acquire", now, deadline, self._vt_text)
        if isinstance(answer, str):
            return answer
        lease_id, _sample_id, ref_json, redeliveries, deadline_text = answer
        return mint_lease(
            self._ref(ref_json), float(deadline_text), self._vt, int(redeliveries), int(lease_id), self._epoch
        )

    def ack(self, lease: Lease) -> bool:
        """Live lease: the sample completes, then the store scrubs its data
        (D2); True.  Stale: False.  Rejects as ``SampleRefQueue.ack``."""
        sample_id, lease_id = self._check_lease("ack", lease)
        return self._finish("ack", sample_id, lease_id)

    def dead_letter(self, lease: Lease, reason: str) -> bool:
        """Live lease: the sample joins the dead letters with ``reason``, its
        data scrubbed; True.  Stale: False."""
        sample_id, lease_id = self._check_lease("dead_letter", lease)
        if not isinstance(reason, str):
            raise TypeError(
                f"dead_letter(reason) must be a str, got {describe(reason)}; say why the sample is poison"
            )
        if not reason:
            raise ValueError("dead_letter(reason) must not be empty; say why the sample is poison")
        return self._finish("dead_letter", sample_id, lease_id, reason)

    def _finish(self, call: str, sample_id: str, lease_id: int, reason: str = "") -> bool:
        """Ack (``reason`` "") or dead-letter a live lease: one fenced script
        commits, then the store scrubs (D2); a scrub that raises is undone."""
        with self._store_lock:
            with self._connection(call):
                answer = self._run("finish", sample_id, lease_id, reason)
            if answer == 0:
                return False
            ref_json, undo, producers = answer
            self._scrub_or_undo(call, ref_json, undo)
        if producers:
            self._notify_room(call)
        return True

    def _scrub_or_undo(self, call: str, ref_json: str, undo: str) -> None:
        """Scrub the data of a sample whose completion just committed
        (``_store_lock`` held); if the scrub raises, put the queue back as it
        was (the undo record) and re-raise."""
        ref = self._ref(ref_json, forget=True)
        try:
            self._store.scrub(ref)
        except BaseException as exc:
            with self._connection(call):
                undone = self._run("undo", undo, ref_json)
            if not undone:  # pragma: no cover (only another client's re-put of the id can cause it)
                raise RuntimeError(
                    f"{call}({ref.sample_id!r}): the store's scrub raised {exc!r} after the completion "
                    f"committed, and it cannot be undone (the id was put again meanwhile); its data is still "
                    f"resident: scrub it (store.scrub(ref)) once the store works"
                ) from exc
            raise

    def _ref(self, ref_json: str, *, forget: bool = False) -> SampleRef:
        """The ``SampleRef`` of ``ref_json``: the one this client parsed when it
        leased it (``forget``: and drop it), else parsed now.  Parsing a ref
        validates every field, which costs more than a round trip."""
        with self._refs_lock:
            ref = self._refs.pop(ref_json, None) if forget else self._refs.get(ref_json)
        if ref is None:
            ref = SampleRef.from_json(ref_json)
            if not forget:
                with self._refs_lock:
                    if len(self._refs) >= _REFS_KEPT:
                        del self._refs[next(iter(self._refs))]  # the oldest
                    self._refs[ref_json] = ref
        return ref

    def _notify_room(self, call: str) -> None:
        """Wake the waiting producers again, now that the data is scrubbed."""
        with self._step_lock, self._connection(call):
            self._run("notify_room")

    def fail(self, lease: Lease) -> bool:
        """Live lease: back to the tail of pending with one more redelivery,
        or dead-lettered at ``max_deliveries`` (D7); True.  Stale: False."""
        sample_id, lease_id = self._check_lease("fail", lease)
        with self._store_lock:
            with self._connection("fail"):
                answer = self._run("fail", sample_id, lease_id)
            if answer == 0:
                return False
            ref_json, undo, producers = answer
            if ref_json:  # at max_deliveries: dead-lettered
                self._scrub_or_undo("fail", ref_json, undo)
        if ref_json and producers:
            self._notify_room("fail")
        return True

    def extend(self, lease: Lease, seconds: float | None = None) -> bool:
        """Heartbeat: a live lease's deadline becomes now + ``seconds``
        (default: the visibility timeout); True.  Stale: False."""
        sample_id, lease_id = self._check_lease("extend", lease)
        seconds = self._vt_seconds if seconds is None else check_seconds("extend(seconds)", seconds)
        with self._step_lock:
            now, deadline = self._times(seconds)
            with self._connection("extend"):
                return self._run("extend", sample_id, lease_id, now, deadline, repr(seconds)) == 1

    def lease_state(self, lease: Lease) -> str:
        """Where ``lease`` stands now: ``"live"`` (an ack may be retried),
        ``"acked"`` (an ack of it committed; among the queue's last 10,000
        acks), ``"other"`` (its sample is leased again, to someone else),
        ``"pending"`` (its sample waits for redelivery) or ``"gone"`` (its
        sample completed otherwise).  For a client whose connection dropped
        while an ack's reply was on the way."""
        sample_id, lease_id = self._check_lease("lease_state", lease)
        with self._step_lock, self._connection("lease_state"):
            return self._run("lease_state", sample_id, lease_id)

    # -- environment ------------------------------------------------------------------

    def reclaim_expired(self) -> int:
        """Take back every lease whose deadline is ``<= now``, in order of
        deadline, ties by sample id; returns how many."""
        total = 0
        notify = False
        try:
            with self._store_lock:
                now = "" if self._now is None else repr(float(self._now()))
                while True:
                    with self._connection("reclaim_expired"):
                        now, count, producers, *dead = self._run("reclaim", now)
                    total += int(count)
                    if not dead:
                        return total
                    self._scrub_or_undo("reclaim_expired", *dead)  # the leases before it stay taken back
                    total += 1
                    notify = notify or bool(producers)
        finally:
            if notify:
                self._notify_room("reclaim_expired")

    def close(self) -> None:
        """No more puts, for every client of the queue; what is pending or
        leased still drains.  Idempotent.  Stops this client's reclaimer
        when the queue is drained."""
        with self._step_lock, self._connection("close"):
            drained = self._run("close") == 1
        if drained:
            with self._reclaimer_lock:
                reclaimer = self._reclaimer
            if reclaimer is not None:
                reclaimer.stop(report=False)

    def start_reclaimer(self, interval: float | None = None) -> None:
        """A daemon thread calling ``reclaim_expired`` every ``interval``
        seconds (default: a quarter of the visibility timeout); as
        ``SampleRefQueue.start_reclaimer``.  Several clients may each run one."""
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
            reclaimer = Reclaimer(self, interval, name=f"refqueue-redis-reclaimer-{self._epoch[:8]}")
            reclaimer.start()
            self._reclaimer = reclaimer

    def stop_reclaimer(self) -> None:
        """Stop this client's reclaimer and wait for it; re-raises, as
        ``RuntimeError``, an error that stopped it early."""
        with self._reclaimer_lock:
            reclaimer = self._reclaimer
        if reclaimer is None:
            return
        try:
            reclaimer.stop()
        finally:
            with self._reclaimer_lock:
                if self._reclaimer is reclaimer:
                    self._reclaimer = None

    def __enter__(self) -> RedisSampleRefQueue:
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.stop_reclaimer()
        finally:
            self.close()

    # -- observers --------------------------------------------------------------------

    @property
    def epoch(self) -> str:
        return self._epoch

    @property
    def name(self) -> str:
        return self._name

    @property
    def url(self) -> str:
        """The server's URL, without its password."""
        return self._url

    @property
    def visibility_timeout(self) -> VisibilityTimeout:
        return self._vt

    @property
    def store(self) -> FeatureStore:
        return self._store

    def _state(self) -> tuple[bool, int, int]:
        with self._step_lock, self._connection("state"):
            closed, pending, outstanding = self._run("state")
        return closed == "1", int(pending), int(outstanding)

    @property
    def is_closed(self) -> bool:
        with self._step_lock, self._connection("is_closed"):
            return self._redis.hget(self._prefix + "meta", "closed") == "1"

    @property
    def is_drained(self) -> bool:
        closed, pending, outstanding = self._state()
        return closed and pending == 0 and outstanding == 0

    @property
    def is_paused(self) -> bool:
        with self._step_lock, self._connection("is_paused"):
            return self._redis.hget(self._prefix + "meta", "paused") == "1"

    @property
    def parked_bytes(self) -> int:
        """Bytes of the refs whose producers wait in ``put_blocks_until_below``
        now, in any client (D8); a producer that crashed while waiting stops
        counting once its registration runs out (``_PRODUCER_TTL_MS``)."""
        with self._step_lock, self._connection("parked_bytes"):
            return int(self._run("parked"))

    def pending_count(self) -> int:
        with self._step_lock, self._connection("pending_count"):
            return int(self._redis.llen(self._prefix + "pending"))

    def outstanding_count(self) -> int:
        with self._step_lock, self._connection("outstanding_count"):
            return int(self._redis.zcard(self._prefix + "deadlines"))

    def dead_letters(self) -> list[DeadLetter]:
        with self._step_lock, self._connection("dead_letters"):
            letters = self._redis.lrange(self._prefix + "dead", 0, -1)
        return [_dead_letter(text) for text in letters]

    def drain_dead_letters(self) -> list[DeadLetter]:
        with self._step_lock, self._connection("drain_dead_letters"):
            letters = self._run("drain_dead")
        return [_dead_letter(text) for text in letters]

    @property
    def dead_letter_limit(self) -> int:
        return self._dead_limit

    @property
    def dead_letters_dropped(self) -> int:
        with self._step_lock, self._connection("dead_letters_dropped"):
            return int(self._redis.hget(self._prefix + "meta", "dropped") or 0)

    def delete(self) -> int:
        """Remove every key of this queue from the server (an operator's
        clean-up; clients still using it will find an empty queue).  Returns
        how many keys were removed."""
        with self._connection("delete"):
            keys = list(self._redis.scan_iter(match=_glob_escape(self._prefix) + "*"))
            return int(self._redis.delete(*keys)) if keys else 0

    def __repr__(self) -> str:
        return f"RedisSampleRefQueue({self._url!r}, name={self._name!r}, epoch={self._epoch!r})"

    # -- argument checks (no state) ---------------------------------------------------

    def _check_ref(self, call: str, ref: object) -> None:
        if not isinstance(ref, SampleRef):
            raise TypeError(f"{call} needs a SampleRef, got {describe(ref)}; pass the ref FeatureStore.put returned")
        if ref.store_uri != self._store_uri:
            raise ValueError(
                f"{call}({ref.sample_id!r}): the ref names store {ref.store_uri!r}, but this queue is "
                f"bound to {self._store_uri!r}; put refs of the queue's store"
            )

    def _check_lease(self, call: str, lease: object) -> tuple[str, int]:
        if not isinstance(lease, Lease):
            raise TypeError(
                f"{call} needs a Lease, got {describe(lease)}; pass what acquire returned (or Lease.from_json of it)"
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


class _Connection:
    """Turns redis-py's connection errors into ``RedisUnavailable``, naming
    the server (without its password), the call and what to do."""

    __slots__ = ("queue", "call")

    def __init__(self, queue: RedisSampleRefQueue, call: str) -> None:
        self.queue = queue
        self.call = call

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is None or not isinstance(exc, (redis_py.exceptions.ConnectionError, redis_py.exceptions.TimeoutError)):
            return False
        raise RedisUnavailable(
            f"{self.call}: lost the connection to the Redis server at {self.queue._url} ({exc}); nothing the "
            f"server acknowledged is lost. Check that the server is up and reachable, then call again "
            f"(after an ack, lease_state(lease) says whether it committed)"
        ) from exc


# Per connection pool, each thread's script connection (see _evalsha): the
# queues of one client share them, as they share its pool.
_HELD: weakref.WeakKeyDictionary[Any, threading.local] = weakref.WeakKeyDictionary()
_held_lock = threading.Lock()


def _held_for(pool: Any) -> threading.local:
    with _held_lock:
        held = _HELD.get(pool)
        if held is None:
            held = _HELD[pool] = threading.local()
        return held


def _ready(conn: Any) -> None:
    """Connect ``conn`` if it is not; if it has something to read while idle
    (closed by the server, a stray reply), connect it afresh; raise
    redis-py's ``ConnectionError`` if even a fresh connection is not ready."""
    try:
        conn.connect()  # a no-op when connected
        if conn.can_read():
            raise redis_py.exceptions.ConnectionError("Connection has data")
    except (redis_py.exceptions.ConnectionError, redis_py.exceptions.TimeoutError, OSError):
        conn.disconnect()
        conn.connect()
        if conn.can_read():
            raise redis_py.exceptions.ConnectionError("Connection not ready") from None


def _bulk(value: object) -> bytes:
    """One RESP bulk string: a str as UTF-8, an int in decimal (``_packed`` passes no other type)."""
    data = value.encode() if type(value) is str else b"%d" % value  # type: ignore[attr-defined]
    return b"$%d\r\n%s\r\n" % (len(data), data)


def _glob_escape(text: str) -> str:
    """``text`` as a literal in a SCAN MATCH pattern."""
    return re.sub(r"([\\*?\[\]{}])", r"\\\1", text)


def _slice(remaining: float) -> float:
    """A BLPOP timeout: at most BLOCK_SLICE, at least a millisecond (0 would block forever)."""
    return max(0.001, min(remaining, BLOCK_SLICE))


def _dead_letter(text: str) -> DeadLetter:
    ref_json, reason, deliveries = json.loads(text)
    return DeadLetter(SampleRef.from_json(ref_json), reason, int(deliveries))


# -- the conformance factory ------------------------------------------------------------

_FACTORY_OPTIONS = ("url", "prefix", "name")
_server_lock = threading.Lock()
_server: Any = None
_clients: dict[str, Any] = {}


def _throwaway_url() -> str:
    """The URL of this process's throwaway server, started on first use and stopped at exit."""
    global _server
    with _server_lock:
        if _server is None:
            import atexit

            from refqueue.backends._redis_server import RedisServer

            server = RedisServer().start()
            atexit.register(server.stop)
            _server = server
        return _server.url


def _client(url: str) -> Any:
    """One ``redis.Redis`` (one connection pool) per URL for all the factory's queues."""
    url = _check_url(url)
    with _server_lock:
        client = _clients.get(url)
        if client is None:
            client = _clients[url] = redis_py.Redis.from_url(url, **_CLIENT_OPTIONS)
        return client


def make(store: Any, clock: Any, **config: Any) -> RedisSampleRefQueue:
    """The conformance factory: a fresh queue (a new name) on the server at
    option ``url``, or on a throwaway ``redis-server`` this process starts
    on a free loopback port (no persistence) and stops at exit.  Options
    (``refqueue certify ... -o key=value``): ``url``, ``prefix``."""
    return build(RedisSampleRefQueue, store, clock, **config)


def build(queue_class: type[RedisSampleRefQueue], store: Any, clock: Any, **config: Any) -> RedisSampleRefQueue:
    """``make`` for ``queue_class`` (a subclass of ``RedisSampleRefQueue``)."""
    options = {key: config.pop(key) for key in _FACTORY_OPTIONS if key in config}
    from refqueue.conformance.contract import CONFIG_KEYS

    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise TypeError(
            f"refqueue.backends.redis:make got unknown option(s) {unknown}; it takes url= (a redis:// URL) "
            f"and prefix= (a key prefix), besides the kit's {list(CONFIG_KEYS)}"
        )
    if "name" in options:
        raise TypeError("refqueue.backends.redis:make picks a fresh queue name itself; do not pass name=")
    url = options.get("url")
    if url is None:
        url = _throwaway_url()
    seconds = config.pop("visibility_timeout", None)
    timeout = None if seconds is None else VisibilityTimeout(seconds)
    client = _client(url)
    queue = queue_class(
        store,
        timeout,
        client=client,
        name=f"certify-{uuid.uuid4().hex}",
        prefix=options.get("prefix", "refqueue:"),
        clock=clock,
        **config,
    )
    # A certification makes thousands of queues: each one's keys leave the
    # server when the kit drops it (not at exit, when the server may be gone).
    cleanup = weakref.finalize(queue, _forget, client, [queue._prefix + key for key in KEYS])
    cleanup.atexit = False
    return queue


def _forget(client: Any, keys: list[str]) -> None:
    """Delete a dropped queue's keys; a server that is gone has nothing to delete."""
    try:
        client.delete(*keys)
    except redis_py.exceptions.RedisError:
        pass


def _capabilities() -> Any:
    from refqueue.conformance.contract import Capabilities

    return Capabilities()


make.capabilities = _capabilities()  # type: ignore[attr-defined]
