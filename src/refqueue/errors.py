"""The exceptions of refqueue's production code.

Each one subclasses the builtin that code written against the seed API
already catches (``RuntimeError`` for a closed queue, ``KeyError`` for a
missing sample, ``MemoryError`` for a full store), so that catching the
builtin keeps working, and ``RefQueueError`` so that one ``except`` catches
everything the library raises on purpose.

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
    "StoreClosed",
    "SampleMissing",
    "StoreFull",
    "RefMismatch",
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
