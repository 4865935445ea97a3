"""Issue 12, defects 3 and 5: the background reclaimer's life.

On 8456e91 ``close()`` left the reclaimer running, and its thread held the
queue (a bound method), so ``start_reclaimer(); close(); del q`` leaked the
queue, its store and the thread, 300 times out of 300; and two threads
calling ``start_reclaimer`` at once could both start one, leaving one that no
``stop_reclaimer`` would ever stop.

Now ``close()`` stops the reclaimer of a drained queue at once (and one of a
queue with leases outstanding as soon as it drains), the thread holds its
queue by a weak reference, and start/stop are atomic.  Joins are bounded;
intervals of an hour make sure nothing here depends on a reclaim tick unless
the test says so.
"""

from __future__ import annotations

import gc
import threading
import weakref

import pytest
from bytes_store import BytesStore, features
from hardening_helpers import Worker, watch

from refqueue.clock import ManualClock
from refqueue.errors import PutAborted
from refqueue.queue import SampleRefQueue, VisibilityTimeout

pytestmark = pytest.mark.timeout(120)

HOUR = 3600.0
JOIN = 30.0  # the bound on every join: a thread still alive after it is a failure


def reclaimer_threads(q: SampleRefQueue) -> list[threading.Thread]:
    name = f"refqueue-reclaimer-{q.epoch[:8]}"
    return [t for t in threading.enumerate() if t.name == name]


def assert_ends(thread: threading.Thread) -> None:
    thread.join(JOIN)
    assert not thread.is_alive(), f"{thread.name} still runs {JOIN} s later"


# -- defect 3: close() stops the reclaimer; the thread does not keep the queue alive -------


def test_close_stops_the_reclaimer_of_a_drained_queue(make_queue):
    q = make_queue()
    q.start_reclaimer(HOUR)
    (thread,) = reclaimer_threads(q)
    q.close()
    assert not thread.is_alive()  # close joined it (8456e91: it ran for the next hour)
    q.stop_reclaimer()  # nothing to report
    q.start_reclaimer(HOUR)  # a drained queue's new reclaimer ends by itself
    assert_ends(q._reclaimer._thread)


def test_start_reclaimer_then_close_then_forget_leaks_nothing():
    """The audit's case: 300 times ``start_reclaimer(); close(); del q``."""
    queues, stores, threads = [], [], []
    for _ in range(300):
        store = BytesStore()
        q = SampleRefQueue(store, VisibilityTimeout(10.0), clock=ManualClock())
        q.start_reclaimer(HOUR)
        threads.extend(reclaimer_threads(q))
        q.close()
        queues.append(weakref.ref(q))
        stores.append(weakref.ref(store))
        del q, store
    gc.collect()
    for thread in threads:
        assert_ends(thread)
    assert sum(r() is not None for r in queues) == 0
    assert sum(r() is not None for r in stores) == 0


def test_a_forgotten_queue_is_collected_and_its_reclaimer_ends():
    """No close at all: the thread's weak reference lets the queue go, and
    the reference's callback wakes the thread, which ends."""
    refs, threads = [], []
    for i in range(50):
        store = BytesStore()
        q = SampleRefQueue(store, VisibilityTimeout(10.0), clock=ManualClock())
        q.put(store.put(f"s{i}", features(b"x")))
        q.acquire_nowait()  # a lease outstanding: not drained
        q.start_reclaimer(HOUR)
        threads.extend(reclaimer_threads(q))
        refs.append((weakref.ref(q), weakref.ref(store)))
        del q, store
    gc.collect()
    assert all(q() is None and s() is None for q, s in refs)  # 8456e91: every one alive
    for thread in threads:
        assert_ends(thread)


def test_a_closed_queue_keeps_its_reclaimer_until_it_drains(make_queue, stored, clock):
    """A lease of a crashed consumer must still come back after close (D3):
    the reclaimer runs on, and ends by itself once the queue is drained."""
    q = make_queue()
    q.put(stored("a"))
    q.acquire_nowait()  # its consumer crashes
    ready = watch(q, "_ready")
    consumer = Worker(lambda: q.acquire(poll_interval=HOUR))
    consumer.start()
    ready.until_entered(1)
    q.start_reclaimer(0.001)
    q.close()
    (thread,) = reclaimer_threads(q)
    assert thread.is_alive() and not q.is_drained
    clock.advance(10.0)
    lease = consumer.outcome()  # the reclaimer's requeue woke it
    assert lease.ref.sample_id == "a" and lease.redelivery_count == 1
    assert q.ack(lease) and q.is_drained
    assert_ends(thread)  # ends by itself on its next tick
    q.stop_reclaimer()


def test_close_from_the_reclaimer_thread_itself_does_not_deadlock(store):
    class ClosesWhenItReclaims(SampleRefQueue):
        def reclaim_expired(self) -> int:
            count = super().reclaim_expired()
            self.close()  # on the reclaimer thread: it must not join itself
            return count

    q = ClosesWhenItReclaims(store, VisibilityTimeout(10.0), clock=ManualClock())
    q.start_reclaimer(0.001)
    (thread,) = reclaimer_threads(q)
    assert_ends(thread)
    assert q.is_drained
    q.stop_reclaimer()


def test_close_from_a_callback_stops_the_reclaimer(stored):
    """A pause callback acks the last lease and closes the queue: close joins
    the reclaimer from the producer's thread, no lock held, no deadlock."""
    store = BytesStore()
    held = {}

    def on_pause(health):
        assert q.ack(held["lease"])
        q.close()

    q = SampleRefQueue(store, VisibilityTimeout(10.0), high_watermark_bytes=8, low_watermark_bytes=4,
                       on_pause=on_pause, clock=ManualClock())
    q.put(store.put("big", features(b"x" * 8)))
    held["lease"] = q.acquire_nowait()
    q.start_reclaimer(HOUR)
    (thread,) = reclaimer_threads(q)
    with pytest.raises(PutAborted):
        q.put_blocks_until_below(store.put("small", features(b"x" * 4)), abort_when=lambda: True)
    assert q.is_drained and not thread.is_alive()


# -- defect 5: start and stop are atomic ---------------------------------------------------


def test_two_threads_starting_a_reclaimer_at_once_start_exactly_one(make_queue):
    for trial in range(200):
        q = make_queue()
        barrier = threading.Barrier(2)
        outcomes: list[str] = []

        def start(q=q, barrier=barrier, outcomes=outcomes):
            barrier.wait()
            try:
                q.start_reclaimer(HOUR)
                outcomes.append("started")
            except RuntimeError:
                outcomes.append("refused")

        workers = [Worker(start) for _ in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.outcome(JOIN)
        assert sorted(outcomes) == ["refused", "started"], f"trial {trial}: {outcomes}"
        q.stop_reclaimer()
        assert reclaimer_threads(q) == [], f"trial {trial}: a reclaimer survived stop_reclaimer()"


def test_concurrent_stops_and_starts_leave_at_most_one_reclaimer(make_queue):
    q = make_queue()
    barrier = threading.Barrier(4)

    def churn(start: bool):
        barrier.wait()
        for _ in range(200):
            if start:
                try:
                    q.start_reclaimer(HOUR)
                except RuntimeError:
                    pass
            else:
                q.stop_reclaimer()

    workers = [Worker(lambda s=s: churn(s)) for s in (True, True, False, False)]
    for w in workers:
        w.start()
    for w in workers:
        w.outcome(JOIN)
    assert len(reclaimer_threads(q)) <= 1
    q.stop_reclaimer()
    assert reclaimer_threads(q) == []
