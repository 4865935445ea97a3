"""The seed's queue module (``seed-queue-api.txt``), behaviour by behaviour.

One test per documented behaviour refqueue keeps.  Where refqueue adds to a
behaviour (``ack`` returns ``True``/``False`` where the seed returns None),
the test checks only what the seed documents.  Behaviours refqueue changes
on purpose are in docs/MIGRATING.md, not here.
"""

from __future__ import annotations

import threading
import time

import pytest

torch = pytest.importorskip("torch")

from compat_helpers import GUARD_S, Steps, put  # noqa: E402

from refqueue.clock import ManualClock  # noqa: E402
from refqueue.queue import Lease, SampleRefQueue, VisibilityTimeout  # noqa: E402
from refqueue.store import StoreHealth  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.timeout(120)]


def store_and_queue(n: int = 0, *args, store=None, **kwargs):
    store = LocalFeatureStore() if store is None else store
    queue = SampleRefQueue(store, *args, **kwargs)
    refs = [put(store, f"s{i}", i) for i in range(n)]
    for ref in refs:
        queue.put(ref)
    return store, queue, refs


# -- VisibilityTimeout -------------------------------------------------------------------


def test_visibility_timeout_defaults_to_30_seconds_and_accepts_any_positive_value():
    assert VisibilityTimeout().seconds == 30.0
    assert VisibilityTimeout(0.001).seconds == 0.001  # sub-second values are fine (tests)
    assert VisibilityTimeout(seconds=600).seconds == 600


@pytest.mark.parametrize("seconds", [0, -1.0])
def test_visibility_timeout_rejects_a_non_positive_value(seconds):
    with pytest.raises(ValueError):
        VisibilityTimeout(seconds)


# -- Lease -------------------------------------------------------------------------------


def test_a_lease_built_by_hand_gets_the_documented_defaults_and_a_fresh_id():
    store = LocalFeatureStore()
    ref = put(store, "s0")
    vt = VisibilityTimeout(5.0)
    a = Lease(ref, 12.5, vt)
    b = Lease(ref=ref, deadline=12.5, visibility_timeout=vt)
    assert (a.ref, a.deadline, a.visibility_timeout, a.redelivery_count) == (ref, 12.5, vt, 0)
    assert isinstance(a.lease_id, int) and a.lease_id != b.lease_id  # one id per lease


def test_the_module_keeps_the_seeds_names():
    import refqueue.queue as module

    first, second = module._next_lease_id(), module._next_lease_id()
    assert second > first  # a module-level counter
    assert next(module._lease_id_counter) > second
    assert module.logger.name == "refqueue.queue"


# -- SampleRefQueue: construction --------------------------------------------------------


def test_the_constructor_takes_the_seeds_arguments_in_the_seeds_order():
    events = []
    store = LocalFeatureStore(max_bytes=1000, high_watermark_bytes=600, low_watermark_bytes=200)
    queue = SampleRefQueue(store, VisibilityTimeout(7.0), 500, 100, events.append, events.append)
    assert queue.visibility_timeout == VisibilityTimeout(7.0)
    keywords = SampleRefQueue(
        store=store, visibility_timeout=None, high_watermark_bytes=None, low_watermark_bytes=None,
        on_pause=None, on_resume=None,
    )
    assert keywords.visibility_timeout.seconds == 30.0  # None means the 30 s default


def test_a_lease_carries_the_visibility_timeout_and_a_monotonic_deadline():
    _, queue, _ = store_and_queue(1, VisibilityTimeout(5.0))
    before = time.monotonic()
    lease = queue.acquire()
    after = time.monotonic()
    assert lease.visibility_timeout == VisibilityTimeout(5.0)
    assert before + 5.0 <= lease.deadline <= after + 5.0


def test_a_queue_low_watermark_must_be_strictly_less_than_its_high():
    store = LocalFeatureStore(max_bytes=1000, high_watermark_bytes=600, low_watermark_bytes=200)
    with pytest.raises(ValueError, match="strictly less than"):
        SampleRefQueue(store, high_watermark_bytes=300, low_watermark_bytes=300)


