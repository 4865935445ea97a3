"""The data the kit writes to a store, and how its sizes map to the model's.

The model counts bytes in *units*; one unit is ``UNIT_BYTES`` real bytes, the
size of one token of the kit's ``eagle3`` sample (float32 aux hidden states of
width 2, int64 input ids, bool attention and loss masks).  A sample of ``n``
units has ``n`` tokens, so ``ref.estimated_bytes == n * UNIT_BYTES``.  A sample
id keeps its size across incarnations (``sizes`` maps ids to units), because
a store tells refs of one id apart by their shapes.

torch is imported only when tensors are made or the default store is built,
so importing this module (and the kit) needs no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "UNIT_BYTES",
    "STORE_META",
    "RICH_META",
    "LOCKSTEP_SIZES",
    "sample_tensors",
    "same_tensors",
    "default_store",
    "default_limits",
    "model_limits",
    "byte_limits",
    "unrepresentable",
]

UNIT_BYTES = 18  # 2 * float32 + int64 + bool + bool per token

# The metadata of every sample the kit stores (FeatureStore.put's keywords).
STORE_META: Mapping[str, Any] = {
    "run_id": "conformance",
    "algorithm": "eagle3",
    "schema_version": 1,
    "target_model_version": "target-0",
    "draft_weight_version": "draft-0",
}

# Metadata of every kind a ref may carry (``calls_inputs.refs_delivered_intact``
# and ``calls_leases.json_round_trip`` put refs of it): versions as ints
# and as strs (docs/API.md: ``str | int``, kept as given), text beyond ASCII,
# large numbers.  The walks put the kit's one ASCII set (``samples.STORE_META``).
RICH_META: tuple[Mapping[str, Any], ...] = (
    {"run_id": "run-é-运行-☃", "target_model_version": 7, "draft_weight_version": 0},
    {"run_id": "r", "target_model_version": "7", "draft_weight_version": "0"},
    {"run_id": "run \"quoted\" \\ {x}", "target_model_version": 2**62, "draft_weight_version": "draft/v2:ünï"},
)


# Sample ids of the lockstep runs and their sizes in units.
LOCKSTEP_SIZES: Mapping[str, int] = {"s0": 1, "s1": 2, "s2": 1, "s3": 3, "s4": 1, "s5": 2}


def sample_tensors(units: int, tag: int) -> dict[str, Any]:
    """An ``eagle3`` sample of ``units`` tokens whose values depend on ``tag``
    (so data written by different puts of one id differ)."""
    import torch

    aux = torch.arange(2 * units, dtype=torch.float32).reshape(units, 2) + 1000.0 * tag
    ids = torch.arange(units, dtype=torch.int64) + 100 * tag
    positions = torch.arange(units)
    return {
        "aux_hidden_states": aux,
        "input_ids": ids,
        "attention_mask": torch.ones(units, dtype=torch.bool),
        "loss_mask": (positions + tag) % 2 == 0,
    }


def same_tensors(got: Mapping[str, Any], want: Mapping[str, Any]) -> str | None:
    """How ``got`` differs from ``want`` (names and order, dtype, shape, values), or None."""
    import torch

    if list(got) != list(want):
        return f"features {list(got)} where {list(want)} were written"
    for name, tensor in want.items():
        other = got[name]
        if not isinstance(other, torch.Tensor):
            return f"feature {name!r} is a {type(other).__name__}, not a tensor"
        if other.dtype != tensor.dtype or other.shape != tensor.shape:
            return f"feature {name!r} is {other.dtype}{tuple(other.shape)}, written as {tensor.dtype}{tuple(tensor.shape)}"
        if not torch.equal(other.cpu(), tensor):
            return f"feature {name!r} holds {other.tolist()}, written as {tensor.tolist()}"
    return None


def default_store(
    *,
    capacity: int | None = None,
    max_samples: int | None = None,
    high: int | None = None,
    low: int | None = None,
) -> Any:
    """The kit's store: ``LocalFeatureStore(device="cpu")`` with the given
    caps and watermarks, in units (``None`` turns one off: every argument is
    passed explicitly, so the store's own defaults never apply)."""
    from refqueue.stores.local import LocalFeatureStore

    def real(units: int | None) -> int | None:
        return None if units is None else units * UNIT_BYTES

    return LocalFeatureStore(
        device="cpu",
        max_bytes=real(capacity),
        max_samples=max_samples,
        high_watermark_bytes=real(high),
        low_watermark_bytes=real(low),
    )


def default_limits(
    *, capacity: int | None = None, max_samples: int | None = None, high: int | None = None, low: int | None = None
) -> dict[str, int | None]:
    """``make_config`` keywords describing ``default_store(...)`` of the same arguments."""
    return {
        "store_high_watermark_bytes": high,
        "store_low_watermark_bytes": low,
        "capacity_bytes": capacity,
        "max_samples": max_samples,
    }


def model_limits(store: Any) -> dict[str, int | None]:
    """``make_config`` keywords describing ``store`` in units.

    Chosen so that every comparison the model makes in units answers as the
    store's in bytes: ``n*U >= high`` iff ``n >= ceil(high/U)``, ``n*U <= low``
    iff ``n <= floor(low/U)``, ``n*U <= cap`` iff ``n <= floor(cap/U)``.

    The one pair no unit count answers exactly: a high watermark that is not
    a multiple of ``UNIT_BYTES`` and lies less than a unit below the capacity
    (``high <= capacity`` in bytes, ``ceil(high/U) > floor(capacity/U)`` in
    units).  No residency of whole units reaches such a high watermark, so the
    capacity is given to the model as ``ceil(high/U)`` units: exact for every
    residency below that, which ``unrepresentable`` checks a run never reaches.
    """
    high = store.high_watermark_bytes
    low = store.low_watermark_bytes
    capacity = store.capacity_bytes
    high_units = None if high is None else -(-high // UNIT_BYTES)
    capacity_units = None if capacity is None else capacity // UNIT_BYTES
    if high_units is not None and capacity_units is not None and high <= capacity < high_units * UNIT_BYTES:
        capacity_units = high_units
    return {
        "store_high_watermark_bytes": high_units,
        "store_low_watermark_bytes": None if low is None else low // UNIT_BYTES,
        "capacity_bytes": capacity_units,
        "max_samples": getattr(store, "max_samples", None),
    }


def byte_limits(store: Any) -> dict[str, int | None]:
    """``make_config`` keywords describing ``store`` in bytes, as it reports them
    (what the construction check decides with: no rounding)."""
    return {
        "store_high_watermark_bytes": store.high_watermark_bytes,
        "store_low_watermark_bytes": store.low_watermark_bytes,
        "capacity_bytes": store.capacity_bytes,
        "max_samples": getattr(store, "max_samples", None),
    }


def unrepresentable(store: Any, reach_units: int) -> str | None:
    """Why the model, counting in units of ``UNIT_BYTES``, cannot stand for
    ``store`` in a run that keeps up to ``reach_units`` units resident; None
    when it can.  Only the pair ``model_limits`` rounds past the capacity can
    be a reason, and only when the run can reach it."""
    high, capacity = store.high_watermark_bytes, store.capacity_bytes
    if high is None or capacity is None:
        return None
    high_units = -(-high // UNIT_BYTES)
    if high <= capacity < high_units * UNIT_BYTES and high_units <= reach_units:
        return (
            f"the store's high watermark ({high} bytes) and capacity ({capacity} bytes) cannot be represented in the "
            f"kit's samples of {UNIT_BYTES} bytes a unit: residency reaches the high watermark only at "
            f"{high_units * UNIT_BYTES} bytes, past the capacity, and a run keeps up to {reach_units * UNIT_BYTES} "
            f"bytes resident; make the capacity a multiple of {UNIT_BYTES} bytes, or at least "
            f"{high_units * UNIT_BYTES} bytes"
        )
    return None
