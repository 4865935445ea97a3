"""The Redis deployment under the faults users meet (issue 18, D9): the ack in
two steps (a scrub intent committed with it, collected by anyone later), a
reclaimer that survives the server going away, a server that loses state
found out, puts retried after a lost reply, and every failure a refqueue
exception.  Real ``redis-server`` processes, real tensors on a shared
directory, real kills and a real TCP proxy that loses replies."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import threading
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

import redis as redis_py  # noqa: E402

import redis_workers as _workers  # noqa: E402
from redis_helpers import queue, ref  # noqa: E402
from redis_proxy import DroppingProxy  # noqa: E402
from refqueue.backends._redis_server import RedisServer  # noqa: E402
from refqueue.backends.redis import RedisRefused, RedisSampleRefQueue, RedisUnavailable, delete_queue  # noqa: E402
from refqueue.clock import ManualClock  # noqa: E402
from refqueue.errors import ForeignLease, QueueStateLost  # noqa: E402
from refqueue.queue import VisibilityTimeout  # noqa: E402
from refqueue.stores.shared_dir import SharedDirFeatureStore  # noqa: E402

pytestmark = pytest.mark.redis

SPAWN = multiprocessing.get_context("spawn")


class Crashed(BaseException):
    """What the fault hook raises: the client died between commit and scrub."""


def _tensors(i: int) -> dict:
    return {
        "aux_hidden_states": torch.full((3, 4, 8), float(i)),
        "input_ids": torch.arange(4, dtype=torch.int64) + i,
        "attention_mask": torch.ones(4, dtype=torch.bool),
        "loss_mask": torch.ones(4),
    }


def _put(store, sample_id: str, i: int = 0):
    return store.put(sample_id, _tensors(i), run_id="run", algorithm="eagle3", schema_version=1,
                     target_model_version="target", draft_weight_version=0, num_tokens=4)


def _files(root) -> list[str]:
    return sorted(p.name for p in (root / "samples").iterdir())


def _within(seconds: float, condition) -> bool:
    """Whether ``condition()`` holds within ``seconds`` (checked every 20 ms):
    another thread's or process's progress, seen from here."""
    deadline = time.monotonic() + seconds
    tick = threading.Event()
    while not condition():
        if time.monotonic() > deadline:
            return False
        tick.wait(0.02)
    return True


@pytest.fixture
def shared(tmp_path):
    root = tmp_path / "features"
    return root, SharedDirFeatureStore(root, fsync=False)


# -- the ack in two steps -------------------------------------------------------------


def test_a_client_dead_between_commit_and_scrub_leaves_an_intent_that_reclaim_collects_one_timeout_later(
    redis_server, queue_name, shared
):
    root, store = shared
    clock = ManualClock(100.0)
    q = queue(redis_server.url, queue_name, clock=clock, store=store, seconds=5.0)
    q.put(_put(store, "a"))
    lease = q.acquire_nowait()
    q._fault_crash = Crashed()  # what refqueue.backends._redis_faults arms for the kit
    with pytest.raises(Crashed):
        q.ack(lease)
    other = queue(redis_server.url, queue_name, clock=clock, store=store, seconds=5.0)
    assert other.lease_state(lease) == "acked" and other.outstanding_count() == 0
    assert other.intents_count() == 1 and _files(root) == ["a.safetensors"]  # committed, not scrubbed
    clock.advance(4.9)
    assert other.reclaim_expired() == 0 and _files(root) == ["a.safetensors"]  # not due: its client may be slow
    clock.advance(0.1)
    assert other.reclaim_expired() == 0  # no lease was due; the intent was
    assert _files(root) == [] and other.intents_count() == 0
    assert store.health().resident_bytes == 0


def test_a_consumer_process_killed_between_commit_and_scrub_its_data_is_collected_by_the_reclaimer(
    redis_server, queue_name, shared
):
    root, store = shared
    q = RedisSampleRefQueue(store, VisibilityTimeout(1.0), url=redis_server.url, name=queue_name)  # server time
    q.put(_put(store, "a"))
    mine, theirs = SPAWN.Pipe()
    victim = SPAWN.Process(target=_workers.ack_and_stop_before_scrub, args=(redis_server.url, queue_name, str(root), theirs))
    victim.start()
    assert mine.poll(60), "the consumer never reached its scrub"
    assert json.loads(mine.recv_bytes()) == "a"  # the ack's script has run
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(30)
    assert q.outstanding_count() == 0 and q.intents_count() == 1 and _files(root) == ["a.safetensors"]
    q.start_reclaimer(interval=0.1)
    try:
        assert _within(10, lambda: _files(root) == []), "the dead consumer's acked data was never scrubbed"
        assert _within(10, lambda: q.intents_count() == 0)
    finally:
        q.stop_reclaimer()
    assert store.health().resident_bytes == 0


def test_an_ack_whose_reply_was_lost_leaves_data_that_collect_intents_removes(redis_server, queue_name, shared):
    root, store = shared
    proxy = DroppingProxy(redis_server.port)
    try:
        q = queue(proxy.url, queue_name, store=store)
        q.put(_put(store, "w"))
        assert q.ack(q.acquire_nowait()) is True  # the server knows the script: the next reply is its answer
        q.put(_put(store, "a"))
        lease = q.acquire_nowait()
        proxy.drop_next("reply")
        with pytest.raises(RedisUnavailable):
            q.ack(lease)
        assert q.lease_state(lease) == "acked"
        assert q.ack(lease) is False  # the retry a careful user makes: stale, changes nothing
        assert _files(root) == ["a.safetensors"] and q.intents_count() == 1
        assert q.collect_intents() == 0  # not due yet
        assert q.collect_intents(include_recent=True) == 1  # the operator's way, at once
        assert _files(root) == [] and q.intents_count() == 0 and store.health().resident_bytes == 0
    finally:
        proxy.close()


def test_a_failing_scrub_is_undone_and_leaves_no_intent(redis_server, queue_name, shared):
    root, store = shared
    q = queue(redis_server.url, queue_name, store=store)
    q.put(_put(store, "a"))
    lease = q.acquire_nowait()
    real = store.scrub
    store.scrub = lambda r: (_ for _ in ()).throw(OSError("disk gone"))
    with pytest.raises(OSError, match="disk gone"):
        q.ack(lease)
    store.scrub = real
    assert q.lease_state(lease) == "live" and q.intents_count() == 0
    assert q.ack(lease) is True and _files(root) == [] and q.intents_count() == 0


# -- the reclaimer survives ---------------------------------------------------------------


def test_the_reclaimer_survives_the_server_going_away_and_reclaims_once_it_is_back(persistent_server, queue_name):
    clock = ManualClock(100.0)
    q = queue(persistent_server.url, queue_name, clock=clock, seconds=5.0)
    q.put(ref("a"))
    orphan = q.acquire_nowait()  # its consumer died
    q.start_reclaimer(interval=0.05)
    try:
        persistent_server.kill()
        assert _within(10, lambda: q.reclaimer_status()["errors"] >= 3), q.reclaimer_status()
        status = q.reclaimer_status()
        assert status["running"] and status["consecutive_errors"] >= 3
        assert "RedisUnavailable" in status["last_error"] and status["last_error_at"] is not None
        persistent_server.start()
        clock.advance(5.0)
        assert _within(10, lambda: q.lease_state(orphan) == "pending"), "the reclaimer never came back"
        assert _within(5, lambda: q.reclaimer_status()["consecutive_errors"] == 0)
        assert q.reclaimer_running
    finally:
        q.stop_reclaimer()
    assert q.reclaimer_status() == {"running": False}


# -- state loss ---------------------------------------------------------------------------


@pytest.fixture
def volatile_server():
    """A server without persistence, for a test that restarts it (state lost)."""
    server = RedisServer().start()
    yield server
    server.stop()


def _every_call(q, lease, some_ref):
    yield "put", lambda: q.put(some_ref)
    yield "put_blocks_until_below", lambda: q.put_blocks_until_below(some_ref)
    yield "acquire", lambda: q.acquire(poll_interval=0.05)
    yield "acquire_nowait", q.acquire_nowait
    yield "ack", lambda: q.ack(lease)
    yield "fail", lambda: q.fail(lease)
    yield "extend", lambda: q.extend(lease)
    yield "dead_letter", lambda: q.dead_letter(lease, "poison")
    yield "lease_state", lambda: q.lease_state(lease)
    yield "reclaim_expired", q.reclaim_expired
    yield "collect_intents", q.collect_intents
    yield "close", q.close
    yield "pending_count", q.pending_count
    yield "outstanding_count", q.outstanding_count
    yield "is_closed", lambda: q.is_closed
    yield "is_drained", lambda: q.is_drained
    yield "is_paused", lambda: q.is_paused
    yield "parked_bytes", lambda: q.parked_bytes
    yield "dead_letters", q.dead_letters
    yield "drain_dead_letters", q.drain_dead_letters
    yield "dead_letters_dropped", lambda: q.dead_letters_dropped


def test_a_restart_without_persistence_is_found_out_by_every_call_and_no_old_lease_is_accepted(volatile_server, queue_name):
    q = queue(volatile_server.url, queue_name)
    for sample_id in ("a", "b", "c"):
        q.put(ref(sample_id))
    old = q.acquire_nowait()
    q.close()
    volatile_server.kill()
    volatile_server.start()  # empty: is_closed would revert, pending is gone, ids would restart at 1
    with contextlib.suppress(RedisUnavailable, QueueStateLost):  # a pooled connection died with the server
        q.pending_count()
    for call, do in _every_call(q, old, ref("d")):
        with pytest.raises(QueueStateLost, match=r"^" + call + r".*lost its state.*delete_queue") as raised:
            do()
        assert "no state on the server" in str(raised.value), call
    fresh = queue(volatile_server.url, queue_name)  # a new epoch
    assert fresh.epoch != q.epoch and not fresh.is_closed
    fresh.put(ref("a"))
    lease = fresh.acquire_nowait()
    assert lease.lease_id == old.lease_id  # ids restart, but (epoch, id) never repeats:
    with pytest.raises(ForeignLease):
        fresh.ack(old)
    assert fresh.ack(lease) is True
    with pytest.raises(QueueStateLost, match="epoch"):  # the old client stays out
        q.pending_count()


def _snapshot(url: str, prefix: str) -> dict:
    admin = redis_py.Redis.from_url(url)
    try:
        return {key: admin.dump(key) for key in admin.scan_iter(match=prefix + "*")}
    finally:
        admin.close()


def _restore(url: str, prefix: str, dumps: dict) -> None:
    """What a failover to a replica that lagged does: the queue's keys as they were."""
    admin = redis_py.Redis.from_url(url)
    try:
        for key in admin.scan_iter(match=prefix + "*"):
            admin.delete(key)
        for key, value in dumps.items():
            admin.restore(key, 0, value, replace=True)
    finally:
        admin.close()


