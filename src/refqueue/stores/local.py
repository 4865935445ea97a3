"""``LocalFeatureStore``: an in-process ``FeatureStore`` of torch tensors.

Design notes (the contract is ``refqueue.store``; decisions D2 and D6 of the
design page are the reasons for most of what follows):

* **Copies in, copies out.**  ``put`` copies each tensor to the store's device
  (detached, contiguous, in storage only the store holds), so a producer that
  reuses or mutates its buffers after ``put`` cannot change stored data.
  ``get`` returns fresh copies too: torch has no read-only tensors, and a
  consumer that edits a feature in place (say, masks ``loss_mask``) and then
  fails must not hand the edit to the sample's redelivery.  A copy is also
  what keeps a holder's tensors valid after the sample is scrubbed (D2).
* **No copy under the lock** (D6).  Every tensor copy runs outside
  ``self._lock``: ``put`` reserves the sample's room under the lock, copies
  without it, then commits under it; ``get`` takes the stored tensors and a
  handle under the lock and copies after.  ``health()`` takes no lock at all:
  it reads ``self._counters``, a tuple that is replaced (never mutated) under
  the lock, so it can neither wait for a copy nor see a half-made update.
* **Only a scrub removes data.**  ``release`` ends a holder's use and nothing
  else; ``gc`` sweeps handles whose sample is gone (holders that never
  released), never resident data.
* **Copies on request only** (issue 24).  ``put(..., copy=False)`` hands
  the tensors over: one already where the store would keep it (its device,
  contiguous, the whole of its storage) is kept as it is.  ``get(ref,
  copy=False)`` hands out views of the stored tensors (no copy at all) when
  they are on the device asked for.  Torch has no read-only tensors, so the
  store watches instead: it notes each stored tensor's version counter at
  the put, and a ``get`` of data written to since (through a view, or by a
  producer that handed its tensors over) raises ``RefMismatch``, which the
  loader dead-letters (D7); redelivery never serves edited data.
* **CUDA** (``refqueue.stores._device``).  A store on ``cuda`` copies on its
  own stream, after the producer's stream, and records a ready event; a
  ``get`` makes the caller's current stream wait for it and marks the stored
  tensors as used by that stream (``record_stream``), so a scrub racing the
  read cannot recycle their memory early.  Host sources go by DMA, pageable
  ones staged through pinned buffers the store reuses.  Nothing synchronizes
  the device; ``health()`` touches no tensor.

Locking rule: one ``threading.Lock``; no method ever waits while holding it,
so the store needs no conditions.  Methods whose name ends in ``_locked``
are the only code that changes state, and they run with the lock held.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any, NamedTuple

import torch

from refqueue.events import EventLog, check_event_log
from refqueue.errors import DuplicateSample, RefMismatch, SampleMissing, StoreClosed
from refqueue.refs import FeatureAlgorithm, SampleRef
from refqueue.store import FeatureStore, StoreHandle, StoreHealth
from refqueue.stores import _device, _tensors
from refqueue.stores._common import check_handle, check_ref, check_room, duplicate_sample, new_ref
from refqueue.stores._tensors import check_features, first_mismatch, resolve_device

__all__ = ["LocalFeatureStore", "DEFAULT_MAX_SAMPLES", "DEFAULT_MAX_BYTES"]

MiB = 1024 * 1024
# The seed's defaults: caps and watermarks are on unless the caller turns them off.
DEFAULT_MAX_SAMPLES = 64
DEFAULT_MAX_BYTES = 256 * MiB
# Watermarks nobody set: the seed's 192 MiB / 64 MiB, i.e. 3/4 and 1/4 of its
# 256 MiB cap; with another byte cap, the same fractions of that cap.
_NO_CAP_HIGH = 192 * MiB
_NO_CAP_LOW = 64 * MiB


class _Default:
    """The value of a constructor argument the caller did not pass."""

    def __repr__(self) -> str:
        return "<default>"


_DEFAULT: Any = _Default()


class _Resident(NamedTuple):
    """One sample's data as the store holds it."""

    ref: SampleRef
    tensors: tuple[torch.Tensor, ...]  # one per feature, in the ref's order
    ready: Any  # torch.cuda.Event recorded after the put's copy, or None on cpu
    serial: int  # which put made it: tells a handle of an earlier incarnation apart
    versions: tuple[int, ...]  # each tensor's version counter after the put: a write since shows
    packed: _device.Packed | None  # a CUDA store's one buffer holding the copied features, or None


