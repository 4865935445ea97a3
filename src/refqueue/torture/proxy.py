"""``DropProxy``: a TCP proxy on 127.0.0.1 in front of the Redis server
that loses replies on the nemesis's order.

Every client of the run connects through it.  ``drop_next_reply()`` arms
it: the next request carrying a script call (``EVALSHA``, i.e. a state
change of the queue or a ``lease_state``) from any client is forwarded to
the server, and that connection is closed, both ways, as soon as the
server's reply arrives and before any byte of it reaches the client.  The
call ran on the server; its caller sees a lost connection: a lost reply.

Design: one thread runs a ``selectors`` loop over every socket (non-blocking,
a buffer per direction), so the decision to drop and the forwarding of a
connection's bytes are never concurrent: a reply is either forwarded whole
or not at all.  A connection's requests and replies alternate (the queue's
clients never pipeline), so the first reply after an armed request is that
request's reply.  The server being down (a restart) closes new client
connections at once; the server stopped (a pause) leaves them waiting, as a
real network would.

Only loopback: the proxy listens on 127.0.0.1 and connects to the server's
127.0.0.1 port (or the loopback host of ``--url``).
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

__all__ = ["DropProxy", "Drop"]

_CHUNK = 65536
_MARK = b"EVALSHA"


@dataclass
class _Pair:
    """A client connection and its connection to the server."""

    client: socket.socket
    server: socket.socket
    to_server: bytearray = field(default_factory=bytearray)
    to_client: bytearray = field(default_factory=bytearray)
    drop_reply: bool = False  # an armed request went to the server: drop its reply
    sha: str = ""
    closed: bool = False


@dataclass(frozen=True)
class Drop:
    """A reply the proxy dropped."""

    ns: int  # time.monotonic_ns() when the reply arrived and was dropped
    client_port: int  # the client's side of the connection
    sha: str  # the script's SHA1 (first 12 digits)


class DropProxy:
    """``DropProxy(host, port).start()``; ``url_for(server_url)``; ``drop_next_reply()``;
    ``wait_drop(timeout)``; ``close()``."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        # _lock guards _armed and _drops; _dropped is notified (under it) at each drop.
        self._lock = threading.Lock()
        self._dropped = threading.Condition(self._lock)
        self._armed = False
        self._drops: list[Drop] = []
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name="refqueue-torture-proxy", daemon=True)

    def start(self) -> DropProxy:
        self._thread.start()
        return self

    def url_for(self, url: str) -> str:
        """``url`` (the server's) with its host and port replaced by the proxy's:
        the user, password and database stay."""
        parts = urlsplit(url)
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@127.0.0.1:{self.port}" if userinfo else f"127.0.0.1:{self.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

    @property
    def drops(self) -> list[Drop]:
        with self._lock:
            return list(self._drops)

    def drop_next_reply(self) -> int:
        """Arm: the next script call's reply is dropped.  Returns how many
        drops happened so far (pass it to ``wait_drop``)."""
        with self._lock:
            self._armed = True
            return len(self._drops)

    def wait_drop(self, seen: int, timeout: float) -> Drop | None:
        """The drop after the first ``seen``, once it happened (within
        ``timeout`` s); None if none came, and the proxy is disarmed."""
        deadline = time.monotonic() + timeout
        with self._dropped:
            while len(self._drops) <= seen:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._armed = False
                    return None
                self._dropped.wait(remaining)
            return self._drops[seen]

    def disarm(self) -> None:
        with self._lock:
            self._armed = False

    def close(self) -> None:
        self._stop = True
        self._thread.join(5)
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()

    # -- the loop (the proxy's thread only) ------------------------------------------

    def _loop(self) -> None:
        while not self._stop:
            for key, mask in self._selector.select(timeout=0.1):
                if key.data is None:
                    self._accept()
                    continue
                pair, side = key.data
                if pair.closed:
                    continue
                try:
                    if mask & selectors.EVENT_READ:
                        self._read(pair, side)
                    if not pair.closed and mask & selectors.EVENT_WRITE:
                        self._flush(pair, side)
                except OSError:
                    self._close(pair)

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except OSError:
            return
        try:
            server = socket.create_connection(self.target, timeout=2.0)
        except OSError:  # the server is down (a restart): the client sees a lost connection
            client.close()
            return
        for sock in (client, server):
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pair = _Pair(client, server)
        self._selector.register(client, selectors.EVENT_READ, (pair, "client"))
        self._selector.register(server, selectors.EVENT_READ, (pair, "server"))

    def _read(self, pair: _Pair, side: str) -> None:
        source = pair.client if side == "client" else pair.server
        chunk = source.recv(_CHUNK)
        if not chunk:
            self._close(pair)
            return
        if side == "client":
            if _MARK in chunk and not pair.drop_reply:
                with self._lock:
                    if self._armed:
                        self._armed = False
                        pair.drop_reply = True
                        pair.sha = _sha_of(chunk)
            pair.to_server += chunk
            self._flush(pair, "server")
        else:
            if pair.drop_reply:
                drop = Drop(time.monotonic_ns(), pair.client.getpeername()[1], pair.sha)
                self._close(pair)
                with self._dropped:
                    self._drops.append(drop)
                    self._dropped.notify_all()
                return
            pair.to_client += chunk
            self._flush(pair, "client")

    def _flush(self, pair: _Pair, toward: str) -> None:
        """Send what is buffered toward ``toward``'s socket; watch it for
        writability while something is left."""
        sock, buffer = (pair.server, pair.to_server) if toward == "server" else (pair.client, pair.to_client)
        if buffer:
            try:
                sent = sock.send(buffer)
            except BlockingIOError:
                sent = 0
            del buffer[:sent]
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if buffer else 0)
        self._selector.modify(sock, events, (pair, toward))

    def _close(self, pair: _Pair) -> None:
        if pair.closed:
            return
        pair.closed = True
        for sock in (pair.client, pair.server):
            try:
                self._selector.unregister(sock)
            except (KeyError, ValueError):
                pass
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def _sha_of(chunk: bytes) -> str:
    """The SHA1 argument of an ``EVALSHA`` request (RESP: ``$40\\r\\n<sha>``), its first 12 digits."""
    at = chunk.find(_MARK)
    rest = chunk[at + len(_MARK):]
    start = rest.find(b"$40\r\n")
    return rest[start + 5:start + 17].decode(errors="replace") if start >= 0 else ""
