"""Counters and gauges computed from a queue's events (issue 13).

``Metrics`` is an ``EventLog`` sink: give it to the log a queue records into
(``SampleRefQueue(store, events=EventLog(Metrics(), ...))``) and
``queue.metrics()`` returns its plain snapshot for that queue.  The same
class folds a recorded log (``Metrics.from_records``), which is what
``refqueue report`` draws from.  ``export_prometheus(metrics)`` exposes the
snapshot through the optional ``prometheus-client`` package under the names
of ``PROMETHEUS_NAMES`` (docs/EVENTS.md lists them).

Bottleneck: producers blocked in ``put_blocks_until_below`` (``park`` to
``unpark``) mean the consumers do not free the store fast enough; consumers
waiting on an empty queue (``wait`` records) mean the producers do not fill
it fast enough.  ``bottleneck`` names the slower side: ``"consumer"`` when
producers were blocked longer than consumers waited, ``"producer"`` in the
opposite case, ``"none"`` when neither waited.
"""

from __future__ import annotations

import bisect
import threading
import warnings
from collections.abc import Iterable
from typing import Any

__all__ = ["Metrics", "QueueMetrics", "LEASE_AGE_BUCKETS", "PROMETHEUS_NAMES", "export_prometheus"]

# Upper bounds (seconds) of the lease-age histogram (acquire to live ack/fail/dead-letter); the last is +inf.
LEASE_AGE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                     float("inf"))

# Records after which the open leases are counted from the acquires (no ``outstanding`` field).
_LEASE_ENDS = frozenset({"ack", "fail", "dead_letter", "reclaim"})

_COUNTERS = (
    "puts", "acquires", "acks_live", "acks_stale", "fails", "fails_stale", "reclaims", "reclaim_calls",
    "redeliveries", "dead_letters", "extends", "pauses", "resumes",
)


