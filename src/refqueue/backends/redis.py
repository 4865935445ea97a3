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
* **The store, and the ack in two steps (D2, D9).**  The store is the
  caller's (``SharedDirFeatureStore`` for many machines, any
  ``FeatureStore`` in one process).  A live ack or a dead-letter is one
  fenced script that commits *and records a scrub intent* (the ref), then
  ``store.scrub(ref)``, then ``clear_intent``: never the other way round,
  which could scrub the data of a sample that another process has just had
  reclaimed and redelivered.  A client killed between the commit and the
  scrub, a reply lost, a server killed: the intent stays, and
  ``intent_delay`` (by default one visibility timeout) after the commit
  any client collects it
  (``collect_intents``, which ``reclaim_expired`` and so the background
  reclaimer run): it claims the intent, scrubs (a compare-and-delete of
  the exact ref, so twice or late is harmless) and clears it.  The commit
  also returns an *undo record*; if the committing client's scrub raises,
  the ``undo`` script puts the queue back exactly as it was (the lease
  live, the dead letter, dedup entry and intent gone) and the error
  propagates, so a failed scrub commits nothing, as docs/API.md requires.
  Within one client, "commit, scrub (or undo)" is one step with respect to
  every other call of this client (``_store_lock`` against ``_step_lock``;
  with ``clock=None`` the exclusive and shared sides of one ``Gate``, so
  the other calls still run concurrently with each other): none of this
  process's threads sees a completion whose data is still in the store.
  Other clients may observe the window between a commit and its scrub
  (docs/REDIS.md says what they see); a put of the id is refused while it
  is open (``ScrubPending``).
* **State loss (D9).**  Every script checks the queue's epoch and that the
  server holds at least the newest state this client has seen (a version
  and a hash chain, ``_redis_scripts``); a queue whose server restarted
  empty, was flushed or lost its last writes is marked lost, and every call
  of every client raises ``QueueStateLost`` from then on.  Lease ids carry
  the epoch (``Lease.epoch``), so no lease of a lost state is accepted by
  the queue created after it.
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
  says whether it committed (``"acked"``) or may be retried (``"live"``);
  retrying it is safe either way (a committed one answers False).  A put
  retried after a lost reply, on the same client, changes nothing if its
  first attempt committed.  A command the server refuses (out of memory, a
  read-only replica, ...) raises ``RedisRefused``; nothing else of redis-py
  reaches the caller.
* **Hostile state** (issue 21).  Every script checks what it reads and
  what it will write before its first write (``_redis_scripts``): a value
  refqueue never writes, planted in the queue's keys by another program,
  raises ``QueueStateCorrupt`` (a ``RedisRefused``) naming the key and the
  value, with nothing changed.  What only the client can judge (a ref's
  JSON, a dead letter) is parsed before it is trusted: an acquire whose ref
  does not parse is put back (``unacquire``) and raises, a dead-letter list
  is drained only once every letter parsed, and only the letters read.
  The script connections decode replies with ``surrogateescape``, so bytes
  that are not UTF-8 reach these checks instead of failing in redis-py.
  A server that does not answer as Redis does (an HTTP server, another
  protocol) raises ``RedisUnavailable`` saying so; a password in the URL,
  in its user part or as ``?password=``, never shows.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import math
import os
import re
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import redis as redis_py
from redis.backoff import NoBackoff
from redis.retry import Retry

from refqueue._callbacks import OrderedCallbacks
from refqueue._redact import redacted
from refqueue._checks import (
    DEFAULT_DEAD_LETTER_LIMIT,
    check_optional_callable,
    check_poll_interval,
    check_queue_arguments,
    check_reason,
    check_seconds,
    describe,
)
from refqueue._leases import DeadLetter, Lease, VisibilityTimeout, mint_lease
from refqueue._reclaimer import Reclaimer, reclaimer_gauges
from refqueue.backends._redis_gate import Gate
from refqueue.backends._redis_scripts import CORRUPT, KEYS, LOST, PRELUDE, READS, SCRIPTS, source
from refqueue.errors import (
    DuplicateSample,
    ForeignLease,
    PutAborted,
    QueueClosed,
    QueueStateLost,
    RefQueueError,
    ReplayedSample,
)
from refqueue.queue import _effective_watermarks
from refqueue.refs import SampleRef
from refqueue.store import FeatureStore, StoreHealth

__all__ = [
    "RedisSampleRefQueue", "RedisUnavailable", "RedisRefused", "QueueStateCorrupt", "QueueStateLost", "ScrubPending",
    "delete_queue",
    "make", "make_server_time", "build", "BLOCK_SLICE", "COLLECT_BATCH",
]

logger = logging.getLogger(__name__)

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
# The default socket timeout (seconds): a server that does not answer within it
# (stopped, partitioned) is RedisUnavailable.
SOCKET_TIMEOUT = BLOCK_SLICE + 10.0
# How many scrub intents one collect claims at a time.
COLLECT_BATCH = 256
_CLIENT_OPTIONS = {
    "decode_responses": True,
    # bytes that are not UTF-8 (a value planted by another program) decode
    # losslessly and reach the queue's own checks, never a UnicodeDecodeError
    "encoding_errors": "surrogateescape",
    "socket_timeout": SOCKET_TIMEOUT,
    "socket_connect_timeout": 10.0,
    "retry": Retry(NoBackoff(), 0),
}
_monotonic = time.monotonic
_NAME = re.compile(r"[A-Za-z0-9._:-]{1,200}")
# How many parsed refs of its leases a client keeps for their ack (the oldest go first).
_REFS_KEPT = 4096
# How many refs whose put raised RedisUnavailable a client remembers, so that
# their retry is idempotent (the oldest go first).
_UNCERTAIN_KEPT = 4096


class RedisUnavailable(RefQueueError, ConnectionError):
    """The Redis server could not be reached, or the connection dropped.

    Not a rejection: the call may or may not have taken effect when the
    connection dropped while its reply was on the way (see
    ``RedisSampleRefQueue.lease_state``)."""

    KIND = "unavailable"


class RedisRefused(RefQueueError, RuntimeError):
    """The Redis server refused a command (out of memory, a read-only
    replica, a failing disk, a permission): the call changed nothing."""

    KIND = "refused"


class QueueStateCorrupt(RedisRefused):
    """The queue's keys hold a value refqueue never writes (planted by
    another program, or a bug): a key of the wrong kind, a count that is
    not one, a pending sample without its ref, a ref or dead letter that
    does not parse.  The call changed nothing; the message names the key
    and the value."""

    KIND = "corrupt"


class ScrubPending(DuplicateSample):
    """A put of a sample id whose previous incarnation completed (acked or
    dead-lettered) while its data is still being scrubbed from the store: the
    completion committed with its scrub intent, the scrub has not finished
    (D2, D9; docs/REDIS.md, "Between an ack's commit and its scrub").  The
    call changed nothing.  Put the id again once the scrub is done: the
    completing client finishes it, else any client's ``collect_intents()``
    (the reclaimer's too) within ``intent_delay``.

    A ``DuplicateSample`` of kind ``"duplicate"``: for the one-step queue of
    the model the put came before the completion it overlapped."""


