"""``RefqueueCollector``: a queue's metrics as Prometheus series (issue 22).

The ``prometheus_client`` custom-collector idiom: one collector object, any
number of queues, every series labelled ``queue="<name>"``; registered once
per registry::

    from prometheus_client import CollectorRegistry
    from refqueue.prometheus import RefqueueCollector

    registry = CollectorRegistry()
    collector = RefqueueCollector(train_queue, name="train")
    collector.add(eval_queue, name="eval")          # same collector, another label value
    registry.register(collector)

Each scrape calls every queue's ``metrics()`` (the in-process
``SampleRefQueue``'s live gauges plus, with a ``Metrics`` sink, its event
counters; the Redis queue's server gauges) and yields one family per name,
with one sample per queue.  A queue whose ``metrics()`` raises (a Redis
server down) is left out of that scrape and ``refqueue_up{queue=...}`` is 0
for it: the scrape itself never fails.  ``describe()`` names the families,
so a second ``RefqueueCollector`` in the same registry is refused by
``registry.register`` (``Duplicated timeseries``), never at scrape time:
add the queue to the first one instead.  Names follow the Prometheus
conventions: counters end in ``_total``, durations are ``_seconds``, sizes
``_bytes``.  ``SERIES`` lists them (docs/EVENTS.md has the table).
"""

from __future__ import annotations

import threading
from typing import Any

from refqueue._checks import describe

__all__ = ["RefqueueCollector", "SERIES"]

