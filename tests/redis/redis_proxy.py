"""A TCP proxy on a loopback port in front of a redis-server that drops a
connection on demand: before a request reaches the server, or after the
server ran it but before its reply reaches the client.  A real socket
between a real client and a real server: what a network fault does."""

from __future__ import annotations

import socket
import threading


class DroppingProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._armed: tuple[str, int] | None = None  # (direction, chunks to let through first)
        self.dropped = threading.Event()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def drop_next(self, direction: str, after: int = 0) -> None:
        """Drop the connection at the next request (``"request"``: the server
        never sees it) or reply (``"reply"``: the server ran it), after
        letting ``after`` of them through."""
        assert direction in ("request", "reply")
        with self._lock:
            self._armed = (direction, after)
            self.dropped.clear()

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            pair = (client, server)
            threading.Thread(target=self._pump, args=(client, server, "request", pair), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, "reply", pair), daemon=True).start()

    def _should_drop(self, direction: str) -> bool:
        with self._lock:
            if self._armed is None or self._armed[0] != direction:
                return False
            if self._armed[1] > 0:
                self._armed = (direction, self._armed[1] - 1)
                return False
            self._armed = None
            return True

    def _pump(self, source: socket.socket, sink: socket.socket, direction: str, pair) -> None:
        try:
            while True:
                chunk = source.recv(65536)
                if not chunk:
                    break
                if self._should_drop(direction):
                    self.dropped.set()
                    break
                sink.sendall(chunk)
        except OSError:
            pass
        for sock in pair:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
