"""The loader's events (issue 22, item 4): ``loader_wait``, ``loader_batch``
and ``loader_retry`` recorded in the queue's ``EventLog`` as records of the
queue, folded by ``Metrics`` into ``queue.metrics()``, read by
``refqueue.diagnose`` (so by the report and ``top``), and stepped over by
the trace checkers.

A real ``SampleRefQueue`` over a real ``LocalFeatureStore``; the queue's
clock is a ``ManualClock`` the test moves.  Threads and test meet on a sink
that notifies a condition after every record (no sleeps)."""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest

torch = pytest.importorskip("torch")

from loader_helpers import GUARD_S, CountingStore, put_sample  # noqa: E402

from refqueue import diagnose  # noqa: E402
from refqueue.clock import ManualClock  # noqa: E402
from refqueue.event_records import problem  # noqa: E402
from refqueue.events import EventLog, RingSink  # noqa: E402
from refqueue.loader import FeatureDataLoader  # noqa: E402
from refqueue.metrics import Metrics  # noqa: E402
from refqueue.queue import SampleRefQueue, VisibilityTimeout  # noqa: E402
from refqueue.report import render_html  # noqa: E402
from refqueue.top import render as top_render  # noqa: E402
from refqueue.trace_check import Monitor, check_records  # noqa: E402

pytestmark = pytest.mark.torch
VT = 8.0


class Signals:
    """A sink that lets the test wait for records (notified after each one)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.records: list[dict[str, Any]] = []

    def write(self, record: dict[str, Any]) -> None:
        with self.cond:
            self.records.append(dict(record))
            self.cond.notify_all()

    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool], what: str) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: predicate(self.records), GUARD_S), f"timed out waiting for {what}"

    def of(self, ev: str) -> list[dict[str, Any]]:
        with self.cond:
            return [r for r in self.records if r["ev"] == ev]


def setup(store_class: type = CountingStore):
    ring, signals = RingSink(1_000_000), Signals()
    log = EventLog(Metrics(), ring, signals)
    store = store_class(events=log)
    clock = ManualClock(0.0)
    queue = SampleRefQueue(store, VisibilityTimeout(VT), clock=clock, events=log)
    monitor = Monitor(queue, on_violation="raise")  # the model checks every step, the loader's records among them
    return store, queue, clock, ring, signals, monitor


def test_batches_and_waits_are_recorded_and_counted():
    store, queue, clock, ring, signals, monitor = setup()
    for i in range(5):
        put_sample(store, queue, i)
    queue.close()
    with FeatureDataLoader(queue, store, batch_size=2, poll_interval=GUARD_S) as loader:
        sizes = [len(batch) for batch in loader]
    assert sizes == [2, 2, 1]
    batches = signals.of("loader_batch")
    assert [(r["samples"], r["outcome"]) for r in batches] == [(2, "batch"), (2, "batch"), (1, "batch"), (0, "stop")]
    assert len(signals.of("loader_wait")) == 4 and all(r["q"] == 1 and r["loader"] >= 1 for r in batches)
    assert all(r["waited"] >= 0.0 for r in batches)
    m = queue.metrics()
    assert (m["loader_batches"], m["loader_samples"], m["loader_retries"], m["loader_waiting"]) == (3, 5, 0, 0)
    assert m["loader_wait_seconds"] == 0.0 and m["loader_longest_wait_seconds"] == 0.0  # the clock never moved
    records = ring.records()
    assert all(problem(r) is None for r in records)  # every record is one the readers accept
    monitor.check()
    assert check_records(records).ok


def test_a_trainer_stalled_on_the_loader_shows_in_the_metrics_the_diagnosis_and_the_report():
    store, queue, clock, ring, signals, monitor = setup()
    loader = FeatureDataLoader(queue, store, poll_interval=0.01, close_queue=False)
    got: list[Any] = []
    errors: list[BaseException] = []

    def trainer() -> None:
        try:
            got.append(next(loader))
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    t = threading.Thread(target=trainer, name="trainer", daemon=True)
    t.start()
    try:
        signals.wait_for(lambda rs: any(r["ev"] == "loader_wait" for r in rs), "the trainer to call next()")
        m = queue.metrics()
        assert (m["loader_waiting"], m["loader_longest_wait_seconds"]) == (1, 0.0)
        assert "trainer_waits_on_loader" not in [c.name for c in diagnose(m)]

        clock.advance(9.0)  # longer than the 8 s visibility timeout, and still no data
        m = queue.metrics()
        assert (m["loader_waiting"], m["loader_longest_wait_seconds"], m["loader_wait_seconds"]) == (1, 9.0, 9.0)
        conditions = {c.name: c for c in diagnose(m)}
        stalled = conditions["trainer_waits_on_loader"]
        assert stalled.title == "the trainer is waiting on the loader"
        assert "1 loader next() call(s) waiting now, the longest for 9 s" in stalled.detail
        assert "nothing is pending: the producers are behind" in stalled.detail
        exported = scrape(queue)
        assert exported[("refqueue_loader_waiting", "train")] == 1.0
        assert exported[("refqueue_loader_longest_wait_seconds", "train")] == 9.0

        # from the log, as report and top read it: the acquire polls record the clock's t=9
        signals.wait_for(lambda rs: any(r["ev"] == "wait" and r.get("t") == 9.0 for r in rs), "a record at t=9")
        records = ring.records()
        snapshot = Metrics.from_records(records).snapshot()
        assert snapshot["loader_waiting"] == 1 and snapshot["loader_longest_wait_seconds"] == 9.0
        assert "trainer_waits_on_loader" in [c.name for c in diagnose(snapshot)]
        assert "the trainer is waiting on the loader" in render_html(records)
        screen = top_render(snapshot, None, 1.0, "run.jsonl")
        assert "!! the trainer is waiting on the loader" in screen
        assert "loader: 0 batches (0 samples), 0 retries; 1 next() waiting now, the longest 9.000 s" in screen

        clock.advance(3.0)
        assert queue.metrics()["loader_longest_wait_seconds"] == 12.0  # growing while stalled
        put_sample(store, queue, 0)  # data at last
    finally:
        queue.close()  # a failed assertion must not leave the trainer waiting
        t.join(GUARD_S)
    assert not t.is_alive() and not errors, errors
    assert [len(b) for b in got] == [1]
    m = queue.metrics()
    assert (m["loader_waiting"], m["loader_batches"], m["loader_samples"]) == (0, 1, 1)
    assert m["loader_wait_seconds"] == 12.0 and m["loader_longest_wait_seconds"] == 0.0
    assert "trainer_waits_on_loader" not in [c.name for c in diagnose(m)]
    loader.close()
    monitor.check()
    assert check_records(ring.records()).ok


def scrape(queue: SampleRefQueue) -> dict[tuple[str, str], float]:
    """The queue's series, as a Prometheus server reads them (label queue="train")."""
    prometheus_client = pytest.importorskip("prometheus_client")
    from prometheus_client.parser import text_string_to_metric_families

    from refqueue.prometheus import RefqueueCollector

    registry = prometheus_client.CollectorRegistry()
    registry.register(RefqueueCollector(queue, name="train"))
    text = prometheus_client.generate_latest(registry).decode()
    return {(s.name, s.labels["queue"]): s.value for f in text_string_to_metric_families(text) for s in f.samples
            if "le" not in s.labels}


