"""``pad_collate``: a ``Batch`` of several samples as one dict of batched tensors.

Samples differ in length, so the loader yields a ``Batch`` of per-sample
dicts and leaves assembly to a ``collate`` callable; this is the one most
trainers want::

    loader = FeatureDataLoader(queue, algorithm="dflash", batch_size=8, prefetch=16, collate=pad_collate)
    for features in loader:              # {"hidden_states": [8, T, H], "input_ids": [8, T], ..., "lengths": [8]}
        train_step(features)

Per algorithm (``refqueue.refs``): the features are the algorithm's required
ones (EAGLE-3: ``aux_hidden_states, input_ids, attention_mask, loss_mask``;
DFlash: ``hidden_states, ...``; DSpark: ``target_hidden_states,
target_last_hidden_states, input_ids, loss_mask``) in that order, then every
other feature all the samples carry.  A feature's *token dimension* is its
first dimension whose size is the sample's ``num_tokens``; it is padded at
the end to the batch's longest sample (with ``pad_value``, 0 by default: a
padded position has mask 0 and so takes no loss) and the results are stacked
on a new first dimension.  A feature with no token dimension must have one
shape across the batch and is stacked as it is.  ``lengths`` (int64, on the
first feature's device) gives each sample's ``num_tokens``.  The tensors stay
on their device; nothing is copied to the host.
"""

from __future__ import annotations

from typing import Any

from refqueue.refs import FeatureAlgorithm

__all__ = ["pad_collate"]


def pad_collate(batch: Any, *, pad_value: float = 0) -> dict[str, Any]:
    """``batch`` (a ``refqueue.loader.Batch``) as ``{feature: batched tensor, "lengths": ...}``.

    Raises ``ValueError`` for an empty batch, samples of different
    algorithms, a required feature missing, or a feature whose shapes
    differ beyond its token dimension.
    """
    import torch

    if isinstance(pad_value, bool) or not isinstance(pad_value, (int, float)) or pad_value != pad_value:
        raise TypeError(
            f"pad_collate(pad_value={pad_value!r}) must be a number (not a bool or NaN); pass e.g. 0 or -100"
        )
    try:
        samples = list(batch)
    except TypeError:
        raise TypeError(
            f"pad_collate needs a Batch the loader yielded, got {type(batch).__name__}; pass "
            f"collate=pad_collate to FeatureDataLoader"
        ) from None
    if not samples:
        raise ValueError("pad_collate: the batch is empty; the loader never yields one, pass a Batch it yielded")
    for sample in samples:
        if not (hasattr(sample, "tensors") and hasattr(getattr(sample, "lease", None), "ref")):
            raise TypeError(
                f"pad_collate needs a Batch of Samples (each with .lease.ref and .tensors), got an item of type "
                f"{type(sample).__name__}; pass collate=pad_collate to FeatureDataLoader"
            )
    refs = [s.lease.ref for s in samples]
    algorithms = {ref.algorithm for ref in refs}
    if len(algorithms) != 1:
        raise ValueError(
            f"pad_collate: the batch mixes algorithms {sorted(str(a) for a in algorithms)}; give the loader an "
            f"algorithm so that it refuses the others"
        )
    algorithm = FeatureAlgorithm(algorithms.pop())
    required = list(algorithm.required_features)
    for ref, sample in zip(refs, samples):
        missing = [name for name in required if name not in sample.tensors]
        if missing:
            raise ValueError(
                f"pad_collate: sample {ref.sample_id!r} lacks the {algorithm.value} features {missing}; its producer "
                f"must write {required}"
            )
    shared = [name for name in samples[0].tensors if name not in required and all(name in s.tensors for s in samples)]
    lengths = [ref.num_tokens for ref in refs]
    longest = max(lengths)
    out: dict[str, Any] = {}
    for name in required + shared:
        tensors = [s.tensors[name] for s in samples]
        out[name] = torch.stack(_padded(name, tensors, lengths, longest, pad_value, refs))
    first = out[required[0]]
    out["lengths"] = torch.tensor(lengths, dtype=torch.int64).to(first.device, non_blocking=True)
    return out


def _padded(name: str, tensors: list[Any], lengths: list[int], longest: int, pad_value: float, refs: list[Any]) -> list[Any]:
    import torch

    dims = [_token_dim(t, n) for t, n in zip(tensors, lengths)]
    if any(d is None for d in dims):
        shapes = {tuple(t.shape) for t in tensors}
        if len(shapes) != 1:
            raise ValueError(
                f"pad_collate: feature {name!r} has no dimension of num_tokens in some samples and its shapes "
                f"differ ({sorted(shapes)}); a feature either has a token dimension or one shape"
            )
        return tensors
    dim = dims[0]
    assert dim is not None
    rest = {tuple(t.shape[:dim]) + tuple(t.shape[dim + 1:]) for t in tensors}
    if len(set(dims)) != 1 or len(rest) != 1:
        raise ValueError(
            f"pad_collate: feature {name!r} differs beyond its token dimension across the batch "
            f"({[(ref.sample_id, tuple(t.shape)) for ref, t in zip(refs, tensors)]}); samples of one batch must "
            f"agree on every other dimension"
        )
    out = []
    for tensor, length in zip(tensors, lengths):
        if length == longest:
            out.append(tensor)
            continue
        shape = list(tensor.shape)
        shape[dim] = longest - length
        pad = torch.full(shape, pad_value, dtype=tensor.dtype, device=tensor.device)
        out.append(torch.cat([tensor, pad], dim=dim))
    return out


def _token_dim(tensor: Any, num_tokens: int) -> int | None:
    for dim, size in enumerate(tensor.shape):
        if size == num_tokens:
            return dim
    return None
