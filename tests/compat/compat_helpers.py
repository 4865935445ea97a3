"""Helpers for the compatibility suite: real refqueue objects, built the way
code written against the seed's documentation builds them.

The suite (``tests/compat``) is written from the seed's API documentation
(``../shared/seed-queue-api.txt``: the queue module) and from the list of
seed behaviours in issue 10 (names, errors and defaults of the refs, store,
local store and loader modules).  Each test checks one documented behaviour
of the seed that refqueue keeps; ``docs/MIGRATING.md`` lists the ones it
does not, with the decision (D1-D8) that forbids them.
"""

from __future__ import annotations

import re
import threading

import pytest

torch = pytest.importorskip("torch")

from refqueue.refs import FeatureSpec, SampleRef  # noqa: E402

GUARD_S = 30  # bounds a hang only; never reached when the code is right
EAGLE3 = ("aux_hidden_states", "input_ids", "attention_mask", "loss_mask")


def exact(message: str) -> str:
    return "^" + re.escape(message) + "$"


def eagle3_tensors(i: int = 0, nbytes: int = 16) -> dict:
    """An eagle3 sample holding ``nbytes`` bytes in all (uint8 aux hidden
    states, empty masks), its aux hidden states filled with ``i % 256``."""
    return {
        "aux_hidden_states": torch.full((nbytes,), i % 256, dtype=torch.uint8),
        "input_ids": torch.zeros(0, dtype=torch.int64),
        "attention_mask": torch.zeros(0, dtype=torch.bool),
        "loss_mask": torch.zeros(0, dtype=torch.bool),
    }


def put(store, sample_id: str, i: int = 0, nbytes: int = 16, **fields):
    """``store.put`` as a seed producer calls it: every keyword spelled out."""
    meta = dict(run_id="run", algorithm="eagle3", schema_version=1, target_model_version="target",
                draft_weight_version=0, num_tokens=0)
    meta.update(fields)
    return store.put(sample_id, eagle3_tensors(i, nbytes), **meta)


def hand_built_ref(sample_id: str = "s0", **changes) -> SampleRef:
    """A ``SampleRef`` built field by field, as seed tests build them."""
    fields = dict(
        sample_id=sample_id,
        run_id="run",
        store_uri="mem://compat",
        feature_keys={name: f"{sample_id}/{name}" for name in EAGLE3},
        feature_specs={
            "aux_hidden_states": FeatureSpec((3, 4, 8), "bfloat16"),
            "input_ids": FeatureSpec((4,), "int64"),
            "attention_mask": FeatureSpec((4,), "bool"),
            "loss_mask": FeatureSpec((4,), "bool"),
        },
        algorithm="eagle3",
        schema_version=1,
        num_tokens=4,
        estimated_bytes=1024,
        target_model_version="target",
        draft_weight_version=0,
    )
    fields.update(changes)
    return SampleRef(**fields)


class Steps:
    """An ``abort_when`` that never aborts and counts the calls: the blocking
    put asks it once after every step that leaves the producer paused."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    def __call__(self) -> bool:
        with self.changed:
            self.count += 1
            self.changed.notify_all()
        return False

    def wait_for(self, n: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.count >= n, GUARD_S), f"only {self.count} steps, wanted {n}"


__all__ = ["EAGLE3", "GUARD_S", "Steps", "eagle3_tensors", "exact", "hand_built_ref", "put"]
