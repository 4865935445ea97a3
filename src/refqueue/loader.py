"""``FeatureDataLoader``: lease -> check -> get -> yield -> ack / fail.

The consumer side of the pipeline as one iterable::

    with FeatureDataLoader(queue, algorithm="eagle3", schema_version=2, prefetch=4) as loader:
        for batch in loader:                      # a Batch of up to batch_size samples
            train_step([s.tensors for s in batch])

Design notes
------------
* **When a batch counts as done.**  A batch is acked when the consumer asks
  for the next one: the body of the ``for`` loop ran to its end.  If the body
  raises, the loop never asks again; the ``with`` block's exit (or
  ``close()``, or the iterator being closed or garbage-collected, or
  ``throw()`` into it) then *fails* the batch, which the queue redelivers.
  Leaving the loop by ``break`` also fails the batch it was holding (the
  loader cannot tell a batch that was used from one that was not, and a
  redelivery loses nothing); call ``commit()`` before ``break`` to keep it.
  A drained queue ends the loop with everything acked.
* **Batches.**  Every item is a ``Batch`` of ``Sample(lease, tensors,
  handle)`` in delivery order; ``tensors`` is one dict per sample (feature
  name -> tensor, in feature order).  Samples differ in length, so collating
  (padding, stacking) is the consumer's.  A batch holds ``batch_size``
  samples, or fewer when the queue had no more ready at that moment (the
  loader never waits while holding leases to fill a batch, which could
  outlive their visibility timeout, or deadlock on a closed queue whose last
  samples it holds itself).
* **Stopping** (D3): on ``queue.is_drained`` only, never on a None from
  ``acquire`` with the queue merely closed.  When ``acquire`` comes back
  empty the loader calls ``queue.reclaim_expired()`` (``reclaim=True``), so a
  crashed consumer's leases come back even with no reclaimer running.
* **Bad refs** are dead-lettered with the reason (``queue.dead_letter``): a
  ref of another algorithm, schema version or store, or whose data the store
  no longer has (``SampleMissing``) or holds under another ref
  (``RefMismatch``).  They never loop.  Any other error from ``get`` fails the
  lease and propagates.
* **Prefetch.**  With ``prefetch=N`` a daemon thread leases and gets up to N
  samples ahead into a buffer; the loader then holds at most ``N +
  batch_size`` leases.  Each prefetched sample handed to the consumer first
  gets a fresh visibility window (``queue.extend``): a sample whose lease
  expired and was taken back while it waited in the buffer is dropped there
  (its handle released) instead of being trained on twice.
* **Long steps.**  The loader does not extend leases during a step on its
  own; a step that may outlive the visibility timeout calls
  ``loader.extend()`` (a heartbeat for the current batch) now and then.
* **CUDA.**  With ``device="cuda"`` the store copies to the GPU.  A prefetch
  thread does that on its own CUDA stream and records an event; at hand-off
  the consumer's current stream waits for the event and each tensor is
  marked as used by that stream (``record_stream``), so the copy overlaps
  the consumer's work and the memory is not recycled early.  Host memory is
  not pinned (the store's ``get`` makes the copy).
* **Handles** are released once a sample is settled (acked, failed, dropped
  as stale, or its ref dead-lettered); release never scrubs (D2).

Locking rule: ``self._lock`` guards the prefetch buffer and the fields the
two threads share (flags and counters).  No queue or store call is made
while holding it.  ``_*_nowait`` methods are the only code that changes
those fields, with the lock held.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from refqueue._checks import check_count, check_seconds, describe
from refqueue.errors import RefMismatch, SampleMissing, StoreClosed
from refqueue.refs import FeatureAlgorithm, SampleRef
from refqueue.store import FeatureStore, StoreHandle

__all__ = ["Batch", "FeatureDataLoader", "LoaderStats", "Sample"]

_QUEUE_METHODS = ("acquire", "acquire_nowait", "ack", "fail", "dead_letter", "extend", "reclaim_expired")


@dataclass(frozen=True, slots=True)
class Sample:
    """One leased sample with its tensors.

    ``tensors`` are the store's copies (feature name -> tensor, in the ref's
    feature order), the consumer's to use and even to modify.  ``handle`` is
    released by the loader; do not release it yourself.
    """

    lease: Any  # refqueue.queue.Lease (or a backend's lease)
    tensors: dict[str, Any]
    handle: StoreHandle

    @property
    def ref(self) -> SampleRef:
        return self.lease.ref


@dataclass(frozen=True, slots=True)
class Batch:
    """Up to ``batch_size`` samples, in delivery order."""

    samples: tuple[Sample, ...]

    def __len__(self) -> int:
        return len(self.samples)

    def __iter__(self) -> Iterator[Sample]:
        return iter(self.samples)

    def __getitem__(self, index: int) -> Sample:
        return self.samples[index]

    @property
    def tensors(self) -> list[dict[str, Any]]:
        """One ``{feature name: tensor}`` dict per sample."""
        return [s.tensors for s in self.samples]

    @property
    def leases(self) -> list[Any]:
        return [s.lease for s in self.samples]


@dataclass(frozen=True, slots=True)
class LoaderStats:
    """What a loader did so far: batches yielded; samples acked, failed,
    dropped as stale (their lease was no longer live), dead-lettered."""

    batches: int = 0
    acked: int = 0
    failed: int = 0
    stale: int = 0
    dead_lettered: int = 0


class _Fetched(NamedTuple):
    sample: Sample
    ready: Any  # a torch.cuda.Event recorded after a prefetch thread's copy, or None


_DRAINED = object()  # what _fetch returns once the queue is drained


class FeatureDataLoader:
    """Iterate ``Batch``es of samples leased from ``queue`` and read from ``store``.

    ``store`` defaults to ``queue.store``.  ``algorithm`` and
    ``schema_version`` are what the consumer can train on; refs of anything
    else are dead-lettered.  ``batch_size`` >= 1; ``prefetch`` >= 0 samples
    fetched ahead by a background thread (0: none; else at least
    ``batch_size``); ``device`` is passed to ``store.get`` (None: the
    store's); ``poll_interval`` bounds each wait in ``acquire``;
    ``reclaim`` makes an idle loader call ``queue.reclaim_expired()``.

    A loader iterates once.  Use it as a context manager (or call
    ``close()``) so that a failing step fails its batch at once.  Iterate it
    from one thread; the prefetch thread is internal.
    """

    def __init__(
        self,
        queue: Any,
        store: FeatureStore | None = None,
        *,
        algorithm: FeatureAlgorithm | str,
        schema_version: int,
        batch_size: int = 1,
        prefetch: int = 0,
        device: Any = None,
        poll_interval: float = 0.05,
        reclaim: bool = True,
    ) -> None:
        missing = [name for name in _QUEUE_METHODS if not callable(getattr(queue, name, None))]
        if not hasattr(queue, "is_drained"):
            missing.append("is_drained")
        if missing:
            raise TypeError(
                f"FeatureDataLoader(queue) needs a SampleRefQueue, got {describe(queue)}, which lacks "
                f"{missing}; pass a refqueue.queue.SampleRefQueue or a backend with the same API"
            )
        if store is None:
            store = getattr(queue, "store", None)
            if store is None:
                raise TypeError(
                    f"FeatureDataLoader(store) is None and the queue {type(queue).__name__} has no store "
                    f"property; pass the FeatureStore the producers put into"
                )
        if not isinstance(store, FeatureStore):
            raise TypeError(
                f"FeatureDataLoader(store) needs a refqueue.store.FeatureStore, got {describe(store)}; "
                f"pass the store the producers put into"
            )
        queue_store = getattr(queue, "store", None)
        if isinstance(queue_store, FeatureStore) and queue_store.uri != store.uri:
            raise ValueError(
                f"FeatureDataLoader(store) is {store.uri!r} but the queue is bound to {queue_store.uri!r}; "
                f"pass the queue's store (or leave store=None)"
            )
        try:
            algorithm = FeatureAlgorithm(algorithm)
        except ValueError:
            raise ValueError(
                f"FeatureDataLoader(algorithm) got {algorithm!r}, which is not a FeatureAlgorithm; "
                f"use one of {', '.join(a.value for a in FeatureAlgorithm)}"
            ) from None
        check_count(
            "FeatureDataLoader(schema_version)", schema_version, 0, "pass the schema version the consumer reads"
        )
        check_count("FeatureDataLoader(batch_size)", batch_size, 1, "pass how many samples each batch holds")
        check_count("FeatureDataLoader(prefetch)", prefetch, 0, "pass 0 for no prefetch or a sample count")
        if 0 < prefetch < batch_size:
            raise ValueError(
                f"FeatureDataLoader(prefetch={prefetch}) is smaller than batch_size={batch_size}, so the "
                f"buffer could never hold a full batch; pass prefetch=0 or prefetch >= {batch_size}"
            )
        poll_interval = check_seconds("FeatureDataLoader(poll_interval)", poll_interval)
        if not isinstance(reclaim, bool):
            raise TypeError(f"FeatureDataLoader(reclaim) must be a bool, got {describe(reclaim)}; pass True or False")
        cuda = _check_device(device)

        self._queue = queue
        self._store = store
        self._algorithm = algorithm
        self._schema_version = schema_version
        self._batch_size = batch_size
        self._prefetch = prefetch
        self._device = device
        self._cuda = cuda
        self._poll_interval = poll_interval
        self._reclaim = reclaim
        self._iterator: Iterator[Batch] | None = None
        self._closed = False
        self._current: Batch | None = None  # the batch last yielded, not yet settled (consumer thread only)
        self._thread: threading.Thread | None = None
        self._stream: Any = None  # the prefetch thread's CUDA stream

        # Locking rule: every field below is read and written with _lock held;
        # no queue or store call is made while holding it.
        self._lock = threading.Lock()
        # Notify _filled whenever the prefetch thread adds a sample, finds the
        # queue empty (idle), or stops (drained or failed).
        self._filled = threading.Condition(self._lock)
        # Notify _emptied whenever the consumer takes samples out of the buffer,
        # and when the loader is stopping.
        self._emptied = threading.Condition(self._lock)
        # Invariant: len(_buffer) <= _prefetch.
        self._buffer: deque[_Fetched] = deque()
        self._idle = False  # the prefetch thread's last acquire found nothing
        self._fetcher_done = False  # the prefetch thread has stopped
        self._fetcher_error: BaseException | None = None
        self._stopping = False
        self._stats = LoaderStats()

    # -- the public surface ----------------------------------------------------------

    def __iter__(self) -> Iterator[Batch]:
        if self._closed:
            raise RuntimeError("FeatureDataLoader is closed; make a new loader to read the queue again")
        if self._iterator is not None:
            raise RuntimeError("FeatureDataLoader iterates once; make a new loader to read the queue again")
        self._iterator = self._iterate()
        return self._iterator

    def commit(self) -> None:
        """Ack the batch last yielded now (e.g. right before ``break``)."""
        batch, self._current = self._current, None
        if batch is not None:
            self._settle(batch.samples, ack=True)

    def extend(self, seconds: float | None = None) -> bool:
        """Heartbeat for a long step: extend every lease of the current batch
        (``queue.extend``); True when all of them were still live."""
        batch = self._current
        if batch is None:
            return False
        return all([self._queue.extend(s.lease, seconds) for s in batch.samples])

    def close(self) -> None:
        """Fail the batch in hand (unless committed) and every prefetched
        sample, stop the prefetch thread, release all handles.  Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._iterator is not None:
            self._iterator.close()  # its finally shuts down
        self._shutdown()

    def __enter__(self) -> FeatureDataLoader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def stats(self) -> LoaderStats:
        with self._lock:
            return self._stats

    @property
    def buffered(self) -> int:
        """Samples fetched ahead and waiting in the prefetch buffer."""
        with self._lock:
            return len(self._buffer)

    # -- iteration ---------------------------------------------------------------

    def _iterate(self) -> Iterator[Batch]:
        try:
            if self._prefetch:
                self._start_fetcher()
            while True:
                batch = self._next_batch()
                if batch is None:
                    return
                self._current = batch
                with self._lock:
                    self._count_nowait(batches=1)
                yield batch
                self.commit()
        finally:
            self._shutdown()

    def _next_batch(self) -> Batch | None:
        """The next batch, or None once the queue is drained."""
        while True:
            fetched = self._take_prefetched() if self._prefetch else self._fetch_batch()
            if not fetched:
                return None
            samples = self._hand_off(fetched)
            if samples:
                return Batch(tuple(samples))

    def _fetch_batch(self) -> list[_Fetched]:
        """Without prefetch: wait for one sample, then add what is ready now."""
        batch: list[_Fetched] = []
        while not batch:
            got = self._fetch(wait=True)
            if got is _DRAINED:
                return batch
            if got is not None:
                batch.append(got)
        while len(batch) < self._batch_size:
            got = self._fetch(wait=False)
            if got is None or got is _DRAINED:
                break
            batch.append(got)
        return batch

    def _fetch(self, *, wait: bool) -> _Fetched | None | object:
        """Lease and get one good sample; None when nothing is ready, ``_DRAINED``
        at the end.  Bad refs are dead-lettered on the way."""
        queue = self._queue
        while True:
            lease = queue.acquire(self._poll_interval) if wait else queue.acquire_nowait()
            if lease is None:
                if queue.is_drained:
                    return _DRAINED
                if self._reclaim and queue.reclaim_expired():
                    continue
                return None
            reason = self._refusal(lease.ref)
            if reason is None:
                try:
                    tensors, handle, ready = self._get(lease.ref)
                except (SampleMissing, RefMismatch) as exc:
                    reason = f"the store cannot serve it: {exc}"
                except BaseException:
                    queue.fail(lease)
                    raise
                else:
                    return _Fetched(Sample(lease, tensors, handle), ready)
            if queue.dead_letter(lease, reason):
                with self._lock:
                    self._count_nowait(dead_lettered=1)

    def _refusal(self, ref: SampleRef) -> str | None:
        """Why this consumer cannot use ``ref``, or None."""
        if ref.algorithm != self._algorithm:
            return f"algorithm {ref.algorithm.value!r} is not the loader's {self._algorithm.value!r}"
        if ref.schema_version != self._schema_version:
            return f"schema_version {ref.schema_version} is not the loader's {self._schema_version}"
        if ref.store_uri != self._store.uri:
            return f"store_uri {ref.store_uri!r} is not the loader's store {self._store.uri!r}"
        return None

    def _get(self, ref: SampleRef) -> tuple[dict[str, Any], StoreHandle, Any]:
        if self._stream is None:
            tensors, handle = self._store.get(ref, self._device)
            return tensors, handle, None
        import torch

        with torch.cuda.stream(self._stream):
            tensors, handle = self._store.get(ref, self._device)
            ready = torch.cuda.Event()
            ready.record(self._stream)
        return tensors, handle, ready

    def _hand_off(self, fetched: list[_Fetched]) -> list[Sample]:
        """Prefetched samples waited in the buffer: give each a fresh visibility
        window and drop those no longer live.  (Without prefetch every lease
        was taken just now and is handed over as it is.)"""
        if not self._prefetch:
            return [item.sample for item in fetched]
        live = []
        for item in fetched:
            sample = item.sample
            if not self._queue.extend(sample.lease):
                self._release(sample.handle)
                with self._lock:
                    self._count_nowait(stale=1)
                continue
            if item.ready is not None:
                _wait_on_this_stream(sample.tensors, item.ready)
            live.append(sample)
        return live

    def _settle(self, samples: tuple[Sample, ...] | list[Sample], *, ack: bool) -> None:
        """Ack or fail each sample and release its handle; the first error is
        raised after all were tried."""
        error: BaseException | None = None
        for sample in samples:
            try:
                live = self._queue.ack(sample.lease) if ack else self._queue.fail(sample.lease)
                with self._lock:
                    if not live:
                        self._count_nowait(stale=1)
                    elif ack:
                        self._count_nowait(acked=1)
                    else:
                        self._count_nowait(failed=1)
            except BaseException as exc:
                error = error or exc
            finally:
                self._release(sample.handle)
        if error is not None:
            raise error

    def _release(self, handle: StoreHandle) -> None:
        try:
            self._store.release(handle)
        except StoreClosed:
            pass  # a closed store dropped every handle already

    def _shutdown(self) -> None:
        """Stop the prefetch thread, then fail the batch in hand and the buffer."""
        with self._lock:
            self._stopping = True
            self._emptied.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        batch, self._current = self._current, None
        with self._lock:
            leftovers = [item.sample for item in self._buffer]
            self._buffer.clear()
        self._settle((batch.samples if batch is not None else ()) + tuple(leftovers), ack=False)

    # -- prefetch ------------------------------------------------------------------

    def _start_fetcher(self) -> None:
        if self._cuda:
            import torch

            self._stream = torch.cuda.Stream(device=torch.device(self._device))
        self._thread = threading.Thread(target=self._fetch_ahead, name="refqueue-loader-prefetch", daemon=True)
        self._thread.start()

    def _fetch_ahead(self) -> None:
        """The prefetch thread: keep the buffer at ``prefetch`` samples until
        the queue is drained or the loader stops."""
        try:
            while True:
                with self._lock:
                    while len(self._buffer) >= self._prefetch and not self._stopping:
                        self._emptied.wait()
                    if self._stopping:
                        return
                got = self._fetch(wait=True)
                with self._lock:
                    kept = self._store_fetched_nowait(got)
                if not kept:
                    if isinstance(got, _Fetched):  # the loader stopped meanwhile
                        self._settle([got.sample], ack=False)
                    if got is not None:
                        return
        except BaseException as exc:
            with self._lock:
                self._fetcher_error = exc
        finally:
            with self._lock:
                self._fetcher_done = True
                self._filled.notify_all()

    def _store_fetched_nowait(self, got: _Fetched | None | object) -> bool:
        """Record what the prefetch thread fetched; False when it was not kept."""
        if got is None:
            self._idle = True
            self._filled.notify_all()
            return False
        if got is _DRAINED or self._stopping:
            return False
        assert isinstance(got, _Fetched) and len(self._buffer) < self._prefetch
        self._buffer.append(got)
        self._idle = False
        self._filled.notify_all()
        return True

    def _take_prefetched(self) -> list[_Fetched]:
        """Wait until a full batch is buffered, or the prefetch thread found
        the queue empty with something buffered, or it stopped; take it."""
        with self._lock:
            while not self._fetcher_done and not (
                len(self._buffer) >= self._batch_size or (self._buffer and self._idle)
            ):
                self._filled.wait()
            return self._take_nowait()

    def _take_nowait(self) -> list[_Fetched]:
        if self._fetcher_error is not None:
            raise self._fetcher_error  # the prefetch thread's error, as the consumer's
        count = min(self._batch_size, len(self._buffer))
        taken = [self._buffer.popleft() for _ in range(count)]
        if taken:
            self._emptied.notify()
        return taken

    def _count_nowait(self, **counts: int) -> None:
        stats = self._stats
        self._stats = LoaderStats(**{f: getattr(stats, f) + counts.get(f, 0) for f in LoaderStats.__slots__})


def _check_device(device: object) -> bool:
    """Validate ``device``; True when it is a CUDA device."""
    if device is None:
        return False
    if isinstance(device, bool) or not (isinstance(device, str) or type(device).__name__ == "device"):
        raise TypeError(
            f"FeatureDataLoader(device) must be None, a str or a torch.device, got {describe(device)}; "
            f"pass e.g. 'cpu' or 'cuda:0'"
        )
    import torch

    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(
            f"FeatureDataLoader(device) got {device!r}, which torch does not know as a device; "
            f"pass e.g. 'cpu' or 'cuda:0'"
        ) from None
    return dev.type == "cuda"


def _wait_on_this_stream(tensors: dict[str, Any], ready: Any) -> None:
    """Order the consumer's current CUDA stream after a prefetch copy."""
    import torch

    for tensor in tensors.values():
        if tensor.is_cuda:
            stream = torch.cuda.current_stream(tensor.device)
            stream.wait_event(ready)
            tensor.record_stream(stream)
