"""Fixtures of the events tests."""

from __future__ import annotations

import functools

import pytest
from events_helpers import ROOT  # noqa: F401  (puts the repository and tests/queue on sys.path)

from refqueue.events import EventLog, JsonlSink
from refqueue.queue import SampleRefQueue


@pytest.fixture(scope="session")
def stress_log(tmp_path_factory):
    """The stress test of tests/queue, unchanged, with its queue recording to a
    JSONL file: 20,000 samples, 4 blocking producers, 4 consumers that fail and
    stall, a reclaimer every 2 ms."""
    import test_queue_stress as stress

    path = tmp_path_factory.mktemp("stress") / "stress.jsonl"
    sink = JsonlSink(path)
    original = stress.SampleRefQueue
    stress.SampleRefQueue = functools.partial(SampleRefQueue, events=EventLog(sink))
    try:
        stress.test_every_sample_completes_exactly_once_under_stress(stress.BytesData)
    finally:
        stress.SampleRefQueue = original
        sink.close()
    return path
