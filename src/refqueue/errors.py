"""The exceptions of refqueue's production code.

Each one subclasses the builtin that code written against the seed API
already catches (``RuntimeError`` for a closed queue, ``KeyError`` for a
missing sample, ``MemoryError`` for a full store), so that catching the
builtin keeps working, and ``RefQueueError`` so that one ``except`` catches
everything the library raises on purpose.  Where refqueue raised one builtin
and the seed another for the same mistake, the class subclasses both
(``ForeignRef`` is a ``ValueError`` and a ``KeyError``;
``TensorOnControlPlane`` a ``ValueError`` and a ``TypeError``), so code
written against either keeps catching it.

The reference model does not import this module: it reports the *kind* of a
rejected call as a short string (``"closed"``, ``"duplicate"``, ...), and the
conformance kit maps these classes to those kinds (``KIND`` on each class).
"""

from __future__ import annotations

__all__ = [
    "RefQueueError",
    "QueueClosed",
    "PutAborted",
    "DuplicateSample",
    "ReplayedSample",
    "ForeignLease",
    "QueueStateLost",
    "StoreClosed",
    "SampleMissing",
    "StoreFull",
    "RefMismatch",
    "ForeignRef",
    "TensorOnControlPlane",
    "SchemaMismatch",
]


class RefQueueError(Exception):
    """Base of every error refqueue raises on purpose."""

    KIND = "error"


class QueueClosed(RefQueueError, RuntimeError):
    """A put reached a queue after ``close()``."""

    KIND = "closed"


class PutAborted(RefQueueError, RuntimeError):
    """``put_blocks_until_below`` gave up because ``abort_when()`` said so."""

    KIND = "aborted"


class DuplicateSample(RefQueueError, ValueError):
    """A put named a ``sample_id`` that is already pending or leased."""

    KIND = "duplicate"


class ReplayedSample(DuplicateSample):
    """A put named a ``sample_id`` completed within the ``dedup_window``."""

    KIND = "replay"


class ForeignLease(RefQueueError, ValueError):
    """A lease minted by another queue (another epoch) was handed to this one."""

    KIND = "foreign"


class QueueStateLost(RefQueueError, RuntimeError):
    """The queue's shared state is gone or older than what was already seen:
    its server restarted without persistence, was flushed, or came back
    without its last writes (D9).  Every call of every client raises it
    from then on; nothing of the lost state (no lease of its epoch) is ever
    accepted again.  The message says how to recover (docs/REDIS.md)."""

    KIND = "state_lost"


class StoreClosed(RefQueueError, RuntimeError):
    """A call reached a ``FeatureStore`` after ``close()``."""

    KIND = "store_closed"


class SampleMissing(RefQueueError, KeyError):
    """``FeatureStore.get`` asked for data that is not (or no longer) resident."""

    KIND = "missing"

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class StoreFull(RefQueueError, MemoryError):
    """A ``FeatureStore.put`` would exceed the store's byte or sample cap."""

    KIND = "capacity"


class RefMismatch(RefQueueError, ValueError):
    """Tensors handed to a store do not match what their ref declares."""

    KIND = "mismatch"


class _PlainMessage:
    """Mixin for ``KeyError`` subclasses: show the message, not its repr()."""

    args: tuple[object, ...]  # BaseException's, which every user of the mixin is

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ForeignRef(_PlainMessage, RefQueueError, ValueError, KeyError):
    """A store was handed a ref (or handle) that names another store.

    A ``ValueError`` (refqueue's first answer) and a ``KeyError`` (the
    seed's: the sample is not in this store)."""

    KIND = "invalid"  # an argument error, as the plain ValueError it replaces


class TensorOnControlPlane(RefQueueError, ValueError, TypeError):
    """A tensor or array (or something that duck-types as one) was found where
    only tensor-free control-plane data may travel.

    A ``ValueError`` (the seed's answer) and a ``TypeError`` (refqueue's first)."""

    KIND = "invalid"  # an argument error, as the plain TypeError it replaces


class SchemaMismatch(RefQueueError, ValueError):
    """A ``FeatureDataLoader`` leased a ref it cannot train on: another
    algorithm, schema version or store than the loader's, or a ref whose data
    the store cannot serve (never put, scrubbed, or not the ref the store
    made).  The loader dead-lettered it (D7) before raising."""

    KIND = "invalid"  # an argument error: the ref does not fit the consumer