class QueueMetrics:
    """The counters and gauges of one queue; updated with the log's lock held."""

    def __init__(self, open_record: dict[str, Any]) -> None:
        self.epoch = open_record.get("epoch")
        self.store = open_record.get("store")
        self.high = open_record.get("high")
        self.low = open_record.get("low")
        self.capacity = open_record.get("capacity_bytes")
        self.visibility_timeout = open_record.get("visibility_timeout")
        self.counters = dict.fromkeys(_COUNTERS, 0)
        self.pending = 0
        self.outstanding: int | None = 0
        self.paused = False
        self.closed = False
        self.paused_since: float | None = None
        self.paused_seconds = 0.0
        self.resident_bytes = 0
        self.resident_samples: int | None = None
        self.producer_blocked_seconds = 0.0
        self.consumer_empty_wait_seconds = 0.0
        self.lease_age_counts = [0] * len(LEASE_AGE_BUCKETS)
        self.lease_age_sum = 0.0
        self.lease_age_max = 0.0
        self.first_t: float | None = open_record.get("t")
        self.last_t: float | None = open_record.get("t")
        self._leased_at: dict[int, float] = {}  # lease id -> t of its acquire
        self._deadline: dict[int, float] = {}  # lease id -> its deadline (acquire, extend)
        self._parked_at: dict[str, tuple[float | None, int]] = {}  # sample -> (t of its park, nbytes)
        self.last_reclaim_t: float | None = None  # t of the last reclaim_expired call
        # The loaders reading this queue (loader_* records): batches and samples
        # handed to the trainer, retries, and each loader's next() in progress
        # (loader number -> t of its loader_wait) with the finished waits' seconds.
        self.loader_batches = 0
        self.loader_samples = 0
        self.loader_retries = 0
        self.loader_wait_seconds = 0.0
        self._loader_waits: dict[Any, float | None] = {}

    def fold(self, r: dict[str, Any]) -> None:
        ev = r["ev"]
        t = r.get("t")
        if t is not None:
            self.last_t = t
        if "pending" in r:
            self.pending = r["pending"]
        if "outstanding" in r:  # a RecordedBackend's logs lack it: counted from the leases then
            self.outstanding = r["outstanding"]
        elif ev in _LEASE_ENDS:
            self.outstanding = None
        c = self.counters
        if ev == "acquire":
            if r.get("sample") is not None:
                c["acquires"] += 1
                self._leased_at[r["lease"]] = t  # type: ignore[assignment]
                if r.get("deadline") is not None:
                    self._deadline[r["lease"]] = r["deadline"]
        elif ev == "ack":
            if r.get("live"):
                c["acks_live"] += 1
                self._lease_ended(r, t)
            else:
                c["acks_stale"] += 1
        elif ev == "put":
            c["puts"] += 1
        elif ev == "try_put":
            self.resident_bytes = r.get("resident_bytes", self.resident_bytes)
            if r.get("enqueued"):
                c["puts"] += 1
        elif ev == "fail":
            if r.get("live"):
                c["fails"] += 1
                self._lease_ended(r, t)
                if r.get("dead"):
                    c["dead_letters"] += 1
                else:
                    c["redeliveries"] += 1
            else:
                c["fails_stale"] += 1
        elif ev == "reclaim":
            c["reclaim_calls"] += 1
            self.last_reclaim_t = t
            samples = r.get("samples")
            n = len(samples) if samples is not None else r.get("count", 0)
            dead = len(r.get("dead") or ())
            c["reclaims"] += n
            c["redeliveries"] += n - dead
            c["dead_letters"] += dead
            for lease_id in r.get("leases") or ():
                self._leased_at.pop(lease_id, None)
                self._deadline.pop(lease_id, None)
        elif ev == "dead_letter":
            if r.get("live"):
                c["dead_letters"] += 1
                self._lease_ended(r, t)
        elif ev == "extend":
            if r.get("live"):
                c["extends"] += 1
                if r.get("lease") in self._leased_at and r.get("deadline") is not None:
                    self._deadline[r["lease"]] = r["deadline"]
        elif ev == "pause":
            c["pauses"] += 1
            self.paused = True
            self.paused_since = t
            self.resident_bytes = r.get("resident_bytes", self.resident_bytes)
        elif ev == "resume":
            c["resumes"] += 1
            self.paused = False
            if self.paused_since is not None and t is not None:
                self.paused_seconds += t - self.paused_since
            self.paused_since = None
            self.resident_bytes = r.get("resident_bytes", self.resident_bytes)
        elif ev == "park":
            self._parked_at[r["sample"]] = (t, r.get("nbytes", 0))
        elif ev == "unpark":
            since = self._parked_at.pop(r["sample"], (None, 0))[0]
            if since is not None and t is not None:
                self.producer_blocked_seconds += t - since
        elif ev == "close":
            self.closed = True
        elif ev == "wait":
            self.consumer_empty_wait_seconds += r.get("waited", 0.0)
        elif ev == "loader_wait":
            self._loader_waits[r.get("loader")] = t
        elif ev == "loader_batch":
            since = self._loader_waits.pop(r.get("loader"), None)
            if since is not None and t is not None:
                self.loader_wait_seconds += max(0.0, t - since)
            if r.get("samples"):
                self.loader_batches += 1
                self.loader_samples += r["samples"]
        elif ev == "loader_retry":
            self.loader_retries += 1

    def fold_store(self, r: dict[str, Any]) -> None:
        if "resident_bytes" in r:
            self.resident_bytes = r["resident_bytes"]
            self.resident_samples = r.get("resident_count")

    def _lease_ended(self, r: dict[str, Any], t: float | None) -> None:
        since = self._leased_at.pop(r["lease"], None)
        self._deadline.pop(r["lease"], None)
        if since is None or t is None:
            return
        age = max(0.0, t - since)
        self.lease_age_counts[bisect.bisect_left(LEASE_AGE_BUCKETS, age)] += 1
        self.lease_age_sum += age
        self.lease_age_max = max(self.lease_age_max, age)

    def snapshot(self, now: float | None = None) -> dict[str, Any]:
        """The counters and gauges at the log's last record; ``now`` (the
        queue's clock, from ``queue.metrics()``) places the loaders' waits
        still in progress at that time instead."""
        loader_now = now if now is not None else self.last_t
        paused_seconds = self.paused_seconds
        if self.paused and self.paused_since is not None and self.last_t is not None:
            paused_seconds += self.last_t - self.paused_since  # the pause still open
        blocked, waited = self.producer_blocked_seconds, self.consumer_empty_wait_seconds
        now = self.last_t
        if now is not None:  # the waits still in progress at the log's last record
            blocked += sum(max(0.0, now - since) for since, _ in self._parked_at.values() if since is not None)
        vt = self.visibility_timeout
        overdue = [now - d for lid, d in self._deadline.items() if lid in self._leased_at and now is not None
                   and d is not None and d <= now]
        older = sum(1 for since in self._leased_at.values()
                    if since is not None and now is not None and vt is not None and now - since > vt)
        if blocked == 0 and waited == 0:
            bottleneck = "none"
        else:
            bottleneck = "consumer" if blocked > waited else "producer"
        ended = sum(self.lease_age_counts)
        loader_open = [max(0.0, loader_now - since) for since in self._loader_waits.values()
                       if since is not None and loader_now is not None]
        return {
            **self.counters,
            "pending": self.pending,
            "outstanding": len(self._leased_at) if self.outstanding is None else self.outstanding,
            "paused": self.paused,
            "closed": self.closed,
            "paused_seconds": paused_seconds,
            "resident_bytes": self.resident_bytes,
            "resident_samples": self.resident_samples,
            "high_watermark_bytes": self.high,
            "low_watermark_bytes": self.low,
            "producer_blocked_seconds": blocked,
            "consumer_empty_wait_seconds": waited,
            "bottleneck": bottleneck,
            "lease_age_seconds": {
                "buckets": [[b, n] for b, n in zip(LEASE_AGE_BUCKETS, self.lease_age_counts)],
                "count": ended, "sum": self.lease_age_sum, "max": self.lease_age_max,
                "mean": self.lease_age_sum / ended if ended else 0.0,
            },
            "oldest_open_lease_age_seconds": (
                max(0.0, self.last_t - min(self._leased_at.values()))
                if self._leased_at and self.last_t is not None and None not in self._leased_at.values() else 0.0
            ),
            "seconds": (self.last_t - self.first_t) if self.first_t is not None and self.last_t is not None else 0.0,
            # gauges at the log's last record (queue.metrics() reads them live instead)
            "clock": self.last_t,
            "producers_blocked": len(self._parked_at),
            "parked_bytes": sum(n for _, n in self._parked_at.values()),
            "leases_past_deadline": len(overdue),
            "most_overdue_lease_seconds": max(overdue, default=0.0),
            "leases_older_than_timeout": older,
            "visibility_timeout_seconds": vt,
            "capacity_bytes": self.capacity,
            # a log does not say whether a reclaimer runs: None; the last reclaim_expired call's t instead
            "reclaimer_running": None,
            "last_reclaim_call": self.last_reclaim_t,
            # the loaders (FeatureDataLoader's loader_* records)
            "loader_batches": self.loader_batches,
            "loader_samples": self.loader_samples,
            "loader_retries": self.loader_retries,
            "loader_waiting": len(self._loader_waits),
            "loader_wait_seconds": self.loader_wait_seconds + sum(loader_open),
            "loader_longest_wait_seconds": max(loader_open, default=0.0),
        }


