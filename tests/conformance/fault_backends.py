"""Small backends with fake fault hooks, for the unit tests of the faults
phase's checker ONLY (certification evidence is the real Redis backend).

``make`` serves one in-process ``SampleRefQueue`` from a thread of the
process that called the factory, over a loopback socket with one JSON line
per request and per reply (no pickle); every client, the factory's included,
is a ``Proxy`` speaking to it, one connection per thread, so clients in other
processes (``open_from_spec``) share the queue.  The fake server keeps what a
deployment over two systems keeps: a completion whose client loses its reply
or crashes records a *scrub intent* instead of scrubbing, collected by any
``reclaim_expired`` once the queue's clock is ``INTENT_TIMEOUT`` past it; a
client's put of a ref whose last put on that client lost its reply is a
retry, and changes nothing if the ref was enqueued (as the Redis client's); a lossy
restart starts a new queue (a new epoch) and every client of the old one
gets ``StateLost`` from then on.  ``lease_state`` reads the queue's records.

Each ``make_*`` below breaks one rule, the way a real backend might, for a
test that the faults phase catches it.
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

from refqueue import DeadLetter, Lease, SampleRef, SampleRefQueue, VisibilityTimeout
from refqueue.conformance import Capabilities
from refqueue.conformance.contract import ClientCrashed
from refqueue.conformance.probe import ScrubSwitch
from refqueue.errors import DuplicateSample, ForeignLease, PutAborted, QueueClosed, RefQueueError, ReplayedSample

INTENT_TIMEOUT = 5.0
_COMPLETIONS = ("ack", "dead_letter", "fail", "reclaim_expired")  # may complete a sample: a crash strikes after one
_CHANGES = ("put", "put_step", "acquire", "acquire_nowait", "ack", "fail", "extend", "dead_letter", "reclaim_expired", "close")


class Unavailable(RefQueueError, ConnectionError):
    KIND = "unavailable"


class StateLost(RefQueueError, RuntimeError):
    KIND = "state_lost"


_ERRORS = {
    "closed": QueueClosed, "duplicate": DuplicateSample, "replay": ReplayedSample, "foreign": ForeignLease,
    "aborted": PutAborted, "state_lost": StateLost, "invalid": ValueError,
}  # fmt: skip


class _IntentStore(ScrubSwitch):
    """The queue's view of the store: a scrub made while ``defer`` is set records an intent instead."""

    def __init__(self, inner: Any, server: Server) -> None:
        super().__init__(inner)
        self.server = server

    def scrub(self, ref: SampleRef) -> bool:
        if getattr(self.server.local, "defer", False):
            self.server.intents.append((ref, self.server.clock.now()))
            return True
        return self.inner.scrub(ref)


