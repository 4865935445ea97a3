"""Mutant of the Redis backend: ``is_closed`` is a flag of the client.

``close()`` closes the queue on the server and sets the client's own flag;
``is_closed`` reads only that flag (saving a round trip), so a client that
did not close the queue itself never sees it closed, though the server
refuses its puts.  Through one client it is exact; a second client of the
same queue reads ``is_closed`` False after the queue was closed (docs/API.md:
``close`` is the queue's, not a client's).  Needs ``redis-server``.
"""

from __future__ import annotations

from typing import Any

from refqueue.backends import redis as redis_backend


class ClosePerClient(redis_backend.RedisSampleRefQueue):
    _closed_here = False

    def close(self) -> None:
        super().close()
        self._closed_here = True

    @property
    def is_closed(self) -> bool:
        return self._closed_here


def make(store: Any, clock: Any, **config: Any) -> ClosePerClient:
    """``refqueue.backends.redis:make`` building the per-client close flag."""
    return redis_backend.build(ClosePerClient, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
make.open_client = redis_backend.open_client  # type: ignore[attr-defined]
