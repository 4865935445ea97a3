"""Mutant of the Redis backend: a completion records no scrub intent.

The ack (or dead letter) commits and the committing client scrubs, as in
the correct backend, but nothing on the server says that the scrub is still
owed: a client killed between the commit and the scrub, or an ack whose
reply is lost, leaves the sample's data on the store for ever (it counts
against the watermarks until producers stall; D2, D9).  A scrub that raises
is still undone, so only a fault shows it.  Needs ``redis-server``.
"""

from __future__ import annotations

from typing import Any

from refqueue.backends import redis as redis_backend
from refqueue.backends._redis_scripts import SCRIPTS


def _forget_the_intent(body: str) -> str:
    """``body`` with every completion followed by dropping its intent."""
    patched = body.replace(
        "local done = finish(id, reason, due)",
        "local done = finish(id, reason, due)\nredis.call('HDEL', INTENTS, id)\nredis.call('ZREM', INTENTDUE, id)",
    )
    assert patched != body
    return patched


# The undo of a failed scrub, without the check that the intent is still the
# committing client's (there is none).
_UNDO = SCRIPTS["undo"].replace(
    "if redis.call('HGET', INTENTS, id) ~= ref then return 0 end\n"
    "local due = redis.call('ZSCORE', INTENTDUE, id)\n"
    "if not due or tonumber(due) ~= tonumber(undo.due) then return 0 end\n",
    "",
)
assert _UNDO != SCRIPTS["undo"]


class NoIntent(redis_backend.RedisSampleRefQueue):
    SCRIPT_BODIES = {**SCRIPTS, "finish": _forget_the_intent(SCRIPTS["finish"]), "undo": _UNDO}


def make(store: Any, clock: Any, **config: Any) -> NoIntent:
    """``refqueue.backends.redis:make`` building the queue without intents."""
    return redis_backend.build(NoIntent, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
