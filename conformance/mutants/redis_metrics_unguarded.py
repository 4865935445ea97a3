"""Mutant of the Redis backend: the monitoring read skips the state guard.

``gauges()`` (and so ``metrics()``, ``refqueue.diagnose`` and the Prometheus
collector) runs its read-only script without ``guard()`` ("monitoring must
never raise; a read cannot hurt").  Every other call still checks the
queue's epoch and version.  After the server lost the queue's state, the
dashboards of every old client show an empty, healthy queue (0 pending, 0
outstanding, not closed) instead of raising ``QueueStateLost``.
"""

from __future__ import annotations

from typing import Any

from refqueue.backends import redis as redis_backend
from refqueue.backends._redis_scripts import source

_SRC = source("observe")
_RAW = _SRC.replace("local lost = guard()\n", "local lost = nil\n").replace(
    "return {m[1], m[2], result}", "return {m[1] or '0', m[2] or '', result}"
)
for _field in ("dropped", "paused", "closed", "seq", "version"):
    _RAW = _RAW.replace(f"redis.call('HGET', META, '{_field}')", f"(redis.call('HGET', META, '{_field}') or '0')")
assert _RAW.count("local lost = nil") == 1 and "m[1] or '0'" in _RAW


class MetricsUnguarded(redis_backend.RedisSampleRefQueue):
    def _run(self, op: str, *args: object) -> Any:
        if op == "observe" and args and args[0] == "gauges":
            with self._seen_lock:
                version, tip = self._seen
            answer = self._redis.eval(_RAW, 1, self._prefix, *self._config_args, self._epoch, version, tip, *args)
            return answer[2]
        return super()._run(op, *args)


def make(store: Any, clock: Any, **config: Any) -> MetricsUnguarded:
    return redis_backend.build(MetricsUnguarded, store, clock, **config)  # type: ignore[return-value]


make.capabilities = redis_backend.make.capabilities  # type: ignore[attr-defined]
make.faults = redis_backend.make.faults  # type: ignore[attr-defined]
make.open_client = redis_backend.open_client  # type: ignore[attr-defined]
