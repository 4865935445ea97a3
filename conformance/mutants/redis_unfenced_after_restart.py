"""Mutant of the Redis backend: the fencing token repeats after a restart.

The queue's epoch is its key prefix instead of a fresh random one, so a
queue opened again after its server lost the state has the same epoch as
before, and its lease ids start again at 1: a lease of the lost state
(epoch, lease id) names a delivery of the new one, and its ack completes
another consumer's sample (D1, D9).  The loss itself is noticed by the
clients that lived through it.  Needs ``redis-server``.
"""

from __future__ import annotations

from typing import Any

from refqueue.backends import redis as redis_backend
from refqueue.backends._redis_scripts import SCRIPTS

_CREATE = SCRIPTS["create"].replace("redis.call('HSETNX', META, 'epoch', A[1])", "redis.call('HSETNX', META, 'epoch', P)")
assert _CREATE != SCRIPTS["create"]


class UnfencedAfterRestart(redis_backend.RedisSampleRefQueue):
    SCRIPT_BODIES = {**SCRIPTS, "create": _CREATE}


def make(store: Any, clock: Any, **config: Any) -> UnfencedAfterRestart:
    """``refqueue.backends.redis:make`` building the queue whose epoch repeats."""
    return redis_backend.build(UnfencedAfterRestart, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
