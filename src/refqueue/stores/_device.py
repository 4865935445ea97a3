"""How tensors move into and out of a store on a CUDA device.

``LocalFeatureStore`` keeps its bookkeeping; this module keeps the copies.
The rules (issue 24; the measured ratios are in docs/GPU.md):

* **Put** runs every copy on the store's own *copy stream*, after that
  stream has waited for the producer's current stream (so the source data is
  complete), and records a *ready* event after the last copy.  The producer's
  current stream then waits for the ready event, so a producer that reuses
  its source tensor on its stream writes only after the copy has read it,
  and the source is marked as used by the copy stream (``record_stream``) so
  that the allocator cannot recycle it early.  No host wait at all for a
  CUDA source.
* **Host sources** go by DMA: a pinned source is copied directly (then the
  put waits for that one copy's event on the host, so the caller may reuse
  the pinned buffer once ``put`` returns); a pageable source is staged in
  chunks through a few pinned buffers the store keeps and reuses
  (``PinnedStager``): the CPU fills one buffer while the copy engine drains
  the previous one, so the transfer runs at the pinned rate, not the
  pageable one.  A put from pageable memory returns once the CPU has read
  the source; the last chunks may still be in flight, ordered before the
  ready event.
* **Get** makes the caller's current stream wait for the ready event and
  marks the stored tensors as used by it; then either hands out views (no
  copy, ``copy=False``) or clones on that stream (``copy=True``).
* Nothing here synchronizes the device, and only a pinned-source put and a
  stager reusing a buffer wait on the host, each for one event.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, NamedTuple

import torch

from refqueue.stores import _tensors

__all__ = [
    "ALIGN", "CudaCopies", "Packed", "PinnedStager", "DEFAULT_CHUNK_BYTES", "DEFAULT_SLOTS", "adoptable", "as_bytes",
    "copy_out", "pack_to_device", "view_in",
]

MiB = 1024 * 1024
# 4 buffers of 8 MiB: the CPU fills one while the copy engine drains
# another.  On the H200 machine (docs/GPU.md) 8 MiB x 4 staged 512 MiB at
# 51 GB/s and 100 MiB at 45 GB/s, against 55 GB/s from pinned memory; 2 slots
# or 2-4 MiB chunks were slower (the per-chunk calls into CUDA cost more).
DEFAULT_CHUNK_BYTES = 8 * MiB
DEFAULT_SLOTS = 4


def as_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor's storage as a flat ``uint8`` view (shares memory)."""
    flat = tensor.reshape(-1)
    if flat.numel() == 0:
        return torch.empty(0, dtype=torch.uint8, device=flat.device)
    return flat if flat.dtype == torch.uint8 else flat.view(torch.uint8)


def adoptable(tensor: torch.Tensor, device: torch.device) -> bool:
    """True when a store on ``device`` can keep ``tensor`` itself instead of a
    copy: on that device, dense, contiguous, no conjugate or negative bit,
    and the sole view of exactly its own storage (a slice of a larger buffer
    would keep the whole buffer alive behind the store's byte count)."""
    return (
        tensor.device == device
        and tensor.is_contiguous()
        and not tensor.is_conj()
        and not tensor.is_neg()
        and tensor.storage_offset() == 0
        and tensor.untyped_storage().nbytes() == tensor.numel() * tensor.element_size()
    )


