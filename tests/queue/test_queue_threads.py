"""Blocking calls and threads: wakeups without poll latency (D6), terminal
None for waiting consumers (D3), blocked producers (D4), the background
reclaimer and the context manager.

Synchronisation is by events and conditions only.  To know that a thread is
really blocked inside the queue before poking it, a test swaps the queue's
condition for a ``SignallingCondition``, which reports each ``wait`` while
the queue lock is still held: whatever the test does next under that lock
happens after the waiter is registered.  Waits are given poll intervals of an
hour: a wakeup that fell back on the poll would hang the test into its
timeout instead of passing.
"""

from __future__ import annotations

import re
import threading

import pytest
from bytes_store import features

from refqueue.errors import PutAborted, QueueClosed
from refqueue.queue import SampleRefQueue, VisibilityTimeout

pytestmark = pytest.mark.timeout(60)

HOUR = 3600.0


def exact(message: str) -> str:
    return "^" + re.escape(message) + "$"


class SignallingCondition(threading.Condition):
    """A ``Condition`` that counts the waits entered, for the test to wait on."""

    def __init__(self, lock) -> None:
        super().__init__(lock)
        self.waits = 0
        self._seen = threading.Condition()  # notified on every wait entered

    def wait(self, timeout=None):
        with self._seen:
            self.waits += 1
            self._seen.notify_all()
        return super().wait(timeout)

    def until_waits(self, count: int) -> None:
        with self._seen:
            while self.waits < count:
                self._seen.wait()


def watch(q: SampleRefQueue, name: str) -> SignallingCondition:
    """Replace ``q._ready`` or ``q._room`` by a signalling condition on the queue lock."""
    cond = SignallingCondition(q._lock)
    setattr(q, name, cond)
    return cond


class Worker(threading.Thread):
    """Runs ``fn`` and keeps its result or exception."""

    def __init__(self, fn) -> None:
        super().__init__(daemon=True)
        self.fn = fn
        self.result = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:
            self.error = exc

    def outcome(self):
        self.join()
        if self.error is not None:
            raise self.error
        return self.result


# -- D6: wakeups ---------------------------------------------------------------------


def test_d6_a_put_wakes_a_blocked_acquire_at_once(make_queue, stored):
    q = make_queue()
    ready = watch(q, "_ready")
    consumer = Worker(lambda: q.acquire(poll_interval=HOUR))
    consumer.start()
    ready.until_waits(1)
    q.put(stored("a"))
    assert consumer.outcome().ref.sample_id == "a"


def test_d6_each_put_wakes_one_of_several_waiters(make_queue, stored):
    q = make_queue()
    ready = watch(q, "_ready")
    consumers = [Worker(lambda: q.acquire(poll_interval=HOUR)) for _ in range(3)]
    for c in consumers:
        c.start()
    ready.until_waits(3)
    for sid in ("a", "b", "c"):
        q.put(stored(sid))
    assert sorted(c.outcome().ref.sample_id for c in consumers) == ["a", "b", "c"]


@pytest.mark.parametrize("how", ["fail", "reclaim"])
def test_d6_a_requeue_wakes_a_blocked_acquire(make_queue, stored, clock, how):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    ready = watch(q, "_ready")
    consumer = Worker(lambda: q.acquire(poll_interval=HOUR))
    consumer.start()
    ready.until_waits(1)
    if how == "fail":
        assert q.fail(lease) is True
    else:
        clock.advance(10.0)
        assert q.reclaim_expired() == 1
    again = consumer.outcome()
    assert again.ref == lease.ref and again.redelivery_count == 1


def test_acquire_gives_up_after_its_poll_interval(make_queue):
    q = make_queue()
    assert q.acquire(poll_interval=0.01) is None
    assert not q.is_drained


# -- D3: waiting consumers learn of the drain at once ---------------------------------


def test_d3_close_of_an_idle_queue_wakes_waiters_with_none(make_queue):
    q = make_queue()
    ready = watch(q, "_ready")
    consumers = [Worker(lambda: q.acquire(poll_interval=HOUR)) for _ in range(2)]
    for c in consumers:
        c.start()
    ready.until_waits(2)
    q.close()
    assert [c.outcome() for c in consumers] == [None, None]


