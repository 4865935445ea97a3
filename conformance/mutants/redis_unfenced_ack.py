"""Mutant of the Redis backend: ``ack`` is not fenced.

It completes the sample if it is leased at all, by sample id alone, the way
a raw stream ``XACK`` does (measured on Redis 7.0: an ``XACK`` from the old
owner after ``XCLAIM`` returns 1 and completes the new owner's delivery).
A consumer whose lease was reclaimed and redelivered to another therefore
acks the new consumer's delivery (D1).  Needs ``redis-server`` (the factory
starts a throwaway one on a loopback port).
"""

from __future__ import annotations

from typing import Any

from refqueue.backends import redis as redis_backend
from refqueue.backends._redis_scripts import SCRIPTS

# The fenced ack commits only if the record's lease id is the lease's; this
# one commits if the sample is leased at all (the lease id argument, A[2],
# is ignored).
_UNFENCED_ACK = r"""
local id = A[1]
if not redis.call('HGET', LEASE, id) then return 0 end
local _, due = times(A[4], A[5], A[6])
local done = finish(id, false, due)
return {done[1], done[2], producers_waiting()}
"""


class UnfencedAck(redis_backend.RedisSampleRefQueue):
    SCRIPT_BODIES = {**SCRIPTS, "finish_unfenced": _UNFENCED_ACK}

    def ack(self, lease: Any) -> bool:
        sample_id, _lease_id = self._check_lease("ack", lease)
        with self._store_lock:
            now, due = self._times(self._vt_seconds)
            with self._connection("ack"):
                answer = self._run("finish_unfenced", sample_id, _lease_id, "", now, due, self._vt_text)
            if answer == 0:
                return False
            ref_json, undo, producers = answer
            self._scrub_or_undo("ack", ref_json, undo)
        if producers:
            self._notify_room("ack")
        return True


def make(store: Any, clock: Any, **config: Any) -> UnfencedAck:
    """``refqueue.backends.redis:make`` building the unfenced queue."""
    return redis_backend.build(UnfencedAck, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
