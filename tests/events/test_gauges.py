"""Live gauges of SampleRefQueue.metrics() (issue 22) and diagnose()'s input checks."""

from __future__ import annotations

import math
import re
import threading

import pytest
from events_helpers import refs

from refqueue import diagnose
from refqueue._bench_queue import CounterStore
from refqueue.clock import ManualClock
from refqueue.errors import QueueClosed
from refqueue.events import EventLog
from refqueue.queue import SampleRefQueue, VisibilityTimeout

GUARD_S = 30


def exact(text):
    return "^" + re.escape(text) + "$"


def test_a_blocked_producer_counts_while_it_waits():
    store, clock = CounterStore(), ManualClock(0.0)
    parked = threading.Event()
    q = SampleRefQueue(store, VisibilityTimeout(4.0), clock=clock, high_watermark_bytes=1, low_watermark_bytes=0,
                       events=EventLog(_OnPark(parked)))
    first, second = refs(2)
    store.hold(first)
    q.put(first)
    store.hold(second)
    errors = []

    def producer():
        try:
            q.put_blocks_until_below(second, poll_interval=math.inf)
        except QueueClosed as exc:
            errors.append(exc)

    t = threading.Thread(target=producer, daemon=True)
    t.start()
    assert parked.wait(GUARD_S)
    m = q.metrics()
    assert (m["producers_blocked"], m["parked_bytes"], m["producer_blocked_seconds"]) == (1, second.estimated_bytes, 0.0)
    clock.advance(2.5)
    m = q.metrics()
    assert m["producer_blocked_seconds"] == 2.5  # the wait in progress counts
    assert m["effective_resident_bytes"] == first.estimated_bytes and m["unaccounted_bytes"] == 0
    lease = q.acquire_nowait()
    clock.advance(5.0)
    m = q.metrics()
    assert (m["oldest_open_lease_age_seconds"], m["leases_past_deadline"], m["most_overdue_lease_seconds"],
            m["leases_older_than_timeout"]) == (5.0, 1, 1.0, 1)
    assert m["producer_blocked_seconds"] == 7.5
    assert q.ack(lease)  # room: the producer is admitted
    t.join(GUARD_S)
    assert not t.is_alive() and not errors
    m = q.metrics()
    assert (m["producers_blocked"], m["parked_bytes"], m["producer_blocked_seconds"]) == (0, 0, 7.5)
    assert m["outstanding"] == 0 and m["pending"] == 1


class _OnPark:
    """An EventLog sink setting ``event`` at the park record (the producer is about to wait)."""

    def __init__(self, event):
        self._event = event

    def write(self, record):
        if record["ev"] == "park":
            self._event.set()


def test_orphans_and_dead_letters_in_the_gauges():
    store, clock = CounterStore(), ManualClock(0.0)
    q = SampleRefQueue(store, clock=clock, high_watermark_bytes=100, low_watermark_bytes=10)
    orphan, live = refs(2)
    store.hold(orphan)  # data put in the store, never in the queue
    store.hold(live)
    q.put(live)
    m = q.metrics()
    assert m["unaccounted_bytes"] == orphan.estimated_bytes and m["live_bytes"] == live.estimated_bytes
    assert q.dead_letter(q.acquire_nowait(), "poison")
    after = q.metrics()
    assert (after["dead_letters"], after["dead_letters_kept"]) == (1, 1)
    [condition] = diagnose(after, previous=m)
    assert condition.name == "dead_letters_growing" and condition.detail.startswith("1 sample(s) dead-lettered")


def test_orphan_residency_is_diagnosed():
    m = {"paused": True, "producers_blocked": 1, "resident_bytes": 900, "parked_bytes": 100,
         "effective_resident_bytes": 800, "unaccounted_bytes": 700, "live_bytes": 100,
         "low_watermark_bytes": 200, "high_watermark_bytes": 800}
    assert [c.name for c in diagnose(m)] == ["orphan_residency"]
    assert diagnose({**m, "unaccounted_bytes": 500}) == []  # without them still above low: not the orphans


def test_consumers_idle_on_an_empty_queue():
    m = {"closed": False, "pending": 0, "producers_blocked": 0, "consumers_waiting": 2,
         "consumer_empty_wait_seconds": 9.0, "producer_blocked_seconds": 0.0}
    assert [c.name for c in diagnose(m)] == ["producer_bottleneck"]
    assert diagnose({**m, "closed": True}) == [] and diagnose({**m, "consumers_waiting": 0}) == []


def test_diagnose_rejects_what_is_not_metrics():
    with pytest.raises(TypeError, match=exact(
            "diagnose(metrics) needs the dict queue.metrics() returns (or a Metrics snapshot), got [1] (list); "
            "pass queue.metrics()")):
        diagnose([1])
    with pytest.raises(TypeError, match=exact(
            "diagnose(metrics): metrics['leases_past_deadline'] is '2' (str), not a number; pass the dict "
            "queue.metrics() returned, unaltered")):
        diagnose({"leases_past_deadline": "2"})
    with pytest.raises(TypeError, match=exact(
            "diagnose(previous): previous['reclaimer_running'] is 1 (int), not True, False or None; pass the "
            "dict queue.metrics() returned, unaltered")):
        diagnose({}, previous={"reclaimer_running": 1})
    m = {"leases_past_deadline": 1, "reclaimer_running": False}
    before = dict(m)
    assert [c.name for c in diagnose(m)] == ["no_reclaimer"] and m == before  # reads, never writes