def test_a_queue_override_works_with_a_default_store():
    # The default store has watermarks (the seed's 192 MiB / 64 MiB), so a
    # queue may override either one alone, as long as the pair stays valid.
    SampleRefQueue(LocalFeatureStore(), high_watermark_bytes=100 << 20)
    SampleRefQueue(LocalFeatureStore(), low_watermark_bytes=10 << 20)
    SampleRefQueue(LocalFeatureStore(), high_watermark_bytes=1000, low_watermark_bytes=10)


# -- put / acquire / ack / fail ------------------------------------------------------------


def test_put_enqueues_a_ref_for_a_future_acquire_in_order():
    _, queue, refs = store_and_queue(3)
    assert queue.pending_count() == 3 and queue.outstanding_count() == 0
    leases = [queue.acquire(), queue.acquire(), queue.acquire()]
    assert [lease.ref for lease in leases] == refs
    assert queue.pending_count() == 0 and queue.outstanding_count() == 3


def test_each_acquire_mints_a_fresh_lease_id():
    _, queue, _ = store_and_queue(2)
    a = queue.acquire()
    queue.fail(a)
    b = queue.acquire()
    c = queue.acquire()
    assert len({a.lease_id, b.lease_id, c.lease_id}) == 3


def test_acquire_returns_none_on_a_transient_empty_poll_of_an_open_queue():
    _, queue, _ = store_and_queue(0)
    assert queue.acquire(poll_interval=0.01) is None
    assert queue.is_closed is False  # "transient empty poll: retry"


def test_ack_frees_the_slot_of_a_live_lease():
    _, queue, _ = store_and_queue(1)
    lease = queue.acquire()
    queue.ack(lease)
    assert queue.outstanding_count() == 0 and queue.pending_count() == 0


def test_a_stale_ack_does_not_pop_the_newer_live_lease():
    clock = ManualClock()
    _, queue, _ = store_and_queue(1, VisibilityTimeout(10.0), clock=clock)
    stale = queue.acquire()
    clock.advance(11)
    assert queue.reclaim_expired() == 1
    live = queue.acquire()
    queue.ack(stale)  # logged and ignored
    assert queue.outstanding_count() == 1
    queue.ack(live)
    assert queue.outstanding_count() == 0


def test_fail_returns_the_ref_for_a_retry_with_its_tensors_and_a_higher_redelivery_count():
    store, queue, refs = store_and_queue(1)
    first = queue.acquire()
    assert first.redelivery_count == 0
    queue.fail(first)
    assert queue.pending_count() == 1 and queue.outstanding_count() == 0
    again = queue.acquire()
    assert again.ref == refs[0] and again.redelivery_count == 1
    tensors, handle = store.get(again.ref)  # "without dropping its tensors"
    assert int(tensors["aux_hidden_states"][0]) == 0
    store.release(handle)


def test_a_stale_fail_is_a_no_op():
    clock = ManualClock()
    _, queue, _ = store_and_queue(1, VisibilityTimeout(10.0), clock=clock)
    stale = queue.acquire()
    clock.advance(11)
    queue.reclaim_expired()
    live = queue.acquire()
    queue.fail(stale)
    assert queue.pending_count() == 0 and queue.outstanding_count() == 1
    queue.ack(live)


def test_reclaim_expired_counts_and_redelivers_orphaned_leases():
    clock = ManualClock()
    _, queue, refs = store_and_queue(2, VisibilityTimeout(10.0), clock=clock)
    orphan = queue.acquire()
    assert queue.reclaim_expired() == 0  # a healthy queue returns 0
    clock.advance(10.5)
    assert queue.reclaim_expired() == 1
    queue.acquire()  # s1
    again = queue.acquire()
    assert again.ref == orphan.ref == refs[0] and again.redelivery_count == 1


# -- close ------------------------------------------------------------------------------


