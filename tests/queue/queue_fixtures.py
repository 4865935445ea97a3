"""The fixtures the queue's tests and the hardening tests share: a
``BytesStore``, a ``ManualClock`` and a queue factory bound to both.

Each of those folders' conftest imports them from here (the hardening
conftest first puts this folder on ``sys.path``).
"""

from __future__ import annotations

import pytest
from bytes_store import BytesStore, features

from refqueue.clock import ManualClock
from refqueue.queue import SampleRefQueue, VisibilityTimeout


@pytest.fixture
def store() -> BytesStore:
    return BytesStore()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(0.0)


@pytest.fixture
def make_queue(store, clock):
    """``make_queue(**kwargs)``: a queue on ``store`` and ``clock`` with a 10 s
    visibility timeout unless told otherwise."""

    def make(**kwargs) -> SampleRefQueue:
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("visibility_timeout", VisibilityTimeout(10.0))
        return SampleRefQueue(kwargs.pop("store", store), **kwargs)

    return make


@pytest.fixture
def stored(store):
    """``stored(sample_id, nbytes=4)``: put ``nbytes`` of data into the store, return the ref."""

    def put(sample_id: str, nbytes: int = 4):
        return store.put(sample_id, features(b"x" * nbytes))

    return put
