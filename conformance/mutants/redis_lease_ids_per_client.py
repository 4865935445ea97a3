"""Mutant of the Redis backend: each client mints its own lease ids.

The client counts its leases and hands the next number to the acquire
script, which records it as the lease id (the way a client-side id
generator seeded per process would), instead of the server's one counter.
Through one client the ids are 1, 2, 3, ... as docs/API.md says; two clients
of one queue hand out the same (epoch, lease_id) twice (D1: a lease id names
one delivery).  Needs ``redis-server``.
"""

from __future__ import annotations

import threading
from typing import Any

from refqueue.backends import redis as redis_backend
from refqueue.backends._redis_scripts import SCRIPTS

# The acquire script with the lease id taken from the client (A[4]) instead of
# the queue's counter (which still moves, so nothing else changes).
_ACQUIRE = SCRIPTS["acquire"].replace(
    "local lease_id = redis.call('HINCRBY', META, 'seq', 1)",
    "redis.call('HINCRBY', META, 'seq', 1)\nlocal lease_id = tonumber(A[4])",
)
assert _ACQUIRE != SCRIPTS["acquire"], "the acquire script no longer mints its lease id as this mutant expects"


class LeaseIdsPerClient(redis_backend.RedisSampleRefQueue):
    SCRIPT_BODIES = {**SCRIPTS, "acquire": _ACQUIRE}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._minted = 0
        self._mint_lock = threading.Lock()

    def _run(self, op: str, *args: object) -> Any:
        if op != "acquire":
            return super()._run(op, *args)
        with self._mint_lock:
            answer = super()._run(op, *args, str(self._minted + 1))
            if not isinstance(answer, str):
                self._minted += 1
            return answer


def make(store: Any, clock: Any, **config: Any) -> LeaseIdsPerClient:
    """``refqueue.backends.redis:make`` building the per-client lease ids."""
    return redis_backend.build(LeaseIdsPerClient, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
make.open_client = redis_backend.open_client  # type: ignore[attr-defined]