class FlakyStore(CountingStore):
    """A store whose first get raises (a device copy failing: the consumer's error)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.failures = 1

    def get(self, ref, device=None):
        if self.failures:
            self.failures -= 1
            raise RuntimeError("device copy failed")
        return super().get(ref, device)


@pytest.mark.parametrize("prefetch", [0, 2])
def test_a_retried_get_is_recorded(prefetch):
    store, queue, clock, ring, signals, monitor = setup(FlakyStore)
    put_sample(store, queue, 0)
    queue.close()
    loader = FeatureDataLoader(queue, store, prefetch=prefetch, poll_interval=GUARD_S)
    with pytest.raises(RuntimeError, match="device copy failed"):
        next(loader)
    retries = signals.of("loader_retry")
    assert [(r["sample"], r["call"], r["error"]) for r in retries] == [("s0", "get", "RuntimeError")]
    assert [(r["samples"], r["outcome"]) for r in signals.of("loader_batch")] == [(0, "RuntimeError")]
    assert len(next(loader)) == 1  # the kept lease, got again
    assert list(loader) == []
    m = queue.metrics()
    assert (m["loader_retries"], m["loader_batches"], m["loader_samples"], m["acks_live"]) == (1, 1, 1, 1)
    exported = scrape(queue)
    assert exported[("refqueue_loader_retries_total", "train")] == 1.0
    assert exported[("refqueue_loader_batches_total", "train")] == 1.0
    monitor.check()
    assert check_records(ring.records()).ok


def test_a_queue_without_an_event_log_records_nothing_and_the_loader_works():
    store = CountingStore()
    queue = SampleRefQueue(store, VisibilityTimeout(VT))
    put_sample(store, queue, 0)
    queue.close()
    assert queue.emit_event({"ev": "loader_wait", "loader": 1}) is False
    with FeatureDataLoader(queue, store) as loader:
        assert [len(b) for b in loader] == [1]
    assert "loader_batches" not in queue.metrics()  # no Metrics sink: the live gauges only


def test_emit_event_takes_only_another_components_events():
    store, queue, clock, ring, signals, monitor = setup()
    before = len(ring.records())
    for bad in ({"ev": "ack", "sample": "x", "lease": 1, "live": True}, {"loader": 1}, "loader_wait"):
        with pytest.raises(ValueError, match="records another component's events"):
            queue.emit_event(bad)  # type: ignore[arg-type]
    assert len(ring.records()) == before
