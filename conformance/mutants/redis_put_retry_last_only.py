"""Mutant of the Redis backend: a client remembers only its LAST put whose
reply was lost.

``_uncertain`` (the refs whose put raised ``RedisUnavailable``, whose retry
passes "retry" so that the script changes nothing if the first attempt
committed) keeps one entry: a producer that loses the replies of several
puts (one network blip, a batch in flight) and retries them gets
``DuplicateSample`` for all but the last, and, if a sample was consumed and
acked meanwhile, its retry enqueues it a second time (delivered twice).
"""

from __future__ import annotations

from typing import Any

from refqueue.backends import redis as redis_backend


class _OneSlot(dict):
    def __setitem__(self, key: Any, value: Any) -> None:
        self.clear()
        super().__setitem__(key, value)


class PutRetryLastOnly(redis_backend.RedisSampleRefQueue):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._uncertain = _OneSlot()


def make(store: Any, clock: Any, **config: Any) -> PutRetryLastOnly:
    return redis_backend.build(PutRetryLastOnly, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
make.open_client = redis_backend.open_client  # type: ignore[attr-defined]
