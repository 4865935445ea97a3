"""Mutant: a broken store whose ``release`` scrubs the sample (the queue is correct).

A stale consumer that releases its handle after its lease was reclaimed
deletes the data the redelivered lease needs: the anchor's ~2 % lost
samples (D2).
"""

from typing import Any

from conformance.mutants._base import BaseQueue, factory
from refqueue.stores.local import LocalFeatureStore


class ScrubbingStore(LocalFeatureStore):
    """A ``LocalFeatureStore`` whose ``release`` also drops the sample's data."""

    def __init__(self) -> None:
        # The kit's own store (refqueue.conformance.samples.default_store): no caps, no
        # watermarks, so a replay of a counterexample on the base backend sees the same store.
        super().__init__(
            max_samples=None, max_bytes=None, high_watermark_bytes=None, low_watermark_bytes=None, device="cpu"
        )
        self._refs: dict[str, Any] = {}  # sample id -> the ref of its last put

    def put(self, sample_id: str, tensors: Any, **meta: Any) -> Any:
        ref = super().put(sample_id, tensors, **meta)
        self._refs[sample_id] = ref
        return ref

    def release(self, handle: Any) -> None:
        super().release(handle)
        ref = self._refs.get(handle.sample_id)
        if ref is not None:
            self.scrub(ref)


make = factory(BaseQueue, make_store=ScrubbingStore)
