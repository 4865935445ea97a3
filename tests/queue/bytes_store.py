"""``BytesStore``: a small pure-Python ``FeatureStore`` for the queue's tests.

It holds real data (one ``bytes`` object per feature) and implements the
``refqueue.store`` contract honestly: ``put`` validates and copies in,
``get`` hands out the bytes (immutable, so they stay valid for the holder
after a scrub, D2), ``release`` only closes the handle, ``scrub`` drops the
data, ``health`` is read from counters, caps raise ``StoreFull``.  Counters of
calls (``scrubs``, ``gets``, ...) let a test see what the queue asked of it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping
from typing import Any

from refqueue.errors import DuplicateSample, SampleMissing, StoreClosed, StoreFull
from refqueue.refs import FeatureAlgorithm, FeatureSpec, SampleRef
from refqueue.store import FeatureStore, StoreHandle, StoreHealth

# Features of an eagle3 sample; the first carries the payload, the others are empty.
FEATURES = ("aux_hidden_states", "input_ids", "attention_mask", "loss_mask")


def features(payload: bytes) -> dict[str, bytes]:
    """Tensors-as-bytes for one sample: ``payload`` in the first feature."""
    return {name: (payload if i == 0 else b"") for i, name in enumerate(FEATURES)}


def make_ref(sample_id: str, nbytes: int, store_uri: str = "mem://bytes") -> SampleRef:
    """The ref ``BytesStore.put`` returns for ``nbytes`` of payload."""
    specs = {name: FeatureSpec(((nbytes if i == 0 else 0),), "uint8") for i, name in enumerate(FEATURES)}
    return SampleRef.build(sample_id, specs, algorithm=FeatureAlgorithm.EAGLE3, store_uri=store_uri)


class BytesStore(FeatureStore):
    """An in-memory store of ``bytes`` features, with optional caps and watermarks."""

    def __init__(
        self,
        *,
        uri: str = "mem://bytes",
        capacity_bytes: int | None = None,
        max_samples: int | None = None,
        high_watermark_bytes: int | None = None,
        low_watermark_bytes: int | None = None,
    ) -> None:
        self._uri = uri
        self._capacity = capacity_bytes
        self._max_samples = max_samples
        self._high = high_watermark_bytes
        self._low = low_watermark_bytes
        self._lock = threading.Lock()  # guards everything below; held across no wait
        self._data: dict[str, tuple[SampleRef, tuple[bytes, ...]]] = {}
        self._handles: set[int] = set()
        self._handle_ids = itertools.count(1)
        self._resident_bytes = 0
        self._closed = False
        self.scrubs: list[str] = []  # sample ids scrubbed, in order (data dropped or not)
        self.gets = 0

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def capacity_bytes(self) -> int | None:
        return self._capacity

    @property
    def high_watermark_bytes(self) -> int | None:
        return self._high

    @property
    def low_watermark_bytes(self) -> int | None:
        return self._low

    def put(self, sample_id: str, tensors: Mapping[str, Any], *, run_id: str = "run",
            algorithm: FeatureAlgorithm | str = FeatureAlgorithm.EAGLE3, schema_version: int = 1,
            target_model_version: str | int = "target", draft_weight_version: str | int = 0,
            num_tokens: int = 0) -> SampleRef:
        self._check_open("put")
        for name, value in tensors.items():
            if not isinstance(value, bytes):
                raise TypeError(f"BytesStore.put: feature {name!r} must be bytes, got {type(value).__name__}")
        specs = {name: FeatureSpec((len(value),), "uint8") for name, value in tensors.items()}
        ref = SampleRef.build(
            sample_id, specs, algorithm=algorithm, store_uri=self._uri, run_id=run_id,
            schema_version=schema_version, num_tokens=num_tokens,
            target_model_version=target_model_version, draft_weight_version=draft_weight_version,
        )
        with self._lock:
            if sample_id in self._data:
                raise DuplicateSample(f"BytesStore.put({sample_id!r}): its data is already resident")
            if self._capacity is not None and self._resident_bytes + ref.estimated_bytes > self._capacity:
                raise StoreFull(f"BytesStore.put({sample_id!r}) would exceed capacity_bytes={self._capacity}")
            if self._max_samples is not None and len(self._data) + 1 > self._max_samples:
                raise StoreFull(f"BytesStore.put({sample_id!r}) would exceed max_samples={self._max_samples}")
            self._data[sample_id] = (ref, tuple(bytes(v) for v in tensors.values()))
            self._resident_bytes += ref.estimated_bytes
        return ref

    def ref_of(self, sample_id: str) -> SampleRef:
        """The ref of the data resident under ``sample_id`` (KeyError if none)."""
        with self._lock:
            return self._data[sample_id][0]

    def get(self, ref: SampleRef, device: Any = None) -> tuple[dict[str, bytes], StoreHandle]:
        self._check_open("get")
        with self._lock:
            self.gets += 1
            entry = self._data.get(ref.sample_id)
            if entry is None or entry[0] != ref:
                raise SampleMissing(f"BytesStore.get({ref.sample_id!r}): its data is not resident")
            handle = StoreHandle(self._uri, ref.sample_id, next(self._handle_ids))
            self._handles.add(handle.handle_id)
        return dict(zip(ref.feature_keys, entry[1])), handle

    def release(self, handle: StoreHandle) -> None:
        self._check_open("release")
        with self._lock:
            self._handles.discard(handle.handle_id)

    def scrub(self, ref: SampleRef) -> bool:
        self._check_open("scrub")
        with self._lock:
            self.scrubs.append(ref.sample_id)
            entry = self._data.get(ref.sample_id)
            if entry is None or entry[0] != ref:
                return False
            del self._data[ref.sample_id]
            self._resident_bytes -= ref.estimated_bytes
            return True

    def gc(self) -> int:
        self._check_open("gc")
        with self._lock:
            swept = len(self._handles)
            self._handles.clear()
            return swept

    def health(self) -> StoreHealth:
        self._check_open("health")
        with self._lock:
            resident, count = self._resident_bytes, len(self._data)
        return StoreHealth(
            resident_bytes=resident,
            capacity_bytes=self._capacity,
            sample_count=count,
            high_watermark_hit=self._high is not None and resident >= self._high,
            low_watermark_hit=self._low is not None and resident <= self._low,
        )

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._data.clear()
            self._handles.clear()
            self._resident_bytes = 0

    def _check_open(self, call: str) -> None:
        if self._closed:
            raise StoreClosed(f"BytesStore.{call} after close()")
