"""RedisSampleRefQueue against a real redis-server: the API, fencing, and
what several clients of one queue see of one another."""

from __future__ import annotations

import json
import threading
import time

import pytest

from refqueue.backends.redis import RedisSampleRefQueue, RedisUnavailable, redacted
from refqueue.clock import ManualClock
from refqueue.errors import DuplicateSample, ForeignLease, QueueClosed, ReplayedSample
from refqueue.queue import Lease

from redis_helpers import queue, ref, store

pytestmark = pytest.mark.redis


def test_put_acquire_ack(redis_server, queue_name):
    q = queue(redis_server.url, queue_name)
    q.put(ref("a"))
    assert (q.pending_count(), q.outstanding_count()) == (1, 0)
    lease = q.acquire_nowait()
    assert (lease.ref, lease.redelivery_count, lease.deadline, lease.epoch) == (ref("a"), 0, 130.0, q.epoch)
    assert lease.lease_id >= 1
    assert (q.pending_count(), q.outstanding_count()) == (0, 1)
    assert q.ack(lease) is True
    assert q.ack(lease) is False  # stale now
    assert (q.pending_count(), q.outstanding_count(), q.is_drained) == (0, 0, False)
    q.close()
    assert q.is_closed and q.is_drained
    assert q.acquire(poll_interval=30) is None  # drained: at once


def test_fifo_and_fail_requeues_at_the_tail(redis_server, queue_name):
    q = queue(redis_server.url, queue_name)
    for sample_id in ("a", "b", "c"):
        q.put(ref(sample_id))
    first = q.acquire_nowait()
    assert first.ref.sample_id == "a"
    assert q.fail(first) is True
    assert [q.acquire_nowait().ref.sample_id for _ in range(3)] == ["b", "c", "a"]


def test_a_stale_ack_after_reclaim_and_redelivery_does_not_complete_the_new_lease(redis_server, queue_name):
    clock = ManualClock(100.0)
    q = queue(redis_server.url, queue_name, clock=clock, seconds=10.0)
    q.put(ref("a"))
    old = q.acquire_nowait()
    clock.advance(10.0)
    assert q.reclaim_expired() == 1
    new = q.acquire_nowait()
    assert (new.ref.sample_id, new.redelivery_count, new.deadline) == ("a", 1, 120.0)
    assert new.lease_id != old.lease_id
    # every call with the old lease is stale: nothing changes
    assert q.ack(old) is False
    assert q.fail(old) is False
    assert q.extend(old, 5.0) is False
    assert q.dead_letter(old, "poison") is False
    assert (q.pending_count(), q.outstanding_count(), q.dead_letters()) == (0, 1, [])
    assert q.ack(Lease.from_json(new.to_json())) is True  # the new one is live, also as JSON


def test_reclaim_in_deadline_order_ties_by_sample_id_and_extend(redis_server, queue_name):
    clock = ManualClock(100.0)
    q = queue(redis_server.url, queue_name, clock=clock, seconds=10.0)
    for sample_id in ("c", "b", "a"):
        q.put(ref(sample_id))
    leases = {lease.ref.sample_id: lease for lease in (q.acquire_nowait() for _ in range(3))}
    assert q.extend(leases["a"], 50.0) is True
    clock.advance(10.0)
    assert q.reclaim_expired() == 2  # b and c (tied at 110), not a (150)
    assert [q.acquire_nowait().ref.sample_id for _ in range(2)] == ["b", "c"]
    assert q.ack(leases["a"]) is True  # past its first deadline, still live


def test_max_deliveries_dead_letters_and_the_dead_letter_limit(redis_server, queue_name):
    q = queue(redis_server.url, queue_name, max_deliveries=2, dead_letter_limit=1)
    q.put(ref("a"))
    q.put(ref("b"))
    for _ in range(2):
        assert q.fail(q.acquire_nowait()) is True  # a, then b
    assert q.fail(q.acquire_nowait()) is True  # a, delivered twice: dead
    letters = q.dead_letters()
    assert [(d.ref.sample_id, d.reason, d.deliveries) for d in letters] == [("a", "max_deliveries", 2)]
    assert q.dead_letter(q.acquire_nowait(), "poison") is True  # b: the limit drops a
    assert [(d.ref.sample_id, d.reason, d.deliveries) for d in q.dead_letters()] == [("b", "poison", 2)]
    assert q.dead_letters_dropped == 1
    assert [d.ref.sample_id for d in q.drain_dead_letters()] == ["b"]
    assert q.dead_letters() == []


