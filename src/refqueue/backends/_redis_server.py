"""A throwaway ``redis-server`` on a free loopback port, for the conformance
factory and the tests: ``RedisServer().start()`` ... ``stop()``.

The server listens on 127.0.0.1 only, with ``hz 100`` (timeouts of
blocking commands, and so short poll intervals, are precise to ~10 ms).  ``start`` returns once the server
says "Ready to accept connections" on its log (read from its stdout, with a
bounded wait), not after a guessed delay; a port taken between choosing it
and binding it is retried with another.  ``persistent=True`` turns on the
append-only file in ``directory`` with ``appendfsync`` (``"always"``, the
default, or ``"everysec"``), for tests that kill and restart the server; otherwise nothing is written to disk, unless
``restart(durable=True)`` asks the server to save what it holds on its way
down (``SHUTDOWN SAVE`` to ``directory``, loaded again at start).
``restart(durable=False)`` kills it and starts it empty: a server that
lost its state.

A server outlives nothing that started it: beside each ``redis-server`` runs a
``refqueue._guard.Guard``; ``stop`` and ``kill`` let it go, and when this
process dies without a word (a SIGKILL, the OOM killer, a CI timeout) the
guard kills the server and removes the folder the server made for itself.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import socket
import subprocess
import time

from refqueue._guard import Guard

__all__ = ["RedisServer", "RedisServerError", "redis_server_binary"]

_READY = b"Ready to accept connections"


class RedisServerError(RuntimeError):
    """``redis-server`` is missing or did not start."""


def redis_server_binary() -> str | None:
    """The path of ``redis-server``, or None when it is not installed."""
    return shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """One ``redis-server`` process on ``127.0.0.1:port``."""

    def __init__(
        self, *, persistent: bool = False, directory: str | None = None, port: int | None = None,
        appendfsync: str = "always",
    ) -> None:
        if persistent and directory is None:
            raise ValueError("RedisServer(persistent=True) needs directory=, the folder for the append-only file")
        if appendfsync not in ("always", "everysec"):
            raise ValueError(f"RedisServer(appendfsync={appendfsync!r}) must be 'always' or 'everysec'")
        self.appendfsync = appendfsync
        self._own_directory = directory is None
        if directory is None:
            import tempfile

            directory = tempfile.mkdtemp(prefix="refqueue-redis-")
        self.persistent = persistent
        self.directory = directory
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        self._guard: Guard | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _command(self, port: int) -> list[str]:
        binary = redis_server_binary()
        if binary is None:
            raise RedisServerError(
                "redis-server is not installed (not on PATH); install Redis 7 (apt-get install redis-server) "
                "or pass url= to a running server"
            )
        # hz 100: a blocking command's timeout fires within ~10 ms of its end (at the
        # default hz 10, a BLPOP of 25 ms returns after 100 ms: measured on 7.0.15)
        command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--protected-mode", "yes",
                   "--hz", "100"]
        command += ["--dir", str(self.directory), "--dbfilename", "dump.rdb"]
        if self.persistent:
            command += ["--appendonly", "yes", "--appendfsync", self.appendfsync]
        else:
            command += ["--appendonly", "no"]
        return command

    def restart(self, *, durable: bool, down_for: float = 0.0) -> None:
        """Restart the server on its port: ``durable`` keeps everything it holds
        (the append-only file, or ``SHUTDOWN SAVE`` to a snapshot it loads at
        start); otherwise it is killed and comes back empty (its files removed).
        The port stays closed at least ``down_for`` seconds (the length of the
        outage, as a real restart's loading or rescheduling takes time)."""
        if self.process is None:
            raise RedisServerError("RedisServer.restart: the server is not running; start() it first")
        if isinstance(down_for, bool) or not isinstance(down_for, (int, float)) or not 0 <= down_for <= 3600:
            raise ValueError(f"RedisServer.restart: down_for must be a number of seconds in [0, 3600], got {down_for!r}")
        if durable and not self.persistent:
            import redis as redis_py
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            # No retries: the connection the server closes as it goes down is the
            # answer SHUTDOWN expects, and redis-py's default retry would reconnect
            # to the dead port with backoff (3.5 s of each durable restart).
            client = redis_py.Redis(host="127.0.0.1", port=self.port, socket_timeout=30, retry=Retry(NoBackoff(), 0))
            try:
                client.shutdown(save=True)
            except redis_py.exceptions.ConnectionError:
                pass  # the server closed the connection as it went down
            finally:
                client.close()
            self.process.wait(30)
            self.process = None
            self._let_guard_go()
        else:
            self.kill()
            if not durable:
                for name in ("dump.rdb", "appendonly.aof", "appendonlydir"):
                    path = os.path.join(str(self.directory), name)
                    if os.path.isdir(path):
                        shutil.rmtree(path)
                    elif os.path.exists(path):
                        os.remove(path)
        if down_for > 0:
            time.sleep(down_for)  # the outage itself: the port is closed all this time
        self.start()

    def start(self, timeout: float = 20.0) -> RedisServer:
        """Start the server (again, on the same port, after ``kill``) and wait until it is ready."""
        os.makedirs(str(self.directory), exist_ok=True)
        attempts = 1 if self.port is not None else 5
        last = ""
        for _ in range(attempts):
            port = self.port if self.port is not None else _free_port()
            process = subprocess.Popen(
                self._command(port), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
            guard = Guard(process.pid, str(self.directory) if self._own_directory else None)
            ok, last = _wait_ready(process, timeout)
            if ok:
                self.port, self.process, self._guard = port, process, guard
                return self
            process.kill()
            process.wait()
            guard.leave()
        raise RedisServerError(f"redis-server did not start on 127.0.0.1: {last[-2000:]}")

    def kill(self) -> None:
        """SIGKILL the server (a crash: nothing is flushed beyond what appendfsync wrote)."""
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()  # the log reader ends at the pipe's EOF
            self.process = None
            self._let_guard_go()

    def _let_guard_go(self) -> None:
        guard, self._guard = self._guard, None
        if guard is not None:
            guard.leave()

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL if it does not exit in 10 s)."""
        process, self.process = self.process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._let_guard_go()
        if self._own_directory:
            shutil.rmtree(str(self.directory), ignore_errors=True)


def _wait_ready(process: subprocess.Popen[bytes], timeout: float) -> tuple[bool, str]:
    """Read the server's log until it is ready, exits, or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    fd = process.stdout.fileno()  # type: ignore[union-attr]
    seen = b""
    # A selector, not select.select: that refuses a descriptor numbered 1024 or
    # more, which a process holding many connections hands out.
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False, seen.decode(errors="replace") + " (timed out)"
            if not selector.select(remaining):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:  # the server exited
                process.wait()
                return False, seen.decode(errors="replace")
            seen += chunk
            if _READY in seen:
                _drain_in_background(process)
                return True, ""


def _drain_in_background(process: subprocess.Popen[bytes]) -> None:
    """Keep reading the server's log so that a full pipe never blocks it."""
    import threading

    def drain() -> None:
        stream = process.stdout
        try:
            while stream is not None and stream.read(65536):
                pass
        except (OSError, ValueError):
            pass

    threading.Thread(target=drain, name="redis-server-log", daemon=True).start()
