"""Mutant of the Redis backend: a server that lost the queue's state is not
noticed.

The scripts' guard accepts whatever the server holds (no epoch, another
epoch, an older version): after a restart without persistence, a client
carries on against an empty queue (``is_closed`` reverts, pending work is
gone, lease ids restart at 1), so an old lease can ack another consumer's
new delivery.  Needs ``redis-server``.
"""

from __future__ import annotations

from typing import Any

from refqueue.backends import redis as redis_backend
from refqueue.backends._redis_scripts import PRELUDE

_GUARD = "local function guard()\n"
_PRELUDE = PRELUDE.replace(_GUARD, _GUARD + "  if true then return nil end\n")
assert _PRELUDE != PRELUDE


class LossUndetected(redis_backend.RedisSampleRefQueue):
    SCRIPT_PRELUDE = _PRELUDE


def make(store: Any, clock: Any, **config: Any) -> LossUndetected:
    """``refqueue.backends.redis:make`` building the queue blind to state loss."""
    return redis_backend.build(LossUndetected, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