class _NotRedis(redis_py.exceptions.InvalidResponse):
    """What answered is not a Redis server running refqueue's scripts."""


class _Scripts:
    """The Lua sources of a queue class and their SHA1s (what ``EVALSHA`` names
    them by): ``SCRIPTS`` with the class's ``SCRIPT_BODIES`` in place."""

    def __init__(self, bodies: dict[str, str], prelude: str) -> None:
        self.sources = {op: source(op, body, prelude) for op, body in bodies.items()}
        self.shas = {op: hashlib.sha1(text.encode()).hexdigest() for op, text in self.sources.items()}


_SCRIPT_CACHE: dict[type, _Scripts] = {}




def _check_url(url: object, call: str = "RedisSampleRefQueue") -> str:
    if not isinstance(url, str):
        raise TypeError(f"{call}(url) must be a str, got {describe(url)}; pass e.g. 'redis://127.0.0.1:6379/0'")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError as exc:
        raise ValueError(
            f"{call}(url={redacted(url)!r}) cannot be parsed ({redacted(str(exc))}); pass e.g. "
            f"'redis://user:password@host:6379/0'"
        ) from None
    if parts.scheme not in ("redis", "rediss", "unix"):
        raise ValueError(
            f"{call}(url={redacted(url)!r}) has scheme {parts.scheme!r}; pass a redis://, rediss:// "
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
    ``socket_timeout`` (seconds, with ``url=``) bounds how long a call
    waits for a server that does not answer before ``RedisUnavailable``.
    ``intent_delay`` (seconds of the queue's clock; default the visibility
    timeout) is how long after a completion commits its scrub intent waits
    for the committing client before any client may collect it.

    Opening a queue whose state was found lost raises ``QueueStateLost``:
    ``delete_queue`` it first (an operator's decision), then open it again.
    """

    # Each script's body by name, and the helpers they share; a subclass (a
    # mutant) may replace some.
    SCRIPT_BODIES: dict[str, str] = SCRIPTS
    SCRIPT_PRELUDE: str = PRELUDE

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
        socket_timeout: float | None = None,
        intent_delay: float | None = None,
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
        if intent_delay is not None:
            intent_delay = check_seconds("RedisSampleRefQueue(intent_delay)", intent_delay)
        if not isinstance(prefix, str):
            raise TypeError(f"RedisSampleRefQueue(prefix) must be a str, got {describe(prefix)}; pass e.g. 'refqueue:'")
        if (url is None) == (client is None):
            raise ValueError(
                "RedisSampleRefQueue needs exactly one of url= (e.g. 'redis://user:password@host:6379/0') "
                "and client= (a redis.Redis)"
            )
        if client is not None and not isinstance(client, redis_py.Redis):
            raise TypeError(f"RedisSampleRefQueue(client) must be a redis.Redis, got {describe(client)}")
        if socket_timeout is not None:
            if client is not None:
                raise ValueError(
                    "RedisSampleRefQueue(socket_timeout=) applies to url= only; make the redis.Redis client "
                    "with socket_timeout= instead"
                )
            socket_timeout = check_seconds("RedisSampleRefQueue(socket_timeout)", socket_timeout)
            if socket_timeout <= BLOCK_SLICE:
                raise ValueError(
                    f"RedisSampleRefQueue(socket_timeout={socket_timeout!r}) must exceed BLOCK_SLICE = {BLOCK_SLICE} s "
                    f"(a blocked acquire waits that long for an answer); pass e.g. {SOCKET_TIMEOUT}"
                )
        store_uri = store.uri
        if not isinstance(store_uri, str):
            raise TypeError(f"the store's uri must be a str, got {describe(store_uri)}; fix the store's uri property")
        high, low = _effective_watermarks(store, high_override, low_override)

        if url is not None:
            url = _check_url(url)
            options = dict(_CLIENT_OPTIONS)
            if socket_timeout is not None:
                options["socket_timeout"] = socket_timeout
            client = redis_py.Redis.from_url(url, **options)
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
        scripts = _SCRIPT_CACHE.get(type(self))
        if scripts is None:
            scripts = _SCRIPT_CACHE[type(self)] = _Scripts(type(self).SCRIPT_BODIES, type(self).SCRIPT_PRELUDE)
        self._scripts = scripts
        # Each thread's own connection for the scripts (see _evalsha).
        self._held = _held_for(client.connection_pool)
        self._heads: dict[str, bytes] = {}  # each script's packed command head, by SHA (see _packed)
        self._store = store
        self._store_uri = store_uri
        self._vt = visibility_timeout
        self._vt_seconds = visibility_timeout.seconds
        self._vt_text = repr(visibility_timeout.seconds)
        self._intent_delay = visibility_timeout.seconds if intent_delay is None else intent_delay
        self._intent_text = repr(self._intent_delay)
        # What opens another client of this queue (refqueue.backends._redis_faults).
        self._open_args = {
            "url": url, "name": name, "prefix": prefix, "visibility_timeout": visibility_timeout.seconds,
            "high_watermark_bytes": high_watermark_bytes, "low_watermark_bytes": low_watermark_bytes,
            "max_deliveries": max_deliveries, "dedup_window": dedup_window, "dead_letter_limit": dead_letter_limit,
            "socket_timeout": socket_timeout, "intent_delay": intent_delay,
        }
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
        # The locking rule of one client (never held across a wait):
        # _store_lock is held across "health(), then the hysteresis step" and
        # across "commit, then scrub (or undo)" of this client's calls, and
        # _step_lock around every other call's script.  The two exclude each
        # other, so none of this client's threads sees a completion before its
        # data is scrubbed (D2: one step for this process; other clients see
        # the window, docs/REDIS.md).
        # * clock=None: the two sides of one Gate (_redis_gate): _store_lock
        #   exclusive, _step_lock shared, so the other calls run concurrently.
        # * An injected clock: one plain Lock for both, held from the clock read
        #   to the answer (observers too): the clock lives in this process and
        #   moves by itself, and reading it and the script that uses the reading
        #   must be one step for this process's threads, else another thread may
        #   change or observe the queue between them after time moved, and the
        #   lease carries a deadline of a time before that.
        if clock is None:
            gate = Gate()
            self._store_lock: Any = gate.exclusive
            self._step_lock: Any = gate.shared
        else:
            self._store_lock = self._step_lock = threading.Lock()
        self._reclaimer_lock = threading.Lock()
        self._reclaimer: Reclaimer | None = None
        # What this client's own threads wait for, for gauges(): each producer
        # blocked in put_blocks_until_below (token -> (the clock at its first
        # park, its ref's bytes)), the clock-seconds of the waits that ended,
        # and the consumers blocked in acquire on an empty queue.
        self._waits_lock = threading.Lock()
        self._blocked_here: dict[str, tuple[float | None, int]] = {}
        self._blocked_seconds = 0.0
        self._consumers_waiting = 0
        # The refs of this client's recent leases, by their JSON (see _ref).
        self._refs: dict[str, SampleRef] = {}
        self._refs_lock = threading.Lock()
        # The refs whose put raised RedisUnavailable: their retry passes "retry", and
        # the script changes nothing if the first attempt committed.
        self._uncertain: dict[str, None] = {}
        # The newest (version, tip) of the queue this client has seen (see the
        # scripts' "State loss"); sent with every script, raised by every answer.
        self._epoch = ""
        self._seen = (0, "")
        self._seen_lock = threading.Lock()
        # Fault injection (refqueue.backends._redis_faults, for the conformance
        # kit's faults phase): lose the reply of the next state-changing script;
        # die (raise this) after the next completion commits.
        self._fault_lose_reply = False
        self._fault_crash: BaseException | None = None
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
            epoch, existing, version, tip, lost = self._run("create", uuid.uuid4().hex, config)
        if lost:
            raise QueueStateLost(
                f"RedisSampleRefQueue(): queue {name!r} on {self._url} lost its state ({lost}); nothing of it is "
                f"accepted any more. An operator recovers with refqueue.backends.redis.delete_queue(url, {name!r}), "
                f"then opens the queue again (a new epoch) and puts again the refs the store still holds "
                f"(docs/REDIS.md, 'When the server loses state')"
            )
        if existing != config:
            raise ValueError(
                f"queue {name!r} on {self._url} already exists with configuration {existing}, not {config}; "
                f"open it with the same visibility_timeout, max_deliveries, dedup_window, dead_letter_limit "
                f"and store, or use another name"
            )
        self._epoch = epoch
        self._seen = (int(version), tip)

    # -- Redis plumbing ---------------------------------------------------------------

    def _connection(self, call: str) -> _Connection:
        return _Connection(self, call)

    def _run(self, op: str, *args: object) -> Any:
        """Run script ``op`` by its SHA1 on this thread's own connection,
        loading it first where the server does not know it (a new server, or
        one restarted), and answer what its body returned.  The client's epoch
        and the newest state it has seen go with it; the version and tip in
        the answer raise the latter.  Call it inside ``_connection``, which
        turns the script's "state lost" error into ``QueueStateLost``."""
        scripts = self._scripts
        with self._seen_lock:
            version, tip = self._seen
        args = (self._epoch, version, tip, *args)
        try:
            answer = self._evalsha(op, scripts.shas[op], args)
        except redis_py.exceptions.NoScriptError:
            self._redis.script_load(scripts.sources[op])
            answer = self._evalsha(op, scripts.shas[op], args)
        if op == "create":
            if not (type(answer) is list and len(answer) == 5 and all(type(a) is str for a in answer)):
                raise _NotRedis(f"the queue's create script answered {_cut(answer)}")
            return answer
        if not (type(answer) is list and len(answer) in (2, 3) and type(answer[1]) is str
                and (type(answer[0]) is int or (type(answer[0]) is str and answer[0].isdigit()))):
            raise _NotRedis(f"script {op} answered {_cut(answer)}")
        version, tip = int(answer[0]), answer[1]
        with self._seen_lock:
            if version > self._seen[0]:
                self._seen = (version, tip)
        return answer[2] if len(answer) > 2 else None

    def _evalsha(self, op: str, sha: str, args: tuple[object, ...]) -> Any:
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
        slot = held.slot()
        if slot.busy:  # re-entered mid-command: the pool's way
            return self._redis.evalsha(sha, 1, self._prefix, *self._config_args, *args)
        lose = self._fault_lose_reply and op not in READS
        entry = held.conns.get(slot.key)
        if entry is None or entry[1] != os.getpid():
            pool = self._redis.connection_pool
            conn = pool.connection_class(**{**pool.connection_kwargs, "encoding_errors": "surrogateescape"})
            held.conns[slot.key] = (conn, os.getpid())
        else:
            conn = entry[0]
        slot.busy = True
        try:
            _ready(conn)
            packed = self._packed(conn, sha, args)
            try:
                conn.send_packed_command(packed, check_health=False)
                answer = conn.read_response()
            except redis_py.exceptions.ResponseError:
                raise  # a whole reply was read: the connection is in step
            except BaseException:
                conn.disconnect()
                raise
            if lose:  # the fault: the script ran, its reply never reaches the caller
                self._fault_lose_reply = False
                conn.disconnect()
                raise redis_py.exceptions.ConnectionError(f"the reply of {op} was lost (fault injected)")
            return answer
        finally:
            slot.busy = False

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

    def _times(self, seconds: float, call: str) -> tuple[str, str]:
        """(now, deadline) for a script: the injected clock's, or "" for the server's TIME."""
        if self._now is None:
            return "", ""
        now = self._clock_now(call)
        return repr(now), repr(float(now + seconds))

    def _clock_now(self, call: str) -> float:
        """The injected clock's reading, as finite float seconds, before any script runs."""
        now = self._now()  # type: ignore[misc]
        try:
            value = float(now)
        except (TypeError, ValueError, OverflowError):
            value = math.nan
        if not math.isfinite(value):
            raise ValueError(
                f"{call}: the queue's clock read {describe(now)}, not finite seconds; nothing changed. Give the "
                f"queue a clock whose now() reads finite seconds (or clock=None: the server's TIME)"
            )
        return value

    # -- producer side ----------------------------------------------------------------

    def put(self, ref: SampleRef) -> None:
        """Enqueue ``ref`` (model: ``put``); rejects as ``SampleRefQueue.put``."""
        self._check_ref("put", ref)
        ref_json = ref.to_json()
        with self._step_lock, self._uncertain_put(ref_json) as retry, self._connection("put"):
            outcome = self._run("put", ref.sample_id, ref_json, retry)
        if outcome != "ok":
            self._raise_put_rejection("put", ref.sample_id, outcome)

    @contextlib.contextmanager
    def _uncertain_put(self, ref_json: str) -> Any:
        """Around one put script: yields "1" when ``ref_json``'s last put on this
        client raised ``RedisUnavailable`` (the script then changes nothing if
        that one committed), else "0"; remembers the ref when this one raises
        it too, forgets it on an answer."""
        retry = "1" if ref_json in self._uncertain else "0"
        try:
            yield retry
        except RedisUnavailable:
            with self._refs_lock:
                self._uncertain[ref_json] = None
                if len(self._uncertain) > _UNCERTAIN_KEPT:
                    del self._uncertain[next(iter(self._uncertain))]  # the oldest
            raise
        with self._refs_lock:
            self._uncertain.pop(ref_json, None)

    def _raise_put_rejection(self, call: str, sample_id: str, outcome: str) -> None:
        if outcome == "closed":
            raise QueueClosed(f"{call}({sample_id!r}) after close(); the queue takes no more refs")
        if outcome in ("pending", "leased"):
            raise DuplicateSample(
                f"{call}({sample_id!r}): that sample is already {outcome} (already present in this queue); "
                f"put it again only after its lease is acked or it is dead-lettered"
            )
        if outcome == "scrubbing":
            raise ScrubPending(
                f"{call}({sample_id!r}): the data of that sample's previous incarnation is still being scrubbed "
                f"from the store (its completion committed; its scrub intent is open); put it again once the "
                f"scrub is done: the completing client finishes it, else any client's collect_intents() or "
                f"reclaimer does within intent_delay = {self._intent_delay!r} s"
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
                    with self._uncertain_put(ref_json) as retry, self._connection("put_blocks_until_below"):
                        outcome, event, effective, room = self._run(
                            "try_put", ref.sample_id, ref_json, health.resident_bytes, nbytes,
                            "1" if parked else "0", self._high_text, self._low_text, token, retry,
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
                if park_now:
                    with self._waits_lock:
                        self._blocked_here.setdefault(token, (self._wait_clock(), nbytes))
                self._wait_for_room(token, nbytes, park_now, room, poll_interval)
        finally:
            with self._waits_lock:
                since = self._blocked_here.pop(token, (None, 0))[0]
                if since is not None:
                    now = self._wait_clock()
                    if now is not None:
                        self._blocked_seconds += max(0.0, now - since)
            if registered or parked:
                # leaving the waiting producers: a failure here must neither fail a put that
                # committed nor hide the error that ended the call; the registration then
                # runs out by itself (_PRODUCER_TTL_MS)
                try:
                    with self._step_lock, self._connection("put_blocks_until_below"):
                        self._run("unpark", token)
                except (RedisUnavailable, RedisRefused, QueueStateLost) as exc:
                    logger.warning("put_blocks_until_below: queue %r: could not unregister the producer (%s); its "
                                   "registration runs out in %d s", self._name, exc, _PRODUCER_TTL_MS // 1000)

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
            with self._waits_lock:
                self._consumers_waiting += 1
            try:
                with self._connection("acquire"):
                    self._redis.blpop([wake], timeout=_slice(remaining))
            finally:
                with self._waits_lock:
                    self._consumers_waiting -= 1

    def acquire_nowait(self) -> Lease | None:
        """Lease the oldest pending ref, or None at once when nothing is pending."""
        answer = self._acquire_once("acquire_nowait")
        return None if isinstance(answer, str) else answer

    def _acquire_once(self, call: str = "acquire") -> Lease | str:
        with self._step_lock:
            now, deadline = self._times(self._vt_seconds, call)  # a raising clock changes nothing
            with self._connection(call):
                answer = self._run("acquire", now, deadline, self._vt_text)
        if isinstance(answer, str):
            return answer
        lease_id, sample_id, ref_json, redeliveries, deadline_text = answer
        try:
            ref = self._ref(ref_json)
            if ref.sample_id != sample_id:
                raise ValueError(f"it is the ref of sample {ref.sample_id!r}")
        except (TypeError, ValueError) as exc:
            self._unacquire(call, sample_id, lease_id)
            raise self._corrupt(
                call, f"sample {sample_id!r} is pending with a ref that is not its ref ({_cut(ref_json)}: {exc}) in "
                f"key {self._prefix}refs"
            ) from None
        return mint_lease(ref, float(deadline_text), self._vt, int(redeliveries), int(lease_id), self._epoch)

    def _unacquire(self, call: str, sample_id: str, lease_id: int) -> None:
        """Put back an acquire whose ref does not parse: pending again, at the head."""
        with self._step_lock, self._connection(call):
            self._run("unacquire", sample_id, lease_id)

    def _corrupt(self, call: str, why: str) -> QueueStateCorrupt:
        """The error of a value refqueue never writes, found by the client."""
        return _corrupt_error(call, self._name, self._url, self._prefix, why)

    def ack(self, lease: Lease) -> bool:
        """Live lease: the sample completes, then the store scrubs its data
        (D2); True.  Stale: False.  Rejects as ``SampleRefQueue.ack``."""
        sample_id, lease_id = self._check_lease("ack", lease)
        return self._finish("ack", sample_id, lease_id)

    def dead_letter(self, lease: Lease, reason: str) -> bool:
        """Live lease: the sample joins the dead letters with ``reason``, its
        data scrubbed; True.  Stale: False."""
        sample_id, lease_id = self._check_lease("dead_letter", lease)
        check_reason(reason, ", so Redis cannot store it")
        return self._finish("dead_letter", sample_id, lease_id, reason)

    def _finish(self, call: str, sample_id: str, lease_id: int, reason: str = "") -> bool:
        """Ack (``reason`` "") or dead-letter a live lease: one fenced script
        commits, then the store scrubs (D2); a scrub that raises is undone."""
        with self._store_lock:
            now, due = self._times(self._intent_delay, call)
            with self._connection(call):
                answer = self._run("finish", sample_id, lease_id, reason, now, due, self._intent_text)
            if answer == 0:
                return False
            ref_json, undo, producers = answer
            self._scrub_or_undo(call, ref_json, undo)
        if producers:
            self._notify_room(call)
        return True

    def _scrub_or_undo(self, call: str, ref_json: str, undo: str) -> None:
        """Scrub the data of a sample whose completion just committed
        (``_store_lock`` held) and clear its intent; if the scrub raises, put
        the queue back as it was (the undo record) and re-raise."""
        try:
            ref = self._ref(ref_json, forget=True)
        except (TypeError, ValueError) as exc:
            with self._connection(call):
                self._run("undo", undo, ref_json)
            raise self._corrupt(
                call, f"the leased sample's ref in key {self._prefix}refs is not a ref ({_cut(ref_json)}: {exc})"
            ) from None
        crash, self._fault_crash = self._fault_crash, None
        if crash is not None:  # the fault: the client dies between the commit and the scrub
            raise crash
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
        self._clear_intent(ref.sample_id, ref_json)

    def _clear_intent(self, sample_id: str, ref_json: str) -> None:
        """Forget the intent of a scrubbed sample.  If the server cannot be
        reached, the intent stays and a collector scrubs again (a no-op) and
        clears it: the completion stands, the data is gone."""
        try:
            with self._connection("clear_intent"):
                self._run("clear_intent", sample_id, ref_json)
        except (RedisUnavailable, QueueStateLost, RedisRefused):
            pass

    def collect_intents(self, *, include_recent: bool = False) -> int:
        """Scrub the data of completions whose committing client never did
        (killed between the commit and the scrub, its reply lost, its server
        killed) and clear their intents; returns how many samples' data this
        call removed.  An intent is collectable ``intent_delay`` after its
        commit (``include_recent``: at once; safe, since a scrub is a
        compare-and-delete of the exact ref).  ``reclaim_expired`` (and so the
        background reclaimer) calls it: without a reclaimer, call it yourself."""
        if not isinstance(include_recent, bool):
            raise TypeError(f"collect_intents(include_recent) must be a bool, got {describe(include_recent)}")
        removed = 0
        notify = False
        with self._store_lock:
            while True:
                now, due = self._times(self._intent_delay, "collect_intents")
                with self._connection("collect_intents"):
                    claimed = self._run(
                        "collect", now, due, self._intent_text, "1" if include_recent else "0", COLLECT_BATCH
                    )
                for sample_id, ref_json in zip(claimed[::2], claimed[1::2]):
                    try:
                        ref = self._ref(ref_json, forget=True)
                    except (TypeError, ValueError) as exc:
                        # not refqueue's: left claimed (due again later) and said, never scrubbed
                        logger.warning("collect_intents: queue %r: the scrub intent of sample %r in key %sintents "
                                       "is not a ref (%s: %s); left as it is", self._name, sample_id, self._prefix,
                                       _cut(ref_json), exc)
                        continue
                    if self._store.scrub(ref):
                        removed += 1
                        notify = True
                    self._clear_intent(sample_id, ref_json)
                if len(claimed) < 2 * COLLECT_BATCH:
                    break
        if notify:
            self._notify_room("collect_intents")
        return removed

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
        """Wake the waiting producers again, now that the data is scrubbed.
        The change that made room has committed: a server that cannot be
        reached or refuses this wake-up must not make that call raise, so
        the error is logged and the producers step again at their next wait
        slice (at most ``BLOCK_SLICE``) instead."""
        try:
            with self._step_lock, self._connection(call):
                self._run("notify_room")
        except (RedisUnavailable, RedisRefused, QueueStateLost) as exc:
            logger.warning("%s: queue %r: could not wake the waiting producers after the change committed (%s); "
                           "they step again at their next wait slice", call, self._name, exc)

    def fail(self, lease: Lease) -> bool:
        """Live lease: back to the tail of pending with one more redelivery,
        or dead-lettered at ``max_deliveries`` (D7); True.  Stale: False."""
        sample_id, lease_id = self._check_lease("fail", lease)
        with self._store_lock:
            now, due = self._times(self._intent_delay, "fail")
            with self._connection("fail"):
                answer = self._run("fail", sample_id, lease_id, now, due, self._intent_text)
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
            now, deadline = self._times(seconds, "extend")
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
                now = "" if self._now is None else repr(self._clock_now("reclaim_expired"))
                while True:
                    with self._connection("reclaim_expired"):
                        now, count, producers, *dead = self._run("reclaim", now, self._intent_text)
                    total += int(count)
                    if not dead:
                        break
                    self._scrub_or_undo("reclaim_expired", *dead)  # the leases before it stay taken back
                    total += 1
                    notify = notify or bool(producers)
        finally:
            if notify:
                self._notify_room("reclaim_expired")
        self.collect_intents()
        return total

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
            reclaimer = Reclaimer(
                self, interval, name=f"refqueue-redis-reclaimer-{self._epoch[:8]}",
                retry_on=(RedisUnavailable, RedisRefused, QueueStateLost),
            )
            reclaimer.start()
            self._reclaimer = reclaimer

    @property
    def reclaimer_running(self) -> bool:
        """True while this client's background reclaimer runs."""
        with self._reclaimer_lock:
            reclaimer = self._reclaimer
        return reclaimer is not None and reclaimer.running

    def reclaimer_status(self) -> dict[str, Any]:
        """This client's reclaimer: running, interval, leases reclaimed, the
        errors it survived (how many, in a row, the last one and when) and
        the last good pass (``time.time()`` values); ``running`` False and
        nothing else when none was started."""
        with self._reclaimer_lock:
            reclaimer = self._reclaimer
        if reclaimer is None:
            return {"running": False}
        return reclaimer.status()

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

    def _observe(self, call: str, what: str) -> Any:
        with self._step_lock, self._connection(call):
            return self._run("observe", what)

    def _state(self, call: str) -> tuple[bool, int, int]:
        closed, pending, outstanding = self._observe(call, "state")
        return closed == "1", int(pending), int(outstanding)

    @property
    def is_closed(self) -> bool:
        return self._observe("is_closed", "closed") == "1"

    @property
    def is_drained(self) -> bool:
        closed, pending, outstanding = self._state("is_drained")
        return closed and pending == 0 and outstanding == 0

    @property
    def is_paused(self) -> bool:
        return self._observe("is_paused", "paused") == "1"

    @property
    def parked_bytes(self) -> int:
        """Bytes of the refs whose producers wait in ``put_blocks_until_below``
        now, in any client (D8); a producer that crashed while waiting stops
        counting once its registration runs out (``_PRODUCER_TTL_MS``)."""
        with self._step_lock, self._connection("parked_bytes"):
            return int(self._run("parked"))

    def pending_count(self) -> int:
        return int(self._observe("pending_count", "pending"))

    def outstanding_count(self) -> int:
        return int(self._observe("outstanding_count", "outstanding"))

    def intents_count(self) -> int:
        """Completions whose data is not known to be scrubbed yet (scrub intents)."""
        return int(self._observe("intents_count", "intents"))

    def dead_letters(self) -> list[DeadLetter]:
        return self._dead_letters("dead_letters", self._observe("dead_letters", "dead"))

    def _dead_letters(self, call: str, texts: list[str]) -> list[DeadLetter]:
        """Every dead letter of ``texts`` parsed; ``QueueStateCorrupt`` naming the
        first one that is not a dead letter refqueue wrote."""
        letters = []
        for index, text in enumerate(texts, 1):
            try:
                letters.append(_dead_letter(text))
            except (TypeError, ValueError) as exc:
                raise self._corrupt(
                    call, f"dead letter {index} of {len(texts)} in key {self._prefix}dead is {_cut(text)} ({exc})"
                ) from None
        return letters

    def metrics(self) -> dict[str, Any]:
        """The queue's gauges now (``gauges()``), under the names of
        ``SampleRefQueue.metrics()``, so ``refqueue.diagnose`` and
        ``refqueue.prometheus.RefqueueCollector`` read it unchanged.  The
        Redis queue records no events: there are no event counters
        (``"counters"`` is False)."""
        return {**self.gauges(), "counters": False}

    def gauges(self) -> dict[str, Any]:
        """What the queue holds and who waits on it, now: one read-only script
        on the server (O(log n) in the leases: two sorted sets; O(producers
        waiting) and O(open scrub intents) besides), this client's store's
        ``health()`` and this client's own counts.

        Of the whole queue, every client: ``clock`` (the time the script read
        the leases at: the injected clock, or the server's ``TIME``),
        ``pending``, ``outstanding``, ``closed``, ``paused``,
        ``dead_letters`` and ``dead_letters_kept`` (both the letters the
        server keeps now: unlike the in-process queue's ``dead_letters``,
        not a count of every dead-lettering; a drain lowers it),
        ``dead_letters_dropped``; ``producers_blocked`` and ``parked_bytes``
        (producers of any client waiting in ``put_blocks_until_below`` now,
        whose registration has not run out, and their refs' bytes: what the
        hysteresis discounts, D8); ``oldest_open_lease_age_seconds`` (since
        the oldest outstanding lease's acquire; 0.0 with none),
        ``leases_past_deadline`` (outstanding leases whose deadline is
        ``<= clock``: only a reclaim takes them back),
        ``most_overdue_lease_seconds``, ``leases_older_than_timeout``,
        ``visibility_timeout_seconds``; ``intents``, ``intent_bytes``
        (completions whose data is not known to be scrubbed, and their
        bytes), ``leases_issued``, ``version``.

        Of this client (this process's ``RedisSampleRefQueue`` object) only:
        ``producers_blocked_here``, ``parked_bytes_here``,
        ``producer_blocked_seconds`` (clock-seconds this client's producers
        spent blocked in ``put_blocks_until_below``, from the first park to
        the call's end, the waits in progress included; the injected clock's,
        else this machine's monotonic clock), ``consumers_waiting`` (this
        client's threads in ``acquire`` waiting on an empty queue);
        ``reclaimer_running`` (this client's reclaimer: another client's may
        run), ``reclaimer_interval``, ``reclaimer_errors``,
        ``reclaimer_consecutive_errors``, ``reclaimer_last_error`` (what
        stopped it, else its last error; None: none), ``reclaimer_last_error_at``;
        ``resident_bytes``, ``resident_samples``, ``capacity_bytes``
        (this client's store's ``health()``; None with ``store_error`` if it
        raised), ``high_watermark_bytes``, ``low_watermark_bytes``,
        ``effective_resident_bytes`` (resident - the queue's parked bytes).

        ``live_bytes`` and ``unaccounted_bytes`` are None: the server keeps
        no running sum of the live refs' bytes and summing them would scan
        every ref, so the "residency held by orphans" diagnosis is not made
        for a Redis queue.  Leases acquired through a client of an older
        refqueue (before the ``leasedat`` key) have no acquire time: they
        count in ``outstanding`` and ``leases_past_deadline`` but not in the
        oldest lease's age nor ``leases_older_than_timeout``
        (``leases_timed`` says how many have one)."""
        status = self.reclaimer_status()
        with self._step_lock:
            now_text, _ = self._times(0.0, "metrics")
            with self._connection("metrics"):
                (pending, outstanding, intents, dead, dropped, paused, closed, seq, version, intent_bytes, now_text,
                 past, first_deadline, oldest_acquire, older, timed, blocked, parked) = self._run(
                    "observe", "gauges", now_text, self._vt_text
                )
        now = float(now_text)
        with self._waits_lock:
            mine = list(self._blocked_here.values())
            blocked_seconds = self._blocked_seconds
            consumers_waiting = self._consumers_waiting
        wait_now = self._wait_clock()
        if wait_now is not None:
            blocked_seconds += sum(max(0.0, wait_now - since) for since, _ in mine if since is not None)
        store_error = None
        try:
            health = self._store.health()
            resident, samples, capacity = health.resident_bytes, health.sample_count, health.capacity_bytes
        except Exception as exc:  # a closed store: the gauges still answer
            resident = samples = capacity = None
            store_error = repr(exc)
        parked = int(parked)
        return {
            "clock": now,
            "pending": int(pending),
            "outstanding": int(outstanding),
            "closed": closed == "1",
            "paused": paused == "1",
            "dead_letters": int(dead),
            "dead_letters_kept": int(dead),
            "dead_letters_dropped": int(dropped),
            "producers_blocked": int(blocked),
            "parked_bytes": parked,
            "producers_blocked_here": len(mine),
            "parked_bytes_here": sum(n for _, n in mine),
            "producer_blocked_seconds": blocked_seconds,
            "consumers_waiting": consumers_waiting,
            "oldest_open_lease_age_seconds": 0.0 if oldest_acquire == "" else max(0.0, now - float(oldest_acquire)),
            "leases_past_deadline": int(past),
            "most_overdue_lease_seconds": (
                max(0.0, now - float(first_deadline)) if first_deadline != "" and int(past) > 0 else 0.0
            ),
            "leases_older_than_timeout": int(older),
            "leases_timed": int(timed),
            "visibility_timeout_seconds": self._vt_seconds,
            "intents": int(intents),
            "intent_bytes": int(intent_bytes),
            "leases_issued": int(seq),
            "version": int(version),
            **reclaimer_gauges(status),
            "reclaimer_last_error_at": status.get("last_error_at"),
            "resident_bytes": resident,
            "resident_samples": samples,
            "capacity_bytes": capacity,
            "store_error": store_error,
            "high_watermark_bytes": self._high,
            "low_watermark_bytes": self._low,
            "effective_resident_bytes": None if resident is None else max(0, resident - parked),
            "live_bytes": None,
            "unaccounted_bytes": None,
        }

    def _wait_clock(self) -> float | None:
        """The clock of this client's blocked-time gauge: the injected clock
        (None if it raised or read no finite number), else this machine's
        monotonic clock.  Never a reason for a call to fail."""
        if self._now is None:
            return _monotonic()
        try:
            now = float(self._now())
        except Exception:
            return None
        return now if math.isfinite(now) else None

    def drain_dead_letters(self) -> list[DeadLetter]:
        """The dead letters, then removed from the server: each one parsed
        first (one that does not parse raises ``QueueStateCorrupt`` with every
        letter kept), and only those read removed (a letter added meanwhile
        stays for the next drain)."""
        while True:
            texts = self._observe("drain_dead_letters", "dead")
            letters = self._dead_letters("drain_dead_letters", texts)
            digest = hashlib.sha1(
                b"".join(b"%d:%s" % (len(raw), raw) for raw in (t.encode("utf-8", "surrogateescape") for t in texts))
            ).hexdigest()
            with self._step_lock, self._connection("drain_dead_letters"):
                if self._run("drain_dead", len(texts), digest) == 1:
                    return letters

    @property
    def dead_letter_limit(self) -> int:
        return self._dead_limit

    @property
    def dead_letters_dropped(self) -> int:
        return int(self._observe("dead_letters_dropped", "dropped"))

    def delete(self) -> int:
        """Remove every key of this queue from the server (an operator's
        clean-up; every client still using it then gets ``QueueStateLost``).
        Returns how many keys were removed."""
        with self._connection("delete"):
            return _delete_keys(self._redis, self._prefix)

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
        try:
            ref.sample_id.encode()
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"{call}({ref.sample_id!r}): the sample id holds {exc.object[exc.start:exc.end]!r}, which has no "
                f"UTF-8 form, so Redis cannot store it; use ids of letters, digits and punctuation"
            ) from None

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
    """Turns redis-py's errors into refqueue's (``_translate``), naming the
    server (without its password), the call and what to do."""

    __slots__ = ("queue", "call")

    def __init__(self, queue: RedisSampleRefQueue, call: str) -> None:
        self.queue = queue
        self.call = call

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is None:
            return False
        queue = self.queue
        error = _translate(exc, self.call, queue._url, queue._name, queue._prefix)
        if error is None:
            return False
        if isinstance(error, (QueueStateLost, QueueStateCorrupt)):
            raise error from None
        raise error from exc


class _Errors(_Connection):
    """``_Connection`` for a call that has no queue object (``delete_queue``)."""

    __slots__ = ("url", "name", "prefix")

    def __init__(self, call: str, url: str, name: str, prefix: str) -> None:
        self.call, self.url, self.name, self.prefix = call, url, name, prefix

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is None:
            return False
        error = _translate(exc, self.call, self.url, self.name, self.prefix)
        if error is None:
            return False
        raise error from exc


_REDIS_PY = os.path.dirname(redis_py.__file__) + os.sep


def _raised_in_redis_py(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside redis-py's own code (choking on an answer)."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    return last is not None and last.tb_frame.f_code.co_filename.startswith(_REDIS_PY)


def _translate(exc: BaseException, call: str, url: str, name: str, prefix: str) -> BaseException | None:
    """refqueue's error for ``exc`` raised talking to the server, or None (not
    the server's: let it propagate)."""
    if isinstance(exc, redis_py.exceptions.ResponseError):
        text = str(exc)
        if text.startswith(LOST):
            why = text[len(LOST):].strip()
            return QueueStateLost(
                f"{call}: queue {name!r} on {url} lost its state: {why}. Nothing of it is "
                f"accepted any more (not its leases, not its pending work). Stop its producers and consumers; "
                f"an operator recovers with refqueue.backends.redis.delete_queue(url, {name!r}), opens "
                f"the queue again (a new epoch) and puts again the refs the store still holds (docs/REDIS.md, "
                f"'When the server loses state')"
            )
        if text.startswith(CORRUPT):
            why = text[len(CORRUPT):].strip().rsplit(" script: ", 1)[0]
            return _corrupt_error(call, name, url, prefix, why)
        if "WRONGTYPE" in text:
            return _corrupt_error(call, name, url, prefix, f"one of its keys holds the wrong kind of value ({text})")
        if "unknown command" in text.lower():
            return RedisRefused(
                f"{call}: the Redis server at {url} does not know a command refqueue needs ({text}); the call changed "
                f"nothing. The URL must name a Redis 7 server that allows EVALSHA, SCRIPT LOAD and BLPOP (not one "
                f"with them renamed or disabled, nor a proxy without scripting)"
            )
        return RedisRefused(
            f"{call}: the Redis server at {url} refused the command ({text}); the call changed "
            f"nothing. Fix the server (memory, a read-only replica, its disk, the user's permissions) and call again"
        )
    if isinstance(exc, redis_py.exceptions.AuthenticationError):
        return RedisUnavailable(
            f"{call}: the Redis server at {url} refused the credentials ({exc}); check the user and password of "
            f"the URL (or of the client), then call again"
        )
    if isinstance(exc, (redis_py.exceptions.ConnectionError, redis_py.exceptions.TimeoutError)):
        return RedisUnavailable(
            f"{call}: lost the connection to the Redis server at {url} ({exc}); nothing the "
            f"server acknowledged is lost. Check that the server is up and reachable (and that the URL names "
            f"a Redis 7 server), then call again (after an ack, lease_state(lease) says whether it committed)"
        )
    if isinstance(exc, redis_py.exceptions.InvalidResponse):
        return _not_redis(call, url, str(exc))
    if isinstance(exc, redis_py.exceptions.RedisError):
        return RedisRefused(
            f"{call}: redis-py failed on a command to {url} ({type(exc).__name__}: {exc}); the "
            f"call changed nothing. Report it with the call that raised it"
        )
    if isinstance(exc, Exception) and _raised_in_redis_py(exc):
        if isinstance(exc, UnicodeError):  # a client made with encoding_errors="strict"
            return _corrupt_error(call, name, url, prefix, f"the server answered bytes that are not UTF-8 ({exc})")
        return _not_redis(call, url, f"{type(exc).__name__}: {exc}")
    return None


def _not_redis(call: str, url: str, detail: str) -> RedisUnavailable:
    return RedisUnavailable(
        f"{call}: the server at {url} does not answer as a Redis server does ({detail[:200]}); check that the URL "
        f"names a Redis 7 server (its host and port; rediss:// where it speaks TLS)"
    )


# Per connection pool, each thread's script connection (see _evalsha): the
# queues of one client share them, as they share its pool.  Nothing a thread
# keeps (its thread-local slot) refers to a connection: a redis-py connection
# refers to its pool (its maintenance-notification handler), so a slot that
# held one would keep every pool a long-lived thread ever used, and its
# sockets, alive for ever (measured: 97 sockets left open by one blocking
# phase of the kit).  A connection lives in its pool's _Held, which only the
# queues on that pool keep; a thread's connection is closed when the thread ends.
_HELD: weakref.WeakValueDictionary[int, _Held] = weakref.WeakValueDictionary()
_held_lock = threading.Lock()
_slot_keys = itertools.count()


class _Slot:
    """A thread's claim on its script connection of one pool: its key in the
    pool's ``_Held``, and whether the thread is mid-command on it."""

    __slots__ = ("key", "busy", "__weakref__")

    def __init__(self) -> None:
        self.key = next(_slot_keys)
        self.busy = False


class _Held:
    """The script connections to one pool's server, one per thread: key ->
    (connection, the pid that made it)."""

    __slots__ = ("pool", "conns", "local", "__weakref__")

    def __init__(self, pool: Any) -> None:
        self.pool = weakref.ref(pool)
        self.conns: dict[int, tuple[Any, int]] = {}
        self.local = threading.local()

    def slot(self) -> _Slot:
        """This thread's slot, made on its first script."""
        slot = getattr(self.local, "slot", None)
        if slot is None:
            slot = self.local.slot = _Slot()
            weakref.finalize(slot, _thread_ended, weakref.ref(self), slot.key).atexit = False
        return slot


def _thread_ended(held: weakref.ref[_Held], key: int) -> None:
    """A thread's slot is gone (the thread ended, or every queue of the pool
    did): close its connection."""
    holder = held()
    entry = None if holder is None else holder.conns.pop(key, None)
    if entry is not None and entry[1] == os.getpid():
        with contextlib.suppress(Exception):
            entry[0].disconnect()


def _held_for(pool: Any) -> _Held:
    with _held_lock:
        held = _HELD.get(id(pool))
        if held is None or held.pool() is not pool:
            held = _HELD[id(pool)] = _Held(pool)
        return held


def _ready(conn: Any) -> None:
    """Connect ``conn`` if it is not; if it has something to read while idle
    (closed by the server, a stray reply), connect it afresh; raise
    redis-py's ``ConnectionError`` if even a fresh connection is not ready
    (``_NotRedis`` if what answered the handshake is not Redis)."""
    try:
        _connect(conn)  # a no-op when connected
        if conn.can_read():
            raise redis_py.exceptions.ConnectionError("Connection has data")
    except (redis_py.exceptions.ConnectionError, redis_py.exceptions.TimeoutError, OSError):
        conn.disconnect()
        _connect(conn)
        if conn.can_read():
            raise redis_py.exceptions.ConnectionError("Connection not ready") from None


def _connect(conn: Any) -> None:
    try:
        conn.connect()
    except redis_py.exceptions.RedisError:
        raise
    except OSError:
        raise
    except Exception as exc:  # redis-py choking on the handshake's answer
        conn.disconnect()
        raise _NotRedis(f"its answer to the connection handshake made redis-py raise {type(exc).__name__}: {exc}") from exc


def _bulk(value: object) -> bytes:
    """One RESP bulk string: a str as UTF-8, an int in decimal (``_packed`` passes no other type)."""
    data = value.encode("utf-8", "surrogateescape") if type(value) is str else b"%d" % value  # type: ignore[attr-defined]
    return b"$%d\r\n%s\r\n" % (len(data), data)


# A waiting producer's list: room:<token>, the token a uuid4 hex.
_ROOM = re.compile(r"room:[0-9a-f]{32}")


def _delete_keys(client: Any, prefix: str) -> int:
    """Delete the keys of the queue whose key prefix is ``prefix``: its named
    keys and its producers' ``room:<token>`` lists, nothing else (another
    queue's prefix may start with this one's)."""
    keys = [prefix + key for key in KEYS]
    keys += [key for key in client.scan_iter(match=_glob_escape(prefix) + "room:*")
             if _ROOM.fullmatch(key[len(prefix):])]
    return int(client.delete(*keys))


def delete_queue(url: str, name: str, *, prefix: str = "refqueue:") -> int:
    """Remove every key of queue ``name`` from the server at ``url`` (an
    operator's recovery after ``QueueStateLost``, or a clean-up); returns how
    many keys were removed.  Every client still using the queue then gets
    ``QueueStateLost``; a queue opened under that name afterwards is new (a
    new epoch)."""
    url = _check_url(url, "delete_queue")
    name = _check_name(name)
    if not isinstance(prefix, str):
        raise TypeError(f"delete_queue(prefix) must be a str, got {describe(prefix)}; pass e.g. 'refqueue:'")
    client = redis_py.Redis.from_url(url, **_CLIENT_OPTIONS)
    try:
        with _Errors(f"delete_queue({name!r})", redacted(url), name, f"{prefix}{{{name}}}:"):
            return _delete_keys(client, f"{prefix}{{{name}}}:")
    finally:
        client.close()


def _glob_escape(text: str) -> str:
    """``text`` as a literal in a SCAN MATCH pattern."""
    return re.sub(r"([\\*?\[\]{}])", r"\\\1", text)


def _slice(remaining: float) -> float:
    """A BLPOP timeout: at most BLOCK_SLICE, at least a millisecond (0 would block forever)."""
    return max(0.001, min(remaining, BLOCK_SLICE))


def _dead_letter(text: str) -> DeadLetter:
    """A dead letter as the scripts write it: JSON ``[ref JSON, reason, deliveries]``."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError("it nests JSON too deeply") from None
    if not (type(value) is list and len(value) == 3):
        raise ValueError("it is not a JSON list [ref, reason, deliveries]")
    ref_json, reason, deliveries = value
    if type(ref_json) is not str or type(reason) is not str or not reason:
        raise ValueError("its ref or reason is not a non-empty string")
    if type(deliveries) is not int or deliveries < 0:
        raise ValueError(f"its deliveries {deliveries!r} is not a count")
    return DeadLetter(SampleRef.from_json(ref_json), reason, deliveries)


def _cut(value: object, limit: int = 120) -> str:
    """``repr(value)``, at most ``limit`` characters (a planted value may be huge)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _corrupt_error(call: str, name: str, url: str, prefix: str, why: str) -> QueueStateCorrupt:
    return QueueStateCorrupt(
        f"{call}: queue {name!r} on {url} holds a value refqueue never writes: {why}; the call changed nothing. "
        f"Something other than refqueue wrote to the queue's keys ({prefix}*): fix or remove that value, or delete "
        f"the queue (refqueue.backends.redis.delete_queue) and recover as after a state loss (docs/REDIS.md)"
    )


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


def make_server_time(store: Any, clock: Any, **config: Any) -> RedisSampleRefQueue:
    """The conformance factory of the production configuration: as ``make``,
    but the queue reads the server's ``TIME`` (``clock=None``) and ignores
    the kit's clock (declared: ``injected_clock=False``), so the client
    takes no step lock, only its completions' gate."""
    return build(RedisSampleRefQueue, store, None, **config)


def open_client(queue: RedisSampleRefQueue, store: Any, clock: Any) -> RedisSampleRefQueue:
    """Another client of ``queue``'s queue, as the conformance kit opens one
    (``make.open_client``, docs/CERTIFYING.md): its own connection pool, the
    same configuration and callbacks, bound to ``store``.

    ``clock`` is the clock of the machine the client runs on, and is not read:
    lease time is the queue's one clock (the server's ``TIME``, or the
    injected clock that stands in for it in tests), so a client on a machine
    whose clock is off gives the same deadlines.  The clients one process
    opens this way are one process to D2: they share ``queue``'s locks and its
    queue of due callbacks, so none of them sees another's completion between
    its commit and its scrub, and callbacks are delivered in the order of the
    changes (another process still sees the window: docs/REDIS.md)."""
    from refqueue.backends._redis_faults import _open

    if not isinstance(queue, RedisSampleRefQueue):
        raise TypeError(f"open_client(queue) must be a RedisSampleRefQueue, got {describe(queue)}")
    kwargs = queue._redis.connection_pool.connection_kwargs
    client = redis_py.Redis(connection_pool=redis_py.ConnectionPool(**kwargs))
    args = {**queue._open_args, "on_pause": queue._callbacks["pause"], "on_resume": queue._callbacks["resume"]}
    other = _open(type(queue), args, store, queue._clock, client=client)
    other._store_lock, other._step_lock = queue._store_lock, queue._step_lock
    other._callbacks_due = queue._callbacks_due
    return other


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
    from refqueue.backends._redis_faults import KIT_INTENT_DELAY

    queue = queue_class(
        store,
        timeout,
        client=client,
        name=f"certify-{uuid.uuid4().hex}",
        prefix=options.get("prefix", "refqueue:"),
        clock=clock,
        intent_delay=KIT_INTENT_DELAY,
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


def _capabilities(**declared: bool) -> Any:
    from refqueue.conformance.contract import Capabilities

    return Capabilities(faults=True, dead_letter_limit=True, **declared)


def _faults() -> Any:
    from refqueue.backends._redis_faults import RedisFaults

    return RedisFaults()


make.capabilities = _capabilities()  # type: ignore[attr-defined]
make.faults = _faults()  # type: ignore[attr-defined]
make.open_client = open_client  # type: ignore[attr-defined]
make_server_time.capabilities = _capabilities(injected_clock=False)  # type: ignore[attr-defined]
make_server_time.faults = _faults()  # type: ignore[attr-defined]
make_server_time.open_client = open_client  # type: ignore[attr-defined]