class PinnedStager:
    """Host-to-device copies through ``slots`` reused host buffers of
    ``chunk_bytes`` each.

    ``copy(src, dst, stream)`` copies a contiguous host tensor into a
    contiguous tensor of the same dtype and size: per chunk, wait (on the
    host) for the event of the last copy that read the next buffer, fill it
    from ``src`` on the CPU, and enqueue its copy into ``dst`` on ``stream``
    without blocking.  With ``stream=None`` (a CPU ``dst``: the CPU tests of
    the chunking) every copy is synchronous.  The buffers are pinned when
    CUDA is available (``pin=None``), made on first use and never freed while
    the stager lives; ``allocations`` counts them (the loader's and the
    store's tests check that it stays at ``slots``).  One ``copy`` at a time
    (a lock): the copy engine is the bottleneck anyway.
    """

    def __init__(self, chunk_bytes: int = DEFAULT_CHUNK_BYTES, slots: int = DEFAULT_SLOTS, *, pin: bool | None = None):
        if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, int) or chunk_bytes <= 0:
            raise ValueError(f"PinnedStager(chunk_bytes={chunk_bytes!r}) must be a positive int; pass e.g. {DEFAULT_CHUNK_BYTES}")
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 2:
            raise ValueError(f"PinnedStager(slots={slots!r}) must be an int >= 2 (one filling, one draining); pass e.g. 4")
        self._chunk = chunk_bytes
        self._slots = slots
        self._pin = torch.cuda.is_available() if pin is None else bool(pin)
        self._lock = threading.Lock()
        self._buffers: list[torch.Tensor] = []
        self._events: list[Any] = []
        self._next = 0
        self.allocations = 0
        self.chunks = 0

    @property
    def chunk_bytes(self) -> int:
        return self._chunk

    @property
    def slots(self) -> int:
        return self._slots

    def copy(self, src: torch.Tensor, dst: torch.Tensor, stream: Any = None) -> None:
        """Copy contiguous host ``src`` into contiguous ``dst`` (same dtype and size)."""
        if src.dtype != dst.dtype or src.numel() != dst.numel():
            raise ValueError(
                f"PinnedStager.copy: source {src.dtype}[{src.numel()}] and destination {dst.dtype}[{dst.numel()}] "
                f"differ; pass tensors of one dtype and size"
            )
        if not (src.is_contiguous() and dst.is_contiguous()):
            raise ValueError("PinnedStager.copy: source and destination must be contiguous; call .contiguous() first")
        self.copy_pieces([(src, 0)], as_bytes(dst), stream)

    def copy_pieces(self, pieces: list[tuple[torch.Tensor, int]], target: torch.Tensor, stream: Any = None) -> None:
        """Copy each contiguous host tensor of ``pieces`` to its byte offset
        in ``target`` (a flat ``uint8`` tensor), sorted by offset and not
        overlapping.  Chunks cover ``target`` from 0 to the end of the last
        piece, so small pieces share one buffer and one copy; bytes between
        pieces are left undefined (padding)."""
        spans = [(as_bytes(src), offset) for src, offset in pieces]
        total = max((offset + data.numel() for data, offset in spans), default=0)
        if total > target.numel():
            raise ValueError(f"PinnedStager.copy_pieces: the pieces end at byte {total}, past the target's {target.numel()}")
        # one stream switch for the whole copy (entering a stream context costs
        # a call into CUDA; per chunk it was a tenth of a chunk's transfer time)
        on_stream = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
        with self._lock, on_stream:
            self._allocate()
            first = 0  # the first span that may still overlap the next chunk
            chunk_start = 0
            while chunk_start < total:
                chunk_end = min(chunk_start + self._chunk, total)
                slot = self._next
                self._next = (slot + 1) % self._slots
                if stream is not None:
                    self._events[slot].synchronize()  # the copy that last read this buffer is done
                buffer = self._buffers[slot]
                k = first
                while k < len(spans):
                    data, offset = spans[k]
                    if offset >= chunk_end:
                        break
                    lo, hi = max(offset, chunk_start), min(offset + data.numel(), chunk_end)
                    if lo < hi:
                        buffer[lo - chunk_start:hi - chunk_start].copy_(data[lo - offset:hi - offset])
                    if offset + data.numel() <= chunk_end:
                        first = k + 1  # this span ends in this chunk
                    k += 1
                size = chunk_end - chunk_start
                if stream is None:
                    target[chunk_start:chunk_end].copy_(buffer[:size])
                else:
                    target[chunk_start:chunk_end].copy_(buffer[:size], non_blocking=True)  # on ``stream``
                    self._events[slot].record(stream)
                self.chunks += 1
                chunk_start = chunk_end

    def _allocate(self) -> None:
        if self._buffers:
            return
        for _ in range(self._slots):
            self._buffers.append(torch.empty(self._chunk, dtype=torch.uint8, pin_memory=self._pin))
            self._events.append(torch.cuda.Event() if self._pin else None)  # type: ignore[no-untyped-call]
            self.allocations += 1