class LocalFeatureStore(FeatureStore):
    """Tensors in this process, on ``device`` (``"cpu"`` or ``"cuda[:i]"``).

    The seed's constructor, with its defaults: ``LocalFeatureStore(max_samples=64,
    max_bytes=256 MiB, high_watermark_bytes=192 MiB, low_watermark_bytes=64 MiB)``
    (positional in that order), plus the keywords ``device`` and ``uri``.

    ``max_bytes``/``max_samples`` cap what is resident (a put past a cap raises
    ``StoreFull``, a ``MemoryError``); ``None`` turns a cap off.  As in the
    seed, at least one cap must be set (``ValueError``), unless the caller
    also passes the watermarks explicitly: ``max_samples=None,
    max_bytes=None, high_watermark_bytes=..., low_watermark_bytes=...`` is a
    store bounded by its watermarks only (or, with ``None`` for them, not at
    all), the configuration the reference model and the conformance kit
    use (see docs/MIGRATING.md).

    ``high_watermark_bytes``/``low_watermark_bytes`` set the flags of
    ``health()`` and so the backpressure of every queue on the store (D4).
    A watermark not passed takes a default: with neither passed, 3/4 and 1/4
    of ``max_bytes`` (the seed's 192 MiB / 64 MiB at its 256 MiB cap), or
    192 MiB / 64 MiB with no byte cap; with only one passed, the other keeps
    the seed's 3 : 1 ratio to it (``low = high // 3``; ``high = min(3 * low,
    max_bytes)``).  ``None`` for a watermark turns watermarks off (both must
    then be ``None`` or not passed).  The effective pair must satisfy ``low <
    high <= max_bytes``.

    ``uri`` defaults to a fresh ``mem://local-<hex>``, unique per instance
    (``store_uri`` is the same value under the seed's name).  ``events`` (a
    ``refqueue.events.EventLog``) records store_put, get, release, scrub and
    close (docs/EVENTS.md).  Thread-safe.
    """

    def __init__(
        self,
        max_samples: int | None = _DEFAULT,
        max_bytes: int | None = _DEFAULT,
        high_watermark_bytes: int | None = _DEFAULT,
        low_watermark_bytes: int | None = _DEFAULT,
        *,
        device: str | torch.device = "cpu",
        uri: str | None = None,
        events: EventLog | None = None,
    ) -> None:
        self._device = resolve_device("LocalFeatureStore(device)", device)
        # A CUDA store's copy stream and pinned buffers; a CPU store's pinned
        # buffers for gets onto a GPU, made on the first such get.
        self._cuda = _device.CudaCopies(self._device) if self._device.type == "cuda" else None
        self._stager: _device.PinnedStager | None = None if self._cuda is None else self._cuda.stager
        event_log = check_event_log("LocalFeatureStore", events)
        if max_samples is _DEFAULT:
            max_samples = DEFAULT_MAX_SAMPLES
        if max_bytes is _DEFAULT:
            max_bytes = DEFAULT_MAX_BYTES
        _check_cap("max_bytes", max_bytes, "byte")
        _check_cap("max_samples", max_samples, "sample")
        if max_samples is None and max_bytes is None and high_watermark_bytes is _DEFAULT and low_watermark_bytes is _DEFAULT:
            raise ValueError(
                "LocalFeatureStore(max_samples=None, max_bytes=None) has no cap at all, so nothing stops it "
                "from growing until the process runs out of memory; at least one of max_samples / max_bytes "
                "must be set (for a store bounded only by its watermarks, or not at all, pass "
                "high_watermark_bytes and low_watermark_bytes explicitly too)"
            )
        defaulted = {
            name
            for name, value in (("high", high_watermark_bytes), ("low", low_watermark_bytes))
            if value is _DEFAULT
        }
        high_watermark_bytes, low_watermark_bytes = _default_watermarks(
            high_watermark_bytes, low_watermark_bytes, max_bytes
        )
        _check_watermarks(high_watermark_bytes, low_watermark_bytes, max_bytes, defaulted)
        self._uri = f"mem://local-{uuid.uuid4().hex[:12]}" if uri is None else _check_uri(uri)
        self._max_bytes = max_bytes
        self._max_samples = max_samples
        self._high = high_watermark_bytes
        self._low = low_watermark_bytes

        # One lock guards every field below; it is never held across a tensor
        # copy or any other wait, so there are no conditions to notify.
        self._lock = threading.Lock()
        self._closed = False
        self._samples: dict[str, _Resident] = {}  # sample_id -> its resident data
        self._reserved: dict[str, int] = {}  # sample_id -> bytes of a put copying now
        self._reserved_bytes = 0
        self._handles: dict[int, tuple[str, int]] = {}  # handle_id -> (sample_id, serial)
        self._serials = itertools.count(1)
        self._handle_ids = itertools.count(1)
        # (resident_bytes, sample_count), replaced as a whole under the lock and
        # read without it by health().
        # Invariants: resident_bytes == sum of the estimated_bytes of _samples'
        # refs, sample_count == len(_samples), both >= 0; _reserved and _samples
        # share no id; _reserved_bytes == sum(_reserved.values()).
        self._counters: tuple[int, int] = (0, 0)
        # The event log (issue 13) or None; hooks emit with _lock held.
        self._event_log = event_log
        self._sid = 0 if event_log is None else event_log.register("store", {
            "ev": "store_open", "t": time.monotonic(), "store": self._uri, "capacity_bytes": max_bytes,
            "max_samples": max_samples, "store_high": self._high, "store_low": self._low,
        })

    # -- configuration -------------------------------------------------------

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def device(self) -> torch.device:
        """Where stored tensors live."""
        return self._device

    @property
    def capacity_bytes(self) -> int | None:
        return self._max_bytes

    @property
    def max_samples(self) -> int | None:
        return self._max_samples

    @property
    def high_watermark_bytes(self) -> int | None:
        return self._high

    @property
    def low_watermark_bytes(self) -> int | None:
        return self._low

    @property
    def handle_count(self) -> int:
        """Handles ``get`` gave out that were not released (nor swept by ``gc``)."""
        return len(self._handles)

    def __repr__(self) -> str:
        resident, count = self._counters
        state = "closed" if self._closed else f"{count} samples, {resident} bytes"
        return f"LocalFeatureStore({self._uri!r}, device={str(self._device)!r}, {state})"

    # -- the FeatureStore contract ---------------------------------------------

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
        copy: bool = True,
    ) -> SampleRef:
        """Copy one sample's tensors into the store and return their ref.

        ``copy=False`` hands the tensors over instead: each one already on the
        store's device, contiguous and the whole of its storage is kept
        without a copy (the others are copied), and the producer must not
        write to it again (a later ``get`` would raise ``RefMismatch``).

        Feature keys are ``"<sample_id>/<feature>"``; the specs come from the
        tensors.  Everything is validated before anything is visible: the
        tensors (``TypeError``/``ValueError``), the ref's fields (the
        ``SampleRef`` messages), then under the lock ``DuplicateSample`` (data
        already resident, or a put of the same id in progress) and
        ``StoreFull`` (past ``max_bytes`` or ``max_samples``).
        """
        self._check_open("put")
        if not isinstance(sample_id, str) or not sample_id:
            raise ValueError(
                f"LocalFeatureStore.put: sample_id must be a non-empty str, got {sample_id!r}; "
                f"pass the producer's id for this sample"
            )
        call = f"LocalFeatureStore.put({sample_id!r})"
        fields = dict(
            run_id=run_id, algorithm=algorithm, schema_version=schema_version, num_tokens=num_tokens,
            target_model_version=target_model_version, draft_weight_version=draft_weight_version,
        )
        adopt = _check_copy(call, copy)
        ref, pairs = new_ref(call, self._uri, sample_id, tensors, fields)
        self._store(call, ref, pairs, adopt)
        return ref

    def put_ref(self, ref: SampleRef, tensors: Mapping[str, Any], *, copy: bool = True) -> SampleRef:
        """Store ``tensors`` under a ref made elsewhere (e.g. rebuilt from JSON).

        The tensors must match what ``ref`` declares: this store's URI, the
        feature names in the ref's order, each feature's dtype and shape; the
        first difference raises ``RefMismatch``.  Then as ``put`` (``copy``
        too).  Returns ``ref``.
        """
        self._check_open("put_ref")
        if not isinstance(ref, SampleRef):
            raise TypeError(
                f"LocalFeatureStore.put_ref needs a SampleRef, got {type(ref).__name__}; "
                f"build one with SampleRef(...) or SampleRef.from_json(...)"
            )
        call = f"LocalFeatureStore.put_ref({ref.sample_id!r})"
        adopt = _check_copy(call, copy)
        pairs = check_features(call, tensors)
        if ref.store_uri != self._uri:
            raise RefMismatch(
                f"{call}: the ref names store {ref.store_uri!r} but this store is {self._uri!r}; "
                f"put it into the store it names"
            )
        problem = first_mismatch(ref, pairs)
        if problem is not None:
            raise RefMismatch(f"{call}: {problem}; pass the tensors the ref was made for")
        if ref.estimated_bytes != ref.specs_nbytes:
            raise RefMismatch(
                f"{call}: the ref estimates {ref.estimated_bytes} bytes but its tensors hold "
                f"{ref.specs_nbytes}; the store counts residency by the estimate, so put the data "
                f"under a ref whose estimate is exact (estimated_bytes={ref.specs_nbytes}, as "
                f"SampleRef.build computes it)"
            )
        self._store(call, ref, pairs, adopt)
        return ref

    def get(
        self, ref: SampleRef, device: Any = None, *, copy: bool = True
    ) -> tuple[dict[str, torch.Tensor], StoreHandle]:
        """Copies of the sample's tensors (feature name -> tensor, in the ref's
        order) on ``device`` (default: the store's), and a handle to release.

        The copies belong to the caller: mutating them changes nothing stored,
        and they stay valid after the sample is scrubbed.  With
        ``copy=False`` the tensors already on ``device`` come as views of the
        stored ones instead (no copy, whatever the size): read them, never
        write them (a later ``get`` of a sample written to raises
        ``RefMismatch``); they keep their memory allocated until the last view
        is dropped, a scrub notwithstanding.  Raises
        ``SampleMissing`` when the data is not resident, ``RefMismatch`` when
        the resident data was put under a different ref of the same id, and
        ``ForeignRef`` (a ``KeyError`` as in the seed, and a ``ValueError``)
        for a ref of another store.
        """
        self._check_open("get")
        self._check_ref("get", ref)
        if not isinstance(copy, bool):
            raise TypeError(
                f"LocalFeatureStore.get({ref.sample_id!r}, copy={copy!r}): copy must be True or False, got "
                f"{type(copy).__name__}; pass copy=False for views of the stored tensors"
            )
        target = self._device if device is None else resolve_device("LocalFeatureStore.get(device)", device)
        with self._lock:
            entry, handle = self._open_handle_locked(ref)
        try:
            copies = _device.copy_out(
                entry.tensors, entry.packed, entry.ready, target, copy, self._stager_for(target)
            )
        except BaseException:
            with self._lock:
                self._release_locked(handle)
            raise
        return dict(zip(ref.feature_specs, copies)), handle

    def release(self, handle: StoreHandle) -> None:
        """End the holder's use of what ``get`` returned.

        Idempotent, never scrubs, and harmless for a handle whose sample was
        scrubbed or swept by ``gc``.  ``ForeignRef`` (a ``ValueError`` and a
        ``KeyError``) for another store's handle.
        """
        self._check_open("release")
        check_handle("LocalFeatureStore", handle, self._uri)
        with self._lock:
            self._release_locked(handle)

    def scrub(self, ref: SampleRef) -> bool:
        """Drop the data resident under ``ref``; True if there was some.

        Only data put under an equal ref is dropped (a ref of the same id but
        another incarnation's shapes leaves it and returns False).  Holders
        keep the copies ``get`` gave them.
        """
        self._check_open("scrub")
        self._check_ref("scrub", ref)
        with self._lock:
            return self._scrub_locked(ref)

    def gc(self) -> int:
        """Sweep handles whose sample is no longer resident (holders that
        crashed or never released); returns how many.  Never drops data."""
        self._check_open("gc")
        with self._lock:
            return self._gc_locked()

    def health(self) -> StoreHealth:
        """Occupancy from the counters: O(1), takes no lock, never waits.

        After ``close()`` it reports an empty store (0 bytes, 0 samples, as
        the seed does) instead of raising, so a dashboard polling it keeps
        working; every other call on a closed store raises ``StoreClosed``."""
        resident, count = self._counters
        return StoreHealth.of_counters(
            resident, count, capacity_bytes=self._max_bytes, high_watermark_bytes=self._high,
            low_watermark_bytes=self._low,
        )

    def close(self) -> None:
        """Drop all data and handles; every later call but ``close`` raises
        ``StoreClosed`` (``close`` itself is idempotent).  Tensors that ``get``
        already returned stay valid; a put copying now is discarded."""
        with self._lock:
            self._close_locked()

    # -- the steps of put and get ----------------------------------------------

    def _store(self, call: str, ref: SampleRef, pairs: list[tuple[str, torch.Tensor]], adopt: bool) -> None:
        """Reserve room, copy outside the lock, commit; a failure leaves no trace."""
        with self._lock:
            self._reserve_locked(call, ref)
        try:
            tensors = [tensor for _, tensor in pairs]
            if self._cuda is not None:
                copies, packed, ready = self._cuda.put(tensors, adopt)
            else:
                copies = tuple(
                    tensor.detach() if adopt and _device.adoptable(tensor, self._device)
                    else _tensors.copy_to(tensor, self._device)
                    for tensor in tensors
                )
                packed, ready = None, None
        except BaseException:
            with self._lock:
                self._unreserve_locked(ref.sample_id)
            raise
        with self._lock:
            self._commit_locked(call, ref, copies, packed, ready)

    def _stager_for(self, target: torch.device) -> _device.PinnedStager | None:
        """The pinned buffers for a get onto CUDA ``target`` (made once)."""
        if target.type != "cuda" or self._stager is not None:
            return self._stager
        with self._lock:
            if self._stager is None:
                self._stager = _device.PinnedStager()
            return self._stager

    def _check_open(self, call: str) -> None:
        if self._closed:
            raise StoreClosed(self._closed_message(call))

    def _closed_message(self, call: str) -> str:
        return f"LocalFeatureStore {self._uri!r} is closed; {call} needs an open store, make a new LocalFeatureStore"

    def _check_ref(self, call: str, ref: object) -> None:
        check_ref("LocalFeatureStore", call, ref, self._uri)

    # -- state changes: each runs with self._lock held ---------------------------

    def _reserve_locked(self, call: str, ref: SampleRef) -> None:
        if self._closed:
            raise StoreClosed(self._closed_message(call))
        sample_id = ref.sample_id
        if sample_id in self._samples:
            raise duplicate_sample(call, sample_id, self._uri)
        if sample_id in self._reserved:
            raise DuplicateSample(
                f"{call}: another put of {sample_id!r} into {self._uri!r} is in progress; a sample "
                f"id is written once per incarnation"
            )
        resident, count = self._counters
        nbytes = ref.estimated_bytes
        held_bytes, held_samples = resident + self._reserved_bytes, count + len(self._reserved)
        check_room(call, nbytes, held_bytes, held_samples, self._max_bytes, self._max_samples)
        self._reserved[sample_id] = nbytes
        self._reserved_bytes += nbytes

    def _unreserve_locked(self, sample_id: str) -> None:
        nbytes = self._reserved.pop(sample_id, None)
        if nbytes is not None:
            self._reserved_bytes -= nbytes

    def _commit_locked(
        self, call: str, ref: SampleRef, copies: tuple[torch.Tensor, ...], packed: _device.Packed | None, ready: Any
    ) -> None:
        self._unreserve_locked(ref.sample_id)
        if self._closed:  # closed while copying: the copies are dropped with the frame
            raise StoreClosed(self._closed_message(call))
        versions = tuple(tensor._version for tensor in copies)
        self._samples[ref.sample_id] = _Resident(ref, copies, ready, next(self._serials), versions, packed)
        resident, count = self._counters
        self._counters = (resident + ref.estimated_bytes, count + 1)
        if self._event_log is not None:
            self._emit({"ev": "store_put", "sample": ref.sample_id, "nbytes": ref.estimated_bytes})

    def _open_handle_locked(self, ref: SampleRef) -> tuple[_Resident, StoreHandle]:
        if self._closed:
            raise StoreClosed(self._closed_message("get"))
        entry = self._samples.get(ref.sample_id)
        if entry is None:
            raise SampleMissing(
                f"LocalFeatureStore.get({ref.sample_id!r}): its data is not in {self._uri!r} (never "
                f"put, or scrubbed after its ack or dead-lettering); a stale lease holder should drop "
                f"the sample"
            )
        if entry.ref != ref:
            problem = _ref_difference(entry.ref, ref)
            raise RefMismatch(
                f"LocalFeatureStore.get({ref.sample_id!r}): the resident data was put under another "
                f"ref ({problem}); get it with the ref its put returned"
            )
        written = [
            name for name, tensor, version in zip(ref.feature_specs, entry.tensors, entry.versions)
            if tensor._version != version
        ]
        if written:
            raise RefMismatch(
                f"LocalFeatureStore.get({ref.sample_id!r}): the resident data of {written} was written to "
                f"after its put (through a get(copy=False) view, or by a producer that handed the tensors "
                f"over with put(copy=False)), so it is no longer what the ref was made for; never write to "
                f"such tensors (get with copy=True for tensors of your own), and put the sample again"
            )
        handle = StoreHandle(self._uri, ref.sample_id, next(self._handle_ids))
        self._handles[handle.handle_id] = (ref.sample_id, entry.serial)
        if self._event_log is not None:
            self._emit({"ev": "get", "sample": ref.sample_id, "handle": handle.handle_id})
        return entry, handle

    def _release_locked(self, handle: StoreHandle) -> None:
        held = self._handles.get(handle.handle_id)
        if held is not None and held[0] == handle.sample_id:
            del self._handles[handle.handle_id]
            if self._event_log is not None:
                self._emit({"ev": "release", "sample": handle.sample_id, "handle": handle.handle_id})

    def _scrub_locked(self, ref: SampleRef) -> bool:
        entry = self._samples.get(ref.sample_id)
        if entry is None or entry.ref != ref:
            return False
        del self._samples[ref.sample_id]
        resident, count = self._counters
        resident, count = resident - ref.estimated_bytes, count - 1
        assert resident >= 0 and count >= 0, "ResidencyMatchesContents: counters went negative"
        self._counters = (resident, count)
        if self._event_log is not None:
            self._emit({"ev": "scrub", "sample": ref.sample_id, "nbytes": ref.estimated_bytes})
        return True

    def _gc_locked(self) -> int:
        gone = [
            handle_id
            for handle_id, (sample_id, serial) in self._handles.items()
            if (entry := self._samples.get(sample_id)) is None or entry.serial != serial
        ]
        for handle_id in gone:
            del self._handles[handle_id]
        return len(gone)

    def _emit(self, record: dict[str, Any]) -> None:
        """Stamp the store's number, time and counters; emit (lock held)."""
        record["s"] = self._sid
        record["t"] = time.monotonic()
        record["resident_bytes"], record["resident_count"] = self._counters
        self._event_log.emit(record)  # type: ignore[union-attr]

    def _close_locked(self) -> None:
        if self._event_log is not None and not self._closed:
            self._emit({"ev": "store_close"})
        self._closed = True
        self._samples.clear()
        self._reserved.clear()
        self._reserved_bytes = 0
        self._handles.clear()
        self._counters = (0, 0)


