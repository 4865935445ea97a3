"""refqueue: a formally specified lease / ack / fail queue of tensor-free SampleRefs.

Names are imported lazily (PEP 562), so ``import refqueue.model`` loads
neither threading nor torch: the reference model must run anywhere.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
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

# A literal list (not computed) so that type checkers read it; it, _EXPORTS and
# the TYPE_CHECKING imports below name the same things
# (tests/packaging/test_typing.py checks that).
__all__ = [
    "Clock",
    "Condition",
    "DeadLetter",
    "DuplicateSample",
    "FeatureAlgorithm",
    "FeatureDataLoader",
    "FeatureSpec",
    "FeatureStore",
    "ForeignLease",
    "Lease",
    "LocalFeatureStore",
    "ManualClock",
    "MonotonicClock",
    "PutAborted",
    "QueueClosed",
    "QueueStateLost",
    "RefMismatch",
    "RefQueueError",
    "RefqueueCollector",
    "ReplayedSample",
    "SampleMissing",
    "SampleRef",
    "SampleRefQueue",
    "StoreClosed",
    "StoreFull",
    "StoreHandle",
    "StoreHealth",
    "VisibilityTimeout",
    "assert_no_tensors",
    "diagnose",
]

if TYPE_CHECKING:
    # Explicit re-exports (``import X as X``) for type checkers: at run time the
    # names stay lazy (``__getattr__`` below), but mypy and pyright see each
    # name with its real type, so ``from refqueue import SampleRef`` is checked.
    from refqueue.clock import Clock as Clock
    from refqueue.clock import ManualClock as ManualClock
    from refqueue.clock import MonotonicClock as MonotonicClock
    from refqueue.diagnosis import Condition as Condition
    from refqueue.diagnosis import diagnose as diagnose
    from refqueue.errors import DuplicateSample as DuplicateSample
    from refqueue.errors import ForeignLease as ForeignLease
    from refqueue.errors import PutAborted as PutAborted
    from refqueue.errors import QueueClosed as QueueClosed
    from refqueue.errors import QueueStateLost as QueueStateLost
    from refqueue.errors import RefMismatch as RefMismatch
    from refqueue.errors import RefQueueError as RefQueueError
    from refqueue.errors import ReplayedSample as ReplayedSample
    from refqueue.errors import SampleMissing as SampleMissing
    from refqueue.errors import StoreClosed as StoreClosed
    from refqueue.errors import StoreFull as StoreFull
    from refqueue.loader import FeatureDataLoader as FeatureDataLoader
    from refqueue.prometheus import RefqueueCollector as RefqueueCollector
    from refqueue.queue import DeadLetter as DeadLetter
    from refqueue.queue import Lease as Lease
    from refqueue.queue import SampleRefQueue as SampleRefQueue
    from refqueue.queue import VisibilityTimeout as VisibilityTimeout
    from refqueue.refs import FeatureAlgorithm as FeatureAlgorithm
    from refqueue.refs import FeatureSpec as FeatureSpec
    from refqueue.refs import SampleRef as SampleRef
    from refqueue.refs import assert_no_tensors as assert_no_tensors
    from refqueue.store import FeatureStore as FeatureStore
    from refqueue.store import StoreHandle as StoreHandle
    from refqueue.store import StoreHealth as StoreHealth
    from refqueue.stores.local import LocalFeatureStore as LocalFeatureStore


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'refqueue' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
