"""The live gauges of ``RedisSampleRefQueue.metrics()`` (issue 22, item 1),
read from a real ``redis-server``: the issue's stuck runs rebuilt with real
threads over a Redis queue, ``refqueue.diagnose`` naming what is wrong, and a
``RefqueueCollector`` scrape of a Redis queue beside an in-process one.

The queue's clock is a ``ManualClock``: the test moves time and the threads
never race it.  Nothing waits by sleeping: threads and test meet on
``threading.Event``s, channels and bounded joins.
"""

from __future__ import annotations

import queue as channels
import threading
import uuid
from typing import Any

import pytest
import torch

from refqueue import diagnose
from refqueue.backends.redis import RedisSampleRefQueue
from refqueue.clock import ManualClock
from refqueue.errors import PutAborted
from refqueue.queue import SampleRefQueue, VisibilityTimeout
from refqueue.stores import LocalFeatureStore

from redis_helpers import queue, ref

GUARD_S = 30  # bounds a hang only; never reached when the code is right
VT = 8.0


def _thread(body: Any, errors: list[BaseException], name: str) -> threading.Thread:
    def guarded() -> None:
        try:
            body()
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    t = threading.Thread(target=guarded, name=name, daemon=True)
    t.start()
    return t


def _join(t: threading.Thread, errors: list[BaseException]) -> None:
    t.join(GUARD_S)
    assert not t.is_alive(), f"{t.name} did not end"
    assert not errors, errors


def _names(m: dict[str, Any]) -> list[str]:
    return [c.name for c in diagnose(m)]


# -- Run B: a consumer holds a lease and never acks; no reclaimer ---------------------------------------


def test_a_lease_held_past_its_deadline_with_no_reclaimer_shows_in_the_gauges_and_the_diagnosis(
        redis_server, queue_name):
    clock = ManualClock(0.0)
    q = queue(redis_server.url, queue_name, clock=clock, seconds=VT)
    other = queue(redis_server.url, queue_name, clock=clock, seconds=VT)  # another client of the same queue
    for sample_id in ("a", "b", "c"):
        q.put(ref(sample_id))
    errors: list[BaseException] = []
    held, release = threading.Event(), threading.Event()

    def stuck_consumer() -> None:  # leases one sample and never acks it (a hung step)
        lease = q.acquire(poll_interval=GUARD_S)
        assert lease is not None and lease.ref.sample_id == "a"
        held.set()
        assert release.wait(GUARD_S)

    consumer = _thread(stuck_consumer, errors, "consumer-stuck")
    assert held.wait(GUARD_S)

    m0 = q.metrics()
    assert (m0["clock"], m0["pending"], m0["outstanding"]) == (0.0, 2, 1)
    assert (m0["leases_past_deadline"], m0["leases_older_than_timeout"]) == (0, 0)
    assert m0["oldest_open_lease_age_seconds"] == 0.0 and m0["reclaimer_running"] is False
    assert m0["visibility_timeout_seconds"] == VT and m0["counters"] is False
    assert _names(m0) == []  # nothing wrong yet

    clock.advance(30.0)  # 22 s past the lease's 8 s timeout
    m1 = q.metrics()
    assert m1["clock"] == 30.0
    assert m1["leases_past_deadline"] == 1
    assert m1["most_overdue_lease_seconds"] == 22.0
    assert m1["oldest_open_lease_age_seconds"] == 30.0
    assert m1["leases_older_than_timeout"] == 1 and m1["leases_timed"] == 1
    assert m1["reclaimer_running"] is False
    conditions = diagnose(m1)
    assert [c.name for c in conditions] == ["no_reclaimer"]
    assert conditions[0].title == "leases past their deadline and no reclaimer running"
    assert "1 outstanding lease(s) past their deadline, the most overdue by 22 s" in conditions[0].detail
    assert "this queue has no reclaimer running" in conditions[0].detail
    # every client of the queue reads the same server state
    seen = other.metrics()
    for key in ("pending", "outstanding", "leases_past_deadline", "most_overdue_lease_seconds",
                "oldest_open_lease_age_seconds", "leases_older_than_timeout"):
        assert seen[key] == m1[key], key

    clock.advance(5.0)  # still stuck: the gauges keep growing
    m2 = q.metrics()
    assert m2["oldest_open_lease_age_seconds"] == 35.0 and m2["most_overdue_lease_seconds"] == 27.0

    assert q.reclaim_expired() == 1  # what a reclaimer would have done
    m3 = q.metrics()
    assert (m3["pending"], m3["outstanding"], m3["leases_past_deadline"]) == (3, 0, 0)
    assert (m3["oldest_open_lease_age_seconds"], m3["leases_timed"]) == (0.0, 0)
    assert _names(m3) == []
    release.set()
    _join(consumer, errors)