def test_rejections_in_the_models_order(redis_server, queue_name):
    q = queue(redis_server.url, queue_name, dedup_window=2)
    q.put(ref("a"))
    with pytest.raises(DuplicateSample, match=r"already pending \(already present in this queue\)"):  # the seed's phrase
        q.put(ref("a"))
    lease = q.acquire_nowait()
    with pytest.raises(DuplicateSample, match=r"already leased \(already present in this queue\)"):  # the seed's phrase
        q.put(ref("a"))
    q.ack(lease)
    with pytest.raises(ReplayedSample, match="dedup_window"):
        q.put(ref("a"))
    with pytest.raises(ValueError, match="names store 'mem://elsewhere'"):
        q.put(ref("b", uri="mem://elsewhere"))
    q.close()
    with pytest.raises(TypeError, match="needs a SampleRef"):  # an argument error first, even when closed
        q.put("b")
    with pytest.raises(QueueClosed):
        q.put(ref("b"))
    other = queue(redis_server.url, queue_name + "-other")
    other.put(ref("x"))
    with pytest.raises(ForeignLease):
        q.ack(other.acquire_nowait())
    with pytest.raises(ValueError, match="must not be empty"):
        q.dead_letter(lease, "")
    with pytest.raises(ValueError, match="finite and > 0"):
        q.extend(lease, float("nan"))
    with pytest.raises(ValueError, match="> 0"):
        q.acquire(poll_interval=0)
    assert q.pending_count() == 0  # the rejected calls changed nothing


def test_two_clients_share_one_queue(redis_server, queue_name):
    clock = ManualClock(100.0)
    producer = queue(redis_server.url, queue_name, clock=clock)
    consumer = queue(redis_server.url, queue_name, clock=clock)
    assert producer.epoch == consumer.epoch
    producer.put(ref("a"))
    lease = consumer.acquire_nowait()
    # the lease travels as JSON and is live for any client of the queue
    assert producer.ack(Lease.from_json(lease.to_json())) is True
    assert consumer.outstanding_count() == 0
    producer.close()
    assert consumer.is_closed and consumer.is_drained
    with pytest.raises(QueueClosed):
        consumer.put(ref("b"))


def test_a_client_with_another_configuration_is_refused(redis_server, queue_name):
    queue(redis_server.url, queue_name, seconds=30.0)
    with pytest.raises(ValueError, match="already exists with configuration"):
        queue(redis_server.url, queue_name, seconds=5.0)


def _blocked(call, results):
    def run():
        started = time.monotonic()
        value = call()
        results.append((value, time.monotonic() - started, time.monotonic()))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_blocked_acquire_is_woken_by_another_clients_put_and_close(redis_server, queue_name):
    clock = ManualClock(100.0)
    waiter = queue(redis_server.url, queue_name, clock=clock)
    other = queue(redis_server.url, queue_name, clock=clock)
    results: list = []
    thread = _blocked(lambda: waiter.acquire(poll_interval=30), results)
    thread.join(0.2)  # a bounded wait: it must still be blocked (nothing pending)
    assert thread.is_alive()
    other.put(ref("a"))
    put_returned = time.monotonic()
    thread.join(10)
    assert not thread.is_alive(), "the put did not wake the blocked acquire"
    lease, _, returned = results[0]
    assert lease.ref.sample_id == "a"
    assert returned - put_returned < 1.0  # woken, not waiting out its 30 s poll
    other.ack(lease)

    results.clear()
    thread = _blocked(lambda: waiter.acquire(poll_interval=30), results)
    thread.join(0.2)
    assert thread.is_alive()
    other.close()
    closed = time.monotonic()
    thread.join(10)
    assert not thread.is_alive(), "close did not wake the blocked acquire"
    assert results[0][0] is None and results[0][2] - closed < 1.0


def test_server_time_when_no_clock_is_injected(redis_server, queue_name):
    import redis

    q = queue(redis_server.url, queue_name, clock=None, seconds=30.0)
    q.put(ref("a"))
    seconds, micros = redis.Redis.from_url(redis_server.url).time()
    lease = q.acquire_nowait()
    assert abs(lease.deadline - (seconds + micros / 1e6 + 30.0)) < 5.0
    assert q.extend(lease, 60.0) is True
    assert q.reclaim_expired() == 0


