"""refqueue: a formally specified lease / ack / fail queue of tensor-free SampleRefs."""

from refqueue.clock import Clock, ManualClock, MonotonicClock
from refqueue.errors import (
    DuplicateSample,
    ForeignLease,
    PutAborted,
    QueueClosed,
    RefMismatch,
    RefQueueError,
    ReplayedSample,
    SampleMissing,
    StoreClosed,
    StoreFull,
)
from refqueue.refs import FeatureAlgorithm, FeatureSpec, SampleRef, assert_no_tensors

__version__ = "0.1.0"

__all__ = [
    "Clock", "ManualClock", "MonotonicClock",
    "DuplicateSample", "ForeignLease", "PutAborted", "QueueClosed", "RefMismatch",
    "RefQueueError", "ReplayedSample", "SampleMissing", "StoreClosed", "StoreFull",
    "FeatureAlgorithm", "FeatureSpec", "SampleRef", "assert_no_tensors",
]
