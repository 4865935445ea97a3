"""What every tensor store of ``refqueue.stores`` checks and builds the same
way: the ref a put makes, the caps a put must fit under, a ref or handle of
another store.  Each error names the calling store's class (``owner``) and
call, what is wrong and how to fix it; nothing here changes state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from refqueue.errors import DuplicateSample, ForeignRef, StoreFull
from refqueue.refs import FeatureSpec, SampleRef
from refqueue.store import StoreHandle
from refqueue.stores._tensors import check_features

__all__ = ["new_ref", "duplicate_sample", "check_room", "check_ref", "check_handle"]


def new_ref(
    call: str,
    store_uri: str,
    sample_id: str,
    tensors: Mapping[str, Any],
    fields: Mapping[str, Any],
    key_prefix: str | None = None,
) -> tuple[SampleRef, list[tuple[str, torch.Tensor]]]:
    """The ref a put of ``tensors`` into the store at ``store_uri`` makes
    (feature keys ``"<key_prefix>/<feature>"``, the prefix defaulting to the
    sample id; the specs and the exact size from the tensors, ``fields`` the
    rest of the put's keywords), and the checked (name, tensor) pairs in
    feature order.  ``TypeError`` / ``ValueError`` for bad tensors (named by
    ``call``), then the ``SampleRef`` messages for bad fields."""
    pairs = check_features(call, tensors)
    specs = {name: FeatureSpec.of(tensor) for name, tensor in pairs}
    return SampleRef.build(sample_id, specs, store_uri=store_uri, key_prefix=key_prefix, **fields), pairs


def duplicate_sample(call: str, sample_id: str, store_uri: str) -> DuplicateSample:
    """The error of a put whose sample id already has data in the store."""
    return DuplicateSample(
        f"{call}: data for {sample_id!r} is already present in {store_uri!r}; a sample id is written "
        f"once per incarnation (ack or dead-letter it before putting it again)"
    )


def check_room(
    call: str, nbytes: int, held_bytes: int, held_samples: int, max_bytes: int | None, max_samples: int | None
) -> None:
    """``StoreFull`` unless one more sample of ``nbytes`` fits under the caps
    next to the ``held_bytes`` / ``held_samples`` the store holds (or has
    promised to puts in progress); ``None`` is no cap."""
    if max_bytes is not None and held_bytes + nbytes > max_bytes:
        raise StoreFull(
            f"{call} of {nbytes} bytes would exceed the byte cap: the store would hold "
            f"{held_bytes + nbytes} bytes, over max_bytes={max_bytes}; "
            f"ack samples to free room or raise max_bytes"
        )
    if max_samples is not None and held_samples + 1 > max_samples:
        raise StoreFull(
            f"{call} would exceed the sample-count cap: the store would hold "
            f"{held_samples + 1} samples, over max_samples={max_samples}; "
            f"ack samples to free room or raise max_samples"
        )


def check_ref(owner: str, call: str, ref: object, store_uri: str) -> SampleRef:
    """``ref`` is a ``SampleRef`` of the store at ``store_uri`` (``TypeError``,
    else ``ForeignRef``)."""
    if not isinstance(ref, SampleRef):
        raise TypeError(
            f"{owner}.{call} needs a SampleRef, got {type(ref).__name__}; "
            f"pass the ref that put() returned (or lease.ref)"
        )
    if ref.store_uri != store_uri:
        raise ForeignRef(
            f"{owner}.{call}: ref {ref.sample_id!r} names store {ref.store_uri!r}, which "
            f"does not match this store's URI {store_uri!r}; use the store the ref names"
        )
    return ref


def check_handle(owner: str, handle: object, store_uri: str) -> StoreHandle:
    """``handle`` is a ``StoreHandle`` the store at ``store_uri`` gave out
    (``TypeError``, else ``ForeignRef``)."""
    if not isinstance(handle, StoreHandle):
        raise TypeError(
            f"{owner}.release needs the StoreHandle that get() returned, "
            f"got {type(handle).__name__}"
        )
    if handle.store_uri != store_uri:
        raise ForeignRef(
            f"{owner}.release got a handle of store {handle.store_uri!r}, a different store "
            f"than this one ({store_uri!r}); release it on the store that gave it out"
        )
    return handle
