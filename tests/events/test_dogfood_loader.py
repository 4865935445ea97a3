"""Dogfood: loader tests of tests/loader, unchanged, with their queue and store
recording into one EventLog checked online by a Monitor (raising on the first
illegal step) and afterwards by trace-check."""

from __future__ import annotations

import sys

import pytest
from events_helpers import ROOT

pytest.importorskip("torch")
sys.path.insert(0, str(ROOT / "tests" / "loader"))

import loader_helpers  # noqa: E402
import test_loader  # noqa: E402

from refqueue.events import EventLog, RingSink  # noqa: E402
from refqueue.trace_check import Monitor, check_records  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.timeout(300)]

CASES = [
    ("test_every_sample_is_consumed_exactly_once", dict(batch_size=3, prefetch=3)),
    ("test_a_live_producer_is_followed_until_the_queue_drains", dict(batch_size=1, prefetch=4)),
    ("test_a_raising_step_fails_its_batch_and_the_redelivery_is_intact", dict(prefetch=2)),
    ("test_stops_only_when_drained_after_close_with_leases_outstanding", dict(reclaim=True)),
    ("test_stops_only_when_drained_after_close_with_leases_outstanding", dict(reclaim=False)),
    ("test_a_prefetched_sample_reclaimed_while_buffered_is_dropped_not_yielded", {}),
    ("test_extend_is_a_heartbeat_for_the_batch_in_hand", {}),
    ("test_close_fails_what_was_prefetched_but_never_handed_out", {}),
]


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_loader_test_runs_are_allowed_by_the_model(name, kwargs, monkeypatch):
    logs: list[tuple[RingSink, list[Monitor]]] = []
    real_store, real_queue = loader_helpers.CountingStore, loader_helpers.SampleRefQueue

    class RecordingStore(real_store):
        def __init__(self, **store_kwargs):
            ring = RingSink(1_000_000)
            self.event_log_for_queue = EventLog(ring)
            logs.append((ring, []))
            super().__init__(events=self.event_log_for_queue, **store_kwargs)

    def recording_queue(store, *args, **queue_kwargs):
        queue = real_queue(store, *args, events=store.event_log_for_queue, **queue_kwargs)
        logs[-1][1].append(Monitor(queue, on_violation="raise"))
        return queue

    monkeypatch.setattr(loader_helpers, "CountingStore", RecordingStore)
    monkeypatch.setattr(loader_helpers, "SampleRefQueue", recording_queue)
    getattr(test_loader, name)(**kwargs)
    assert logs and all(monitors for _, monitors in logs)
    for ring, monitors in logs:
        for monitor in monitors:
            monitor.check()
            assert monitor.checked > 0
        result = check_records(ring.records())
        assert result.ok, result.violation.render()  # type: ignore[union-attr]
        assert result.leases > 0
