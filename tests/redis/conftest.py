"""Fixtures of the Redis backend tests: a real ``redis-server`` on a free
loopback port, started by the test session and stopped after it (or, for the
tests that kill and restart it, one per test with the append-only file on,
``appendfsync always``).  Skipped, saying why, only where ``redis-server``
is not installed."""

from __future__ import annotations

import uuid

import pytest

pytest.importorskip("redis")

from refqueue.backends._redis_server import RedisServer, redis_server_binary  # noqa: E402

pytestmark = pytest.mark.redis


def _require_redis_server() -> None:
    if redis_server_binary() is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server); the Redis tests need a real server")


@pytest.fixture(scope="session")
def redis_server():
    """One throwaway server (no persistence) for the session."""
    _require_redis_server()
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture
def persistent_server(tmp_path):
    """A server with AOF on and ``appendfsync always``, for tests that kill and restart it."""
    _require_redis_server()
    server = RedisServer(persistent=True, directory=str(tmp_path)).start()
    yield server
    server.stop()


@pytest.fixture
def queue_name():
    return f"test-{uuid.uuid4().hex}"
