"""The data-plane contract: ``FeatureStore``, ``StoreHandle``, ``StoreHealth``.

A store keeps each sample's tensors under the keys its ``SampleRef`` names.
The queue never touches tensors: it reads ``health()`` (counters only) for
backpressure and calls ``scrub(ref)`` when a live ack commits or a sample is
dead-lettered (D2).  Nothing else removes data:

* ``release(handle)`` only ends the holder's use of what ``get`` returned; it
  never scrubs, is idempotent, and a stale holder's release is harmless.
* what ``get`` returned stays valid for its holder after a scrub.
* ``gc()`` sweeps what a crash left behind (handles of dead holders, data
  the store was told to drop but could not yet), never live data.

This module imports without torch; concrete stores live in
``refqueue.stores``.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from refqueue.refs import FeatureAlgorithm, SampleRef

__all__ = ["FeatureStore", "StoreHandle", "StoreHealth"]


@dataclass(frozen=True, slots=True)
class StoreHealth:
    """A store's occupancy: ints and bools only, read in O(1) from counters.

    ``high_watermark_hit`` is ``resident_bytes >= high`` and
    ``low_watermark_hit`` is ``resident_bytes <= low`` against the store's own
    watermarks (both False when the store has none).
    """

    resident_bytes: int
    capacity_bytes: int | None
    sample_count: int
    high_watermark_hit: bool
    low_watermark_hit: bool

    @classmethod
    def of_counters(
        cls,
        resident_bytes: int,
        sample_count: int,
        *,
        capacity_bytes: int | None,
        high_watermark_bytes: int | None,
        low_watermark_bytes: int | None,
    ) -> StoreHealth:
        """The health of a store holding ``resident_bytes`` in ``sample_count``
        samples, its flags computed against its watermarks (None: none)."""
        return cls(
            resident_bytes=resident_bytes,
            capacity_bytes=capacity_bytes,
            sample_count=sample_count,
            high_watermark_hit=high_watermark_bytes is not None and resident_bytes >= high_watermark_bytes,
            low_watermark_hit=low_watermark_bytes is not None and resident_bytes <= low_watermark_bytes,
        )


@dataclass(frozen=True, slots=True)
class StoreHandle:
    """What ``get`` hands out with the tensors; give it back to ``release``."""

    store_uri: str
    sample_id: str
    handle_id: int

    @property
    def store(self) -> str:
        """The seed's name for ``store_uri``: the URI of the store that gave the handle out."""
        return self.store_uri


class FeatureStore(abc.ABC):
    """Where a sample's tensors live while its ref travels through the queue."""

    @property
    @abc.abstractmethod
    def uri(self) -> str:
        """``scheme://location``; every ref this store makes carries it as ``store_uri``."""

    @property
    def store_uri(self) -> str:
        """The seed's name for ``uri``."""
        return self.uri

    @property
    def high_watermark_bytes(self) -> int | None:
        """The store's own high watermark (None: none configured)."""
        return None

    @property
    def low_watermark_bytes(self) -> int | None:
        """The store's own low watermark (None: none configured)."""
        return None

    @property
    def capacity_bytes(self) -> int | None:
        """The byte cap (None: unbounded)."""
        return None

    @abc.abstractmethod
    def put(
        self,
        sample_id: str,
        tensors: Mapping[str, Any],
        *,
        run_id: str,
        algorithm: FeatureAlgorithm | str,
        schema_version: int,
        target_model_version: str | int,
        draft_weight_version: str | int,
        num_tokens: int,
    ) -> SampleRef:
        """Store one sample's tensors (feature name -> tensor, in feature order)
        and return its ref.  Validates everything before anything is visible;
        raises ``StoreFull`` past a cap and ``DuplicateSample`` for data already
        resident under ``sample_id``."""

    @abc.abstractmethod
    def get(self, ref: SampleRef, device: Any = None) -> tuple[dict[str, Any], StoreHandle]:
        """The sample's tensors (feature name -> tensor, in the ref's order) and a
        handle.  Raises ``SampleMissing`` when the data is not resident."""

    @abc.abstractmethod
    def release(self, handle: StoreHandle) -> None:
        """End the holder's use of what ``get`` returned.  Idempotent; never scrubs."""

    @abc.abstractmethod
    def scrub(self, ref: SampleRef) -> bool:
        """Drop the sample's data (called by the queue when a live ack commits or
        the sample is dead-lettered).  True when data was dropped, False when
        none was resident.  Holders keep what ``get`` gave them."""

    @abc.abstractmethod
    def gc(self) -> int:
        """Sweep what crashes left behind; returns how many items were swept."""

    @abc.abstractmethod
    def health(self) -> StoreHealth:
        """Occupancy from counters, O(1), never waiting on tensor I/O."""

    @abc.abstractmethod
    def close(self) -> None:
        """Drop everything; afterwards every call raises ``StoreClosed``."""
