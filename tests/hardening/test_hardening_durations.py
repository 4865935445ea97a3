"""Issue 12, defect 4: every duration is checked against the longest wait
``threading`` accepts, and ``math.inf`` means "no timeout" for poll intervals.

On 8456e91 durations above ``threading.TIMEOUT_MAX`` (about 9.2e9 s) passed
validation and failed later: ``start_reclaimer(1e10)`` started a thread that
died of ``OverflowError`` (``stop_reclaimer()`` reported nothing), and
``acquire(1e10)`` raised ``OverflowError``.  Now every duration is at most
``TIMEOUT_MAX``, rejected with a ``ValueError`` naming the value and the
maximum, and the two poll intervals (``acquire``, ``put_blocks_until_below``)
take ``math.inf`` for a wait with no timeout.
"""

from __future__ import annotations

import math
import re
import threading

import pytest
from bytes_store import features
from hardening_helpers import Worker, watch

from refqueue.queue import SampleRefQueue, VisibilityTimeout

pytestmark = pytest.mark.timeout(120)

TOO_LONG = 1e10
MAX = threading.TIMEOUT_MAX


def exact(message: str) -> str:
    return "^" + re.escape(message) + "$"


def state(q: SampleRefQueue, store) -> tuple:
    return (q.pending_count(), q.outstanding_count(), q.is_closed, q.is_paused, q.parked_bytes,
            q.dead_letters(), store.health(), q._reclaimer)


def test_the_maximum_is_threading_timeout_max():
    assert MAX == 9223372036.0  # 64-bit Linux; the messages below name it


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda q, lease: q.start_reclaimer(TOO_LONG),
         "start_reclaimer(interval) must be at most threading.TIMEOUT_MAX = 9223372036.0 s, got 10000000000.0; "
         "pass a number of seconds no larger than that"),
        (lambda q, lease: q.acquire(poll_interval=TOO_LONG),
         "acquire(poll_interval) must be at most threading.TIMEOUT_MAX = 9223372036.0 s, got 10000000000.0; "
         "pass a number of seconds no larger than that, or math.inf to wait with no timeout"),
        (lambda q, lease: q.put_blocks_until_below(lease.ref, poll_interval=TOO_LONG),
         "put_blocks_until_below(poll_interval) must be at most threading.TIMEOUT_MAX = 9223372036.0 s, got "
         "10000000000.0; pass a number of seconds no larger than that, or math.inf to wait with no timeout"),
        (lambda q, lease: q.extend(lease, TOO_LONG),
         "extend(seconds) must be at most threading.TIMEOUT_MAX = 9223372036.0 s, got 10000000000.0; pass a "
         "number of seconds no larger than that"),
        (lambda q, lease: q.extend(lease, math.inf),
         "extend(seconds) must be finite and > 0, got inf; pass a positive number of seconds"),
        (lambda q, lease: q.start_reclaimer(math.inf),
         "start_reclaimer(interval) must be finite and > 0, got inf; pass a positive number of seconds"),
    ],
    ids=["start_reclaimer", "acquire", "put_blocks_until_below", "extend", "extend-inf", "start_reclaimer-inf"],
)
def test_a_duration_above_the_maximum_is_rejected_up_front(make_queue, stored, store, call, message):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    before = state(q, store)
    with pytest.raises(ValueError, match=exact(message)):
        call(q, lease)
    assert state(q, store) == before  # no reclaimer thread started, nothing else changed
    assert q.ack(lease) is True


def test_a_visibility_timeout_above_the_maximum_is_rejected():
    with pytest.raises(ValueError, match=exact(
        "VisibilityTimeout.seconds must be at most threading.TIMEOUT_MAX = 9223372036.0 s, got 10000000000.0; "
        "pass a positive number of seconds, e.g. VisibilityTimeout(30.0)"
    )):
        VisibilityTimeout(TOO_LONG)
    assert VisibilityTimeout(MAX).seconds == MAX


def test_the_maximum_itself_is_accepted_everywhere(make_queue, stored):
    q = make_queue(visibility_timeout=VisibilityTimeout(MAX))
    q.start_reclaimer(MAX)
    q.put(stored("a"))
    lease = q.acquire(poll_interval=MAX)
    assert q.extend(lease, MAX) and q.ack(lease)
    q.put_blocks_until_below(stored("b"), poll_interval=MAX)
    q.stop_reclaimer()  # the thread waits on MAX seconds; stop wakes it at once


def test_a_default_reclaimer_interval_of_a_long_visibility_timeout_is_valid(make_queue):
    q = make_queue(visibility_timeout=VisibilityTimeout(MAX))
    q.start_reclaimer()  # MAX / 4
    assert q._reclaimer.interval == MAX / 4
    q.stop_reclaimer()


# -- math.inf: no timeout ---------------------------------------------------------------------


def test_acquire_with_an_infinite_poll_waits_until_a_ref_comes(make_queue, stored):
    q = make_queue()
    ready = watch(q, "_ready")
    consumer = Worker(lambda: q.acquire(poll_interval=math.inf))
    consumer.start()
    ready.until_entered(1)  # it waits (8456e91: ValueError at once)
    q.put(stored("a"))
    assert consumer.outcome().ref.sample_id == "a"


def test_acquire_with_an_infinite_poll_returns_none_when_the_queue_drains(make_queue, stored):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    q.close()
    ready = watch(q, "_ready")
    consumer = Worker(lambda: q.acquire(poll_interval=math.inf))
    consumer.start()
    ready.until_entered(1)  # closed, a lease outstanding: not drained, it waits
    assert q.ack(lease)
    assert consumer.outcome() is None and q.is_drained


def test_acquire_with_an_infinite_poll_on_a_drained_queue_returns_at_once(make_queue):
    q = make_queue()
    q.close()
    assert q.acquire(poll_interval=math.inf) is None


def test_a_blocked_put_with_an_infinite_poll_is_admitted_on_the_queues_signal(make_queue, store):
    q = make_queue(high_watermark_bytes=8, low_watermark_bytes=4)
    q.put(store.put("big", features(b"x" * 8)))
    lease = q.acquire_nowait()
    room = watch(q, "_room")
    producer = Worker(lambda: q.put_blocks_until_below(store.put("small", features(b"x" * 4)),
                                                       poll_interval=math.inf))
    producer.start()
    room.until_entered(1)  # paused, with work in the queue: it waits, with no timeout
    assert q.is_paused and q.parked_bytes == 4
    assert q.ack(lease)  # the ack wakes it; residency 4 <= low: resumed and admitted
    assert producer.outcome() is None
    assert not q.is_paused and q.pending_count() == 1 and q.parked_bytes == 0