class Server:
    """The fake queue server: one ``SampleRefQueue`` per generation, served over a socket."""

    remembers_puts = True
    keeps_intents = True

    def __init__(self, store: Any, clock: Any, config: dict[str, Any]) -> None:
        self.store, self.clock, self.config = store, clock, config
        self.local = threading.local()
        self.lock = threading.Lock()
        self.generation = 0
        self.intents: list[tuple[SampleRef, float]] = []
        self._new_queue()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = self.listener.getsockname()
        threading.Thread(target=self._accept, name="fake-server", daemon=True).start()

    def _new_queue(self) -> None:
        config = dict(self.config)
        seconds = config.pop("visibility_timeout")
        self.queue = SampleRefQueue(_IntentStore(self.store, self), VisibilityTimeout(seconds), clock=self.clock, **config)
        self.put_refs: set[str] = set()  # the refs this generation enqueued (a put of one again is a retry)
        self.acked: set[tuple[str, int]] = set()

    def lose_state(self) -> None:
        with self.lock:
            self.generation += 1
            self.intents = []
            self._new_queue()

    def _accept(self) -> None:
        while True:
            conn, _ = self.listener.accept()
            threading.Thread(target=self._serve, args=(conn,), name="fake-server-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rw") as stream:
            for line in stream:
                stream.write(json.dumps(self.handle(json.loads(line))) + "\n")
                stream.flush()

    refusing = False  # refuse_writes: every call that changes state is refused, changing nothing

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        if request["gen"] != self.generation and self.detects_loss():
            return {"error": "state_lost", "message": f"the queue's state was lost (generation {self.generation})"}
        if self.refusing and request["op"] in _CHANGES:
            return {"error": "refused", "message": f"the server refuses {request['op']} (out of memory)"}
        self.local.defer = request["defer"]
        try:
            return {"ok": getattr(self, "op_" + request["op"])(*request["args"])}
        except Exception as exc:  # noqa: BLE001 - sent to the client
            kind = getattr(type(exc), "KIND", None) or ("invalid" if isinstance(exc, (TypeError, ValueError)) else "error")
            return {"error": kind, "message": f"{type(exc).__name__}: {exc}"}
        finally:
            self.local.defer = False

    def detects_loss(self) -> bool:
        return True

    # -- the operations (arguments and answers as JSON) ---------------------------------------

    def op_put(self, ref_json: str, retry: bool) -> None:
        if retry and self.remembers_puts and ref_json in self.put_refs:
            return None  # a retry of a put that took effect
        self.queue.put(SampleRef.from_json(ref_json))
        self.put_refs.add(ref_json)

    def op_put_step(self, ref_json: str, retry: bool) -> None:
        if retry and self.remembers_puts and ref_json in self.put_refs:
            return None
        self.queue.put_blocks_until_below(SampleRef.from_json(ref_json), abort_when=lambda: True)
        self.put_refs.add(ref_json)

    def op_acquire(self, poll: float | None) -> str | None:
        lease = self.queue.acquire_nowait() if poll is None else self.queue.acquire(poll_interval=poll)
        return None if lease is None else lease.to_json()

    def op_ack(self, lease_json: str) -> bool:
        lease = Lease.from_json(lease_json)
        done = self.queue.ack(lease)
        if done:
            self.acked.add((lease.epoch, lease.lease_id))
        return done

    def op_fail(self, lease_json: str) -> bool:
        return self.queue.fail(Lease.from_json(lease_json))

    def op_extend(self, lease_json: str, seconds: float | None) -> bool:
        return self.queue.extend(Lease.from_json(lease_json), seconds)

    def op_dead_letter(self, lease_json: str, reason: str) -> bool:
        return self.queue.dead_letter(Lease.from_json(lease_json), reason)

    def op_reclaim_expired(self) -> int:
        self.collect()
        return self.queue.reclaim_expired()

    def collect(self) -> None:
        """Scrub the data of every intent ``INTENT_TIMEOUT`` old."""
        if not self.keeps_intents:
            return
        now = self.clock.now()
        due = [(ref, at) for ref, at in self.intents if now >= at + INTENT_TIMEOUT]
        for ref, at in due:
            self.store.scrub(ref)
            self.intents.remove((ref, at))

    def op_close(self) -> None:
        self.queue.close()

    def op_lease_state(self, lease_json: str) -> str:
        lease = Lease.from_json(lease_json)
        rec = self.queue._live.get(lease.ref.sample_id)  # noqa: SLF001 - a test fake reads its own queue
        if lease.epoch == self.queue.epoch and rec is not None and rec.lease_id == lease.lease_id:
            return "live"
        if (lease.epoch, lease.lease_id) in self.acked:
            return "acked"
        if lease.epoch == self.queue.epoch and rec is not None:
            return "other" if rec.lease_id is not None else "pending"
        return "gone"

    def op_read(self, name: str) -> Any:
        value = getattr(self.queue, name)
        value = value() if callable(value) else value
        if name == "dead_letters":
            return [[d.ref.to_json(), d.reason, d.deliveries] for d in value]
        return value


