"""Helpers for the store tests: real CPU tensors and a pinned-message pattern."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")

from refqueue.refs import FeatureAlgorithm  # noqa: E402

META = dict(run_id="run-1", schema_version=2, target_model_version="t-1", draft_weight_version=7)


def eagle3_tensors(seq: int = 4, hidden: int = 8, seed: int = 0) -> dict:
    """An eagle3 sample: aux hidden states first (order matters), then the masks."""
    gen = torch.Generator().manual_seed(seed)
    return {
        "aux_hidden_states": torch.randn(3, seq, hidden, generator=gen),
        "input_ids": torch.randint(0, 1000, (seq,), generator=gen),
        "attention_mask": torch.ones(seq, dtype=torch.bool),
        "loss_mask": torch.ones(seq, dtype=torch.float32),
    }


def nbytes_of(tensors: dict) -> int:
    return sum(t.numel() * t.element_size() for t in tensors.values())


def put(store, sample_id: str, tensors: dict | None = None, **overrides):
    """``store.put`` with eagle3 defaults; keyword overrides replace any field."""
    tensors = eagle3_tensors() if tensors is None else tensors
    fields = dict(META, algorithm=FeatureAlgorithm.EAGLE3, num_tokens=4)
    fields.update(overrides)
    return store.put(sample_id, tensors, **fields)


def exact(message: str) -> str:
    """A ``match=`` pattern that pins the whole message."""
    return "^" + re.escape(message) + "$"