def _detached(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` without autograd history or conjugate/negative bits (no copy
    unless a bit has to be resolved)."""
    return tensor.detach().resolve_conj().resolve_neg()


# -- packed samples ------------------------------------------------------------------------
#
# A sample copied onto a CUDA device lives in one allocation: its features are
# views of one flat uint8 buffer, each at an offset aligned to ALIGN bytes.  One
# allocation per put, one clone per get(copy=True), one record_stream per get,
# and host sources staged through shared chunks: fewer calls into CUDA, each
# of which costs microseconds.

ALIGN = 512  # bytes: a multiple of every element size, and of the allocator's rounding


def _nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


class Packed(NamedTuple):
    """Where a sample's copied features sit in its buffer: ``slots[i]`` is
    the byte offset of feature ``i``, or None for a feature kept elsewhere
    (handed over with ``put(copy=False)``)."""

    buffer: torch.Tensor
    slots: tuple[int | None, ...]


def view_in(buffer: torch.Tensor, offset: int, like: torch.Tensor) -> torch.Tensor:
    """The tensor of ``like``'s dtype and shape at byte ``offset`` of flat ``buffer``."""
    size = _nbytes(like)
    flat = buffer[offset:offset + size]
    if like.dtype != torch.uint8:
        flat = flat.view(like.dtype)
    return flat.view(like.shape)


def _layout(tensors: list[torch.Tensor], order: list[int]) -> tuple[dict[int, int], int]:
    """Byte offsets (feature index -> offset) for ``tensors[i]`` in ``order``, and the total."""
    offsets: dict[int, int] = {}
    total = 0
    for i in order:
        offsets[i] = total
        total += -(-_nbytes(tensors[i]) // ALIGN) * ALIGN
    return offsets, total


# Pinned sources at least this large are copied directly (one DMA each);
# smaller ones share the staging chunks with the pageable sources.
DIRECT_PINNED_BYTES = 1024 * 1024


def pack_to_device(
    sources: list[torch.Tensor], keep: list[bool], device: torch.device, stager: PinnedStager, stream: Any
) -> tuple[list[torch.Tensor | None], Packed | None, bool]:
    """Copy each source not ``keep``-ed into one new buffer on ``device``,
    on ``stream`` (which must already be ordered after the sources' writers).

    Returns the copies (None where kept), the packing, and whether a pinned
    source was read by a DMA still in flight (the caller waits for its event
    before letting the source be reused).  Staged sources come first in the
    buffer, so the stager's chunks never cover a feature copied directly.
    """
    prepared = [None if k else _detached(t).contiguous() for t, k in zip(sources, keep)]
    staged, direct = [], []
    for i, src in enumerate(prepared):
        if src is None:
            continue
        if src.is_cuda or (_nbytes(src) >= DIRECT_PINNED_BYTES and src.is_pinned()):  # is_pinned asks CUDA: last
            direct.append(i)
        else:
            staged.append(i)
    if not staged and not direct:
        return [None] * len(sources), None, False
    offsets, total = _layout(prepared, staged + direct)  # type: ignore[arg-type]
    pinned_direct = False
    with torch.cuda.stream(stream):
        buffer = torch.empty(total, dtype=torch.uint8, device=device)
        copies: list[torch.Tensor | None] = [None] * len(sources)
        for i in staged + direct:
            copies[i] = view_in(buffer, offsets[i], prepared[i])  # type: ignore[arg-type]
        for i in direct:
            src = prepared[i]
            assert src is not None
            copies[i].copy_(src, non_blocking=True)  # type: ignore[union-attr]
            if src.is_cuda:
                src.record_stream(stream)  # not recycled before the copy has read it
            else:
                pinned_direct = True
    if staged:
        stager.copy_pieces([(prepared[i], offsets[i]) for i in staged], buffer, stream)  # type: ignore[misc]
    slots = tuple(offsets.get(i) for i in range(len(sources)))
    return copies, Packed(buffer, slots), pinned_direct


class CudaCopies:
    """The copies of one ``LocalFeatureStore`` on a CUDA ``device``: its copy
    stream and its pinned stager (see the module's notes)."""

    def __init__(self, device: torch.device, stager: PinnedStager | None = None) -> None:
        self.device = device
        self.index = device.index
        self.stream = torch.cuda.Stream(device=device)  # type: ignore[no-untyped-call]  # torch leaves Stream.__new__ unannotated
        self.stager = PinnedStager() if stager is None else stager

    def put(self, tensors: list[torch.Tensor], adopt: bool) -> tuple[tuple[torch.Tensor, ...], Packed | None, Any]:
        """The store's tensors for ``tensors``, their packing, and the ready
        event after their copies.

        With ``adopt``, a tensor ``adoptable`` on the store's device is kept
        as it is (ownership passes to the store: no copy); the others are
        copied into one buffer.
        """
        producer = torch.cuda.current_stream(self.index)
        stream = self.stream
        stream.wait_stream(producer)  # the producer's writes to the sources come first
        keep = [adopt and adoptable(t, self.device) for t in tensors]
        copies, packed, pinned_direct = pack_to_device(tensors, keep, self.device, self.stager, stream)
        kept = tuple(t.detach() if c is None else c for t, c in zip(tensors, copies))
        ready = torch.cuda.Event()  # type: ignore[no-untyped-call]  # torch leaves Event.__init__ unannotated
        ready.record(stream)
        producer.wait_event(ready)  # the producer's later writes to its sources come after the copies
        if pinned_direct:
            ready.synchronize()  # a pinned source is free for reuse once put returns
        return kept, packed, ready


def copy_out(
    tensors: tuple[torch.Tensor, ...], packed: Packed | None, ready: Any, target: torch.device, copy: bool,
    stager: PinnedStager | None,
) -> list[torch.Tensor]:
    """``tensors`` (a store's) as the caller gets them on ``target``: views
    when ``copy`` is False and they already are on ``target``, else copies
    (a packed sample's in one copy of its buffer).  Ordered after ``ready``
    (the put's event, None on a CPU store) on the caller's current stream."""
    if ready is not None:
        stream = torch.cuda.current_stream(tensors[0].device.index)
        stream.wait_event(ready)
        # a scrub may drop the store's reference while this stream still reads
        # the data: keep the allocator from reusing it before then
        if packed is not None:
            packed.buffer.record_stream(stream)
        for tensor, slot in zip(tensors, packed.slots if packed is not None else [None] * len(tensors)):
            if slot is None:
                tensor.record_stream(stream)
    on_target = tensors[0].device == target
    if not copy and on_target:
        return [tensor.view_as(tensor) for tensor in tensors]  # share the version counter: a write shows
    if target.type == "cuda" and tensors[0].device.type == "cpu" and stager is not None:
        copies, _, _ = pack_to_device(list(tensors), [False] * len(tensors), target, stager,
                                      torch.cuda.current_stream(target.index))
        return copies  # type: ignore[return-value]
    if packed is not None:
        whole = _tensors.copy_to(packed.buffer, target)  # one copy for every packed feature
        return [
            _tensors.copy_to(tensor, target) if slot is None else view_in(whole, slot, tensor)
            for tensor, slot in zip(tensors, packed.slots)
        ]
    return [_tensors.copy_to(tensor, target) for tensor in tensors]  # on the caller's current stream