class Proxy:
    """A client of the fake server: the queue API, each call one request."""

    reclaimer_survives = True
    reads_cached = False

    def __init__(self, address: Any, generation: int, store: Any, server: Server | None = None) -> None:
        self.address, self.generation, self._store, self.server = tuple(address), generation, store, server
        self._local = threading.local()
        self.fault: str | None = None
        self.crashed = False
        self._reclaimer: tuple[threading.Thread, threading.Event] | None = None
        self._cache: dict[str, Any] = {}
        self._uncertain: set[str] = set()  # refs whose last put here lost its reply

    def _put(self, op: str, ref: SampleRef) -> None:
        text = ref.to_json()
        try:
            self._rpc(op, text, text in self._uncertain)
        except Unavailable:
            self._uncertain.add(text)
            raise
        except BaseException:
            self._uncertain.discard(text)
            raise
        self._uncertain.discard(text)

    def _stream(self) -> Any:
        stream = getattr(self._local, "stream", None)
        if stream is None:
            sock = socket.create_connection(self.address)
            stream = self._local.stream = sock.makefile("rw")
            self._local.sock = sock
        return stream

    def _drop(self) -> None:
        self._local.stream.close()
        self._local.sock.close()
        self._local.stream = None

    def _rpc(self, op: str, *args: Any) -> Any:
        if self.crashed:
            raise AssertionError("a client that crashed was used again")
        fault = None
        if op in _CHANGES and self.fault is not None and (self.fault == "lost" or op in _COMPLETIONS):
            fault, self.fault = self.fault, None
        stream = self._stream()
        stream.write(json.dumps({"gen": self.generation, "op": op, "args": list(args), "defer": fault is not None}) + "\n")
        stream.flush()
        reply = json.loads(stream.readline())
        if fault == "lost":
            self._drop()
            raise Unavailable(f"the connection dropped before the reply to {op} was read")
        if fault == "crash":
            self.crashed = True
            raise ClientCrashed(f"the client died right after its {op} committed")
        if "error" in reply:
            raise _ERRORS.get(reply["error"], RuntimeError)(reply["message"])
        if op in _CHANGES:
            self._cache.clear()
        return reply["ok"]

    def _read(self, name: str) -> Any:
        if self.reads_cached and name in self._cache:
            return self._cache[name]
        value = self._cache[name] = self._rpc("read", name)
        return value

    # -- the queue API ----------------------------------------------------------------------------

    def put(self, ref: SampleRef) -> None:
        self._put("put", ref)

    def put_blocks_until_below(self, ref: SampleRef, poll_interval: float = 0.05, abort_when: Any = None) -> None:
        self._put("put_step", ref)

    def acquire(self, poll_interval: float = 0.05) -> Lease | None:
        text = self._rpc("acquire", poll_interval)
        return None if text is None else Lease.from_json(text)

    def acquire_nowait(self) -> Lease | None:
        text = self._rpc("acquire", None)
        return None if text is None else Lease.from_json(text)

    def ack(self, lease: Lease) -> bool:
        return self._rpc("ack", lease.to_json())

    def fail(self, lease: Lease) -> bool:
        return self._rpc("fail", lease.to_json())

    def extend(self, lease: Lease, seconds: float | None = None) -> bool:
        return self._rpc("extend", lease.to_json(), seconds)

    def dead_letter(self, lease: Lease, reason: str) -> bool:
        return self._rpc("dead_letter", lease.to_json(), reason)

    def reclaim_expired(self) -> int:
        return self._rpc("reclaim_expired")

    def close(self) -> None:
        self._rpc("close")

    def lease_state(self, lease: Lease) -> str:
        return self._rpc("lease_state", lease.to_json())

    def pending_count(self) -> int:
        return self._read("pending_count")

    def outstanding_count(self) -> int:
        return self._read("outstanding_count")

    def dead_letters(self) -> list[DeadLetter]:
        return [DeadLetter(SampleRef.from_json(r), reason, n) for r, reason, n in self._read("dead_letters")]

    @property
    def is_closed(self) -> bool:
        return self._read("is_closed")

    @property
    def is_drained(self) -> bool:
        return self._read("is_drained")

    @property
    def is_paused(self) -> bool:
        return self._read("is_paused")

    @property
    def epoch(self) -> str:
        return self._read("epoch")

    @property
    def store(self) -> Any:
        return self._store

    def start_reclaimer(self, interval: float | None = None) -> None:
        if self._reclaimer is not None:
            raise RuntimeError("a reclaimer is already running")
        stop = threading.Event()
        thread = threading.Thread(target=self._reclaim_every, args=(interval or 0.01, stop), daemon=True)
        self._reclaimer = (thread, stop)
        thread.start()

    def _reclaim_every(self, interval: float, stop: threading.Event) -> None:
        while not stop.wait(interval):
            try:
                self.reclaim_expired()
            except Exception:  # noqa: BLE001 - a reclaimer keeps going after a lost connection
                if not self.reclaimer_survives:
                    return

    def stop_reclaimer(self) -> None:
        if self._reclaimer is not None:
            thread, stop = self._reclaimer
            stop.set()
            thread.join(5)
            self._reclaimer = None


class Hooks:
    """The fake's ``FaultHooks``."""

    intent_timeout = INTENT_TIMEOUT
    proxy = Proxy

    def lose_next_reply(self, queue: Proxy) -> None:
        queue.fault = "lost"

    def crash_after_commit(self, queue: Proxy) -> None:
        queue.fault = "crash"

    def restart(self, queue: Proxy, *, durable: bool) -> str | None:
        if not durable:
            queue.server.lose_state()  # type: ignore[union-attr]
        return None

    def refuse_writes(self, queue: Proxy, refuse: bool) -> str | None:
        queue.server.refusing = refuse  # type: ignore[union-attr]
        return None

    def checkpoint(self, queue: Proxy) -> str | None:
        return None  # the server's generation is its version: any rewind moves it

    def rewind(self, queue: Proxy) -> str | None:
        queue.server.lose_state()  # type: ignore[union-attr]  # older than what its clients saw: a new generation
        return None

    def open_client(self, queue: Proxy, store: Any) -> Proxy:
        return self.proxy(queue.address, queue.server.generation, store, queue.server)  # type: ignore[union-attr]

    def client_spec(self, queue: Proxy) -> dict[str, Any]:
        return {"host": queue.address[0], "port": queue.address[1], "generation": queue.generation}

    def open_from_spec(self, spec: dict[str, Any], store: Any, clock: Any) -> Proxy:
        return self.proxy((spec["host"], spec["port"]), spec["generation"], store)


