"""Mutant of the Redis backend: each client keeps its own dedup window.

The put scripts no longer refuse a replay; instead the client remembers the
last ``dedup_window`` samples it completed itself (its acks and dead letters,
and the dead letters its fails and reclaims added) and refuses a put of one
of them as ``ReplayedSample`` (the way a producer-side cache of recent ids
would).  Through one client it is the contract's window (D5); a sample
completed through one client is put again through another, which remembers
nothing of it, and is enqueued twice.  Needs ``redis-server``.
"""

from __future__ import annotations

import collections
import threading
from typing import Any

from refqueue.backends import redis as redis_backend
from refqueue.backends._redis_scripts import PRELUDE
from refqueue.errors import ReplayedSample

_CHECK = "  if DEDUP > 0 and redis.call('SISMEMBER', DONESET, id) == 1 then return 'replay' end\n"
_PRELUDE = PRELUDE.replace(_CHECK, "")
assert _PRELUDE != PRELUDE, "the put scripts no longer refuse replays as this mutant expects"


class DedupPerClient(redis_backend.RedisSampleRefQueue):
    SCRIPT_PRELUDE = _PRELUDE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._recent: collections.deque[str] = collections.deque(maxlen=max(self._dedup_window, 1))
        self._recent_lock = threading.RLock()

    def _refuse_replay(self, call: str, ref: Any) -> None:
        sample_id = getattr(ref, "sample_id", None)
        # Closed comes first; a sample in this client's window is never pending or
        # leased through it, so the duplicate cannot come first.
        if not self._dedup_window or sample_id not in self._recent or self.is_closed:
            return
        raise ReplayedSample(
            f"{call}({sample_id!r}): that sample completed within the last {self._dedup_window} (dedup_window); "
            f"a restarted producer is replaying it, skip it"
        )

    def _completed(self, sample_ids: Any) -> None:
        for sample_id in sample_ids:
            self._recent.append(sample_id)

    def _new_dead(self, before: int) -> list[str]:
        return [d.ref.sample_id for d in self.dead_letters()[before:]]

    def put(self, ref: Any) -> None:
        with self._recent_lock:
            self._refuse_replay("put", ref)
            super().put(ref)

    def put_blocks_until_below(self, ref: Any, *args: Any, **kwargs: Any) -> Any:
        with self._recent_lock:
            self._refuse_replay("put_blocks_until_below", ref)
        return super().put_blocks_until_below(ref, *args, **kwargs)

    def ack(self, lease: Any) -> bool:
        with self._recent_lock:
            done = super().ack(lease)
            if done:
                self._completed([lease.ref.sample_id])
            return done

    def dead_letter(self, lease: Any, reason: str) -> bool:
        with self._recent_lock:
            done = super().dead_letter(lease, reason)
            if done:
                self._completed([lease.ref.sample_id])
            return done

    def fail(self, lease: Any) -> bool:
        with self._recent_lock:
            before = len(self.dead_letters())
            done = super().fail(lease)
            self._completed(self._new_dead(before))
            return done

    def reclaim_expired(self) -> int:
        with self._recent_lock:
            before = len(self.dead_letters())
            count = super().reclaim_expired()
            self._completed(self._new_dead(before))
            return count


def make(store: Any, clock: Any, **config: Any) -> DedupPerClient:
    """``refqueue.backends.redis:make`` building the per-client dedup window."""
    return redis_backend.build(DedupPerClient, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
make.open_client = redis_backend.open_client  # type: ignore[attr-defined]