def test_lost_writes_are_found_out_by_the_client_that_saw_them_and_then_by_every_client(redis_server, queue_name):
    saw_more = queue(redis_server.url, queue_name)
    saw_less = queue(redis_server.url, queue_name)
    for sample_id in ("a", "b"):
        saw_more.put(ref(sample_id))
    prefix = saw_more._prefix
    before = _snapshot(redis_server.url, prefix)
    lease = saw_more.acquire_nowait()
    assert saw_more.ack(lease) is True  # then lost: "a" would come back, its data scrubbed
    _restore(redis_server.url, prefix, before)
    assert saw_less.pending_count() == 2  # it saw nothing newer: it cannot tell yet
    with pytest.raises(QueueStateLost, match=r"^pending_count: .*a client saw version"):
        saw_more.pending_count()
    with pytest.raises(QueueStateLost, match="a client saw version"):  # marked lost: every client now
        saw_less.acquire_nowait()
    with pytest.raises(QueueStateLost, match=r"^RedisSampleRefQueue\(\): .*lost its state"):
        queue(redis_server.url, queue_name)
    assert delete_queue(redis_server.url, queue_name) > 0
    assert queue(redis_server.url, queue_name).pending_count() == 0


def test_lost_writes_overtaken_by_newer_ones_are_still_found_out(redis_server, queue_name):
    saw_more = queue(redis_server.url, queue_name)
    saw_less = queue(redis_server.url, queue_name)
    saw_more.put(ref("a"))
    prefix = saw_more._prefix
    before = _snapshot(redis_server.url, prefix)
    lease = saw_more.acquire_nowait()
    assert saw_more.ack(lease) is True
    _restore(redis_server.url, prefix, before)
    for sample_id in ("b", "c", "d", "e"):  # the version runs past what saw_more saw
        saw_less.put(ref(sample_id))
    with pytest.raises(QueueStateLost, match="not the one a client saw"):
        saw_more.pending_count()


