"""Mutant of the Redis backend: the background reclaimer survives only lost
connections.

``retry_on=(RedisUnavailable,)``: a network error is retried, but a command
the server *refuses* (``RedisRefused``: OOM under ``maxmemory``, ``READONLY``
from a master demoted by a failover, ``MISCONF`` from a failing disk) ends
the thread for good, though such refusals are transient and change nothing.
"""

from __future__ import annotations

from typing import Any

from refqueue._checks import check_seconds
from refqueue._reclaimer import Reclaimer
from refqueue.backends import redis as redis_backend
from refqueue.backends.redis import RedisUnavailable


class ReclaimerDiesRefused(redis_backend.RedisSampleRefQueue):
    def start_reclaimer(self, interval: float | None = None) -> None:
        interval = check_seconds("start_reclaimer(interval)", self._vt_seconds / 4 if interval is None else interval)
        with self._reclaimer_lock:
            current = self._reclaimer
            if current is not None and current.running:
                raise RuntimeError(f"start_reclaimer: a reclaimer is already running every {current.interval} s")
            reclaimer = Reclaimer(self, interval, name="refqueue-redis-reclaimer-mutant",
                                  retry_on=(RedisUnavailable,))
            reclaimer.start()
            self._reclaimer = reclaimer


def make(store: Any, clock: Any, **config: Any) -> ReclaimerDiesRefused:
    return redis_backend.build(ReclaimerDiesRefused, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
make.open_client = redis_backend.open_client  # type: ignore[attr-defined]
