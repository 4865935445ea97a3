"""Faults against a real redis-server (issue 11, Build item 5): a consumer
process SIGKILLed mid-lease, the server killed and restarted with its
append-only file, a connection dropped in the middle of an ack."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal

import pytest

import redis_workers as _workers
from redis_helpers import queue, ref
from redis_proxy import DroppingProxy
from refqueue.backends.redis import RedisUnavailable
from refqueue.clock import ManualClock
from refqueue.queue import Lease

pytestmark = pytest.mark.redis

SPAWN = multiprocessing.get_context("spawn")


def _receive(conn, what: str, timeout: float = 120.0):
    assert conn.poll(timeout), f"no answer from the {what} process within {timeout} s"
    return conn.recv_bytes().decode()


def test_a_consumer_killed_mid_lease_its_sample_is_redelivered_and_completed_exactly_once(redis_server, queue_name):
    clock = ManualClock(100.0)
    q = queue(redis_server.url, queue_name, clock=clock)
    ids = [f"s{i}" for i in range(10)]
    for sample_id in ids:
        q.put(ref(sample_id))

    mine, theirs = SPAWN.Pipe()
    victim = SPAWN.Process(target=_workers.hold_one_lease, args=(redis_server.url, queue_name, theirs))
    victim.start()
    held = Lease.from_json(_receive(mine, "victim"))
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(30)
    assert victim.exitcode == -signal.SIGKILL
    assert q.outstanding_count() == 1  # its lease outlives it

    results, theirs = SPAWN.Pipe()
    worker = SPAWN.Process(target=_workers.consume_until_drained, args=(redis_server.url, queue_name, theirs))
    worker.start()
    clock.advance(30.0)  # past the dead consumer's deadline (the worker's leases: 130 + ...)
    reclaimed = q.reclaim_expired()
    q.close()
    seen = json.loads(_receive(results, "worker"))
    worker.join(30)
    assert worker.exitcode == 0

    assert reclaimed >= 1
    completed = [sample_id for sample_id, _, acked in seen if acked]
    assert sorted(completed) == sorted(ids)  # every sample exactly once
    assert [count for sample_id, count, _ in seen if sample_id == held.ref.sample_id] == [1]
    assert q.ack(held) is False  # the dead consumer's lease is stale
    assert q.is_drained


def test_the_server_killed_and_restarted_loses_no_pending_sample_and_redelivers_no_acked_one(persistent_server, queue_name):
    q = queue(persistent_server.url, queue_name)
    ids = [f"s{i:02d}" for i in range(20)]
    for sample_id in ids:
        q.put(ref(sample_id))
    acked = []
    for _ in range(5):
        lease = q.acquire_nowait()
        assert q.ack(lease)
        acked.append(lease.ref.sample_id)
    leased = [q.acquire_nowait() for _ in range(3)]

    persistent_server.kill()  # SIGKILL: only what appendfsync always wrote survives
    persistent_server.start()
    # The pooled connection died with the server: the first call may say so, clearly.
    with contextlib.suppress(RedisUnavailable):
        q.pending_count()
    assert (q.pending_count(), q.outstanding_count()) == (12, 3)
    for lease in leased:
        assert q.ack(lease) is True  # still live after the restart
    rest = []
    while (lease := q.acquire_nowait()) is not None:
        rest.append(lease.ref.sample_id)
        q.ack(lease)
    assert rest == ids[8:]  # FIFO kept; nothing lost
    assert not set(rest) & set(acked)  # nothing acked delivered again


@pytest.fixture
def proxied(redis_server, queue_name):
    proxy = DroppingProxy(redis_server.port)
    q = queue(proxy.url, queue_name)
    yield proxy, q
    proxy.close()


def test_an_ack_whose_request_never_arrived_is_live_and_retried(proxied):
    proxy, q = proxied
    q.put(ref("a"))
    lease = q.acquire_nowait()
    proxy.drop_next("request")
    with pytest.raises(RedisUnavailable, match="lease_state"):
        q.ack(lease)
    assert proxy.dropped.is_set()
    assert q.lease_state(lease) == "live"  # it did not commit: retry
    assert q.ack(lease) is True
    assert q.lease_state(lease) == "acked"


def test_an_ack_whose_reply_was_lost_is_known_to_have_committed(proxied):
    proxy, q = proxied
    q.put(ref("a"))
    lease = q.acquire_nowait()
    proxy.drop_next("reply")  # the server ran the ack; its reply is lost
    with pytest.raises(RedisUnavailable, match="lease_state"):
        q.ack(lease)
    assert proxy.dropped.is_set()
    assert q.lease_state(lease) == "acked"  # it committed: do not retry
    assert q.outstanding_count() == 0
    assert q.ack(lease) is False


def test_a_consumer_process_blocked_in_acquire_is_woken_by_a_put_and_by_close(redis_server, queue_name):
    import time

    q = queue(redis_server.url, queue_name)
    for expected, wake in (("a", lambda: q.put(ref("a"))), (None, q.close)):
        mine, theirs = SPAWN.Pipe()
        child = SPAWN.Process(target=_workers.wait_for_one, args=(redis_server.url, queue_name, theirs))
        child.start()
        assert _receive(mine, "waiting consumer") == "ready"
        assert not mine.poll(0.3)  # a bounded wait: it is blocked (or about to be)
        wake()
        woken = time.monotonic()
        assert json.loads(_receive(mine, "waiting consumer", 10.0)) == expected
        assert time.monotonic() - woken < 2.0  # woken, not waiting out its 30 s poll
        child.join(30)
        assert child.exitcode == 0


def _within(seconds: float, condition) -> bool:
    """Whether ``condition()`` holds within ``seconds``, checked every 20 ms:
    the state of another process, seen through the server."""
    import threading
    import time

    deadline = time.monotonic() + seconds
    tick = threading.Event()
    while not condition():
        if time.monotonic() > deadline:
            return False
        tick.wait(0.02)
    return True


def test_a_producer_killed_while_parked_stops_counting_once_its_registration_runs_out(redis_server, queue_name):
    q = queue(redis_server.url, queue_name, high_watermark_bytes=100, low_watermark_bytes=50)
    q.put(ref("work"))  # the queue holds work: a paused producer waits (D8)
    mine, theirs = SPAWN.Pipe()
    child = SPAWN.Process(target=_workers.park_and_wait, args=(redis_server.url, queue_name, theirs))
    child.start()
    nbytes = json.loads(_receive(mine, "producer"))
    assert _within(30, lambda: q.parked_bytes == nbytes), "the producer never parked"
    assert q.is_paused
    assert not _within(1.0, lambda: q.parked_bytes != nbytes)  # alive, it stays parked (renewing)
    os.kill(child.pid, signal.SIGKILL)
    child.join(30)
    assert _within(10, lambda: q.parked_bytes == 0), "a dead producer's parked bytes still count"


def test_processes_share_the_queue_on_redis_and_the_tensors_on_a_directory(redis_server, queue_name, tmp_path):
    """A producer process writes samples to a SharedDirFeatureStore and puts
    their refs; two consumer processes lease, read and ack them; every sample
    is read once with its own data, and the acks leave the directory empty."""
    from redis_workers import _shared_queue

    root = str(tmp_path / "features")
    store, q = _shared_queue(redis_server.url, queue_name, root)
    consumers = []
    for _ in range(2):
        mine, theirs = SPAWN.Pipe()
        child = SPAWN.Process(target=_workers.consume_from_shared_dir, args=(redis_server.url, queue_name, root, theirs))
        child.start()
        consumers.append((mine, child))
    done, theirs = SPAWN.Pipe()
    producer = SPAWN.Process(target=_workers.produce_to_shared_dir, args=(redis_server.url, queue_name, root, 12, theirs))
    producer.start()
    assert _receive(done, "producer") == "done"
    producer.join(30)
    q.close()
    seen = []
    for mine, child in consumers:
        seen += json.loads(_receive(mine, "consumer"))
        child.join(30)
        assert child.exitcode == 0
    assert sorted(seen) == sorted([f"s{i}", 6 + 4 * i] for i in range(12))
    health = store.health()
    assert (health.resident_bytes, health.sample_count) == (0, 0)
    assert list((tmp_path / "features" / "samples").iterdir()) == []


def test_script_connections_the_server_closed_while_idle_are_replaced_before_the_next_call(redis_server, queue_name):
    import redis

    q = queue(redis_server.url, queue_name, clock=None)
    for sample_id in ("a", "b"):
        q.put(ref(sample_id))
    lease = q.acquire_nowait()
    admin = redis.Redis.from_url(redis_server.url)
    try:
        # Every other client's connection (the queue's script connection among them) is closed by the server.
        assert admin.client_kill_filter(_type="normal", skipme=True) >= 1
    finally:
        admin.close()
    # Nothing was sent on the closed connection: the next call runs once, on a fresh one, without an error.
    assert q.ack(lease) is True
    assert q.lease_state(lease) == "acked"
    assert q.acquire_nowait().ref.sample_id == "b"
    assert (q.pending_count(), q.outstanding_count()) == (0, 1)
