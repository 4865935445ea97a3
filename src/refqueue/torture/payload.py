"""The tensors a torture producer puts, and their checksum.

A sample's tensors are a pure function of its id (a ``torch.Generator``
seeded from the id's SHA-256), so the same id always carries the same
data; the checksum is the SHA-256 of every feature's name, dtype, shape and
bytes, in the ref's feature order.  The producer records the checksum at
put, the consumer at get, and the checker compares them: a read of the
wrong, torn or stale data is caught without the consumer knowing what it
should have read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

__all__ = ["tensors_for", "checksum", "PUT_FIELDS", "TOKENS", "HIDDEN"]

TOKENS = 16  # tokens per sample
HIDDEN = 64  # hidden size: aux_hidden_states is (3, TOKENS, HIDDEN) float32, 12 KiB
# The keywords of every torture put (an eagle3 sample of one run).
PUT_FIELDS = dict(run_id="torture", algorithm="eagle3", schema_version=1, target_model_version="target-0",
                  draft_weight_version=0, num_tokens=TOKENS)


def tensors_for(sample_id: str) -> dict[str, Any]:
    """The eagle3 features of ``sample_id``: the same id, the same tensors."""
    import torch

    seed = int.from_bytes(hashlib.sha256(sample_id.encode()).digest()[:8], "little")
    generator = torch.Generator().manual_seed(seed)
    return {
        "aux_hidden_states": torch.randn(3, TOKENS, HIDDEN, generator=generator),
        "input_ids": torch.randint(0, 32_000, (TOKENS,), generator=generator),
        "attention_mask": torch.ones(TOKENS, dtype=torch.bool),
        "loss_mask": (torch.rand(TOKENS, generator=generator) > 0.2).float(),
    }


def checksum(tensors: Mapping[str, Any]) -> str:
    """SHA-256 (hex, first 16 digits) over each feature's name, dtype, shape and bytes, in order."""
    digest = hashlib.sha256()
    for name, tensor in tensors.items():
        dense = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{dense.dtype}:{tuple(dense.shape)};".encode())
        digest.update(dense.numpy().tobytes())
    return digest.hexdigest()[:16]