def test_close_keeps_enqueued_refs_and_acquire_drains_them_before_none():
    _, queue, refs = store_and_queue(2)
    held = queue.acquire()
    queue.close()
    assert queue.is_closed is True
    lease = queue.acquire()
    assert lease.ref == refs[1]  # pending refs are still handed out
    queue.ack(held)  # outstanding leases are left intact by close
    queue.ack(lease)
    assert queue.acquire() is None and queue.is_closed  # closed and drained: stop


def test_put_after_close_raises_runtime_error():
    store, queue, _ = store_and_queue(0)
    queue.close()
    with pytest.raises(RuntimeError):
        queue.put(put(store, "late"))


# -- backpressure ---------------------------------------------------------------------------


def test_put_does_not_block_on_backpressure():
    store = LocalFeatureStore(max_bytes=1000, high_watermark_bytes=300, low_watermark_bytes=100)
    queue = SampleRefQueue(store)
    for i in range(5):
        queue.put(put(store, f"s{i}", i, nbytes=100))
    assert store.health().high_watermark_hit and queue.pending_count() == 5


def test_put_blocks_until_below_is_one_step_when_not_paused():
    store = LocalFeatureStore(max_bytes=1000, high_watermark_bytes=300, low_watermark_bytes=100)
    queue = SampleRefQueue(store)
    queue.put_blocks_until_below(put(store, "s0", nbytes=100), poll_interval=0.01)
    assert queue.pending_count() == 1


def test_the_hysteresis_band_keeps_the_producer_paused_until_the_low_watermark():
    # Each call below takes exactly one step (abort_when says yes at once):
    # a paused producer gets RuntimeError, an admitted one returns.
    paused, resumed = [], []
    store = LocalFeatureStore(max_bytes=1000, high_watermark_bytes=300, low_watermark_bytes=150)
    queue = SampleRefQueue(store, on_pause=paused.append, on_resume=resumed.append)
    for i in range(3):
        queue.put(put(store, f"s{i}", i, nbytes=100))
    late = put(store, "late", nbytes=1)

    def one_step():
        queue.put_blocks_until_below(late, abort_when=lambda: True)

    with pytest.raises(RuntimeError):
        one_step()  # resident >= high: paused
    assert len(paused) == 1 and isinstance(paused[0], StoreHealth) and resumed == []
    queue.ack(queue.acquire())  # 200 bytes: inside the band, still paused
    with pytest.raises(RuntimeError):
        one_step()
    queue.ack(queue.acquire())  # 100 bytes <= low: resumed, enqueued
    one_step()
    assert len(paused) == 1 and len(resumed) == 1
    assert queue.pending_count() == 2  # s2 and late


def test_a_queue_high_watermark_overrides_the_stores():
    store = LocalFeatureStore(max_bytes=1000, high_watermark_bytes=900, low_watermark_bytes=100)
    queue = SampleRefQueue(store, high_watermark_bytes=200)
    queue.put(put(store, "s0", nbytes=150))
    queue.put(put(store, "s1", nbytes=100))
    with pytest.raises(RuntimeError):  # 250 >= the queue's 200, far below the store's 900
        queue.put_blocks_until_below(put(store, "s2", nbytes=1), abort_when=lambda: True)


def test_a_blocked_producer_resumes_once_consumers_drain_below_the_low_watermark():
    store = LocalFeatureStore(max_bytes=1000, high_watermark_bytes=300, low_watermark_bytes=150)
    pause = threading.Event()
    queue = SampleRefQueue(store, on_pause=lambda health: pause.set())
    for i in range(3):
        queue.put(put(store, f"s{i}", i, nbytes=100))
    late = put(store, "late", nbytes=1)
    steps = Steps()
    producer = threading.Thread(target=queue.put_blocks_until_below, args=(late,),
                                kwargs=dict(poll_interval=GUARD_S, abort_when=steps))
    producer.start()
    assert pause.wait(GUARD_S)
    steps.wait_for(1)
    assert queue.pending_count() == 3  # blocked: late is not enqueued
    queue.ack(queue.acquire())
    queue.ack(queue.acquire())  # an ack wakes the producer, which finds 100 bytes <= low
    producer.join(GUARD_S)
    assert not producer.is_alive()
    assert [queue.acquire().ref.sample_id for _ in range(2)] == ["s2", "late"]


