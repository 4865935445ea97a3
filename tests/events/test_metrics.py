"""Metrics folded from events: counts, lease ages, paused time, bottleneck, prometheus names."""

from __future__ import annotations

import pytest
from events_helpers import refs

from refqueue._bench_queue import CounterStore
from refqueue.clock import ManualClock
from refqueue.events import EventLog, RingSink
from refqueue.metrics import PROMETHEUS_NAMES, Metrics, export_prometheus
from refqueue.queue import SampleRefQueue, VisibilityTimeout


def metered_queue(**kwargs):
    metrics = Metrics()
    ring = RingSink()
    store = CounterStore()
    clock = ManualClock(0.0)
    q = SampleRefQueue(store, VisibilityTimeout(1.0), clock=clock, events=EventLog(metrics, ring), **kwargs)
    return q, store, clock, metrics, ring


def test_counts_and_lease_ages_follow_the_operations():
    q, store, clock, metrics, ring = metered_queue(max_deliveries=2)
    for ref in refs(4):
        store.hold(ref)
        q.put(ref)
    a = q.acquire()
    clock.advance(0.003)
    q.ack(a)
    q.ack(a)  # stale
    b = q.acquire()
    q.fail(b)
    c = q.acquire()
    clock.advance(2.0)
    assert q.reclaim_expired() == 1
    snap = q.metrics()
    assert snap["puts"] == 4 and snap["acquires"] == 3
    assert snap["acks_live"] == 1 and snap["acks_stale"] == 1 and snap["fails"] == 1
    assert snap["reclaims"] == 1 and snap["redeliveries"] == 2 and snap["dead_letters"] == 0
    assert snap["pending"] == 3 and snap["outstanding"] == 0
    ages = snap["lease_age_seconds"]
    assert ages["count"] == 2 and ages["max"] == pytest.approx(0.003)
    # a acked 0.003 s after its acquire, b failed at once
    assert [(bound, n) for bound, n in ages["buckets"] if n] == [(0.001, 1), (0.005, 1)]
    del c
    # folding the recorded log gives the same counters; the live gauges read the store and the reclaimer
    folded = Metrics.from_records(ring.records()).snapshot()
    live = q.gauges()
    assert {k: v for k, v in snap.items() if k in folded and k not in live} == {
        k: v for k, v in folded.items() if k not in live}
    assert (snap["resident_bytes"], folded["resident_bytes"]) == (store.health().resident_bytes, 0)


def test_paused_time_and_bottleneck_from_a_blocked_producer():
    store = CounterStore()
    metrics = Metrics()
    clock = ManualClock(0.0)
    q = SampleRefQueue(store, clock=clock, high_watermark_bytes=1, low_watermark_bytes=0,
                       events=EventLog(metrics))
    first, second = refs(2)
    store.hold(first)
    q.put(first)  # work in the queue, 1+ bytes resident
    store.hold(second)
    from refqueue.errors import PutAborted

    with pytest.raises(PutAborted):
        q.put_blocks_until_below(second, poll_interval=0.01, abort_when=lambda: clock.advance(0.5) > 100)
    snap = q.metrics()
    assert snap["paused"] is True and snap["pauses"] == 1
    assert snap["paused_seconds"] > 0
    assert snap["producer_blocked_seconds"] > 0 and snap["bottleneck"] == "consumer"


def test_metrics_without_a_metrics_sink_are_the_live_gauges():
    q = SampleRefQueue(CounterStore(), events=EventLog(RingSink()))
    m = q.metrics()
    assert m["counters"] is False and "puts" not in m
    assert m == {**q.gauges(), "clock": m["clock"], "counters": False}


def test_prometheus_export_under_the_documented_names():
    prometheus_client = pytest.importorskip("prometheus_client")
    q, store, clock, metrics, _ = metered_queue()
    for ref in refs(3):
        store.hold(ref)
        q.put(ref)
    q.ack(q.acquire())
    registry = prometheus_client.CollectorRegistry()
    with pytest.warns(DeprecationWarning, match="RefqueueCollector"):
        export_prometheus(metrics, registry=registry)
    text = prometheus_client.generate_latest(registry).decode()
    for name, kind, _ in PROMETHEUS_NAMES.values():
        assert name in text
    assert "refqueue_puts_total 3.0" in text and "refqueue_pending 2.0" in text
