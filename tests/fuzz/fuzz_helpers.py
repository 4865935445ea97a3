"""Hostile values, real stores and the observable-state snapshot of the fuzz suite.

Everything runs on real parts: ``LocalFeatureStore`` holding real torch
tensors, the production ``SampleRefQueue``, a ``ManualClock``.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import pytest
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from refqueue.clock import ManualClock  # noqa: E402
from refqueue.queue import SampleRefQueue, VisibilityTimeout  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402

EAGLE3 = ("aux_hidden_states", "input_ids", "attention_mask", "loss_mask")


def tensors(i: int = 0) -> dict:
    return {
        "aux_hidden_states": torch.full((2, 3), float(i)),
        "input_ids": torch.arange(3) + i,
        "attention_mask": torch.ones(3, dtype=torch.bool),
        "loss_mask": torch.ones(3),
    }


def unbounded_store(**kwargs) -> LocalFeatureStore:
    return LocalFeatureStore(None, None, None, None, **kwargs)


def put(store, sample_id: str, i: int = 0):
    return store.put(sample_id, tensors(i), run_id="r", algorithm="eagle3", schema_version=1,
                     target_model_version="t", draft_weight_version=0, num_tokens=3)


def world(n: int = 2, *, leased: int = 1, **queue_kwargs):
    """A store with ``n`` samples, a queue on a ManualClock holding them, the
    first ``leased`` leased; returns ``(store, queue, clock, leases)``."""
    store = unbounded_store()
    clock = ManualClock(0.0)
    queue_kwargs.setdefault("visibility_timeout", VisibilityTimeout(10.0))
    queue = SampleRefQueue(store, clock=clock, **queue_kwargs)
    for i in range(n):
        queue.put(put(store, f"s{i}", i))
    leases = [queue.acquire_nowait() for _ in range(leased)]
    return store, queue, clock, leases


@dataclass(frozen=True)
class Snapshot:
    """What a caller can observe of a queue and its store."""

    pending: int
    outstanding: int
    dead: tuple
    dropped: int
    closed: bool
    drained: bool
    paused: bool
    parked: int
    resident_bytes: int
    samples: int
    handles: int


def snapshot(store, queue=None) -> Snapshot:
    health = store.health()
    if queue is None:
        return Snapshot(0, 0, (), 0, False, False, False, 0, health.resident_bytes, health.sample_count,
                        store.handle_count if not store_closed(store) else -1)
    return Snapshot(
        queue.pending_count(), queue.outstanding_count(),
        tuple((d.ref.sample_id, d.reason, d.deliveries) for d in queue.dead_letters()),
        queue.dead_letters_dropped, queue.is_closed, queue.is_drained, queue.is_paused, queue.parked_bytes,
        health.resident_bytes, health.sample_count, store.handle_count,
    )


def store_closed(store) -> bool:
    return store._closed  # noqa: SLF001 (a snapshot only)


def names(message: str, value: object) -> bool:
    """The message names the rejected value: its repr (or the start of a long
    one), or for a value without a short repr, its type."""
    text = repr(value)
    return text[:60] in message or (len(text) > 60 and type(value).__name__ in message)


class Exploding:
    """An object whose conversions (bool, float, index) raise."""

    def __repr__(self) -> str:
        return "Exploding()"

    def __bool__(self):
        raise RuntimeError("Exploding.__bool__")

    def __float__(self):
        raise RuntimeError("Exploding.__float__")

    def __index__(self):
        raise RuntimeError("Exploding.__index__")


class Deep(list):
    """A list nested ``depth`` levels deep, with a short repr (Hypothesis
    prints failing examples, and a plain deep list's repr overflows the stack)."""

    def __init__(self, depth: int) -> None:
        value: list = []
        for _ in range(depth - 1):
            value = [value]
        super().__init__([value])
        self.depth = depth

    def __repr__(self) -> str:
        return f"Deep({self.depth})"


def deep_list(depth: int) -> list:
    return Deep(depth)


# Strings a sample id, run id, reason or option might be: empty, NUL bytes,
# path-like, unicode of every category (surrogates included), very long.
hostile_text = st.one_of(
    st.just(""),
    st.sampled_from(["\x00", "a\x00b", "../../etc/passwd", "/abs/path", "C:\\x", "~", ".", "..", " ", "\n",
                     "\u202e", "\ud800", "é", "𝕏", "a" * 10_000, "nan", "inf", "-1", "1e10", "0x10", "None"]),
    st.text(min_size=0, max_size=30),
    st.text(alphabet=st.characters(codec=None, categories=None), max_size=10),
)

# Numbers a duration, count or size might be: bools, zero, negatives, NaN,
# infinities, huge, subnormal, ints beyond 63 bits.
hostile_number = st.one_of(
    st.booleans(),
    st.sampled_from([0, -1, 0.0, -0.0, math.nan, math.inf, -math.inf, 1e10, 1e300, 5e-324, 2**63, 2**64,
                     10**400, -(2**63), threading.TIMEOUT_MAX * 2]),
    st.integers(),
    st.floats(),
)


@st.composite
def hostile_tensor(draw):
    kind = draw(st.sampled_from(["float", "meta", "sparse", "bool", "scalar", "empty", "nan"]))
    if kind == "meta":
        return torch.empty(2, device="meta")
    if kind == "sparse":
        return torch.zeros(2, 2).to_sparse()
    if kind == "bool":
        return torch.ones(1, dtype=torch.bool)
    if kind == "scalar":
        return torch.tensor(3.0)
    if kind == "empty":
        return torch.empty(0)
    if kind == "nan":
        return torch.full((2,), math.nan)
    return torch.zeros(draw(st.integers(0, 3)))


hostile_scalar = st.one_of(st.none(), hostile_number, hostile_text, st.binary(max_size=8),
                           st.just(Exploding()), st.just(object()), st.just(lambda: None), st.just(type))

hostile = st.recursive(
    st.one_of(hostile_scalar, hostile_tensor()),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.tuples(children, children),
        st.dictionaries(st.one_of(hostile_text, st.integers()), children, max_size=3),
    ),
    max_leaves=6,
) | st.builds(deep_list, st.sampled_from([200, 5_000]))