# (metrics key, family name as exposed, kind, help).  A key the queue's
# metrics() lacks (or holds None for) yields no sample for that queue.
SERIES: tuple[tuple[str, str, str, str], ...] = (
    ("pending", "refqueue_pending", "gauge", "samples pending (waiting for a consumer)"),
    ("outstanding", "refqueue_outstanding", "gauge", "leases outstanding (samples leased now)"),
    ("paused", "refqueue_paused", "gauge", "1 while the producer side is paused (D4)"),
    ("closed", "refqueue_closed", "gauge", "1 once the queue is closed"),
    ("producers_blocked", "refqueue_producers_blocked", "gauge",
     "producers parked in put_blocks_until_below now"),
    ("parked_bytes", "refqueue_parked_bytes", "gauge", "bytes of the refs blocked producers park now (D8)"),
    ("consumers_waiting", "refqueue_consumers_waiting", "gauge", "consumers waiting in acquire on an empty queue now"),
    ("oldest_open_lease_age_seconds", "refqueue_oldest_open_lease_age_seconds", "gauge",
     "age of the oldest outstanding lease (since its acquire)"),
    ("leases_past_deadline", "refqueue_leases_past_deadline", "gauge",
     "outstanding leases whose deadline passed and that no reclaim took back yet"),
    ("most_overdue_lease_seconds", "refqueue_most_overdue_lease_seconds", "gauge",
     "how long the most overdue outstanding lease is past its deadline"),
    ("leases_older_than_timeout", "refqueue_leases_older_than_timeout", "gauge",
     "outstanding leases held longer than the visibility timeout"),
    ("visibility_timeout_seconds", "refqueue_visibility_timeout_seconds", "gauge", "the queue's visibility timeout"),
    ("reclaimer_running", "refqueue_reclaimer_running", "gauge", "1 while this client's background reclaimer runs"),
    ("resident_bytes", "refqueue_resident_bytes", "gauge", "bytes resident in the store"),
    ("resident_samples", "refqueue_resident_samples", "gauge", "samples resident in the store"),
    ("capacity_bytes", "refqueue_capacity_bytes", "gauge", "the store's byte cap"),
    ("high_watermark_bytes", "refqueue_high_watermark_bytes", "gauge", "producers pause at this residency"),
    ("low_watermark_bytes", "refqueue_low_watermark_bytes", "gauge", "producers resume at this residency"),
    ("effective_resident_bytes", "refqueue_effective_resident_bytes", "gauge",
     "resident minus parked bytes: what the hysteresis judges (D8)"),
    ("live_bytes", "refqueue_live_bytes", "gauge", "estimated bytes of the pending and leased samples"),
    ("unaccounted_bytes", "refqueue_unaccounted_bytes", "gauge",
     "resident bytes no live sample nor parked ref accounts for (orphans, other writers)"),
    ("dead_letters_kept", "refqueue_dead_letters_kept", "gauge", "dead letters kept (dead_letters())"),
    ("intents", "refqueue_scrub_intents", "gauge", "acks whose data is not known to be scrubbed yet (Redis)"),
    ("intent_bytes", "refqueue_scrub_intent_bytes", "gauge", "bytes of those acks' data (Redis)"),
    ("dead_letters_total", "refqueue_dead_letters_total", "counter", "samples dead-lettered"),
    ("producer_blocked_seconds", "refqueue_producer_blocked_seconds_total", "counter",
     "seconds producers spent parked, summed over producers, waits in progress included"),
    ("reclaimer_errors", "refqueue_reclaimer_errors_total", "counter", "errors the reclaimer survived"),
    ("puts", "refqueue_puts_total", "counter", "refs enqueued"),
    ("acquires", "refqueue_acquires_total", "counter", "leases handed out"),
    ("acks_live", "refqueue_acks_live_total", "counter", "acks of live leases (samples completed)"),
    ("acks_stale", "refqueue_acks_stale_total", "counter", "acks of stale leases (ignored, D1)"),
    ("fails", "refqueue_fails_total", "counter", "fails of live leases"),
    ("reclaims", "refqueue_reclaims_total", "counter", "expired leases taken back"),
    ("redeliveries", "refqueue_redeliveries_total", "counter", "samples requeued by fail or reclaim"),
    ("extends", "refqueue_extends_total", "counter", "lease extensions"),
    ("pauses", "refqueue_pauses_total", "counter", "producer pauses (high watermark reached)"),
    ("paused_seconds", "refqueue_paused_seconds_total", "counter", "time the producer side was paused"),
    ("consumer_empty_wait_seconds", "refqueue_consumer_empty_wait_seconds_total", "counter",
     "seconds consumers waited on an empty queue (finished waits)"),
    # a FeatureDataLoader's events (loader_wait, loader_batch, loader_retry) on a queue with a Metrics sink
    ("loader_waiting", "refqueue_loader_waiting", "gauge", "loader next() calls waiting for a batch now"),
    ("loader_longest_wait_seconds", "refqueue_loader_longest_wait_seconds", "gauge",
     "the longest loader next() call in progress"),
    ("loader_batches", "refqueue_loader_batches_total", "counter", "batches the loaders handed to the trainer"),
    ("loader_samples", "refqueue_loader_samples_total", "counter", "samples in those batches"),
    ("loader_retries", "refqueue_loader_retries_total", "counter",
     "loader calls (get, ack, fail) that raised, their lease kept to be tried again"),
    ("loader_wait_seconds", "refqueue_loader_wait_seconds_total", "counter",
     "seconds trainers spent in loader next(), calls in progress included"),
)
_UP = ("refqueue_up", "1 when the queue's metrics() answered this scrape, 0 when it raised")
_LEASE_AGE = ("refqueue_lease_age_seconds", "acquire to live ack/fail/dead-letter (from events)")


def _values(m: dict[str, Any]) -> dict[str, Any]:
    """``m`` with the keys SERIES reads filled in for either queue's shape."""
    values = dict(m)
    if "intents" in m:  # RedisSampleRefQueue.metrics(): its dead_letters counts the letters kept
        values["dead_letters_kept"] = m.get("dead_letters")
    else:  # SampleRefQueue.metrics(): dead_letters counts every dead-lettering so far
        values["dead_letters_total"] = m.get("dead_letters")
    return values