def test_constructor_validation(redis_server, queue_name):
    with pytest.raises(ValueError, match="scheme 'http'"):
        RedisSampleRefQueue(store(), url="http://127.0.0.1:1/0", name=queue_name)
    with pytest.raises(ValueError, match="exactly one of url="):
        RedisSampleRefQueue(store(), name=queue_name)
    with pytest.raises(ValueError, match="braces"):
        RedisSampleRefQueue(store(), url=redis_server.url, name="a{b}")
    with pytest.raises(TypeError, match="VisibilityTimeout"):
        RedisSampleRefQueue(store(), 30.0, url=redis_server.url, name=queue_name)
    with pytest.raises(ValueError, match="strictly less"):
        RedisSampleRefQueue(store(), url=redis_server.url, name=queue_name, high_watermark_bytes=5, low_watermark_bytes=5)


def test_passwords_never_appear_in_messages():
    assert redacted("redis://alice:s3cret@db.example:6380/2") == "redis://alice:***@db.example:6380/2"
    assert redacted("rediss://:s3cret@db.example/0") == "rediss://:***@db.example/0"
    assert redacted("redis://db.example:6379/0") == "redis://db.example:6379/0"


def test_a_lost_server_is_a_clear_error_and_loses_nothing_acknowledged(persistent_server, queue_name):
    q = queue(persistent_server.url, queue_name)
    q.put(ref("a"))
    persistent_server.kill()
    with pytest.raises(RedisUnavailable, match=r"put: lost the connection to the Redis server at redis://127\.0\.0\.1"):
        q.put(ref("b"))
    persistent_server.start()
    assert q.pending_count() == 1  # a, which the server acknowledged
    assert q.acquire_nowait().ref.sample_id == "a"


def test_refs_and_dead_letters_are_json_in_redis(redis_server, queue_name):
    import redis

    q = queue(redis_server.url, queue_name)
    q.put(ref("a"))
    q.dead_letter(q.acquire_nowait(), "poison")
    raw = redis.Redis.from_url(redis_server.url, decode_responses=True).lrange(f"refqueue:{{{queue_name}}}:dead", 0, -1)
    ref_json, reason, deliveries = json.loads(raw[0])
    assert (json.loads(ref_json)["sample_id"], reason, deliveries) == ("a", "poison", 1)


class _FailingScrubStore:
    """A LocalFeatureStore whose scrub raises while ``failing`` is set."""

    def __new__(cls):
        from refqueue.stores.local import LocalFeatureStore

        class Failing(LocalFeatureStore):
            failing = False

            def scrub(self, ref):
                if self.failing:
                    raise OSError("scrub failed on demand")
                return super().scrub(ref)

        return Failing(None, None, None, None, uri="mem://redis-tests")


def test_a_scrub_that_raises_commits_nothing_the_commit_is_undone_exactly(redis_server, queue_name):
    store = _FailingScrubStore()
    q = queue(redis_server.url, queue_name, store=store, max_deliveries=1, dedup_window=1, dead_letter_limit=1)
    for sample_id in ("a", "b", "c"):
        q.put(ref(sample_id))
    q.ack(q.acquire_nowait())  # a completes
    q.dead_letter(q.acquire_nowait(), "poison")  # b: the one dead letter kept, the one id in the dedup window
    lease = q.acquire_nowait()  # c
    before = (q.pending_count(), q.outstanding_count(), q.dead_letters(), q.dead_letters_dropped)
    store.failing = True
    for call in (lambda: q.ack(lease), lambda: q.dead_letter(lease, "x"), lambda: q.fail(lease)):
        with pytest.raises(OSError, match="on demand"):
            call()
        assert (q.pending_count(), q.outstanding_count(), q.dead_letters(), q.dead_letters_dropped) == before
        assert q.lease_state(lease) == "live"
    with pytest.raises(ReplayedSample):  # b is still the one id in the dedup window
        q.put(ref("b"))
    q.put(ref("a"))
    store.failing = False
    assert q.ack(lease) is True
    q.put(ref("b"))  # c evicted b from the window of one


def test_delete_removes_only_this_queues_keys(redis_server, queue_name):
    import redis

    q = queue(redis_server.url, queue_name)
    other = queue(redis_server.url, queue_name + "-kept")
    q.put(ref("a"))
    other.put(ref("a"))
    assert q.delete() > 0
    r = redis.Redis.from_url(redis_server.url)
    assert r.keys(f"refqueue:{{{queue_name}}}:*") == []
    assert other.pending_count() == 1
