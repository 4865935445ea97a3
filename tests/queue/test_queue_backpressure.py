"""Backpressure that cannot deadlock (D8), with real threads over a
``LocalFeatureStore`` of CPU tensors.

The hysteresis of ``put_blocks_until_below`` reads the *effective* residency
``resident_bytes - parked_bytes`` (bytes of refs whose producers are blocked
in the call do not count), and a step admits its ref whenever the queue holds
no work, with the pause standing.  The first three tests are the deadlocks of
the old rule (residency compared whole): each blocked producer must return
within a second once the consumers have drained what they can.

Synchronisation is by barriers, events and bounded joins only.  A producer
reports "I took a step and was not admitted" through its ``abort_when``
(called exactly then, before it waits); waits that only a notification may
end get poll intervals of an hour, so a missing wakeup fails the join instead
of being covered by the poll.  Every test closes its queue on the way out,
which releases a producer the old rule would keep blocked.
"""

from __future__ import annotations

import random
import threading

import pytest

from refqueue.errors import PutAborted, QueueClosed
from refqueue.queue import SampleRefQueue, VisibilityTimeout

torch = pytest.importorskip("torch")
LocalFeatureStore = pytest.importorskip("refqueue.stores.local").LocalFeatureStore

pytestmark = [pytest.mark.torch, pytest.mark.timeout(120)]

HOUR = 3600.0
ADMIT_WITHIN = 1.0  # seconds a blocked producer may take to return once the queue holds no work
SETTLE = 10.0  # generous bound for steps that involve no backpressure at all
N = 16  # tokens of a standard sample


def put_sample(store, sample_id: str, n: int = N):
    """Store an eagle3 sample of ``n`` tokens: ``14 * n`` bytes."""
    tensors = {
        "aux_hidden_states": torch.full((n,), 1.0, dtype=torch.float32),
        "input_ids": torch.arange(n, dtype=torch.int64),
        "attention_mask": torch.ones(n, dtype=torch.bool),
        "loss_mask": torch.ones(n, dtype=torch.bool),
    }
    return store.put(sample_id, tensors, run_id="r", algorithm="eagle3", schema_version=1,
                     target_model_version="t", draft_weight_version=0, num_tokens=n)


B = put_sample(LocalFeatureStore(device="cpu"), "probe").estimated_bytes  # bytes of a standard sample


class Producer(threading.Thread):
    """Stores one sample (``store_first`` may be given the ref instead), waits
    at ``barrier`` if given, then calls ``put_blocks_until_below``.  ``blocked``
    is set each time a step does not admit the ref."""

    def __init__(self, q: SampleRefQueue, store, sample_id: str, *, n: int = N, ref=None,
                 barrier: threading.Barrier | None = None, poll_interval: float = 0.05) -> None:
        super().__init__(name=f"producer-{sample_id}", daemon=True)
        self.q, self.store, self.sample_id, self.n = q, store, sample_id, n
        self.ref = ref
        self.barrier = barrier
        self.poll_interval = poll_interval
        self.blocked = threading.Event()
        self.admitted = False
        self.error: BaseException | None = None

    def _not_admitted(self) -> bool:
        self.blocked.set()
        return False

    def run(self) -> None:
        try:
            if self.ref is None:
                self.ref = put_sample(self.store, self.sample_id, self.n)
            if self.barrier is not None:
                self.barrier.wait(timeout=SETTLE)
            self.q.put_blocks_until_below(self.ref, poll_interval=self.poll_interval, abort_when=self._not_admitted)
            self.admitted = True
        except BaseException as exc:  # reported by the test
            self.error = exc


class Consumer(threading.Thread):
    """Acquires and acks until ``limit`` acks (then ``done`` is set) or the
    queue is drained or ``stop`` is set."""

    def __init__(self, q: SampleRefQueue, limit: int | None = None) -> None:
        super().__init__(name="consumer", daemon=True)
        self.q, self.limit = q, limit
        self.acked: list[str] = []
        self.done = threading.Event()
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set() and (self.limit is None or len(self.acked) < self.limit):
                lease = self.q.acquire(poll_interval=0.01)
                if lease is None:
                    if self.q.is_drained:
                        break
                    continue
                assert self.q.ack(lease) is True
                self.acked.append(lease.ref.sample_id)
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()


def make(**kwargs):
    store = LocalFeatureStore(device="cpu", high_watermark_bytes=kwargs.pop("high", 2 * B),
                              low_watermark_bytes=kwargs.pop("low", B), max_bytes=kwargs.pop("max_bytes", None))
    return store, SampleRefQueue(store, VisibilityTimeout(60.0), **kwargs)


def join_all(threads, timeout: float) -> list[str]:
    """Join each thread within ``timeout`` seconds; the names of those still alive."""
    for t in threads:
        t.join(timeout)
    return [t.name for t in threads if t.is_alive()]


