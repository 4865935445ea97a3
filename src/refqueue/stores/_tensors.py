"""Tensor checks and copies for the torch-backed stores.

Three jobs, kept out of the stores so that each store module is only about
its bookkeeping:

* ``resolve_device`` turns a user's ``device`` argument into a concrete
  ``torch.device`` (``"cuda"`` gets the index of the calling thread's current
  device, so a store never depends on which thread later touches it);
* ``check_features`` validates a ``{feature name: tensor}`` mapping before a
  store makes anything visible, and ``first_mismatch`` compares such a mapping
  with what a ``SampleRef`` declares;
* ``copy_to`` makes the one kind of copy the stores hand around: detached
  from autograd, dense, contiguous, in storage nobody else holds.

``copy_to`` never uses ``non_blocking=True``: a non-blocking device-to-host
copy may be read before it lands.  The asynchronous copies of a CUDA store
(its copy stream, pinned staging, ready events) are ``refqueue.stores._device``'s.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from refqueue.refs import FeatureSpec, SampleRef, dtype_name

__all__ = ["check_features", "copy_to", "first_mismatch", "resolve_device"]

_DEVICE_TYPES = ("cpu", "cuda")


def resolve_device(what: str, device: object) -> torch.device:
    """``device`` as a concrete ``torch.device`` on ``cpu`` or ``cuda:<index>``.

    ``what`` names the argument in the error (e.g. ``"LocalFeatureStore(device)"``).
    Raises ``TypeError`` for a non-device value and ``ValueError`` for a device
    this machine does not have.
    """
    if isinstance(device, bool) or not isinstance(device, (str, torch.device)):
        raise TypeError(
            f"{what} must be a str or torch.device, got {device!r} ({type(device).__name__}); "
            f"pass e.g. 'cpu' or 'cuda:0'"
        )
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(
            f"{what} got {device!r}, which torch does not know as a device; pass e.g. 'cpu' or 'cuda:0'"
        ) from None
    if dev.type not in _DEVICE_TYPES:
        raise ValueError(f"{what} got {device!r}; tensors are kept on 'cpu' or 'cuda' only, pass one of those")
    if dev.type == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError(f"{what} got {device!r}, but CUDA is not available on this machine; pass 'cpu'")
    index = torch.cuda.current_device() if dev.index is None else dev.index
    count = torch.cuda.device_count()
    if index >= count:
        raise ValueError(
            f"{what} got {device!r}, but this machine has {count} CUDA device(s); "
            f"pass 'cuda:0' .. 'cuda:{count - 1}'"
        )
    return torch.device("cuda", index)


def check_features(call: str, tensors: object) -> list[tuple[str, torch.Tensor]]:
    """The ``(name, tensor)`` pairs of ``tensors``, in order, after checking each.

    ``tensors`` must be a non-empty mapping of non-empty ``str`` names to dense
    torch tensors that hold data (not on the ``meta`` device) and whose dtype
    ``refqueue.refs`` can size.  ``call`` prefixes every message (e.g.
    ``"LocalFeatureStore.put('s0')"``).  Pure: raises ``TypeError`` or
    ``ValueError`` and touches nothing.
    """
    if not isinstance(tensors, Mapping):
        raise TypeError(
            f"{call}: tensors must be a dict of feature name -> torch.Tensor, got "
            f"{type(tensors).__name__}; pass e.g. {{'input_ids': ids, ...}}"
        )
    if not tensors:
        raise ValueError(f"{call}: tensors is empty; a sample carries at least the features its algorithm requires")
    pairs = []
    for name, tensor in tensors.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"{call}: feature name {name!r} is not a non-empty str; name every feature with a str")
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(
                f"{call}: feature {name!r} is a {type(tensor).__module__}.{type(tensor).__name__}, "
                f"not a torch.Tensor; convert it with torch.as_tensor(...)"
            )
        if tensor.layout != torch.strided:
            raise ValueError(
                f"{call}: feature {name!r} has layout {tensor.layout}; pass a dense tensor (tensor.to_dense())"
            )
        if tensor.device.type == "meta":
            raise ValueError(
                f"{call}: feature {name!r} is on the meta device and holds no data; pass a materialised tensor"
            )
        try:
            dtype_name(tensor.dtype)
        except ValueError:
            raise ValueError(
                f"{call}: feature {name!r} has dtype {tensor.dtype}, which a SampleRef cannot name; "
                f"convert it to a supported dtype (e.g. tensor.to(torch.bfloat16))"
            ) from None
        pairs.append((name, tensor))
    return pairs


def first_mismatch(ref: SampleRef, pairs: list[tuple[str, torch.Tensor]]) -> str | None:
    """The first way ``pairs`` differ from what ``ref`` declares, or None.

    Compared in this order: the feature names and their order, then per
    feature the dtype and the shape.  (A feature's bytes follow from its dtype
    and shape, so a byte difference always shows up as one of those first.)
    """
    declared = list(ref.feature_specs)
    given = [name for name, _ in pairs]
    if given != declared:
        for i, (want, got) in enumerate(zip(declared, given)):
            if want != got:
                return f"feature #{i} is {got!r} but the ref declares {want!r} there (the ref's order is {declared})"
        if len(given) < len(declared):
            return f"feature {declared[len(given)]!r} is missing (the ref declares {declared})"
        return f"feature {given[len(declared)]!r} is not declared by the ref (it declares {declared})"
    for name, tensor in pairs:
        spec: FeatureSpec = ref.feature_specs[name]
        found = FeatureSpec.of(tensor)
        if found.dtype_name != spec.dtype_name:
            return f"feature {name!r} has dtype {found.dtype_name} but the ref declares {spec.dtype_name}"
        if found.shape != spec.shape:
            return f"feature {name!r} has shape {found.shape} but the ref declares {spec.shape}"
    return None


def copy_to(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A copy of ``tensor`` on ``device``: detached, contiguous, sharing no storage.

    Conjugate and negative views are resolved by the copy.  Synchronous with
    respect to the host for device-to-host copies (never ``non_blocking``).
    """
    return tensor.detach().to(device=device, copy=True, memory_format=torch.contiguous_format)

