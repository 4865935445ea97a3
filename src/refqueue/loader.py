"""``FeatureDataLoader``: lease -> check -> get -> yield -> ack / fail.

The consumer side of the pipeline as one iterator.  The seed's constructor
works as it is (``FeatureDataLoader(queue, store, algorithm=None,
acquire_poll_interval=0.05)``), and so do refqueue's keywords::

    with FeatureDataLoader(queue, algorithm="eagle3", schema_version=2, prefetch=4) as loader:
        for batch in loader:                      # a Batch of up to batch_size samples
            train_step([s.tensors for s in batch])

Design notes
------------
* **When a batch counts as done.**  As in the seed, a batch is acked (and
  its handles released) when the consumer pulls the next one, so a trainer
  holds one batch across one whole step; ``consume_now()`` (or ``commit()``)
  acks it at once.  A drained queue ends the iteration with everything acked.
* **Close** acks the batch in hand, *unless* an exception is propagating
  when it is called (from a ``with`` block's exit, a ``finally`` or an
  ``except`` clause): then it fails the batch, which the queue redelivers.
  The reason: the seed's contract is that the trainer holds exactly the
  batch it works on and is done with it when it lets go, so an orderly
  ``close()`` (the end of training, a ``break``) consumes it as the next
  pull would, but a step that raised never finished its batch, and acking
  it would lose it (D2: the ack scrubs its data).  ``close(ack=True/False)``
  decides explicitly.  Samples prefetched but never handed out are always
  failed.  ``close()`` also closes the queue (as the seed's does, so a
  producer blocked in ``put_blocks_until_below`` stops with
  ``QueueClosed``), unless the loader was made with ``close_queue=False``
  (one of several consumers of a queue).
* **Batches.**  Every item is a ``Batch`` of ``Sample(lease, tensors,
  handle)`` in delivery order; ``tensors`` is one dict per sample (feature
  name -> tensor, in feature order).  A one-sample batch (``batch_size=1``,
  the default, as the seed's loader delivers one lease at a time) also
  exposes its features as attributes under the seed's EAGLE-3 batch names
  (``batch.aux_hidden_states``, ``batch.input_ids``, ...; an optional
  field the sample lacks, such as ``batch.logits``, is None).  Samples differ
  in length, so collating larger batches (padding, stacking) is the
  consumer's, or a ``collate`` callable's: with ``collate=f`` the loader
  yields ``f(batch)`` (``refqueue.collate.pad_collate`` pads each of the
  algorithm's features to the batch's longest sample and stacks them).  A batch holds ``batch_size`` samples, or fewer when
  the queue had no more ready at that moment (the loader never waits while
  holding leases to fill a batch, which could outlive their visibility
  timeout, or deadlock on a closed queue whose last samples it holds).
* **Stopping** (D3): on ``queue.is_drained`` only, never on a None from
  ``acquire`` with the queue merely closed.  When ``acquire`` comes back
  empty the loader calls ``queue.reclaim_expired()`` (``reclaim=True``), so a
  crashed consumer's leases come back even with no reclaimer running.  The
  loader is an iterator (``iter(loader) is loader``): a second ``for`` loop
  continues where the first stopped.
* **Refs the consumer cannot train on.**  ``algorithm`` and
  ``schema_version`` are optional: one not given is taken from the first ref
  the loader leases, so one loader never mixes algorithms or schema
  versions.  A ref of another algorithm, schema version or store is
  dead-lettered with the reason (``queue.dead_letters()``); then, with
  ``on_mismatch="raise"`` (the default) ``next()`` raises ``SchemaMismatch``
  (a ``ValueError``) at that ref's place in the stream, and the loader stays
  usable (the next ``next()`` goes on with the next ref); with
  ``on_mismatch="skip"`` it logs a warning, counts it in
  ``stats.refused`` and goes on.  Either way it never waits on a ref it
  cannot use.  So is a ref whose data the store cannot serve under a live
  lease (``SampleMissing``: never put, or scrubbed behind the queue's back;
  ``RefMismatch``: not the ref the store's put made, e.g. one built or
  altered by hand): dead-lettered with the store's reason, then raised or
  skipped in the same way.  Under a stale lease (the sample was reclaimed
  and finished by another consumer meanwhile) the same errors only drop the
  sample (``stats.stale``).
* **Consumer-side errors never cost the producer's data.**  Any other error
  from ``get`` (a device copy failing, a closed store, an interrupt) and an
  error from ``collate`` is the consumer's, not the sample's: the loader
  neither fails nor dead-letters the lease (either could scrub the data:
  ``fail`` dead-letters at ``max_deliveries``).  It keeps the lease
  (``loader.held`` lists it), raises the error unchanged, and the next
  ``next()`` retries that sample first, in a fresh visibility window
  (``queue.extend``; a lease lost meanwhile is dropped as stale).  Only
  ``close()`` gives back what the loader still holds, with ``fail``.  A
  device the loader cannot hand tensors on (``"meta"``, ``"mps"`` or
  ``"cuda"`` where the machine has none) is refused at construction.
* **An ack or fail that raises** keeps its lease in ``loader.held`` (never
  held by no one until the visibility timeout) and propagates; the next
  ``next()``, ``commit()`` or ``close()`` tries it again first.
* **Prefetch.**  With ``prefetch=N`` a daemon thread leases and gets up to N
  samples ahead into a buffer; the loader then holds at most ``N +
  batch_size`` leases.  Each prefetched sample handed to the consumer first
  gets a fresh visibility window (``queue.extend``): a sample whose lease
  expired and was taken back while it waited in the buffer is dropped there
  (its handle released) instead of being trained on twice.
* **Long steps.**  The loader does not extend leases during a step on its
  own; a step that may outlive the visibility timeout calls
  ``loader.extend()`` (a heartbeat for the current batch) now and then.
* **CUDA.**  With ``device="cuda"``, or a store on CUDA, a prefetch
  thread gets each sample on its own CUDA stream and records an event; at
  hand-off the consumer's current stream waits for the event and each tensor
  is marked as used by that stream (``record_stream``), so sample i+1 is
  materialised while the trainer computes on sample i and the memory is not
  recycled early.  A CPU ``LocalFeatureStore`` serving a CUDA loader stages
  through pinned buffers it reuses (never one per sample).  With
  ``copy=False`` the loader asks the store for views instead of copies
  (``LocalFeatureStore``: no copy at all on the store's device); the trainer
  must then treat the tensors as read-only (a write is caught at the
  sample's next get and dead-lettered).
* **Handles** are released once a sample is settled (acked, failed, dropped
  as stale, or its ref dead-lettered); release never scrubs (D2).

Locking rule: ``self._lock`` guards the prefetch buffer and the fields the
two threads share (flags, counters, the pinned algorithm and schema).  No
queue or store call is made while holding it.  ``_*_nowait`` methods are
the only code that changes those fields, with the lock held.
"""