# -- retries after a lost reply -----------------------------------------------------------


def test_a_put_retried_after_a_lost_reply_never_enqueues_twice(redis_server, queue_name):
    proxy = DroppingProxy(redis_server.port)
    try:
        producer = queue(proxy.url, queue_name)
        consumer = queue(redis_server.url, queue_name)
        r = ref("a")
        producer.put(ref("w"))  # the server knows the script: the next reply is its answer
        assert consumer.ack(consumer.acquire_nowait()) is True
        proxy.drop_next("reply")
        with pytest.raises(RedisUnavailable):
            producer.put(r)
        producer.put(r)  # still pending: the retry changes nothing
        assert consumer.pending_count() == 1
        proxy.drop_next("reply")
        with pytest.raises(RedisUnavailable):
            producer.put(ref("b"))
        lease = consumer.acquire_nowait()
        assert consumer.ack(lease) is True
        b = consumer.acquire_nowait()
        assert consumer.ack(b) is True  # "b" completed before its producer retried
        producer.put(ref("b"))  # the retry: it committed once, it stays done
        assert (consumer.pending_count(), consumer.outstanding_count()) == (0, 0)
        consumer.put(ref("b"))  # a put that is no retry is a re-put (D5)
        assert consumer.pending_count() == 1
    finally:
        proxy.close()