class RefqueueCollector:
    """Prometheus collector of any number of queues, each labelled by its name.

    ``RefqueueCollector(queue, name="train")`` holds one queue;
    ``add(queue, name=...)`` adds more (thread-safe; a scrape sees each
    queue added before it started).  A queue is anything with a
    ``metrics()`` method returning a dict (``SampleRefQueue``,
    ``RedisSampleRefQueue``).  Needs ``prometheus-client`` only to collect.
    """

    def __init__(self, queue: Any = None, name: str | None = None) -> None:
        self._lock = threading.Lock()  # guards _queues
        self._queues: dict[str, Any] = {}
        if queue is None:
            if name is not None:
                raise ValueError(
                    f"RefqueueCollector(name={name!r}) got a name but no queue; pass the queue too, or call "
                    f"add(queue, name=...) later"
                )
        else:
            self.add(queue, name=name)  # type: ignore[arg-type]

    def add(self, queue: Any, *, name: str) -> RefqueueCollector:
        """Export ``queue``'s metrics with the label ``queue=name``; returns the collector.
        Rejects (nothing added) a queue without ``metrics()``, a name that is not
        a non-empty str, and a name already in use."""
        if not callable(getattr(queue, "metrics", None)):
            raise TypeError(
                f"RefqueueCollector.add(queue) needs a queue with a metrics() method, got {describe(queue)}; "
                f"pass a SampleRefQueue or RedisSampleRefQueue"
            )
        if not isinstance(name, str):
            raise TypeError(
                f"RefqueueCollector.add(name) must be a str (the value of the queue label), got "
                f"{describe(name)}; pass name=\"train\" or the like"
            )
        if not name:
            raise ValueError(
                "RefqueueCollector.add(name) must not be empty (it is the value of the queue label); pass a "
                "name such as \"train\""
            )
        with self._lock:
            if name in self._queues:
                raise ValueError(
                    f"RefqueueCollector.add(name={name!r}): that name already labels another queue of this "
                    f"collector, and two queues with one label would be one series; pick another name"
                )
            self._queues[name] = queue
        return self

    def remove(self, name: str) -> None:
        """Stop exporting the queue named ``name`` (``KeyError`` naming the known names if none)."""
        with self._lock:
            if name not in self._queues:
                raise KeyError(
                    f"RefqueueCollector.remove({name!r}): no queue of that name; the names are "
                    f"{sorted(self._queues)}"
                )
            del self._queues[name]

    @property
    def names(self) -> list[str]:
        with self._lock:
            return list(self._queues)

    def describe(self) -> list[Any]:
        """The families (no samples), so that ``registry.register`` refuses a
        second collector exposing the same names."""
        families = [self._family(kind, name, help_text) for _, name, kind, help_text in SERIES]
        families.append(self._family("gauge", *_UP))
        families.append(self._family("histogram", *_LEASE_AGE))
        return families

    def collect(self) -> Any:
        with self._lock:
            queues = list(self._queues.items())
        families = {name: self._family(kind, name, help_text) for _, name, kind, help_text in SERIES}
        up = self._family("gauge", *_UP)
        ages = self._family("histogram", *_LEASE_AGE)
        for label, queue in queues:
            try:
                m = queue.metrics()
            except Exception:  # one queue down must not fail the scrape: refqueue_up says so
                up.add_metric([label], 0.0)
                continue
            up.add_metric([label], 1.0)
            values = _values(m)
            for key, name, _, _ in SERIES:
                value = values.get(key)
                if value is None or isinstance(value, str):
                    continue
                families[name].add_metric([label], float(value))
            hist = m.get("lease_age_seconds")
            if isinstance(hist, dict):
                running, buckets = 0, []
                for bound, n in hist["buckets"]:
                    running += n
                    buckets.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
                ages.add_metric([label], buckets, hist["sum"])
        yield up
        for family in families.values():
            if family.samples:
                yield family
        if ages.samples:
            yield ages

    @staticmethod
    def _family(kind: str, name: str, help_text: str) -> Any:
        try:
            from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
        except ImportError:
            raise ImportError(
                "RefqueueCollector needs the prometheus-client package: pip install 'refqueue[prometheus]' "
                "(or pip install prometheus-client)"
            ) from None
        if kind == "counter":
            return CounterMetricFamily(name.removesuffix("_total"), help_text, labels=["queue"])
        if kind == "gauge":
            return GaugeMetricFamily(name, help_text, labels=["queue"])
        return HistogramMetricFamily(name, help_text, labels=["queue"])

    def __repr__(self) -> str:
        return f"RefqueueCollector(queues={self.names})"
