"""Mutant of the Redis backend: a reclaim that dead-letters records no scrub
intent.

At ``max_deliveries`` the reclaim script dead-letters the expired lease and
the reclaiming client scrubs its data right after ("the reclaimer scrubs at
once, it needs no intent"), so the script drops the intent ``finish_commit``
wrote.  Acks, dead letters and fails keep theirs.  A reclaimer whose reply
is lost (or that is killed) between that commit and its scrub leaves the
dead letter's data on the store for ever (D9).
"""

from __future__ import annotations

from typing import Any

from refqueue.backends import redis as redis_backend
from refqueue.backends._redis_scripts import SCRIPTS

_OLD = "    local done = finish_commit(id, 'max_deliveries', fmt(tonumber(now) + tonumber(A[2])), checked)\n"
_RECLAIM = SCRIPTS["reclaim"].replace(
    _OLD, _OLD + "    redis.call('HDEL', INTENTS, id)\n    redis.call('ZREM', INTENTDUE, id)\n"
)
assert _RECLAIM != SCRIPTS["reclaim"]

# undo must not require the (missing) intent, else a raising scrub cannot be undone
_UNDO = SCRIPTS["undo"].replace(
    "if redis.call('HGET', INTENTS, id) ~= ref then return 0 end\n"
    "local due = redis.call('ZSCORE', INTENTDUE, id)\n"
    "if not due or tonumber(due) ~= tonumber(undo.due) then return 0 end\n",
    "",
)
assert _UNDO != SCRIPTS["undo"]


class ReclaimDeadNoIntent(redis_backend.RedisSampleRefQueue):
    SCRIPT_BODIES = {**SCRIPTS, "reclaim": _RECLAIM, "undo": _UNDO}


def make(store: Any, clock: Any, **config: Any) -> ReclaimDeadNoIntent:
    return redis_backend.build(ReclaimDeadNoIntent, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
make.open_client = redis_backend.open_client  # type: ignore[attr-defined]
