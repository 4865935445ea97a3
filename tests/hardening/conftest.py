"""Fixtures of the hardening tests (issue 12): the queue tests' ``BytesStore``
on a ``ManualClock``, and a queue factory bound to both (thread helpers are in
``hardening_helpers``).

``BytesStore`` lives beside the queue's tests (``tests/queue/bytes_store.py``);
this directory puts that folder on ``sys.path`` to import it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "queue"))

from bytes_store import BytesStore, features  # noqa: E402

from refqueue.clock import ManualClock  # noqa: E402
from refqueue.queue import SampleRefQueue, VisibilityTimeout  # noqa: E402


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