# -- helpers -------------------------------------------------------------------


def _ref_difference(stored: SampleRef, given: SampleRef) -> str:
    for field in ("feature_keys", "feature_specs", "algorithm", "schema_version", "num_tokens",
                  "run_id", "target_model_version", "draft_weight_version"):
        if getattr(stored, field) != getattr(given, field):
            return f"{field} differs: resident {getattr(stored, field)!r}, given {getattr(given, field)!r}"
    return "the refs differ"


def _check_copy(call: str, copy: object) -> bool:
    """``copy`` checked; returns whether the store may adopt the tensors."""
    if not isinstance(copy, bool):
        raise TypeError(
            f"{call}: copy must be True or False, got {copy!r} ({type(copy).__name__}); pass copy=False "
            f"to hand the tensors over without a copy"
        )
    return not copy


def _check_cap(name: str, value: object, unit: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"LocalFeatureStore({name}={value!r}) must be an int or None, got "
            f"{type(value).__name__}; pass a positive {unit} count (a bool is not accepted)"
        )
    if value <= 0:
        raise ValueError(
            f"LocalFeatureStore({name}={value!r}) must be > 0; pass a positive {unit} count, or None for no cap"
        )


def _default_watermarks(high: object, low: object, max_bytes: object) -> tuple[Any, Any]:
    """Fill in the watermarks the caller did not pass (see the class docstring).

    Only fills in: a value the caller passed, ``None`` included, is returned
    as it is, and ``_check_watermarks`` judges the pair (hence ``Any``: the
    pair is typed once it has been checked).
    """
    high_given, low_given = high is not _DEFAULT, low is not _DEFAULT
    if high_given and low_given:
        return high, low
    if (high_given and high is None) or (low_given and low is None):
        return (high if high_given else None), (low if low_given else None)  # watermarks off
    capped = isinstance(max_bytes, int) and not isinstance(max_bytes, bool)
    if not high_given and not low_given:
        if not capped:
            return _NO_CAP_HIGH, _NO_CAP_LOW
        return max(1, 3 * max_bytes // 4), max_bytes // 4  # type: ignore[operator]
    if high_given:  # only high: low keeps the seed's 3 : 1 ratio to it
        return high, (high // 3 if isinstance(high, int) and not isinstance(high, bool) else None)
    # only low
    if not isinstance(low, int) or isinstance(low, bool):
        return None, low
    return (min(3 * low, max_bytes) if capped and isinstance(max_bytes, int) else 3 * low), low


def _check_watermarks(
    high: object, low: object, max_bytes: int | None, defaulted: set[str] | frozenset[str] = frozenset()
) -> None:
    """Validate the pair; ``defaulted`` names the ones the caller did not pass
    (``"high"``, ``"low"``), so that a message can say a value was a default."""

    def shown(which: str, value: object) -> str:
        return f"{value}" + (" (the default)" if which in defaulted else "")

    # the values the caller passed first: a low of -1 is named as itself, not
    # as the high of -3 derived from it
    pairs = [("high_watermark_bytes", "high", high), ("low_watermark_bytes", "low", low)]
    for name, _, value in sorted(pairs, key=lambda pair: pair[1] in defaulted):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f"LocalFeatureStore({name}={value!r}) must be an int or None, got "
                f"{type(value).__name__}; pass a byte count (a bool is not accepted)"
            )
        if value < 0:
            raise ValueError(f"LocalFeatureStore({name}={value!r}) must be >= 0; pass a byte count")
    if (high is None) != (low is None):
        raise ValueError(
            f"LocalFeatureStore watermarks are half set (high_watermark_bytes={high!r}, "
            f"low_watermark_bytes={low!r}); set both or neither"
        )
    if high is None:
        return
    assert isinstance(high, int) and isinstance(low, int)
    if not low < high:
        raise ValueError(
            f"LocalFeatureStore(low_watermark_bytes={shown('low', low)}) must be strictly less than "
            f"high_watermark_bytes={shown('high', high)}; "
            f"lower low or raise high so the hysteresis band is not empty"
        )
    if max_bytes is not None and high > max_bytes:
        raise ValueError(
            f"LocalFeatureStore(high_watermark_bytes={shown('high', high)}) exceeds max_bytes={max_bytes}, so "
            f"the high watermark could never be hit; use high_watermark_bytes <= {max_bytes}"
        )


def _check_uri(uri: object) -> str:
    if not isinstance(uri, str):
        raise TypeError(f"LocalFeatureStore(uri={uri!r}) must be a str; pass e.g. 'mem://features'")
    scheme, sep, name = uri.partition("://")
    if scheme != "mem" or not sep or not name:
        raise ValueError(
            f"LocalFeatureStore(uri={uri!r}) must look like 'mem://<name>'; pass e.g. 'mem://features'"
        )
    return uri