def release(q: SampleRefQueue, threads) -> None:
    """Cleanup: close the queue (a producer still blocked raises QueueClosed) and join."""
    q.close()
    for t in threads:
        if isinstance(t, Consumer):
            t.stop.set()
    for t in threads:
        t.join(SETTLE)


# -- the three deadlocks of the old rule ------------------------------------------------


def test_producers_that_stored_before_putting_do_not_block_each_other():
    # Both samples are resident before either step: the old rule saw 2b >= high
    # with nothing pending or leased, so nothing could ever lower it.
    store, q = make()
    barrier = threading.Barrier(2)
    producers = [Producer(q, store, "p1", barrier=barrier), Producer(q, store, "p2", barrier=barrier)]
    try:
        for p in producers:
            p.start()
        assert join_all(producers, ADMIT_WITHIN) == []
        assert [p.error for p in producers] == [None, None]
        assert q.pending_count() == 2 and q.parked_bytes == 0
    finally:
        release(q, producers)


def test_a_producer_whose_sample_is_larger_than_low_is_admitted_after_the_drain():
    # Its own 1.5b stay resident while it waits: the old rule waited for
    # residency <= low = b, which its own sample alone never allows.
    store, q = make()
    q.put(put_sample(store, "a"))
    q.put(put_sample(store, "c"))
    big = Producer(q, store, "big", n=N * 3 // 2)
    consumer = Consumer(q, limit=2)
    try:
        big.start()
        assert big.blocked.wait(SETTLE)  # 3.5b resident, 1.5b of it parked: 2b >= high, work left
        assert q.is_paused and big.ref.estimated_bytes > store.low_watermark_bytes
        consumer.start()
        assert consumer.done.wait(SETTLE) and consumer.error is None
        assert consumer.acked == ["a", "c"]
        assert join_all([big], ADMIT_WITHIN) == []
        assert big.admitted and big.error is None
        assert q.pending_count() == 1 and q.parked_bytes == 0
        q.ack(q.acquire_nowait())
        assert store.health().resident_bytes == 0
    finally:
        release(q, [big, consumer])


def test_orphaned_data_never_keeps_producers_blocked():
    # A producer dies between store.put and the queue put, twice: 2b of
    # orphans stay resident for good (>= high on their own).  The old rule kept
    # every other producer paused forever once the consumers had drained.
    store, q = make()
    q.put(put_sample(store, "a"))
    q.put(put_sample(store, "c"))
    orphans = []

    def dying_producer() -> None:
        orphans.append(put_sample(store, "o1"))
        orphans.append(put_sample(store, "o2"))
        # ... and it dies before the queue ever sees o1 or o2

    dying = threading.Thread(target=dying_producer, name="dying-producer", daemon=True)
    dying.start()
    dying.join(SETTLE)
    assert not dying.is_alive() and len(orphans) == 2
    producers = [Producer(q, store, "p1"), Producer(q, store, "p2")]
    consumer = Consumer(q)
    try:
        for p in producers:
            p.start()
        for p in producers:
            assert p.blocked.wait(SETTLE)  # 6b resident, 2b parked: 4b >= high, work left
        assert q.is_paused
        consumer.start()
        assert join_all(producers, ADMIT_WITHIN) == []
        assert [p.error for p in producers] == [None, None] and q.parked_bytes == 0
        q.close()
        assert join_all([consumer], SETTLE) == [] and consumer.error is None
        assert sorted(consumer.acked) == ["a", "c", "p1", "p2"]
        # The orphans only cost throughput: still counted, the pause stands,
        # until whoever owns them collects them.
        assert store.health().resident_bytes == 2 * B and q.is_paused
    finally:
        release(q, [*producers, consumer])
    for ref in orphans:
        assert store.scrub(ref) is True
    assert store.health().resident_bytes == 0


def test_scrubbing_the_orphans_lets_the_next_step_resume():
    resumed: list[int] = []
    store, q = make(on_resume=lambda h: resumed.append(h.resident_bytes))
    orphans = [put_sample(store, "o1"), put_sample(store, "o2")]
    q.put_blocks_until_below(put_sample(store, "p1"), abort_when=lambda: True)  # admitted into an empty queue
    assert q.is_paused
    for ref in orphans:
        store.scrub(ref)
    q.put_blocks_until_below(put_sample(store, "p2"), abort_when=lambda: True)  # 2b resident, b parked
    assert not q.is_paused and resumed == [2 * B] and q.pending_count() == 2


# -- parked bytes ------------------------------------------------------------------------


def _paused_queue_with_work(**kwargs):
    """A queue holding 2b of work (paused by the next blocking put) and a stored ref to put."""
    store, q = make(**kwargs)
    q.put(put_sample(store, "a"))
    q.put(put_sample(store, "c"))
    return store, q, put_sample(store, "p", n=2 * N)


def test_parked_bytes_count_the_blocked_refs_and_are_released_on_put_aborted():
    store, q, ref = _paused_queue_with_work()
    seen = []

    def abort_when() -> bool:
        # asked after each step that did not admit: the first time before the
        # producer waits (nothing parked yet: a one-step call parks nothing),
        # the second time after one poll interval spent parked
        seen.append(q.parked_bytes)
        return len(seen) == 2

    assert q.parked_bytes == 0
    with pytest.raises(PutAborted):
        q.put_blocks_until_below(ref, poll_interval=0.01, abort_when=abort_when)
    assert seen == [0, ref.estimated_bytes] and ref.estimated_bytes == 2 * B
    assert q.parked_bytes == 0 and q.is_paused and q.pending_count() == 2


def test_a_one_step_put_parks_nothing():
    store, q, ref = _paused_queue_with_work()
    seen = []

    def abort_when() -> bool:
        seen.append(q.parked_bytes)
        return True

    with pytest.raises(PutAborted):
        q.put_blocks_until_below(ref, abort_when=abort_when)
    assert seen == [0] and q.parked_bytes == 0 and q.is_paused


class Boom(Exception):
    pass


@pytest.mark.parametrize("raised", [Boom, KeyboardInterrupt])
def test_parked_bytes_are_released_when_abort_when_raises(raised):
    store, q, ref = _paused_queue_with_work()

    calls = []

    def abort_when() -> bool:
        calls.append(q.parked_bytes)
        if len(calls) == 1:
            return False  # wait one poll interval, parked
        raise raised("stop")

    with pytest.raises(raised):
        q.put_blocks_until_below(ref, poll_interval=0.01, abort_when=abort_when)
    assert calls == [0, ref.estimated_bytes]
    assert q.parked_bytes == 0 and q.pending_count() == 2


def test_parked_bytes_are_released_when_a_callback_raises():
    def on_pause(health):
        raise Boom("dashboard down")

    store, q, ref = _paused_queue_with_work(on_pause=on_pause)
    with pytest.raises(Boom):
        q.put_blocks_until_below(ref, abort_when=lambda: False)
    assert q.is_paused and q.parked_bytes == 0 and q.pending_count() == 2


def test_parked_bytes_are_released_when_the_queue_closes_under_a_blocked_producer():
    store, q, ref = _paused_queue_with_work()
    producer = Producer(q, store, "p", ref=ref, poll_interval=HOUR)
    try:
        producer.start()
        assert producer.blocked.wait(SETTLE)
        assert q.parked_bytes == ref.estimated_bytes
        q.close()  # wakes it; its next step is rejected
        assert join_all([producer], SETTLE) == []
        assert isinstance(producer.error, QueueClosed) and not producer.admitted
        assert q.parked_bytes == 0 and q.pending_count() == 2
    finally:
        release(q, [producer])


def test_a_rejected_first_step_parks_nothing():
    store, q, ref = _paused_queue_with_work()
    q.close()
    with pytest.raises(QueueClosed):
        q.put_blocks_until_below(ref)
    assert q.parked_bytes == 0 and not q.is_paused


def test_without_watermarks_nothing_is_ever_parked_or_paused():
    store = LocalFeatureStore(device="cpu")
    q = SampleRefQueue(store)
    for i in range(3):
        q.put_blocks_until_below(put_sample(store, f"s{i}"), abort_when=lambda: True)
    assert not q.is_paused and q.parked_bytes == 0 and q.pending_count() == 3


# -- wakeups and the standing pause ------------------------------------------------------


def test_a_resume_in_one_producers_step_wakes_the_other_blocked_producers():
    # high = 4b.  1b of work and 4b of orphans keep two producers paused; an
    # operator scrubs the orphans (the queue is not told), and a third
    # producer's step sees effective residency b <= low: it resumes, and that
    # resume alone must wake the two others (they poll once an hour).
    store, q = make(high=4 * B, low=B)
    q.put(put_sample(store, "a"))
    orphans = [put_sample(store, f"o{i}") for i in range(4)]
    producers = [Producer(q, store, "p1", poll_interval=HOUR), Producer(q, store, "p2", poll_interval=HOUR)]
    try:
        for p in producers:
            p.start()
        for p in producers:
            assert p.blocked.wait(SETTLE)
        assert q.is_paused and q.parked_bytes == 2 * B
        for ref in orphans:
            store.scrub(ref)
        q.put_blocks_until_below(put_sample(store, "p3"), abort_when=lambda: True)  # resumes and is admitted
        assert join_all(producers, ADMIT_WITHIN) == []
        assert [p.error for p in producers] == [None, None]
        assert q.pending_count() == 4 and q.parked_bytes == 0 and not q.is_paused
    finally:
        release(q, producers)


def test_an_admission_into_an_empty_queue_leaves_the_pause_standing():
    events: list[str] = []
    store, q = make(on_pause=lambda h: events.append("pause"), on_resume=lambda h: events.append("resume"))
    orphans = [put_sample(store, "o1"), put_sample(store, "o2")]
    # 3b resident, b parked: effective 2b >= high pauses; nothing pending or
    # leased, so the ref is admitted anyway and the pause stands.
    q.put_blocks_until_below(put_sample(store, "p1"), abort_when=lambda: True)
    assert q.is_paused and events == ["pause"] and q.pending_count() == 1
    # Now there is work: a paused step is refused.
    p2 = put_sample(store, "p2")
    with pytest.raises(PutAborted):
        q.put_blocks_until_below(p2, abort_when=lambda: True)
    q.ack(q.acquire_nowait())
    # Empty again: the retry is admitted, still paused, still no on_resume.
    q.put_blocks_until_below(p2, abort_when=lambda: True)
    assert q.is_paused and events == ["pause"] and q.pending_count() == 1
    q.ack(q.acquire_nowait())
    for ref in orphans:
        store.scrub(ref)
    q.put_blocks_until_below(put_sample(store, "p3"), abort_when=lambda: True)
    assert not q.is_paused and events == ["pause", "resume"]


# -- the bound under load ----------------------------------------------------------------


class WatchedStore(LocalFeatureStore):
    """Observes the queue from inside its critical section: the queue calls
    ``health()`` at the start of every step and ``scrub()`` in every live ack,
    both with its lock held, so the live records read there are exact.  Every
    admission is followed by one of the two before work can change again, so
    the maxima seen are the true maxima."""

    queue: SampleRefQueue | None = None
    max_work = 0
    max_resident = 0

    def _observe(self, resident: int) -> None:
        if self.queue is not None:
            work = sum(rec.ref.estimated_bytes for rec in self.queue._live.values())
            self.max_work = max(self.max_work, work)
            self.max_resident = max(self.max_resident, resident)

    def health(self):
        health = super().health()
        self._observe(health.resident_bytes)
        return health

    def scrub(self, ref):
        self._observe(super().health().resident_bytes)
        return super().scrub(ref)


def test_the_bound_holds_with_many_producers_and_mixed_sizes():
    producers, consumers, per_producer = 4, 3, 40
    sizes = (N // 2, N, 2 * N, 3 * N)
    largest = 14 * max(sizes)
    high, low = 2 * largest, largest // 2
    store = WatchedStore(device="cpu", high_watermark_bytes=high, low_watermark_bytes=low,
                         max_bytes=high + (producers + 1) * largest)  # a put past it would raise StoreFull
    events: list[str] = []
    paused_once = threading.Event()

    def on_pause(health) -> None:
        events.append("pause")
        paused_once.set()

    q = SampleRefQueue(store, VisibilityTimeout(60.0), on_pause=on_pause,
                       on_resume=lambda h: events.append("resume"))
    store.queue = q
    errors: list[BaseException] = []
    acked: list[str] = []
    record = threading.Lock()

    def produce(k: int) -> None:
        rng = random.Random(k)
        try:
            for i in range(per_producer):
                ref = put_sample(store, f"p{k}-{i}", rng.choice(sizes))
                q.put_blocks_until_below(ref)
        except BaseException as exc:
            errors.append(exc)

    def consume(k: int) -> None:
        rng = random.Random(100 + k)
        try:
            assert paused_once.wait(SETTLE)  # let backpressure build up first
            while True:
                lease = q.acquire(poll_interval=0.01)
                if lease is None:
                    if q.is_drained:
                        return
                    continue
                if rng.random() < 0.2:
                    assert q.fail(lease) is True  # a retry: the work stays
                    continue
                tensors, handle = store.get(lease.ref)
                store.release(handle)
                assert q.ack(lease) is True
                with record:
                    acked.append(lease.ref.sample_id)
        except BaseException as exc:
            errors.append(exc)

    producer_threads = [threading.Thread(target=produce, args=(k,), daemon=True) for k in range(producers)]
    consumer_threads = [threading.Thread(target=consume, args=(k,), daemon=True) for k in range(consumers)]
    try:
        for t in consumer_threads + producer_threads:
            t.start()
        assert join_all(producer_threads, 60.0) == []
        q.close()
        assert join_all(consumer_threads, 60.0) == []
    finally:
        q.close()
        store.queue = None
    assert errors == []
    assert len(acked) == len(set(acked)) == producers * per_producer
    assert store.max_work < high + largest
    assert store.max_resident < high + (producers + 1) * largest
    assert "pause" in events  # the producers really were held back
    assert events[0] == "pause" and all(a != b for a, b in zip(events, events[1:]))  # alternating
    assert q.parked_bytes == 0 and store.health().resident_bytes == 0