@pytest.mark.parametrize("finish", ["ack", "dead_letter", "max_deliveries"])
def test_d3_the_last_completion_after_close_wakes_waiters_with_none(make_queue, stored, finish):
    q = make_queue(max_deliveries=1)
    q.put(stored("a"))
    lease = q.acquire_nowait()
    q.close()
    ready = watch(q, "_ready")
    consumer = Worker(lambda: q.acquire(poll_interval=HOUR))
    consumer.start()
    ready.until_waits(1)
    if finish == "ack":
        assert q.ack(lease)
    elif finish == "dead_letter":
        assert q.dead_letter(lease, "poison")
    else:
        assert q.fail(lease)  # delivered max_deliveries times: dead-lettered, not requeued
    assert consumer.outcome() is None
    assert q.is_drained


# -- D4: blocked producers --------------------------------------------------------------


def paused_queue(store, stored, **kwargs):
    """A queue whose producer will pause: 12 bytes resident, watermarks 10/4."""
    paused = threading.Event()  # set by on_pause
    q = SampleRefQueue(store, VisibilityTimeout(10.0), 10, 4, lambda h: paused.set(), **kwargs)
    q.put(stored("big", 12))
    return q, paused


def test_d4_an_ack_wakes_a_paused_producer(store, stored):
    resumed = []
    q, paused = paused_queue(store, stored, on_resume=lambda h: resumed.append(h.resident_bytes))
    ref = stored("a", 1)
    producer = Worker(lambda: q.put_blocks_until_below(ref, poll_interval=HOUR))
    producer.start()
    paused.wait()
    assert q.ack(q.acquire_nowait()) is True  # 1 byte left: <= low
    producer.outcome()
    assert resumed == [1] and q.pending_count() == 1 and not q.is_paused


def test_d4_an_ack_between_the_step_and_the_wait_is_not_missed(store, stored):
    # on_pause runs after the producer's step and before its wait: the ack it
    # makes there must still wake the producer.
    q = None

    def on_pause(health):
        q.ack(q.acquire_nowait())

    q = SampleRefQueue(store, None, 10, 4, on_pause)
    q.put(stored("big", 12))
    ref = stored("a", 1)
    producer = Worker(lambda: q.put_blocks_until_below(ref, poll_interval=HOUR))
    producer.start()
    producer.outcome()
    assert q.pending_count() == 1


def test_d4_close_wakes_a_paused_producer_with_queue_closed(store, stored):
    q, paused = paused_queue(store, stored)
    room = watch(q, "_room")
    producer = Worker(lambda: q.put_blocks_until_below(stored("a", 1), poll_interval=HOUR))
    producer.start()
    paused.wait()
    room.until_waits(1)
    q.close()
    with pytest.raises(QueueClosed, match=exact("put_blocks_until_below('a') after close(); the queue takes no more refs")):
        producer.outcome()


def test_d4_abort_when_is_asked_after_each_step(store, stored):
    q, paused = paused_queue(store, stored)
    stop = threading.Event()
    asked = []

    def abort_when():
        asked.append(stop.is_set())
        return stop.is_set()

    room = watch(q, "_room")
    producer = Worker(lambda: q.put_blocks_until_below(stored("a", 1), poll_interval=HOUR, abort_when=abort_when))
    producer.start()
    room.until_waits(1)  # one step, asked once, now waiting
    stop.set()
    q.ack(q.acquire_nowait())  # 1 byte left: the woken producer's next step resumes
    producer.outcome()
    assert asked == [False]  # enqueued on the second step, never asked again
    assert q.pending_count() == 1


def test_d4_a_producer_woken_while_still_above_low_asks_abort_when(store, stored):
    q, paused = paused_queue(store, stored)
    stop = threading.Event()
    room = watch(q, "_room")
    ref = stored("a", 1)
    producer = Worker(lambda: q.put_blocks_until_below(ref, poll_interval=HOUR, abort_when=stop.is_set))
    producer.start()
    room.until_waits(1)
    stop.set()
    extra = stored("c", 6)  # 19 bytes
    q.put(extra)
    q.ack(q.acquire_nowait())  # big acked: 7 bytes, still above low: stays paused, aborts
    with pytest.raises(PutAborted):
        producer.outcome()
    assert q.is_paused and q.pending_count() == 1


