"""Mutant of the Redis backend: the background reclaimer dies at the first
connection error.

Its thread does not survive ``RedisUnavailable`` (a server restart, a
network blip): it ends, keeping the error for ``stop_reclaimer``, and
nothing reclaims orphaned leases or collects scrub intents any more
(``reclaimer_running`` says False).  What every client did before issue 18.
Needs ``redis-server``.
"""

from __future__ import annotations

from typing import Any

from refqueue._checks import check_seconds
from refqueue._reclaimer import Reclaimer
from refqueue.backends import redis as redis_backend


class ReclaimerDies(redis_backend.RedisSampleRefQueue):
    def start_reclaimer(self, interval: float | None = None) -> None:
        interval = check_seconds("start_reclaimer(interval)", self._vt_seconds / 4 if interval is None else interval)
        with self._reclaimer_lock:
            current = self._reclaimer
            if current is not None and current.running:
                raise RuntimeError(f"start_reclaimer: a reclaimer is already running every {current.interval} s")
            reclaimer = Reclaimer(self, interval, name="refqueue-redis-reclaimer-mutant")  # no retry_on
            reclaimer.start()
            self._reclaimer = reclaimer


def make(store: Any, clock: Any, **config: Any) -> ReclaimerDies:
    """``refqueue.backends.redis:make`` building the queue whose reclaimer dies."""
    return redis_backend.build(ReclaimerDies, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
