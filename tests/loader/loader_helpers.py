"""Helpers for the loader tests: a real SampleRefQueue over a real LocalFeatureStore."""

from __future__ import annotations

import re
import threading

import pytest

torch = pytest.importorskip("torch")

from refqueue.clock import ManualClock  # noqa: E402
from refqueue.queue import SampleRefQueue, VisibilityTimeout  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402

GUARD_S = 30  # only bounds a hang; never reached when the code is right
SCHEMA = 2


def exact(message: str) -> str:
    return "^" + re.escape(message) + "$"


def sample_tensors(i: int) -> dict:
    """An eagle3 sample whose aux hidden states are all ``i`` (so a test can tell samples apart)."""
    return {
        "aux_hidden_states": torch.full((3, 4, 8), float(i)),
        "input_ids": torch.arange(4) + i,
        "attention_mask": torch.ones(4, dtype=torch.bool),
        "loss_mask": torch.ones(4),
    }


def index_of(sample) -> int:
    return int(sample.tensors["aux_hidden_states"][0, 0, 0].item())


class CountingStore(LocalFeatureStore):
    """A LocalFeatureStore that counts its gets, so a test can wait for the prefetch thread."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.gets = 0
        self.got = threading.Condition()  # notified after every get

    def get(self, ref, device=None):
        result = super().get(ref, device)
        with self.got:
            self.gets += 1
            self.got.notify_all()
        return result

    def wait_for_gets(self, n: int) -> None:
        with self.got:
            assert self.got.wait_for(lambda: self.gets >= n, GUARD_S), f"only {self.gets} gets, wanted {n}"


def make_queue(n: int = 0, *, close: bool = True, algorithm: str = "eagle3", schema_version: int = SCHEMA,
               visibility_timeout: float = 30.0, clock=None, **queue_kwargs):
    """A store and a queue holding ``n`` samples ``s0``.. (closed unless told otherwise)."""
    store = CountingStore()
    queue = SampleRefQueue(store, VisibilityTimeout(visibility_timeout), clock=clock, **queue_kwargs)
    for i in range(n):
        put_sample(store, queue, i, algorithm=algorithm, schema_version=schema_version)
    if close:
        queue.close()
    return store, queue


def put_sample(store, queue, i: int, *, algorithm: str = "eagle3", schema_version: int = SCHEMA):
    tensors = sample_tensors(i)
    if algorithm == "dflash":
        tensors = {"hidden_states" if k == "aux_hidden_states" else k: t for k, t in tensors.items()}
    ref = store.put(
        f"s{i}", tensors, run_id="run", algorithm=algorithm, schema_version=schema_version,
        target_model_version="t", draft_weight_version=0, num_tokens=4,
    )
    queue.put(ref)
    return ref


def assert_nothing_leaked(store, queue) -> None:
    health = store.health()
    assert (health.resident_bytes, health.sample_count) == (0, 0)
    assert store.handle_count == 0
    assert queue.is_drained


__all__ = [
    "GUARD_S", "SCHEMA", "CountingStore", "ManualClock", "assert_nothing_leaked", "exact", "index_of",
    "make_queue", "put_sample", "sample_tensors",
]
