"""Helpers of the Redis backend tests: refs with no data behind them (the
queue never reads a sample's data), a store every process can name, and the
queues built on a test server."""

from __future__ import annotations

from typing import Any

from refqueue.clock import ManualClock
from refqueue.queue import VisibilityTimeout
from refqueue.refs import FeatureSpec, SampleRef

STORE_URI = "mem://redis-tests"

SPECS = {
    "aux_hidden_states": FeatureSpec((3, 4, 8), "float32"),
    "input_ids": FeatureSpec((4,), "int64"),
    "attention_mask": FeatureSpec((4,), "bool"),
    "loss_mask": FeatureSpec((4,), "float32"),
}


def ref(sample_id: str, uri: str = STORE_URI) -> SampleRef:
    return SampleRef.build(sample_id, SPECS, algorithm="eagle3", store_uri=uri, num_tokens=4)


def store(uri: str = STORE_URI) -> Any:
    """A store with no caps and no watermarks; the queue only calls its ``health`` and ``scrub``."""
    from refqueue.stores.local import LocalFeatureStore

    return LocalFeatureStore(None, None, None, None, uri=uri)


def queue(url: str, name: str, *, clock: Any = "manual", seconds: float = 30.0, **kwargs: Any) -> Any:
    """A client of queue ``name`` on the server at ``url``; ``clock="manual"``
    injects a fresh ``ManualClock(100.0)``, ``None`` uses the server's TIME."""
    from refqueue.backends.redis import RedisSampleRefQueue

    if clock == "manual":
        clock = ManualClock(100.0)
    kwargs.setdefault("store", store())
    return RedisSampleRefQueue(
        kwargs.pop("store"), VisibilityTimeout(seconds), url=url, name=name, clock=clock, **kwargs
    )
