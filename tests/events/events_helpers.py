"""Shared helpers of the events tests: a queue with events on, and the
repository root on sys.path (for conformance.mutants and tests/queue)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for extra in (ROOT, ROOT / "tests" / "queue"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from refqueue._bench_queue import CounterStore, clone_refs  # noqa: E402
from refqueue.clock import ManualClock  # noqa: E402
from refqueue.events import EventLog, RingSink  # noqa: E402
from refqueue.queue import SampleRefQueue, VisibilityTimeout  # noqa: E402


def recorded_queue(**kwargs):
    """(queue, store, ring, clock): a SampleRefQueue on a CounterStore with a ManualClock, recording into a ring."""
    ring = RingSink()
    log = EventLog(ring)
    store = CounterStore()
    clock = ManualClock(0.0)
    kwargs.setdefault("visibility_timeout", VisibilityTimeout(1.0))
    queue = SampleRefQueue(store, clock=clock, events=log, **kwargs)
    return queue, store, ring, clock


def refs(count, prefix="s"):
    return clone_refs(count, prefix)