def factory(server: type[Server] = Server, hooks: type[Hooks] = Hooks) -> Any:
    """A conformance factory of the fake with ``server`` and ``hooks``."""
    made = hooks()

    def make(store: Any, clock: Any, **config: Any) -> Proxy:
        config.pop("on_pause", None)
        config.pop("on_resume", None)
        serving = server(store, clock, config)
        return made.proxy(serving.address, serving.generation, store, serving)

    make.capabilities = Capabilities(faults=True)  # type: ignore[attr-defined]
    make.faults = made  # type: ignore[attr-defined]
    return make


make = factory()


# -- one broken rule each ------------------------------------------------------------------------


class _ForgetsPuts(Server):
    remembers_puts = False  # a retried put is taken for a new one


class _NeverCollects(Server):
    keeps_intents = False  # an intent is recorded and never collected: the data stays for ever


class _DyingReclaimer(Proxy):
    reclaimer_survives = False  # the background reclaimer stops at the first error


class _DyingReclaimerHooks(Hooks):
    proxy = _DyingReclaimer


class _LossUnnoticed(Server):
    def detects_loss(self) -> bool:
        return False  # old clients talk to the new, empty queue as if nothing happened


class _SameEpochAfterLoss(Server):
    def _new_queue(self) -> None:
        old = getattr(self, "queue", None)
        super()._new_queue()
        if old is not None:  # the new queue takes the old epoch, and its lease ids restart at 1
            self.queue._epoch = old.epoch  # noqa: SLF001


class _LeaseStateLive(Server):
    def op_lease_state(self, lease_json: str) -> str:
        return "live"


class _CachedReads(Proxy):
    reads_cached = True  # reads answer from the last answer this client saw until it changes something


class _CachedReadsHooks(Hooks):
    proxy = _CachedReads


class _DurableLoses(Hooks):
    def restart(self, queue: Proxy, *, durable: bool) -> str | None:
        queue.server.lose_state()  # type: ignore[union-attr]
        return None


class _DownForHooks(Hooks):
    """Hooks whose restart takes the optional ``down_for`` (the fake has no
    port to keep closed: it records what it was asked for)."""

    asked: list[float] = []

    def restart(self, queue: Proxy, *, durable: bool, down_for: float = 0.0) -> str | None:
        self.asked.append(down_for)
        return super().restart(queue, durable=durable)


class _ChildCannotOpenHooks(Hooks):
    """A client cannot be opened from the spec (what a child process does)."""

    def open_from_spec(self, spec: dict[str, Any], store: Any, clock: Any) -> Proxy:
        raise ConnectionRefusedError("this fake refuses every client opened from a spec")


class _Hanging(Proxy):
    """A client whose every request waits for ever (what a child process opens from the spec)."""

    def _rpc(self, op: str, *args: Any) -> Any:
        threading.Event().wait()  # never set: the call hangs until the process is killed


class _ChildHangsHooks(Hooks):
    """The kit's own clients work; a client opened from the spec (a child process's) hangs."""

    def open_from_spec(self, spec: dict[str, Any], store: Any, clock: Any) -> Proxy:
        return _Hanging((spec["host"], spec["port"]), spec["generation"], store)


make_forgets_puts = factory(server=_ForgetsPuts)
make_never_collects = factory(server=_NeverCollects)
make_dying_reclaimer = factory(hooks=_DyingReclaimerHooks)
make_loss_unnoticed = factory(server=_LossUnnoticed)
make_same_epoch_after_loss = factory(server=_SameEpochAfterLoss)
make_lease_state_live = factory(server=_LeaseStateLive)
make_cached_reads = factory(hooks=_CachedReadsHooks)
make_durable_loses = factory(hooks=_DurableLoses)
make_restart_down_for = factory(hooks=_DownForHooks)  # correct: only its restart hook differs
make_child_cannot_open = factory(hooks=_ChildCannotOpenHooks)
make_child_hangs = factory(hooks=_ChildHangsHooks)
