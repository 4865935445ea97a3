"""refqueue: a formally specified lease / ack / fail queue of tensor-free SampleRefs.

Names are imported lazily (PEP 562), so ``import refqueue.model`` loads
neither threading nor torch: the reference model must run anywhere.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Clock": "refqueue.clock",
    "ManualClock": "refqueue.clock",
    "MonotonicClock": "refqueue.clock",
    "DuplicateSample": "refqueue.errors",
    "ForeignLease": "refqueue.errors",
    "PutAborted": "refqueue.errors",
    "QueueClosed": "refqueue.errors",
    "QueueStateLost": "refqueue.errors",
    "RefMismatch": "refqueue.errors",
    "RefQueueError": "refqueue.errors",
    "ReplayedSample": "refqueue.errors",
    "SampleMissing": "refqueue.errors",
    "StoreClosed": "refqueue.errors",
    "StoreFull": "refqueue.errors",
    "FeatureAlgorithm": "refqueue.refs",
    "FeatureSpec": "refqueue.refs",
    "SampleRef": "refqueue.refs",
    "assert_no_tensors": "refqueue.refs",
    "FeatureStore": "refqueue.store",
    "StoreHandle": "refqueue.store",
    "StoreHealth": "refqueue.store",
    "Lease": "refqueue.queue",
    "SampleRefQueue": "refqueue.queue",
    "VisibilityTimeout": "refqueue.queue",
    "DeadLetter": "refqueue.queue",
    "LocalFeatureStore": "refqueue.stores.local",
    "FeatureDataLoader": "refqueue.loader",
    "Condition": "refqueue.diagnosis",
    "diagnose": "refqueue.diagnosis",
    "RefqueueCollector": "refqueue.prometheus",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'refqueue' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
