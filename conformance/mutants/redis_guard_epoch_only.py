"""Mutant of the Redis backend: state loss is detected by the epoch alone.

``guard()`` checks that the queue's ``meta`` exists with the client's epoch
(and no ``lost`` mark) but never compares the version/tip the client has
seen with what the server holds ("the epoch is enough: a restart without
persistence loses meta, so the epoch check catches it").  A server that
came back *without its last writes* (appendfsync everysec and a crash, a
failover that lost writes) keeps the epoch, so nobody notices: lease ids
are minted again under the same epoch, an old lease acks a new delivery.
"""

from __future__ import annotations

from typing import Any

from refqueue.backends import redis as redis_backend
from refqueue.backends._redis_scripts import PRELUDE

_OLD = "  local seen = tonumber(ARGV[5])\n  if seen > 0 then\n"
_PRELUDE = PRELUDE.replace(_OLD, "  local seen = tonumber(ARGV[5])\n  if false and seen > 0 then\n")
assert _PRELUDE != PRELUDE


class GuardEpochOnly(redis_backend.RedisSampleRefQueue):
    SCRIPT_PRELUDE = _PRELUDE


def make(store: Any, clock: Any, **config: Any) -> GuardEpochOnly:
    return redis_backend.build(GuardEpochOnly, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
make.open_client = redis_backend.open_client  # type: ignore[attr-defined]
