"""Mutant of the Redis backend: each client times leases on its own clock.

``open_client`` gives the new client the clock of the machine it runs on
(the kit's skewed clock) instead of the queue's one clock, as a deployment
whose clients pass ``time.time()`` to the scripts would.  Through one client
nothing differs; a client whose clock is half a second ahead gives its
leases deadlines half a second late and reclaims others' leases half a
second early (docs/API.md: a lease's deadline is the queue's now plus the
visibility timeout).  Needs ``redis-server``.
"""

from __future__ import annotations

from typing import Any

from refqueue.backends import redis as redis_backend


def open_client(queue: Any, store: Any, clock: Any) -> Any:
    """``refqueue.backends.redis.open_client``, but on ``clock``."""
    other = redis_backend.open_client(queue, store, clock)
    other._clock = clock
    other._now = clock.now
    return other


def make(store: Any, clock: Any, **config: Any) -> Any:
    """``refqueue.backends.redis:make`` itself: only the clients it opens differ."""
    return redis_backend.make(store, clock, **config)


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
make.open_client = open_client  # type: ignore[attr-defined]