def test_callbacks_of_concurrent_producers_alternate(store):
    # Each blocked producer holds one 5-byte sample resident that is not yet
    # enqueued, so low must be >= 3 * 5 or the producers could never resume.
    events = []
    first_pause = threading.Event()  # set by on_pause: the consumer starts only then

    def on_pause(health):
        events.append("pause")
        first_pause.set()

    q = SampleRefQueue(store, None, 40, 20, on_pause, lambda h: events.append("resume"))
    def produce(k):
        for i in range(150):
            ref = store.put(f"p{k}-{i}", features(b"x" * 5))
            q.put_blocks_until_below(ref, poll_interval=0.01)

    def consume():
        first_pause.wait()
        while not q.is_drained:
            lease = q.acquire(poll_interval=0.01)
            if lease is not None:
                q.ack(lease)

    producers = [Worker(lambda k=k: produce(k)) for k in range(3)]
    consumer = Worker(consume)
    for t in producers + [consumer]:
        t.start()
    for p in producers:
        p.outcome()
    q.close()
    consumer.outcome()
    assert events[::2] == ["pause"] * len(events[::2])
    assert events[1::2] == ["resume"] * len(events[1::2])
    assert len(events) >= 2 and len(events) % 2 == 0 and not q.is_paused
    assert store.health().resident_bytes == 0


# -- the background reclaimer and the context manager -----------------------------------


def test_the_reclaimer_takes_back_expired_leases(make_queue, stored, clock):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    ready = watch(q, "_ready")
    consumer = Worker(lambda: q.acquire(poll_interval=HOUR))
    consumer.start()
    ready.until_waits(1)
    q.start_reclaimer(0.001)
    clock.advance(10.0)
    again = consumer.outcome()  # woken by the reclaimer's requeue
    assert again.ref == lease.ref and again.redelivery_count == 1
    q.stop_reclaimer()
    q.stop_reclaimer()


def test_only_one_reclaimer_runs(make_queue):
    q = make_queue()
    q.start_reclaimer(HOUR)
    with pytest.raises(RuntimeError, match=exact(
        "start_reclaimer: a reclaimer is already running every 3600.0 s; call stop_reclaimer() first"
    )):
        q.start_reclaimer(1.0)
    q.stop_reclaimer()
    q.start_reclaimer()  # default interval: a quarter of the visibility timeout
    assert q._reclaimer.interval == 2.5
    q.stop_reclaimer()


def test_a_reclaimer_that_fails_reports_it_on_stop(make_queue, stored, store, clock):
    q = make_queue(max_deliveries=1)
    q.put(stored("a"))
    q.acquire_nowait()
    store.close()  # the dead-letter's scrub will raise
    clock.advance(10.0)
    q.start_reclaimer(0.001)
    q._reclaimer._thread.join()  # it stops by itself on the error
    with pytest.raises(RuntimeError, match=exact(
        "the background reclaimer stopped early because reclaim_expired raised "
        "StoreClosed('BytesStore.scrub after close()'); fix the cause (a closed store?) and start a new one"
    )):
        q.stop_reclaimer()
    assert q.outstanding_count() == 1  # the rejected dead-letter changed nothing


def test_the_context_manager_starts_nothing_and_closes(make_queue, stored):
    with make_queue() as q:
        assert q._reclaimer is None
        q.put(stored("a"))
        q.start_reclaimer(HOUR)
    assert q.is_closed and q._reclaimer is None
    assert q.acquire_nowait().ref.sample_id == "a"  # closing drains, it does not discard


def test_threads_share_the_work_exactly_once(make_queue, store):
    q = make_queue()
    acked: list[list[str]] = [[] for _ in range(4)]

    def consume(k):
        while True:
            lease = q.acquire(poll_interval=0.05)
            if lease is None:
                if q.is_drained:
                    return
                continue
            if q.ack(lease):
                acked[k].append(lease.ref.sample_id)

    def produce(k):
        for i in range(500):
            q.put(store.put(f"p{k}-{i}", features(b"x")))

    threads = [Worker(lambda k=k: consume(k)) for k in range(4)]
    producers = [Worker(lambda k=k: produce(k)) for k in range(2)]
    for t in threads + producers:
        t.start()
    for p in producers:
        p.outcome()
    q.close()
    for t in threads:
        t.outcome()
    everything = sorted(sum(acked, []))
    assert everything == sorted(f"p{k}-{i}" for k in range(2) for i in range(500))
    assert store.health().resident_bytes == 0
