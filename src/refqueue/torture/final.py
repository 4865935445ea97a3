"""The end of a torture run, recorded as process ``final``: what a user
does to finish a run, and what the checker needs to see.

1. the producers are told to stop (and killed if they do not within 30 s);
2. ``close()`` (retried while ``RedisUnavailable``);
3. the consumers drain the queue and leave; if nothing moves for
   ``2 x visibility timeout + 5`` s (no lease comes back: every reclaimer
   that could take back an orphaned lease is dead), the run records
   ``drain_stalled`` and drains by hand: ``reclaim_expired``, then acquire,
   read, ack, as a consumer would;
4. the remaining consumers are told to stop;
5. ``collect_intents()`` where the backend has it (scrubs the data of acks
   whose scrub never happened), once one visibility timeout has passed
   since the last fault (an intent is collectable that long after its
   commit: the run waits out the bound the backend states, and does not ask
   for the recent ones); ``store.gc()`` (recounts the shared counters,
   removes dead writers' temporaries);
6. ``dead_letters()``, then the residency: the sample files left in the
   store's directory and ``store.health()``.

A queue whose state was lost (``QueueStateLost``) is not drained: the
residency is still recorded, for the report.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from refqueue.torture.history import Recorder
from refqueue.torture.processes import Supervisor
from refqueue.torture.workers import encode_lease, lease_args

__all__ = ["finish_run"]

_PRODUCER_STOP_S = 30.0
_DRAIN_LIMIT_S = 120.0  # the whole drain, hand drain included


def finish_run(rec: Recorder, supervisor: Supervisor, queue: Any, store: Any, spec: dict[str, Any],
               producers: list[str], consumers: list[str], say: Any, faults_over: float) -> dict[str, Any]:
    """Steps 1-6; returns what the report shows of them."""
    from refqueue import errors
    from refqueue.backends.redis import RedisUnavailable

    lost_class = getattr(errors, "QueueStateLost", None)
    summary: dict[str, Any] = {"state_lost": supervisor.state_lost.is_set(), "hand_drained": 0}

    def careful(call: str, args: dict[str, Any], fn: Any, encode: Any = lambda v: v) -> Any:
        attempt = 0
        while True:
            try:
                return rec.call(call, args, fn, encode)
            except RedisUnavailable:
                attempt += 1
                if attempt > 60:
                    raise
                time.sleep(min(1.0, 0.05 * 2 ** attempt))  # a retry's backoff

    killed = supervisor.retire(producers, _PRODUCER_STOP_S)
    summary["producers_killed_at_stop"] = killed
    try:
        if not summary["state_lost"]:
            careful("close", {}, queue.close)
            summary["drained"] = _drain(rec, supervisor, queue, store, spec, consumers, careful, summary, say)
    except Exception as exc:
        if lost_class is None or not isinstance(exc, lost_class):
            raise
        summary["state_lost"] = True
    supervisor.retire(consumers, 10.0)
    if not summary["state_lost"]:
        collect = getattr(queue, "collect_intents", None)
        if callable(collect):
            # The backend's bound: an intent is collectable one visibility timeout after its commit.
            wait = faults_over + spec["visibility_timeout"] + 0.1 - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            summary["intents_collected"] = careful("collect_intents", {}, collect)
        else:
            rec.ok(rec.invoke("collect_intents", {}), {"available": False})
        summary["dead_letters"] = careful(
            "dead_letters", {}, queue.dead_letters, encode=lambda letters: [d.ref.sample_id for d in letters])
    rec.call("store.gc", {}, lambda: store.gc(orphan_age=0.0))
    files = sorted(path.name.removesuffix(".safetensors") for path in (Path(store.root) / "samples").iterdir())
    health = store.health()
    summary["residency"] = rec.call("residency", {}, lambda: {
        "files": files, "sample_count": health.sample_count, "resident_bytes": health.resident_bytes})
    return summary


def _drain(rec: Recorder, supervisor: Supervisor, queue: Any, store: Any, spec: dict[str, Any],
           consumers: list[str], careful: Any, summary: dict[str, Any], say: Any) -> bool:
    """Wait for the consumers to drain the queue; by hand if it stalls.  True once drained."""
    stall_s = 2 * spec["visibility_timeout"] + 5.0
    start = last_move = time.monotonic()
    last = None
    while time.monotonic() - start < _DRAIN_LIMIT_S:
        if careful("is_drained", {}, lambda: queue.is_drained):
            return True
        supervisor.reap(0.5)
        now_state = careful("counts", {}, lambda: (queue.pending_count(), queue.outstanding_count()))
        if now_state != last:
            last, last_move = now_state, time.monotonic()
        elif time.monotonic() - last_move > stall_s:
            rec.ok(rec.invoke("drain_stalled", {"pending": now_state[0], "outstanding": now_state[1],
                                                "still_s": round(time.monotonic() - last_move, 1)}), None)
            say(f"drain stalled ({now_state[0]} pending, {now_state[1]} leased, nothing moved for "
                f"{stall_s:.0f} s): draining by hand")
            summary["hand_drained"] += _hand_drain(rec, queue, store, careful)
            last_move = time.monotonic()
    return bool(careful("is_drained", {}, lambda: queue.is_drained))


def _hand_drain(rec: Recorder, queue: Any, store: Any, careful: Any) -> int:
    """Take back the expired leases and consume what is pending; how many samples."""
    from refqueue.errors import SampleMissing
    from refqueue.torture.payload import checksum

    careful("reclaim_expired", {}, queue.reclaim_expired)
    count = 0
    while (lease := careful("acquire", {}, queue.acquire_nowait, encode=encode_lease)) is not None:
        try:
            _, handle = rec.call("get", lease_args(lease), lambda: store.get(lease.ref),
                                 encode=lambda got: {"checksum": checksum(got[0])})
            store.release(handle)
        except SampleMissing:
            pass
        careful("ack", lease_args(lease), lambda: queue.ack(lease))
        count += 1
    return count
