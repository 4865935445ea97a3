"""The torture tests: the checker's and the schedule's run anywhere; the
proxy's and the short run's need a real ``redis-server`` (marker ``redis``),
and are skipped, saying why, only where it is not installed."""

from __future__ import annotations

import pytest

from refqueue.backends._redis_server import redis_server_binary


@pytest.fixture
def redis_installed():
    """Skip, saying why, where redis-py or redis-server is missing."""
    pytest.importorskip("redis")
    if redis_server_binary() is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server); these tests need a real server")


@pytest.fixture
def redis_server(redis_installed):
    """A throwaway server (no persistence) for one test."""
    from refqueue.backends._redis_server import RedisServer

    server = RedisServer().start()
    yield server
    server.stop()