class Metrics:
    """An ``EventLog`` sink folding records into per-queue ``QueueMetrics``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.queues: dict[tuple[int, int], QueueMetrics] = {}  # (pid, q) -> metrics
        self._stores: dict[tuple[int, int], str] = {}  # (pid, s) -> uri
        self._bound: dict[tuple[int, int], QueueMetrics] = {}

    def write(self, r: dict[str, Any]) -> None:
        with self._lock:
            self._fold(r)

    def _fold(self, r: dict[str, Any]) -> None:
        pid = r.get("pid", 0)
        q = r.get("q")
        if q is not None:
            key = (pid, q)
            m = self.queues.get(key)
            if m is None:
                if r.get("ev") != "open":
                    return
                m = self.queues[key] = QueueMetrics(r)
                for skey, uri in self._stores.items():
                    if skey[0] == pid and uri == m.store and skey not in self._bound:
                        self._bound[skey] = m
                return
            m.fold(r)
            return
        s = r.get("s")
        if s is None:
            return
        skey = (pid, s)
        if r.get("ev") == "store_open":
            self._stores[skey] = r.get("store")  # type: ignore[assignment]
            return
        m = self._bound.get(skey)
        if m is not None:
            m.fold_store(r)

    @classmethod
    def from_records(cls, records: Iterable[dict[str, Any]]) -> Metrics:
        metrics = cls()
        for r in sorted(records, key=lambda r: (r.get("pid", 0), r.get("seq", 0))):
            metrics._fold(r)
        return metrics

    def snapshot(self, q: int | None = None, pid: int | None = None, now: float | None = None) -> dict[str, Any]:
        """The snapshot of queue ``q`` (of process ``pid``), or of the only queue
        (``now``: see ``QueueMetrics.snapshot``)."""
        with self._lock:
            keys = [k for k in self.queues if (q is None or k[1] == q) and (pid is None or k[0] == pid)]
            if len(keys) != 1:
                raise ValueError(
                    f"Metrics.snapshot(q={q!r}, pid={pid!r}) matches {len(keys)} queues of {sorted(self.queues)}; "
                    f"name the queue's number (and process)"
                )
            return self.queues[keys[0]].snapshot(now)


# snapshot key -> (prometheus name, kind, help)
PROMETHEUS_NAMES: dict[str, tuple[str, str, str]] = {
    "puts": ("refqueue_puts_total", "counter", "refs enqueued"),
    "acquires": ("refqueue_acquires_total", "counter", "leases handed out"),
    "acks_live": ("refqueue_acks_live_total", "counter", "acks of live leases (samples completed)"),
    "acks_stale": ("refqueue_acks_stale_total", "counter", "acks of stale leases (ignored, D1)"),
    "fails": ("refqueue_fails_total", "counter", "fails of live leases"),
    "reclaims": ("refqueue_reclaims_total", "counter", "expired leases taken back"),
    "redeliveries": ("refqueue_redeliveries_total", "counter", "samples requeued by fail or reclaim"),
    "dead_letters": ("refqueue_dead_letters_total", "counter", "samples dead-lettered"),
    "extends": ("refqueue_extends_total", "counter", "lease extensions"),
    "pauses": ("refqueue_pauses_total", "counter", "producer pauses (high watermark reached)"),
    "paused_seconds": ("refqueue_paused_seconds_total", "counter", "time the producer side was paused"),
    "producer_blocked_seconds": ("refqueue_producer_blocked_seconds_total", "counter",
                                 "time producers spent parked in put_blocks_until_below"),
    "consumer_empty_wait_seconds": ("refqueue_consumer_empty_wait_seconds_total", "counter",
                                    "time consumers waited on an empty queue"),
    "pending": ("refqueue_pending", "gauge", "samples pending"),
    "outstanding": ("refqueue_outstanding", "gauge", "leases outstanding"),
    "resident_bytes": ("refqueue_resident_bytes", "gauge", "bytes resident in the store"),
    "paused": ("refqueue_paused", "gauge", "1 while the producer side is paused"),
    "lease_age_seconds": ("refqueue_lease_age_seconds", "histogram", "acquire to live ack/fail/dead-letter"),
}


def export_prometheus(metrics: Metrics, q: int | None = None, registry: Any = None) -> Any:
    """Deprecated: use ``refqueue.prometheus.RefqueueCollector`` (every series
    labelled by queue, any number of queues in one registry, live gauges).

    Register a collector exposing ``metrics`` (queue ``q``) under
    ``PROMETHEUS_NAMES`` in ``registry`` (default: prometheus_client's
    global one), unlabelled; returns the collector.  Two queues need two
    registries.  Needs ``prometheus-client``."""
    warnings.warn(
        "export_prometheus is deprecated: its series carry no queue label and one registry holds one queue; "
        "register refqueue.prometheus.RefqueueCollector(queue, name=...) instead (docs/EVENTS.md)",
        DeprecationWarning, stacklevel=2,
    )
    try:
        from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
    except ImportError:
        raise ImportError("export_prometheus needs the prometheus-client package: pip install prometheus-client") from None
    if not isinstance(metrics, Metrics):
        raise TypeError(f"export_prometheus(metrics) needs a refqueue.metrics.Metrics, got {metrics!r}")

    class _Collector:
        def collect(self) -> Any:
            snap = metrics.snapshot(q)
            for key, (name, kind, help_text) in PROMETHEUS_NAMES.items():
                value = snap[key]
                if kind == "counter":
                    yield CounterMetricFamily(name.removesuffix("_total"), help_text, value=float(value))
                elif kind == "gauge":
                    yield GaugeMetricFamily(name, help_text, value=float(value))
                else:
                    hist = value
                    running, buckets = 0, []
                    for bound, n in hist["buckets"]:
                        running += n
                        buckets.append(("+Inf" if bound == float("inf") else repr(bound), running))
                    yield HistogramMetricFamily(name, help_text, buckets=buckets, sum_value=hist["sum"])

        def describe(self) -> list[Any]:
            return []

    collector = _Collector()
    (REGISTRY if registry is None else registry).register(collector)
    return collector