from __future__ import annotations

import itertools
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from refqueue._checks import check_count, check_seconds, describe
from refqueue.errors import RefMismatch, SampleMissing, SchemaMismatch, StoreClosed
from refqueue.refs import FeatureAlgorithm, SampleRef
from refqueue.store import FeatureStore, StoreHandle

__all__ = ["Batch", "FeatureDataLoader", "LoaderStats", "Sample", "EAGLE3_BATCH_FIELDS"]

logger = logging.getLogger(__name__)

_QUEUE_METHODS = ("acquire", "acquire_nowait", "ack", "fail", "dead_letter", "extend", "reclaim_expired")
_DEFAULT_POLL_INTERVAL = 0.05
_ON_MISMATCH = ("raise", "skip")

# The seed's EAGLE-3 batch fields: the four required features, then the
# optional ones (None on a batch whose sample lacks them).
EAGLE3_BATCH_FIELDS = (
    "aux_hidden_states",
    "input_ids",
    "attention_mask",
    "loss_mask",
    "logits",
    "target_probs",
    "position_mask",
    "position_ids",
    "seq_lens",
    "doc_remaining",
)
_OPTIONAL_FIELDS = frozenset(EAGLE3_BATCH_FIELDS[4:])


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
    """Up to ``batch_size`` samples, in delivery order.

    ``batch[i]`` is the i-th ``Sample``.  A one-sample batch also answers its
    features by name, as attributes (``batch.input_ids``: the seed's EAGLE-3
    batch names; an optional field the sample lacks is None) and as
    ``batch["input_ids"]``.
    """

    samples: tuple[Sample, ...]

    def __len__(self) -> int:
        return len(self.samples)

    def __iter__(self) -> Iterator[Sample]:
        return iter(self.samples)

    def __getitem__(self, index: int | str) -> Any:
        if isinstance(index, str):
            return self._feature(index, KeyError)
        return self.samples[index]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._feature(name, AttributeError)

    def _feature(self, name: str, error: type[Exception]) -> Any:
        if len(self.samples) != 1:
            raise error(
                f"a Batch of {len(self.samples)} samples has no single {name!r}: its samples differ in "
                f"length, so collate batch.tensors yourself (or pass collate=... to the loader), or use "
                f"batch_size=1"
            )
        tensors = self.samples[0].tensors
        if name in tensors:
            return tensors[name]
        if name in _OPTIONAL_FIELDS:
            return None
        raise error(f"the batch's sample has no feature {name!r}; it has {list(tensors)}")

    @property
    def tensors(self) -> list[dict[str, Any]]:
        """One ``{feature name: tensor}`` dict per sample."""
        return [s.tensors for s in self.samples]

    @property
    def leases(self) -> list[Any]:
        return [s.lease for s in self.samples]

    @property
    def refs(self) -> list[SampleRef]:
        return [s.lease.ref for s in self.samples]


@dataclass(frozen=True, slots=True)
class LoaderStats:
    """What a loader did so far: batches yielded; samples acked, failed,
    dropped as stale (their lease was no longer live), dead-lettered; and of
    the dead-lettered, ``refused``: refs of another algorithm, schema version
    or store than the loader's, and refs the store cannot serve under a live
    lease."""

    batches: int = 0
    acked: int = 0
    failed: int = 0
    stale: int = 0
    dead_lettered: int = 0
    refused: int = 0


class _Fetched(NamedTuple):
    sample: Sample
    ready: Any  # a torch.cuda.Event recorded after a prefetch thread's copy, or None


