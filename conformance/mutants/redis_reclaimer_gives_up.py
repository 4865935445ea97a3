"""Mutant of the Redis backend: the background reclaimer gives up after
three errors in a row.

It survives ``RedisUnavailable`` as the production one does (backoff and
retry), but "so as not to spin against a dead server" it stops for good
after the third consecutive error, keeping it for ``stop_reclaimer``.  One
lost reply is survived; a server restart or a network outage longer than a
few backoff steps (50 + 100 + 200 ms) ends it, and nothing reclaims orphaned
leases or collects scrub intents any more.
"""

from __future__ import annotations

from typing import Any

from refqueue._checks import check_seconds
from refqueue._reclaimer import Reclaimer
from refqueue.backends import redis as redis_backend
from refqueue.backends.redis import QueueStateLost, RedisRefused, RedisUnavailable

GIVE_UP_AFTER = 3


class GivingUpReclaimer(Reclaimer):
    def _survive(self, step: Any, on_error: bool) -> bool:
        answer = super()._survive(step, on_error)
        if self.consecutive_errors >= GIVE_UP_AFTER:
            raise RuntimeError(f"the server failed {self.consecutive_errors} times in a row: {self.last_error}")
        return answer


class ReclaimerGivesUp(redis_backend.RedisSampleRefQueue):
    def start_reclaimer(self, interval: float | None = None) -> None:
        interval = check_seconds("start_reclaimer(interval)", self._vt_seconds / 4 if interval is None else interval)
        with self._reclaimer_lock:
            current = self._reclaimer
            if current is not None and current.running:
                raise RuntimeError(f"start_reclaimer: a reclaimer is already running every {current.interval} s")
            reclaimer = GivingUpReclaimer(self, interval, name="refqueue-redis-reclaimer-gives-up",
                                          retry_on=(RedisUnavailable, RedisRefused, QueueStateLost))
            reclaimer.start()
            self._reclaimer = reclaimer


def make(store: Any, clock: Any, **config: Any) -> ReclaimerGivesUp:
    return redis_backend.build(ReclaimerGivesUp, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
make.open_client = redis_backend.open_client  # type: ignore[attr-defined]
