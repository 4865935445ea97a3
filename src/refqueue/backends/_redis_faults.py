"""The fault hooks of the Redis backend's conformance factory
(``refqueue.backends.redis:make.faults``), for the kit's ``faults`` phase
(``refqueue.conformance.contract.FaultHooks``, docs/CERTIFYING.md).

Every fault is a real one on a real server: a reply really is read off the
socket and dropped with the connection (the script ran; the caller gets
``RedisUnavailable``), a client really stops between its commit and its
scrub (what a SIGKILL there leaves: the intent on the server, the data on
the store), the server really restarts (``SHUTDOWN SAVE`` and a start that
loads it: durable; a SIGKILL and a start with its files removed: lossy).
A rewind puts back the queue's keys as ``checkpoint`` dumped them (``DUMP``
and ``RESTORE``): what a server that lost its last writes comes back with
(an ``appendfsync everysec`` crash, a failover to a lagging replica).
Refused writes are the server's own: ``maxmemory`` set to one byte with the
``noeviction`` policy, so every script that writes is refused (``OOM``), as
a full server refuses them, until it is set back.
Only the throwaway server this process started can be restarted; for a
server named by ``-o url=`` the restart checks are reported as not run.
"""

from __future__ import annotations

from typing import Any

import redis as redis_py

__all__ = ["RedisFaults", "KIT_INTENT_DELAY"]

# The intent delay (seconds of the queue's clock) of the queues the
# conformance factory makes: a scrub intent of a crashed client is
# collectable this long after its commit.
KIT_INTENT_DELAY = 1.0


class RedisFaults:
    """``FaultHooks`` over ``RedisSampleRefQueue`` clients."""

    intent_timeout = KIT_INTENT_DELAY

    def __init__(self) -> None:
        self._checkpoints: dict[str, dict[bytes, bytes]] = {}

    def lose_next_reply(self, queue: Any) -> None:
        """The next script of ``queue`` that may change the queue runs on the
        server, then its reply is dropped with the connection."""
        queue._fault_lose_reply = True

    def crash_after_commit(self, queue: Any) -> None:
        """The next completion (ack, dead_letter, a fail or reclaim that
        dead-letters) of ``queue`` commits, then the client dies before its
        scrub: the call raises ``ClientCrashed``."""
        from refqueue.conformance.contract import ClientCrashed

        queue._fault_crash = ClientCrashed(
            f"{queue!r} died between the commit of a completion and the scrub of its data (fault injected)"
        )

    def restart(self, queue: Any, *, durable: bool, down_for: float = 0.0) -> str | None:
        """Restart the server of ``queue``, if this process started it, down
        for ``down_for`` seconds between its stop and its start."""
        from refqueue.backends import redis as backend

        server = backend._server
        port = queue._redis.connection_pool.connection_kwargs.get("port")
        if server is None or server.process is None or port != server.port:
            return (
                f"the server at {queue.url} was not started by this process: the kit restarts only the throwaway "
                f"server of refqueue.backends.redis:make (certify without -o url=)"
            )
        server.restart(durable=durable, down_for=down_for)
        return None

    def checkpoint(self, queue: Any) -> str | None:
        """Remember every key of ``queue``'s queue as it is now (``DUMP``), for ``rewind``."""
        raw = self._raw(queue)
        try:
            self._checkpoints[queue._prefix] = {key: raw.dump(key) for key in raw.scan_iter(match=self._pattern(queue))}
        finally:
            raw.close()
        return None

    def rewind(self, queue: Any) -> str | None:
        """The queue's keys go back to the last ``checkpoint``: every write since is lost."""
        saved = self._checkpoints.get(queue._prefix)
        if saved is None:
            return "rewind without a checkpoint of this queue"
        raw = self._raw(queue)
        try:
            for key in list(raw.scan_iter(match=self._pattern(queue))):
                raw.delete(key)
            for key, value in saved.items():
                raw.restore(key, 0, value, replace=True)
        finally:
            raw.close()
        return None

    def refuse_writes(self, queue: Any, refuse: bool) -> str | None:
        """From now on the server of ``queue`` refuses every write (out of
        memory), or, with ``refuse=False``, takes them again."""
        raw = self._raw(queue)
        try:
            if refuse:
                self._memory = raw.config_get("maxmemory*")
                raw.config_set("maxmemory-policy", "noeviction")
                raw.config_set("maxmemory", 1)
            else:
                saved = getattr(self, "_memory", None) or {"maxmemory": "0", "maxmemory-policy": "noeviction"}
                raw.config_set("maxmemory", saved.get("maxmemory", "0"))
                raw.config_set("maxmemory-policy", saved.get("maxmemory-policy", "noeviction"))
        finally:
            raw.close()
        return None

    @staticmethod
    def _raw(queue: Any) -> Any:
        kwargs = {**queue._redis.connection_pool.connection_kwargs, "decode_responses": False}
        return redis_py.Redis(connection_pool=redis_py.ConnectionPool(**kwargs))

    @staticmethod
    def _pattern(queue: Any) -> str:
        return "".join("\\" + c if c in "*?[]{}\\" else c for c in queue._prefix) + "*"

    def open_client(self, queue: Any, store: Any) -> Any:
        """Another client of ``queue``'s queue: its own connection pool, the same
        arguments and clock, bound to ``store``."""
        kwargs = queue._redis.connection_pool.connection_kwargs
        client = redis_py.Redis(connection_pool=redis_py.ConnectionPool(**kwargs))
        return _open(type(queue), queue._open_args, store, queue._clock, client=client)

    def client_spec(self, queue: Any) -> dict[str, Any]:
        """JSON: what another process needs to open a client of ``queue``'s queue."""
        kwargs = queue._redis.connection_pool.connection_kwargs
        args = {key: value for key, value in queue._open_args.items() if key not in ("url", "socket_timeout")}
        kind = type(queue)
        return {"class": f"{kind.__module__}:{kind.__qualname__}", "host": kwargs.get("host"),
                "port": kwargs.get("port"), "db": kwargs.get("db", 0), "server_time": queue._clock is None, **args}

    def open_from_spec(self, spec: dict[str, Any], store: Any, clock: Any) -> Any:
        """A client of the queue ``client_spec`` describes, in this process: on
        ``clock`` (the kit's clock, shared by its processes), or on the
        server's ``TIME`` where the queue it describes reads that (one clock
        for every client: an injected clock beside the server's would put
        leases' deadlines on two time scales)."""
        import importlib

        from refqueue.backends.redis import _CLIENT_OPTIONS, RedisSampleRefQueue

        args = dict(spec)
        module, _, qualname = args.pop("class").partition(":")
        kind: Any = importlib.import_module(module)
        for part in qualname.split("."):
            kind = getattr(kind, part)
        if not (isinstance(kind, type) and issubclass(kind, RedisSampleRefQueue)):
            raise TypeError(f"open_from_spec: class {module}:{qualname} is not a RedisSampleRefQueue")
        if args.pop("server_time", False):
            clock = None
        client = redis_py.Redis(host=args.pop("host"), port=args.pop("port"), db=args.pop("db"), **_CLIENT_OPTIONS)
        return _open(kind, args, store, clock, client=client)


def _open(kind: type, args: dict[str, Any], store: Any, clock: Any, *, client: Any) -> Any:
    from refqueue.queue import VisibilityTimeout

    args = {key: value for key, value in args.items() if key not in ("url", "socket_timeout")}
    seconds = args.pop("visibility_timeout")
    return kind(store, VisibilityTimeout(seconds), client=client, clock=clock, **args)
