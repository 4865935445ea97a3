"""RefqueueCollector (issue 22): two queues in one real prometheus_client
registry, scraped and parsed from the exposition text."""

from __future__ import annotations

import re

import pytest
from events_helpers import refs

prometheus_client = pytest.importorskip("prometheus_client")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from refqueue._bench_queue import CounterStore  # noqa: E402
from refqueue.clock import ManualClock  # noqa: E402
from refqueue.events import EventLog  # noqa: E402
from refqueue.metrics import Metrics  # noqa: E402
from refqueue.prometheus import SERIES, RefqueueCollector  # noqa: E402
from refqueue.queue import SampleRefQueue, VisibilityTimeout  # noqa: E402


def exact(text):
    return "^" + re.escape(text) + "$"


def two_queues():
    """'train' with events (counters and gauges), 'eval' without (gauges only); one shared log would do too."""
    queues = {}
    for name, events in (("train", EventLog(Metrics())), ("eval", None)):
        store, clock = CounterStore(), ManualClock(0.0)
        q = SampleRefQueue(store, VisibilityTimeout(2.0), clock=clock, events=events)
        for ref in refs(3, prefix=name):
            store.hold(ref)
            q.put(ref)
        q.ack(q.acquire_nowait())
        q.acquire_nowait()  # one lease left open...
        clock.advance(3.0)  # ...and past its deadline (no reclaimer)
        queues[name] = q
    return queues


def scrape(registry):
    return list(text_string_to_metric_families(prometheus_client.generate_latest(registry).decode()))


def test_two_queues_share_a_registry_every_series_labelled_no_duplicates():
    queues = two_queues()
    registry = prometheus_client.CollectorRegistry()
    collector = RefqueueCollector(queues["train"], name="train").add(queues["eval"], name="eval")
    registry.register(collector)
    families = scrape(registry)
    family_names = [f.name for f in families]
    assert len(family_names) == len(set(family_names))
    seen = set()
    for family in families:
        assert family.name.startswith("refqueue_")
        for sample in family.samples:
            assert sample.labels.get("queue") in {"train", "eval"}, sample
            key = (sample.name, tuple(sorted(sample.labels.items())))
            assert key not in seen, key
            seen.add(key)
    value = {(s.name, s.labels["queue"]): s.value for f in families for s in f.samples if "le" not in s.labels}
    for q in ("train", "eval"):
        assert value[("refqueue_up", q)] == 1.0
        assert value[("refqueue_pending", q)] == 1.0 and value[("refqueue_outstanding", q)] == 1.0
        assert value[("refqueue_leases_past_deadline", q)] == 1.0
        assert value[("refqueue_oldest_open_lease_age_seconds", q)] == 3.0
        assert value[("refqueue_reclaimer_running", q)] == 0.0
        assert value[("refqueue_dead_letters_total", q)] == 0.0
    # event counters only where the queue records into a Metrics sink
    assert value[("refqueue_puts_total", "train")] == 3.0 and ("refqueue_puts_total", "eval") not in value
    assert value[("refqueue_lease_age_seconds_count", "train")] == 1.0
    # conventions: counters are *_total, the family types are what SERIES says
    types = {f.name: f.type for f in families}
    for _, name, kind, _ in SERIES:
        family = name.removesuffix("_total") if kind == "counter" else name
        if family in types:
            assert types[family] == kind, name
    assert types["refqueue_lease_age_seconds"] == "histogram"


def test_a_queue_that_raises_is_down_not_a_failed_scrape():
    queues = two_queues()

    class Broken:  # a queue whose metrics() raises, as a Redis queue's does with its server down
        def metrics(self):
            raise ConnectionError("server down")

    registry = prometheus_client.CollectorRegistry()
    registry.register(RefqueueCollector(Broken(), name="remote").add(queues["train"], name="train"))
    value = {(s.name, s.labels["queue"]): s.value for f in scrape(registry) for s in f.samples}
    assert value[("refqueue_up", "remote")] == 0.0 and value[("refqueue_up", "train")] == 1.0


def test_a_second_collector_is_refused_at_register_not_at_scrape():
    queues = two_queues()
    registry = prometheus_client.CollectorRegistry()
    registry.register(RefqueueCollector(queues["train"], name="train"))
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        registry.register(RefqueueCollector(queues["eval"], name="eval"))
    assert {s.labels["queue"] for f in scrape(registry) for s in f.samples} == {"train"}


def test_add_rejects_with_nothing_added():
    q = two_queues()["train"]
    collector = RefqueueCollector(q, name="train")
    with pytest.raises(ValueError, match=exact(
            "RefqueueCollector.add(name='train'): that name already labels another queue of this collector, and "
            "two queues with one label would be one series; pick another name")):
        collector.add(q, name="train")
    with pytest.raises(TypeError, match=exact(
            "RefqueueCollector.add(queue) needs a queue with a metrics() method, got 3 (int); pass a "
            "SampleRefQueue or RedisSampleRefQueue")):
        collector.add(3, name="x")
    with pytest.raises(TypeError, match=r"^RefqueueCollector.add\(name\) must be a str .*, got 7 \(int\)"):
        collector.add(q, name=7)
    with pytest.raises(ValueError, match=r"^RefqueueCollector.add\(name\) must not be empty"):
        collector.add(q, name="")
    assert collector.names == ["train"]
