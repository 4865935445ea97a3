"""A conformance factory (``recording_backend:make``): the in-process queue
recording every event into a ring, checked online by a raising Monitor.
``LOGS`` keeps each queue's ring for trace-check afterwards."""

from __future__ import annotations

from typing import Any

from refqueue.conformance.backends import inprocess
from refqueue.events import EventLog, RingSink
from refqueue.trace_check import Monitor

LOGS: list[tuple[RingSink, Monitor]] = []


def make(store: Any, clock: Any, **config: Any) -> Any:
    ring = RingSink(1_000_000)
    queue = inprocess(store, clock, events=EventLog(ring), **config)
    LOGS.append((ring, Monitor(queue, on_violation="raise")))
    return queue


make.capabilities = inprocess.capabilities  # type: ignore[attr-defined]