def test_the_reclaimer_running_clears_the_no_reclaimer_diagnosis(redis_server, queue_name):
    clock = ManualClock(0.0)
    q = queue(redis_server.url, queue_name, clock=clock, seconds=VT)
    q.put(ref("a"))
    assert q.acquire_nowait() is not None
    clock.advance(9.0)
    q.start_reclaimer(interval=GUARD_S)  # running, but its first pass is GUARD_S away
    try:
        m = q.metrics()
        assert m["leases_past_deadline"] == 1 and m["reclaimer_running"] is True
        assert m["reclaimer_interval"] == GUARD_S
        assert "no_reclaimer" not in _names(m)
    finally:
        q.stop_reclaimer()
    assert q.metrics()["reclaimer_running"] is False


def test_an_extended_lease_counts_as_older_than_the_timeout_but_not_past_its_deadline(redis_server, queue_name):
    clock = ManualClock(100.0)
    q = queue(redis_server.url, queue_name, clock=clock, seconds=VT)
    q.put(ref("a"))
    q.put(ref("b"))
    first = q.acquire_nowait()
    clock.advance(6.0)
    second = q.acquire_nowait()
    assert q.extend(first) is True  # deadline 114
    clock.advance(4.0)  # t=110: first is 10 s old (> 8), second 4 s
    m = q.metrics()
    assert (m["leases_past_deadline"], m["leases_older_than_timeout"]) == (0, 1)
    assert m["oldest_open_lease_age_seconds"] == 10.0
    assert q.ack(first) is True
    m = q.metrics()
    assert (m["outstanding"], m["leases_older_than_timeout"], m["oldest_open_lease_age_seconds"]) == (1, 0, 4.0)
    assert q.fail(second) is True  # requeued: no lease open
    assert q.metrics()["leases_timed"] == 0


def test_the_server_clock_gauges(redis_server, queue_name):
    q = queue(redis_server.url, queue_name, clock=None, seconds=30.0)
    q.put(ref("a"))
    assert q.acquire_nowait() is not None
    m = q.metrics()
    server_now = redis_server_time(q)
    assert abs(m["clock"] - server_now) < 5.0  # the server's TIME, not this machine's monotonic clock
    assert m["outstanding"] == 1 and m["leases_timed"] == 1 and m["leases_past_deadline"] == 0
    assert 0.0 <= m["oldest_open_lease_age_seconds"] < 5.0


def redis_server_time(q: RedisSampleRefQueue) -> float:
    seconds, micros = q._redis.time()
    return seconds + micros / 1e6


# -- Run A: producers blocked on backpressure while a consumer holds leases it keeps extending ----------


def tensors(i: int) -> dict[str, torch.Tensor]:
    return {
        "aux_hidden_states": torch.full((3, 4, 2_000), float(i)),
        "input_ids": torch.arange(4) + i,
        "attention_mask": torch.ones(4, dtype=torch.bool),
        "loss_mask": torch.ones(4),
    }


UNIT = sum(t.numel() * t.element_size() for t in tensors(0).values())