def test_abort_when_unblocks_a_paused_producer_with_runtime_error():
    store = LocalFeatureStore(max_bytes=1000, high_watermark_bytes=300, low_watermark_bytes=150)
    queue = SampleRefQueue(store)
    for i in range(3):
        queue.put(put(store, f"s{i}", i, nbytes=100))
    stop = threading.Event()
    errors = []

    def produce():
        try:
            queue.put_blocks_until_below(put(store, "late", nbytes=1), poll_interval=0.01, abort_when=stop.is_set)
        except RuntimeError as exc:
            errors.append(exc)

    producer = threading.Thread(target=produce)
    producer.start()
    stop.set()  # a shutdown signal, without closing the queue
    producer.join(GUARD_S)
    assert not producer.is_alive() and len(errors) == 1
    assert not queue.is_closed and queue.pending_count() == 3


def test_closing_the_queue_unblocks_a_paused_producer_with_runtime_error():
    store = LocalFeatureStore(max_bytes=1000, high_watermark_bytes=300, low_watermark_bytes=150)
    queue = SampleRefQueue(store)
    for i in range(3):
        queue.put(put(store, f"s{i}", i, nbytes=100))
    steps = Steps()
    errors = []

    def produce():
        try:
            queue.put_blocks_until_below(put(store, "late", nbytes=1), poll_interval=GUARD_S, abort_when=steps)
        except RuntimeError as exc:
            errors.append(exc)

    producer = threading.Thread(target=produce)
    producer.start()
    steps.wait_for(1)  # paused and about to wait
    queue.close()
    producer.join(GUARD_S)
    assert not producer.is_alive() and len(errors) == 1


def test_callbacks_receive_the_store_health():
    seen = []
    store = LocalFeatureStore(max_bytes=1000, high_watermark_bytes=300, low_watermark_bytes=150)
    queue = SampleRefQueue(store, on_pause=lambda h: seen.append(("pause", h)),
                           on_resume=lambda h: seen.append(("resume", h)))
    for i in range(3):
        queue.put(put(store, f"s{i}", i, nbytes=100))
    with pytest.raises(RuntimeError):
        queue.put_blocks_until_below(put(store, "late", nbytes=1), abort_when=lambda: True)
    assert [kind for kind, _ in seen] == ["pause"]
    health = seen[0][1]
    assert isinstance(health, StoreHealth) and health.high_watermark_hit
    assert all(isinstance(v, (int, bool)) or v is None for v in
               (health.resident_bytes, health.capacity_bytes, health.sample_count))


# -- concurrency ------------------------------------------------------------------------------


def test_many_producers_and_consumers_deliver_every_ref_once():
    store = LocalFeatureStore(max_samples=None, max_bytes=4000, high_watermark_bytes=1600, low_watermark_bytes=400)
    queue = SampleRefQueue(store)
    got = []
    lock = threading.Lock()

    def produce(p):
        for i in range(50):
            queue.put_blocks_until_below(put(store, f"p{p}-{i}", i, nbytes=40), poll_interval=0.01)

    def consume():
        while True:
            lease = queue.acquire(poll_interval=0.01)
            if lease is None:
                if queue.is_drained:
                    return
                continue
            with lock:
                got.append(lease.ref.sample_id)
            queue.ack(lease)

    producers = [threading.Thread(target=produce, args=(p,)) for p in range(3)]
    consumers = [threading.Thread(target=consume) for _ in range(3)]
    for t in producers + consumers:
        t.start()
    for t in producers:
        t.join(GUARD_S)
    queue.close()
    for t in consumers:
        t.join(GUARD_S)
    assert sorted(got) == sorted(f"p{p}-{i}" for p in range(3) for i in range(50))
    assert store.health().resident_bytes == 0