class _Refused(NamedTuple):
    """A ref the loader cannot use, dead-lettered; raised at its place in the stream."""

    error: SchemaMismatch


_DRAINED = object()  # what _fetch returns once the queue is drained
_LOADER_NUMBERS = itertools.count(1)  # each loader's number in its records (``loader``)

# The fix a refusal's message names: for a ref of another configuration, and
# for a ref the store cannot serve under a live lease.
_FIX_CONFIG = "Give the loader the algorithm and schema_version the producers write"
_FIX_UNSERVABLE = (
    "Queue only the refs the store's put returned, and let the queue alone scrub their data (an ack or a "
    "dead-letter does)"
)


class FeatureDataLoader:
    """Iterate ``Batch``es of samples leased from ``queue`` and read from ``store``.

    ``FeatureDataLoader(queue, store=None, algorithm=None,
    acquire_poll_interval=0.05, *, schema_version=None, batch_size=1,
    prefetch=0, device=None, poll_interval=None, reclaim=True,
    on_mismatch="raise", close_queue=True, collate=None)``.

    ``store`` defaults to ``queue.store``.  ``algorithm`` and
    ``schema_version`` are what the consumer can train on; each one not
    given is taken from the first ref leased.  ``batch_size`` >= 1;
    ``prefetch`` >= 0 samples fetched ahead by a background thread (0: none;
    else at least ``batch_size``); ``device`` is passed to ``store.get``
    (None: the store's); ``poll_interval`` (the seed's name:
    ``acquire_poll_interval``; default 0.05 s) bounds each wait in
    ``acquire``; ``reclaim`` makes an idle loader call
    ``queue.reclaim_expired()``; ``on_mismatch`` is ``"raise"`` or
    ``"skip"`` (see the module notes); ``close_queue`` makes ``close()``
    close the queue; ``collate(batch)``, if given, makes what is yielded;
    ``copy=False`` hands out the store's views instead of copies (see the
    module notes).

    Use it as a context manager (or call ``close()``) so that a failing step
    fails its batch at once.  Iterate it from one thread; the prefetch thread
    is internal.
    """

    def __init__(
        self,
        queue: Any,
        store: FeatureStore | None = None,
        algorithm: FeatureAlgorithm | str | None = None,
        acquire_poll_interval: float | None = None,
        *,
        schema_version: int | None = None,
        batch_size: int = 1,
        prefetch: int = 0,
        device: Any = None,
        poll_interval: float | None = None,
        reclaim: bool = True,
        on_mismatch: str = "raise",
        close_queue: bool = True,
        collate: Callable[[Batch], Any] | None = None,
        copy: bool = True,
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
        if algorithm is not None:
            try:
                algorithm = FeatureAlgorithm(algorithm)
            except ValueError:
                raise ValueError(
                    f"FeatureDataLoader(algorithm) got {algorithm!r}, which is not a FeatureAlgorithm; "
                    f"use one of {', '.join(a.value for a in FeatureAlgorithm)}, or None to take it from "
                    f"the first ref"
                ) from None
        if schema_version is not None:
            check_count(
                "FeatureDataLoader(schema_version)",
                schema_version,
                0,
                "pass the schema version the consumer reads, or None to take it from the first ref",
            )
        check_count("FeatureDataLoader(batch_size)", batch_size, 1, "pass how many samples each batch holds")
        check_count("FeatureDataLoader(prefetch)", prefetch, 0, "pass 0 for no prefetch or a sample count")
        if 0 < prefetch < batch_size:
            raise ValueError(
                f"FeatureDataLoader(prefetch={prefetch}) is smaller than batch_size={batch_size}, so the "
                f"buffer could never hold a full batch; pass prefetch=0 or prefetch >= {batch_size}"
            )
        poll_interval = _poll_interval(poll_interval, acquire_poll_interval)
        if not isinstance(reclaim, bool):
            raise TypeError(f"FeatureDataLoader(reclaim) must be a bool, got {describe(reclaim)}; pass True or False")
        if on_mismatch not in _ON_MISMATCH:
            raise ValueError(
                f"FeatureDataLoader(on_mismatch) got {on_mismatch!r}; pass 'raise' (next() raises "
                f"SchemaMismatch) or 'skip' (a warning and stats.refused)"
            )
        if not isinstance(close_queue, bool):
            raise TypeError(
                f"FeatureDataLoader(close_queue) must be a bool, got {describe(close_queue)}; pass True or False"
            )
        if collate is not None and not callable(collate):
            raise TypeError(
                f"FeatureDataLoader(collate) must be callable or None, got {describe(collate)}; pass a function "
                f"taking a Batch"
            )
        if not isinstance(copy, bool):
            raise TypeError(f"FeatureDataLoader(copy) must be a bool, got {describe(copy)}; pass True or False")
        if not copy and not _takes_copy(store):
            raise ValueError(
                f"FeatureDataLoader(copy=False) needs a store whose get takes copy=False (LocalFeatureStore "
                f"does); {type(store).__name__}.get does not, so pass copy=True"
            )
        cuda = _check_device(device) or (device is None and getattr(getattr(store, "device", None), "type", None) == "cuda")

        self._queue = queue
        self._store = store
        self._batch_size = batch_size
        self._prefetch = prefetch
        self._device = device
        self._cuda = cuda
        self._poll_interval = poll_interval
        self._reclaim = reclaim
        self._on_mismatch = on_mismatch
        self._close_queue = close_queue
        self._collate = collate
        self._copy = copy
        # Consumer-thread state (never touched by the prefetch thread):
        self._uncollated: Batch | None = None  # a batch whose collate raised, collated again next
        self._closed = False
        self._finished = False  # drained or closed: next() raises StopIteration
        self._current: Batch | None = None  # the batch last yielded, not yet settled
        self._deferred: BaseException | None = None  # a refusal to raise at the next next()
        self._thread: threading.Thread | None = None
        self._stream: Any = None  # the prefetch thread's CUDA stream

        # Locking rule: every field below is read and written with _lock held;
        # no queue or store call is made while holding it.
        self._lock = threading.Lock()
        # Notify _filled whenever the prefetch thread adds an item, finds the
        # queue empty (idle), or stops (drained or failed).
        self._filled = threading.Condition(self._lock)
        # Notify _emptied whenever the consumer takes items out of the buffer,
        # and when the loader is stopping.
        self._emptied = threading.Condition(self._lock)
        # Invariant: len(_buffer) <= _prefetch; _refusals_buffered == number
        # of _Refused items in _buffer.
        self._buffer: deque[_Fetched | _Refused] = deque()
        self._refusals_buffered = 0
        self._idle = False  # the prefetch thread's last acquire found nothing
        self._fetcher_done = False  # the prefetch thread has stopped
        self._fetcher_error: BaseException | None = None
        self._stopping = False
        self._stats = LoaderStats()
        # Leases whose get raised a consumer-side error: got again first.
        self._refetch: list[Any] = []
        # (lease, ack) whose ack or fail raised: tried again first.
        self._unsettled: list[tuple[Any, bool]] = []
        # What the loader trains on; None until given or taken from the first
        # ref (then _pinned_from names that ref).
        self._algorithm: FeatureAlgorithm | None = algorithm
        self._schema_version: int | None = schema_version
        self._pinned_from: dict[str, str] = {}
        # The loader's events (loader_wait, loader_batch, loader_retry), recorded
        # as records of the queue it reads when that queue has an EventLog
        # (SampleRefQueue.emit_event; docs/EVENTS.md); None: nothing recorded.
        self._number = next(_LOADER_NUMBERS)
        emit_event = getattr(queue, "emit_event", None)
        self._emit_event: Callable[[dict[str, Any]], Any] | None = (
            emit_event if callable(emit_event) and getattr(queue, "event_log", None) is not None else None
        )

    # -- the public surface ----------------------------------------------------------

    def __iter__(self) -> FeatureDataLoader:
        return self

    def __next__(self) -> Any:
        """The next batch (``_next``).  With a queue recording events, the
        trainer's wait in this call is recorded: ``loader_wait`` as it starts,
        ``loader_batch`` (``samples``: the batch's size, 0 when the call
        raised; ``waited``: seconds in this call; ``outcome``: ``"batch"``,
        ``"stop"`` or the error's class name) as it ends."""
        emit = self._emit_event
        if emit is None or self._finished:
            return self._next()
        started = time.monotonic()
        self._record({"ev": "loader_wait"})
        try:
            item = self._next()
        except BaseException as exc:
            self._record({"ev": "loader_batch", "samples": 0, "waited": time.monotonic() - started,
                          "outcome": "stop" if isinstance(exc, StopIteration) else type(exc).__name__})
            raise
        current = self._current
        self._record({"ev": "loader_batch", "samples": 0 if current is None else len(current.samples),
                      "waited": time.monotonic() - started, "outcome": "batch"})
        return item

    def _record(self, record: dict[str, Any]) -> None:
        """Record one of the loader's events in its queue's log; never raises
        (a loader's record is worth less than the training step)."""
        emit = self._emit_event
        if emit is None:
            return
        record["loader"] = self._number
        try:
            emit(record)
        except Exception:
            logger.debug("FeatureDataLoader: recording %r failed", record.get("ev"), exc_info=True)

    def _retried(self, lease: Any, call: str, exc: BaseException) -> None:
        """Record that ``lease`` is kept to be tried again after ``call`` raised ``exc``."""
        if self._emit_event is not None:
            self._record({"ev": "loader_retry", "sample": lease.ref.sample_id, "call": call,
                          "error": type(exc).__name__})

    def _next(self) -> Any:
        """Ack the batch in hand, then lease, check and get the next one.

        Raises ``StopIteration`` once the queue is drained or the loader is
        closed, ``SchemaMismatch`` (with ``on_mismatch="raise"``) for a ref
        it cannot train on (dead-lettered; the loader stays usable).  An
        error of the consumer's (``get`` or ``collate`` raising, an ack that
        raises) propagates unchanged with its lease kept in ``held``; the
        next call retries it first.
        """
        if self._finished:
            raise StopIteration
        self.commit()
        batch, self._uncollated = self._uncollated, None
        if batch is not None:
            batch = self._renewed(batch)
        if batch is None:
            deferred, self._deferred = self._deferred, None
            if deferred is not None:
                raise deferred
            batch = self._refetched()
        if batch is None:
            if self._prefetch and self._thread is None:
                self._start_fetcher()
            batch = self._next_batch()
        if batch is None:
            self._finished = True
            self._shutdown(ack=False)  # nothing in hand: stops the prefetch thread
            raise StopIteration
        if self._collate is not None:
            try:
                collated = self._collate(batch)
            except BaseException:
                self._uncollated = batch  # the consumer's error: kept, collated again next
                raise
        self._current = batch
        with self._lock:
            self._count_nowait(batches=1)
        return batch if self._collate is None else collated

    def commit(self) -> None:
        """Ack the batch in hand now (e.g. right before ``break``, or before
        a long evaluation); the next pull then has nothing to ack."""
        self._settle_again()
        batch, self._current = self._current, None
        if batch is not None:
            self._settle(batch.samples, ack=True)

    def consume_now(self) -> None:
        """The seed's name for ``commit()``: ack the batch in hand now."""
        self.commit()

    def extend(self, seconds: float | None = None) -> bool:
        """Heartbeat for a long step: extend every lease of the current batch
        (``queue.extend``); True when all of them were still live.
        ``seconds`` (default: the queue's visibility timeout) is checked
        first, with or without a batch in hand."""
        if seconds is not None:
            check_seconds("FeatureDataLoader.extend(seconds)", seconds)
        batch = self._current
        if batch is None:
            return False
        return all([self._queue.extend(s.lease, seconds) for s in batch.samples])

    def close(self, *, ack: bool | None = None) -> None:
        """Settle the batch in hand, fail every prefetched sample, stop the
        prefetch thread, release all handles, and close the queue (unless
        ``close_queue=False``).  Idempotent.

        The batch in hand is acked, unless an exception is propagating when
        ``close`` is called (a ``with`` block's exit, a ``finally`` or
        ``except`` clause): then it is failed, so the queue redelivers it.
        ``ack=True``/``ack=False`` decides explicitly.
        """
        if ack is not None and not isinstance(ack, bool):
            raise TypeError(
                f"FeatureDataLoader.close(ack) must be None or a bool, got {describe(ack)}; pass True to ack the "
                f"batch in hand, False to fail it, or None to fail it only while an exception is in flight"
            )
        if self._closed:
            return
        if ack is None:
            ack = sys.exc_info()[1] is None
        self._closed = True
        self._finished = True
        try:
            self._shutdown(ack=ack)
        finally:
            close_queue = getattr(self._queue, "close", None) if self._close_queue else None
            if callable(close_queue):
                close_queue()

    def __enter__(self) -> FeatureDataLoader:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close(ack=exc_type is None)

    @property
    def stats(self) -> LoaderStats:
        with self._lock:
            return self._stats

    @property
    def buffered(self) -> int:
        """Samples fetched ahead and waiting in the prefetch buffer."""
        with self._lock:
            return len(self._buffer) - self._refusals_buffered

    @property
    def queue(self) -> Any:
        return self._queue

    @property
    def store(self) -> FeatureStore:
        return self._store

    @property
    def poll_interval(self) -> float:
        """Seconds each ``acquire`` waits at most (``acquire_poll_interval``, the seed's name)."""
        return self._poll_interval

    acquire_poll_interval = poll_interval

    @property
    def algorithm(self) -> FeatureAlgorithm | None:
        """What the loader trains on: as given, else taken from the first ref (None before it)."""
        with self._lock:
            return self._algorithm

    @property
    def schema_version(self) -> int | None:
        """The schema version the loader reads: as given, else taken from the first ref."""
        with self._lock:
            return self._schema_version

    @property
    def current(self) -> Batch | None:
        """The batch in hand (yielded, not yet acked or failed), or None."""
        return self._current

    @property
    def held(self) -> list[Any]:
        """Leases the loader holds outside the batch in hand and the prefetch
        buffer: samples whose ``get`` or ``collate`` raised (retried by the
        next ``next()``) and leases whose ``ack`` or ``fail`` raised (tried
        again by the next ``next()``, ``commit()`` or ``close()``)."""
        uncollated = list(self._uncollated.leases) if self._uncollated is not None else []
        with self._lock:
            return uncollated + list(self._refetch) + [lease for lease, _ in self._unsettled]

    # -- iteration ---------------------------------------------------------------

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
        """Without prefetch: wait for one sample, then add what is ready now.
        Empty once the queue is drained.  A refusal first in line raises; one
        after a sample ends the batch and is raised at the next ``next()``."""
        batch: list[_Fetched] = []
        with self._lock:
            start = len(self._refetch)  # a get that raises appends its lease after this
        try:
            while not batch:
                got = self._fetch(wait=True)
                if got is _DRAINED:
                    return batch
                if isinstance(got, _Refused):
                    raise got.error
                if got is not None:
                    batch.append(got)  # type: ignore[arg-type]
            while len(batch) < self._batch_size:
                got = self._fetch(wait=False)
                if got is None or got is _DRAINED:
                    break
                if isinstance(got, _Refused):
                    self._deferred = got.error
                    break
                batch.append(got)  # type: ignore[arg-type]
        except BaseException:
            if batch:  # leased but never handed out: kept, got again at the next next()
                with self._lock:  # in delivery order, before the lease whose get raised
                    self._refetch[start:start] = [item.sample.lease for item in batch]
                for item in batch:
                    self._release(item.sample.handle)
            raise
        return batch

    def _fetch(self, *, wait: bool) -> _Fetched | _Refused | None | object:
        """Lease and get one good sample; None when nothing is ready, ``_DRAINED``
        at the end, ``_Refused`` for a ref of the wrong algorithm, schema or
        store (with ``on_mismatch="raise"``).  Bad refs are dead-lettered."""
        queue = self._queue
        while True:
            lease = queue.acquire(self._poll_interval) if wait else queue.acquire_nowait()
            if lease is None:
                if queue.is_drained:
                    return _DRAINED
                if self._reclaim and queue.reclaim_expired():
                    continue
                return None
            mismatch = self._refusal(lease.ref)
            if mismatch is None:
                try:
                    tensors, handle, ready = self._get(lease.ref)
                except (SampleMissing, RefMismatch) as exc:
                    refused = self._unservable(lease, exc)
                    if refused is None:
                        continue
                    return refused
                except BaseException as exc:
                    # the consumer's error, not the sample's: keep the lease (never fail
                    # it, which may dead-letter and scrub) and get it again later
                    with self._lock:
                        self._refetch.append(lease)
                    self._retried(lease, "get", exc)
                    raise
                return _Fetched(Sample(lease, tensors, handle), ready)
            if queue.dead_letter(lease, mismatch):
                with self._lock:
                    self._count_nowait(dead_lettered=1, refused=1)
            refused = self._refused(lease.ref.sample_id, mismatch, _FIX_CONFIG)
            if refused is None:
                continue
            return refused

    def _refused(self, sample_id: str, why: str, fix: str) -> _Refused | None:
        """The refusal of a dead-lettered ref, to raise at its place in the
        stream (``on_mismatch="raise"``), or None after a warning (``"skip"``)."""
        if self._on_mismatch == "skip":
            logger.warning("FeatureDataLoader skipped ref %r (dead-lettered): %s", sample_id, why)
            return None
        return _Refused(
            SchemaMismatch(
                f"FeatureDataLoader cannot train on ref {sample_id!r}: {why}; it was dead-lettered "
                f"(queue.dead_letters() lists it).  {fix}, or pass on_mismatch='skip' to skip such refs with "
                f"a warning"
            )
        )

    def _unservable(self, lease: Any, exc: BaseException) -> _Refused | None:
        """A leased ref whose data the store cannot serve (``SampleMissing``,
        ``RefMismatch``) is dead-lettered at once.  Under a live lease it is a
        wrong ref (never put, scrubbed behind the queue's back, or not the ref
        the store made: every consumer would fail on it), refused as a ref of
        another algorithm is, so ``next()`` never waits on it.  Under a stale
        lease (another consumer finished the sample meanwhile) the
        dead-letter changes nothing and the sample is dropped as stale: None.
        An algorithm or schema version taken from this ref is forgotten (the
        next ref the loader leases gives it)."""
        why = f"the store cannot serve it: {exc}"
        if not self._queue.dead_letter(lease, why):
            with self._lock:
                self._count_nowait(stale=1)
            return None
        sample_id = lease.ref.sample_id
        with self._lock:
            self._count_nowait(dead_lettered=1, refused=1)
            if self._pinned_from.get("algorithm") == sample_id:
                del self._pinned_from["algorithm"]
                self._algorithm = None
            if self._pinned_from.get("schema_version") == sample_id:
                del self._pinned_from["schema_version"]
                self._schema_version = None
        return self._refused(sample_id, why, _FIX_UNSERVABLE)

    def _refusal(self, ref: SampleRef) -> str | None:
        """Why this consumer cannot use ``ref``, or None.  An algorithm or
        schema version the loader was not given is taken from ``ref``."""
        with self._lock:
            if self._algorithm is None:
                self._algorithm = ref.algorithm
                self._pinned_from["algorithm"] = ref.sample_id
            if self._schema_version is None:
                self._schema_version = ref.schema_version
                self._pinned_from["schema_version"] = ref.sample_id
            algorithm, schema_version, pinned = self._algorithm, self._schema_version, self._pinned_from

        def origin(field: str) -> str:
            return f" (taken from the first ref, {pinned[field]!r})" if field in pinned else ""

        if ref.algorithm != algorithm:
            taken = f", taken from the first ref, {pinned['algorithm']!r}" if "algorithm" in pinned else ""
            return (
                f"algorithm {ref.algorithm.value!r} is not the loader's {algorithm.value!r} "
                f"(the loader is bound to algorithm=FeatureAlgorithm.{algorithm.name}{taken})"
            )
        if ref.schema_version != schema_version:
            return (
                f"schema_version {ref.schema_version} is not the loader's {schema_version}"
                f"{origin('schema_version')}"
            )
        if ref.store_uri != self._store.uri:
            return f"store_uri {ref.store_uri!r} is not the loader's store {self._store.uri!r}"
        return None

    def _get(self, ref: SampleRef) -> tuple[dict[str, Any], StoreHandle, Any]:
        if self._stream is None:
            tensors, handle = self._store_get(ref)
            return tensors, handle, None
        import torch

        with torch.cuda.stream(self._stream):
            tensors, handle = self._store_get(ref)
            ready = torch.cuda.Event()
            ready.record(self._stream)
        return tensors, handle, ready

    def _store_get(self, ref: SampleRef) -> tuple[dict[str, Any], StoreHandle]:
        if self._copy:
            return self._store.get(ref, self._device)
        return self._store.get(ref, self._device, copy=False)  # type: ignore[call-arg]  # checked at construction

    def _hand_off(self, fetched: list[_Fetched]) -> list[Sample]:
        """Prefetched samples waited in the buffer: give each a fresh visibility
        window and drop those no longer live.  (Without prefetch every lease
        was taken just now and is handed over as it is.)"""
        if not self._prefetch:
            return [item.sample for item in fetched]
        live: list[Sample] = []
        for k, item in enumerate(fetched):
            sample = item.sample
            try:
                renewed = self._queue.extend(sample.lease)
            except BaseException:
                # keep every lease not yet handed over (held, got again at the next
                # next()), never dropped: they would be held by no one until reclaimed
                rest = live + [f.sample for f in fetched[k:]]
                with self._lock:
                    self._refetch[0:0] = [s.lease for s in rest]
                for s in rest:
                    self._release(s.handle)
                raise
            if not renewed:
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
        try:
            self._settle_leases([(sample.lease, ack) for sample in samples])
        finally:
            for sample in samples:
                self._release(sample.handle)

    def _settle_leases(self, leases: list[tuple[Any, bool]]) -> None:
        """Ack (``True``) or fail each lease; one whose call raises is kept in
        ``_unsettled`` (``held``) and the first error is raised after all were
        tried."""
        error: BaseException | None = None
        for lease, ack in leases:
            try:
                live = self._queue.ack(lease) if ack else self._queue.fail(lease)
            except BaseException as exc:
                with self._lock:
                    self._unsettled.append((lease, ack))
                self._retried(lease, "ack" if ack else "fail", exc)
                error = error or exc
                continue
            with self._lock:
                if not live:
                    self._count_nowait(stale=1)
                elif ack:
                    self._count_nowait(acked=1)
                else:
                    self._count_nowait(failed=1)
        if error is not None:
            raise error

    def _settle_again(self) -> None:
        """Try again the acks and fails that raised."""
        with self._lock:
            unsettled, self._unsettled = self._unsettled, []
        if unsettled:
            self._settle_leases(unsettled)

    def _renewed(self, batch: Batch) -> Batch | None:
        """A kept batch in a fresh visibility window, less the samples whose
        lease was lost meanwhile (their handles released); None if none is left."""
        live = []
        for sample in batch.samples:
            try:
                renewed = self._queue.extend(sample.lease)
            except BaseException:
                self._uncollated = Batch(tuple(live) + batch.samples[len(live):])
                raise
            if renewed:
                live.append(sample)
            else:
                self._release(sample.handle)
                with self._lock:
                    self._count_nowait(stale=1)
        return Batch(tuple(live)) if live else None

    def _refetched(self) -> Batch | None:
        """Get again the samples whose get raised (up to ``batch_size``), each
        in a fresh visibility window; None when there are none (left)."""
        samples: list[Sample] = []
        while len(samples) < self._batch_size:
            with self._lock:
                if not self._refetch:
                    break
                lease = self._refetch.pop(0)
            try:
                if not self._queue.extend(lease):
                    with self._lock:
                        self._count_nowait(stale=1)
                    continue
                tensors, handle = self._store_get(lease.ref)
            except (SampleMissing, RefMismatch) as exc:
                refused = self._unservable(lease, exc)
                if refused is None:
                    continue
                if not samples:
                    raise refused.error
                self._deferred = refused.error  # the batch ends before it; raised at the next next()
                break
            except BaseException as exc:
                with self._lock:
                    self._refetch.insert(0, lease)
                    self._refetch[1:1] = [s.lease for s in samples]
                self._retried(lease, "get", exc)
                for sample in samples:
                    self._release(sample.handle)
                raise
            samples.append(Sample(lease, tensors, handle))
        return Batch(tuple(samples)) if samples else None

    def _release(self, handle: StoreHandle) -> None:
        try:
            self._store.release(handle)
        except StoreClosed:
            pass  # a closed store dropped every handle already

    def _shutdown(self, *, ack: bool) -> None:
        """Stop the prefetch thread, then settle the batch in hand (ack or
        fail) and fail the buffer."""
        with self._lock:
            self._stopping = True
            self._emptied.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        batch, self._current = self._current, None
        uncollated, self._uncollated = self._uncollated, None
        self._deferred = None
        with self._lock:
            leftovers = [item.sample for item in self._buffer if isinstance(item, _Fetched)]
            self._buffer.clear()
            self._refusals_buffered = 0
            refetch, self._refetch = self._refetch, []
            unsettled, self._unsettled = self._unsettled, []
        if uncollated is not None:
            leftovers = list(uncollated.samples) + leftovers
        try:
            if batch is not None:
                self._settle(batch.samples, ack=ack)
        finally:
            try:
                self._settle(leftovers, ack=False)
            finally:
                self._settle_leases(unsettled + [(lease, False) for lease in refetch])

    # -- prefetch ------------------------------------------------------------------

    def _start_fetcher(self) -> None:
        if self._cuda:
            import torch

            device = self._store.device if self._device is None else self._device  # type: ignore[attr-defined]
            self._stream = torch.cuda.Stream(device=torch.device(device))
        self._thread = threading.Thread(target=self._fetch_ahead, name="refqueue-loader-prefetch", daemon=True)
        self._thread.start()

    def _fetch_ahead(self) -> None:
        """The prefetch thread: keep the buffer at ``prefetch`` items until
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

    def _store_fetched_nowait(self, got: _Fetched | _Refused | None | object) -> bool:
        """Record what the prefetch thread fetched; False when it was not kept."""
        if got is None:
            self._idle = True
            self._filled.notify_all()
            return False
        if got is _DRAINED or self._stopping:
            return False
        assert isinstance(got, (_Fetched, _Refused)) and len(self._buffer) < self._prefetch
        self._buffer.append(got)
        if isinstance(got, _Refused):
            self._refusals_buffered += 1
        self._idle = False
        self._filled.notify_all()
        return True

    def _take_prefetched(self) -> list[_Fetched]:
        """Wait until a full batch is buffered, or a refusal is, or the prefetch
        thread found the queue empty with something buffered, or it stopped;
        take it (empty once drained)."""
        with self._lock:
            while not self._fetcher_done and not (
                len(self._buffer) >= self._batch_size
                or (self._buffer and (self._idle or self._refusals_buffered))
            ):
                self._filled.wait()
            return self._take_nowait()

    def _take_nowait(self) -> list[_Fetched]:
        if self._fetcher_error is not None and not self._buffer:
            # the prefetch thread's error, as the consumer's; once raised, the
            # next next() starts a new prefetch thread
            error, self._fetcher_error = self._fetcher_error, None
            self._fetcher_done = False
            self._idle = False
            self._thread = None  # it has stopped: _fetcher_done was set in its finally
            raise error
        taken: list[_Fetched] = []
        buffer = self._buffer
        while buffer and len(taken) < self._batch_size:
            item = buffer[0]
            if isinstance(item, _Refused):
                if taken:
                    break  # the batch ends before it; raised at the next next()
                buffer.popleft()
                self._refusals_buffered -= 1
                self._emptied.notify()
                raise item.error
            taken.append(buffer.popleft())
        if taken:
            self._emptied.notify()
        return taken

    def _count_nowait(self, **counts: int) -> None:
        stats = self._stats
        self._stats = LoaderStats(**{f: getattr(stats, f) + counts.get(f, 0) for f in LoaderStats.__slots__})


def _poll_interval(poll_interval: object, acquire_poll_interval: object) -> float:
    """The acquire wait: ``poll_interval`` or the seed's ``acquire_poll_interval`` (one setting)."""
    if poll_interval is not None and acquire_poll_interval is not None and poll_interval != acquire_poll_interval:
        raise ValueError(
            f"FeatureDataLoader got poll_interval={poll_interval!r} and acquire_poll_interval="
            f"{acquire_poll_interval!r}; they are one setting (acquire_poll_interval is the seed's name), "
            f"pass one of them"
        )
    if acquire_poll_interval is not None:
        return check_seconds("FeatureDataLoader(acquire_poll_interval)", acquire_poll_interval)
    if poll_interval is not None:
        return check_seconds("FeatureDataLoader(poll_interval)", poll_interval)
    return _DEFAULT_POLL_INTERVAL


def _check_device(device: object) -> bool:
    """Validate ``device``: one this machine can hand tensors with data on
    (``cpu``, an existing ``cuda`` device, ``mps`` where available); True
    when it is a CUDA device.  Refused here, not at the first ``next()``."""
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
    if dev.type == "cpu":
        return False
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(
                f"FeatureDataLoader(device) got {device!r}, but CUDA is not available on this machine; "
                f"pass 'cpu' (or None for the store's device)"
            )
        if dev.index is not None and dev.index >= count:
            raise ValueError(
                f"FeatureDataLoader(device) got {device!r}, but this machine has {count} CUDA device(s); "
                f"pass 'cuda:0' .. 'cuda:{count - 1}'"
            )
        return True
    if dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(
                f"FeatureDataLoader(device) got {device!r}, but MPS is not available on this machine; "
                f"pass 'cpu' (or None for the store's device)"
            )
        return False
    if dev.type == "meta":
        raise ValueError(
            f"FeatureDataLoader(device) got {device!r}: 'meta' tensors hold no data, so a trainer could not "
            f"use them; pass 'cpu' or 'cuda:N' (or None for the store's device)"
        )
    raise ValueError(
        f"FeatureDataLoader(device) got {device!r}: the loader hands tensors on 'cpu', 'cuda' or 'mps' only; "
        f"pass one of those (or None for the store's device)"
    )


def _takes_copy(store: object) -> bool:
    """Whether ``store.get`` takes a ``copy`` keyword (views on request)."""
    import inspect

    try:
        return "copy" in inspect.signature(store.get).parameters  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        return False


def _wait_on_this_stream(tensors: dict[str, Any], ready: Any) -> None:
    """Order the consumer's current CUDA stream after a prefetch copy."""
    import torch

    for tensor in tensors.values():
        if tensor.is_cuda:
            stream = torch.cuda.current_stream(tensor.device)
            stream.wait_event(ready)
            tensor.record_stream(stream)