def store_put(store: LocalFeatureStore, i: int):
    return store.put(f"s{i}", tensors(i), run_id="run", algorithm="eagle3", schema_version=2,
                     target_model_version="t", draft_weight_version=0, num_tokens=4)


def test_producers_blocked_while_a_consumer_holds_old_leases(redis_server, queue_name):
    clock = ManualClock(0.0)
    store = LocalFeatureStore(max_samples=None, max_bytes=64 * 10**6, uri=f"mem://gauges-{uuid.uuid4().hex}")
    q = RedisSampleRefQueue(store, VisibilityTimeout(VT), high_watermark_bytes=3 * UNIT, low_watermark_bytes=UNIT,
                            url=redis_server.url, name=queue_name, clock=clock)
    for i in range(3):
        q.put(store_put(store, i))
    leases = [q.acquire_nowait() for _ in range(3)]  # the hung consumer holds all three
    assert all(lease is not None for lease in leases)
    errors: list[BaseException] = []
    parked = [threading.Event() for _ in range(2)]
    stop = threading.Event()
    outcomes: channels.Queue = channels.Queue()

    def producer(k: int) -> Any:
        calls = 0

        def abort_when() -> bool:  # called after each step that must wait; from the second on, parked
            nonlocal calls
            calls += 1
            if calls >= 2:
                parked[k].set()
            return stop.is_set()

        def body() -> None:
            try:
                q.put_blocks_until_below(store_put(store, 3 + k), poll_interval=0.02, abort_when=abort_when)
                outcomes.put(("put", k))
            except PutAborted:
                outcomes.put(("aborted", k))

        return body

    producers = [_thread(producer(k), errors, f"producer-{k}") for k in range(2)]
    try:
        for event in parked:
            assert event.wait(GUARD_S)

        blocked = q.metrics()
        assert blocked["paused"] is True
        assert (blocked["producers_blocked"], blocked["parked_bytes"]) == (2, 2 * UNIT)
        assert (blocked["producers_blocked_here"], blocked["parked_bytes_here"]) == (2, 2 * UNIT)
        assert blocked["producer_blocked_seconds"] == 0.0  # parked at t=0, read at t=0
        assert blocked["resident_bytes"] == 5 * UNIT and blocked["effective_resident_bytes"] == 3 * UNIT
        assert blocked["high_watermark_bytes"] == 3 * UNIT and blocked["low_watermark_bytes"] == UNIT

        clock.advance(5.0)
        assert all(q.extend(lease) for lease in leases)  # the hung consumer's heartbeat: deadlines at 13
        clock.advance(5.0)
        m = q.metrics()  # t=10: both producers still blocked, their waits in progress count
        assert m["producer_blocked_seconds"] == 20.0
        assert (m["leases_older_than_timeout"], m["leases_past_deadline"]) == (3, 0)
        assert m["oldest_open_lease_age_seconds"] == 10.0
        conditions = diagnose(m)
        assert [c.name for c in conditions] == ["consumers_hold_old_leases"]
        assert conditions[0].title == ("producers blocked on backpressure while consumers hold 3 leases older than "
                                       "the timeout")
        clock.advance(2.0)
        assert q.metrics()["producer_blocked_seconds"] == 24.0  # growing while stuck, not flat

        for lease in leases:  # the consumer comes back: its acks free the store, the producers go on
            assert q.ack(lease) is True
        for t in producers:
            _join(t, errors)
        assert sorted(outcomes.get_nowait() for _ in range(2)) == [("put", 0), ("put", 1)]
        done = q.metrics()
        assert (done["producers_blocked"], done["parked_bytes"], done["producers_blocked_here"]) == (0, 0, 0)
        assert done["producer_blocked_seconds"] == 24.0  # the finished waits stay counted
        assert done["pending"] == 2 and _names(done) == []
    finally:  # a failed assertion must not leave the producers blocked
        stop.set()
        for t in producers:
            t.join(GUARD_S)