def test_a_blocking_put_retried_after_a_lost_reply_never_enqueues_twice(redis_server, queue_name):
    proxy = DroppingProxy(redis_server.port)
    try:
        producer = queue(proxy.url, queue_name)
        consumer = queue(redis_server.url, queue_name)
        producer.put_blocks_until_below(ref("w"))  # the server knows the script: the next reply is its answer
        proxy.drop_next("reply")
        with pytest.raises(RedisUnavailable):
            producer.put_blocks_until_below(ref("a"))
        assert consumer.pending_count() == 2
        producer.put_blocks_until_below(ref("a"))
        assert consumer.pending_count() == 2
    finally:
        proxy.close()


# -- every failure a refqueue exception ------------------------------------------------------


def test_a_server_out_of_memory_refuses_with_a_refqueue_error_and_changes_nothing(redis_server, queue_name):
    q = queue(redis_server.url, queue_name)
    q.put(ref("a"))
    admin = redis_py.Redis.from_url(redis_server.url)
    try:
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", 1)
        try:
            with pytest.raises(RedisRefused, match=r"^put: the Redis server at .* refused the command \(.*maxmemory.*\); the call changed nothing"):
                q.put(ref("b"))
        finally:
            admin.config_set("maxmemory", 0)
    finally:
        admin.close()
    assert q.pending_count() == 1
    q.put(ref("b"))
    assert q.pending_count() == 2


def test_a_deleted_queue_is_state_lost_for_a_blocked_producer_not_a_raw_redis_error(redis_server, queue_name):
    q = queue(redis_server.url, queue_name, high_watermark_bytes=100, low_watermark_bytes=50)
    q.put(ref("work"))
    q.delete()
    with pytest.raises(QueueStateLost, match=r"^put_blocks_until_below: "):
        q.put_blocks_until_below(ref("x"))


def test_socket_timeout_is_checked_and_bounds_a_stopped_server(volatile_server, queue_name):
    with pytest.raises(ValueError, match=r"socket_timeout=0\.5\) must exceed BLOCK_SLICE"):
        RedisSampleRefQueue(_workers_store(), url=volatile_server.url, name=queue_name, socket_timeout=0.5)
    q = RedisSampleRefQueue(_workers_store(), url=volatile_server.url, name=queue_name, socket_timeout=1.5)
    q.put(ref("a"))
    volatile_server.process.send_signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(RedisUnavailable, match=r"^pending_count: lost the connection"):
            q.pending_count()
        assert time.monotonic() - started < 10  # bounded by the socket timeout, not for ever
    finally:
        volatile_server.process.send_signal(signal.SIGCONT)
    assert q.pending_count() == 1  # the pause lost nothing


def _workers_store():
    from redis_helpers import store

    return store()
