"""The server a torture run tortures: a throwaway ``redis-server`` (the
default) or the user's, at a loopback ``redis://`` URL.

``ThrowawayServer`` starts ``redis-server`` on a free 127.0.0.1 port with
the run's persistence (``always``: append-only file, ``appendfsync
always``; ``everysec``: the same with ``appendfsync everysec``; ``none``: no
AOF, no snapshots, so a restart comes back empty) and data directory, and
gives the nemesis its process: ``kill`` (SIGKILL), ``start`` (again, on the
same port and directory), ``pause``/``resume`` (SIGSTOP/SIGCONT).  After
each start it reads the server's ``CONFIG GET appendonly appendfsync`` and
refuses to go on if the server is not what was asked for.

``ExternalServer`` is the user's server: no process, so no restart and no
pause; its persistence is read from the server (``CONFIG GET``) for the
report, or ``"unknown"`` where the server does not allow ``CONFIG``.
"""

from __future__ import annotations

import os
import signal
from urllib.parse import urlsplit

from refqueue.backends._redis_server import RedisServer

__all__ = ["ThrowawayServer", "ExternalServer"]


class ThrowawayServer(RedisServer):
    """A ``RedisServer`` with the run's persistence; the nemesis's handle on it."""

    def __init__(self, persistence: str, directory: str) -> None:
        super().__init__(
            persistent=persistence != "none", directory=directory,
            appendfsync="everysec" if persistence == "everysec" else "always",
        )
        self.persistence = persistence
        self.host = "127.0.0.1"
        self.paused = False

    def start(self, timeout: float = 20.0) -> ThrowawayServer:
        super().start(timeout)
        found = read_persistence(self.url)
        if found != self.persistence:
            self.stop()
            raise RuntimeError(
                f"the throwaway redis-server runs with persistence {found!r}, not the {self.persistence!r} asked "
                f"for; refqueue.backends._redis_server.RedisServer's command line no longer sets it"
            )
        return self

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def pause(self) -> None:
        if self.process is not None:
            os.kill(self.process.pid, signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.process is not None and self.paused:
            os.kill(self.process.pid, signal.SIGCONT)
        self.paused = False

    def stop(self) -> None:
        self.resume()  # a stopped process would not see SIGTERM
        super().stop()


class ExternalServer:
    """The user's server at ``url`` (already checked to be loopback)."""

    persistence_note = "the server's own"

    def __init__(self, url: str) -> None:
        self.url = url
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 6379
        self.persistence = read_persistence(url)
        self.pid = None

    def stop(self) -> None:
        """Nothing: the server is the user's."""


def read_persistence(url: str) -> str:
    """``always``/``everysec``/``no`` (AOF with that fsync), ``none`` (no AOF),
    or ``unknown`` (``CONFIG`` not allowed)."""
    import redis

    client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5.0)
    try:
        settings = client.config_get("append*")
    except redis.exceptions.ResponseError:
        return "unknown"
    finally:
        client.close()
    if settings.get("appendonly") != "yes":
        return "none"
    return settings.get("appendfsync", "unknown")