# -- Prometheus: a Redis queue and an in-process queue in one registry ----------------------------------


def test_a_refqueue_collector_scrapes_a_redis_queue(redis_server, queue_name):
    prometheus_client = pytest.importorskip("prometheus_client")
    from prometheus_client.parser import text_string_to_metric_families

    from refqueue.prometheus import RefqueueCollector

    clock = ManualClock(0.0)
    rq = queue(redis_server.url, queue_name, clock=clock, seconds=VT)
    rq.put(ref("a"))
    rq.put(ref("b"))
    assert rq.acquire_nowait() is not None
    clock.advance(20.0)
    local = SampleRefQueue(LocalFeatureStore(None, None, None, None), VisibilityTimeout(VT), clock=ManualClock(0.0))
    registry = prometheus_client.CollectorRegistry()
    registry.register(RefqueueCollector(rq, name="redis").add(local, name="local"))

    text = prometheus_client.generate_latest(registry).decode()
    samples: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            assert set(sample.labels) >= {"queue"}, sample
            key = (sample.name, sample.labels["queue"])
            assert key not in samples, f"duplicate series {key}"
            samples[key] = sample.value
    assert samples[("refqueue_up", "redis")] == 1.0 and samples[("refqueue_up", "local")] == 1.0
    assert samples[("refqueue_pending", "redis")] == 1.0
    assert samples[("refqueue_outstanding", "redis")] == 1.0
    assert samples[("refqueue_leases_past_deadline", "redis")] == 1.0
    assert samples[("refqueue_most_overdue_lease_seconds", "redis")] == 12.0
    assert samples[("refqueue_oldest_open_lease_age_seconds", "redis")] == 20.0
    assert samples[("refqueue_reclaimer_running", "redis")] == 0.0
    assert samples[("refqueue_producers_blocked", "redis")] == 0.0
    assert samples[("refqueue_scrub_intents", "redis")] == 0.0
    assert samples[("refqueue_leases_past_deadline", "local")] == 0.0
    # the metrics the Redis queue does not measure are left out, not exported as 0
    assert ("refqueue_unaccounted_bytes", "redis") not in samples
    assert ("refqueue_live_bytes", "local") in samples


# -- the new key (P leasedat) is checked before any write, as every other key is -------------------------


def _dump_all(admin: Any, prefix: str) -> dict:
    pattern = prefix.replace("{", "\\{").replace("}", "\\}") + "*"
    return {key: admin.dump(key) for key in sorted(admin.scan_iter(match=pattern))}


@pytest.mark.parametrize("call", ["acquire", "ack", "fail", "dead_letter", "reclaim"])
def test_a_planted_leasedat_fails_each_state_change_whole(redis_server, queue_name, call):
    import redis as redis_py

    from refqueue.backends.redis import QueueStateCorrupt

    admin = redis_py.Redis.from_url(redis_server.url)
    try:
        clock = ManualClock(0.0)
        q = queue(redis_server.url, queue_name, clock=clock, seconds=VT)
        q.put(ref("a"))
        q.put(ref("b"))
        lease = q.acquire_nowait()
        clock.advance(VT + 1)  # the lease is due: reclaim has work
        key = q._prefix + "leasedat"
        admin.delete(key)
        admin.rpush(key, "x")  # a list where a sorted set belongs
        before = _dump_all(admin, q._prefix)
        do = {"acquire": q.acquire_nowait, "ack": lambda: q.ack(lease), "fail": lambda: q.fail(lease),
              "dead_letter": lambda: q.dead_letter(lease, "poison"), "reclaim": q.reclaim_expired}[call]
        with pytest.raises(QueueStateCorrupt, match=r"leasedat is a list, not a zset"):
            do()
        assert _dump_all(admin, q._prefix) == before  # nothing changed
        with pytest.raises(QueueStateCorrupt):
            q.metrics()  # the gauges read it too, and say so
    finally:
        admin.close()
