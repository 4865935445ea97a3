"""The records a queue hands out: ``VisibilityTimeout``, ``Lease``, ``DeadLetter``.

A ``Lease`` is a value, not a capability held by object identity: its identity
is ``(epoch, lease_id)`` (D1).  Equality and hashing use exactly those two
fields, so ``copy.copy(lease)``, ``copy.deepcopy(lease)`` and
``Lease.from_json(lease.to_json())`` are the same lease to every queue.  The
other fields describe the delivery (which ref, its deadline when issued, how
often it was delivered before) and take no part in identity.

Leases travel as JSON (``to_json``/``from_json``), never pickled.

The queue mints leases on its hot path with ``mint_lease``, which fills the
instance dict in one step instead of running the validating ``__init__``
(the queue's own values need no validation); everything else builds a
``Lease`` through ``__init__`` and is validated there.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from refqueue._checks import MAX_SECONDS, describe, safe_repr
from refqueue.refs import MAX_INT, SampleRef, load_json

__all__ = ["VisibilityTimeout", "Lease", "DeadLetter", "mint_lease", "MAX_DELIVERIES_REASON"]

# DeadLetter.reason of a sample the queue dead-lettered for reaching max_deliveries.
MAX_DELIVERIES_REASON = "max_deliveries"

# Lease ids of leases built without one (seed compatibility: ``Lease(ref, ...)``
# mints a fresh id).  Queues mint their own ids from a per-queue counter.
_lease_id_counter = itertools.count(1)


def _next_lease_id() -> int:
    """A fresh ``Lease.lease_id`` for a lease built without one."""
    return next(_lease_id_counter)


def _check_number(what: str, value: object, fix: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {describe(value)}; {fix}")
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:  # an int beyond float range: no finite number of seconds
            raise ValueError(f"{what} must be finite, got {safe_repr(value)}, which no float holds; {fix}") from None
    elif not math.isfinite(value):
        raise ValueError(f"{what} must be finite, got {value!r}; {fix}")


def _check_count(what: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{what} must be an int, got {value!r} ({type(value).__name__}); pass a whole number >= 0"
        )
    if value < 0:
        raise ValueError(f"{what} must be >= 0, got {value}; pass a whole number >= 0")
    if value > MAX_INT:
        raise ValueError(
            f"{what} must be at most 2**63 - 1 (a signed 63-bit int), got an int of {value.bit_length()} bits; "
            f"pass the value the queue minted"
        )


@dataclass(frozen=True)
class VisibilityTimeout:
    """How long an unacked ``Lease`` lives before ``reclaim_expired`` takes it back.

    ``seconds`` is finite, > 0 and at most ``threading.TIMEOUT_MAX`` (about
    9.2e9 s: the longest duration any queue call takes; ``TypeError`` for a
    non-number or a bool, ``ValueError`` otherwise); sub-second values are
    fine.
    """

    seconds: float = 30.0

    def __post_init__(self) -> None:
        fix = "pass a positive number of seconds, e.g. VisibilityTimeout(30.0)"
        _check_number("VisibilityTimeout.seconds", self.seconds, fix)
        if self.seconds <= 0:
            raise ValueError(f"VisibilityTimeout.seconds must be > 0, got {self.seconds!r}; {fix}")
        if self.seconds > MAX_SECONDS:
            raise ValueError(
                f"VisibilityTimeout.seconds must be at most threading.TIMEOUT_MAX = {MAX_SECONDS!r} s, got "
                f"{self.seconds!r}; {fix}"
            )


_LEASE_FIELDS = ("ref", "deadline", "visibility_timeout", "redelivery_count", "lease_id", "epoch")


@dataclass(frozen=True)
class Lease:
    """One delivery of a ``SampleRef`` to a consumer.

    ``deadline`` is the clock time the lease was issued to expire at (an
    ``extend`` moves the queue's deadline, not this field);
    ``redelivery_count`` is the number of earlier deliveries of this
    incarnation of the sample; ``lease_id`` is unique within the issuing
    queue, whose ``epoch`` (a uuid4 hex) the lease carries.  Identity,
    equality and hash are ``(lease_id, epoch)``.
    """

    ref: SampleRef = field(compare=False)
    deadline: float = field(compare=False)
    visibility_timeout: VisibilityTimeout = field(compare=False)
    redelivery_count: int = field(default=0, compare=False)
    lease_id: int = field(default_factory=_next_lease_id)
    epoch: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.ref, SampleRef):
            raise TypeError(
                f"Lease.ref must be a SampleRef, got {self.ref!r} ({type(self.ref).__name__}); "
                f"a lease names the ref it delivers"
            )
        _check_number("Lease.deadline", self.deadline, "pass the clock time the lease expires at")
        if not isinstance(self.visibility_timeout, VisibilityTimeout):
            raise TypeError(
                f"Lease.visibility_timeout must be a VisibilityTimeout, got {self.visibility_timeout!r}; "
                f"wrap the seconds: VisibilityTimeout(seconds)"
            )
        _check_count("Lease.redelivery_count", self.redelivery_count)
        _check_count("Lease.lease_id", self.lease_id)
        if not isinstance(self.epoch, str):
            raise TypeError(
                f"Lease.epoch must be a str, got {self.epoch!r} ({type(self.epoch).__name__}); "
                f"pass the issuing queue's epoch"
            )

    # -- serialisation (JSON, never pickle) ---------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; ``Lease.from_dict`` inverts it exactly."""
        return {
            "ref": self.ref.to_dict(),
            "deadline": self.deadline,
            "visibility_timeout": self.visibility_timeout.seconds,
            "redelivery_count": self.redelivery_count,
            "lease_id": self.lease_id,
            "epoch": self.epoch,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Lease:
        if not isinstance(data, Mapping):
            raise TypeError(f"Lease.from_dict needs a dict, got {type(data).__name__}; pass what to_dict returned")
        missing = [f for f in _LEASE_FIELDS if f not in data]
        unknown = sorted(set(data) - set(_LEASE_FIELDS))
        if missing or unknown:
            raise ValueError(
                f"a Lease dict must have exactly the fields {list(_LEASE_FIELDS)}; "
                f"missing {missing}, unknown {unknown}"
            )
        return cls(
            ref=SampleRef.from_dict(data["ref"]),
            deadline=data["deadline"],
            visibility_timeout=VisibilityTimeout(data["visibility_timeout"]),
            redelivery_count=data["redelivery_count"],
            lease_id=data["lease_id"],
            epoch=data["epoch"],
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> Lease:
        """The lease ``to_json`` wrote: ``TypeError`` for text that is not a
        str or bytes, ``ValueError`` for anything else wrong (never
        ``RecursionError``: nesting is bounded by ``refs.MAX_NESTING``)."""
        return cls.from_dict(load_json("Lease.from_json", text))


_new = object.__new__
_set = object.__setattr__


def mint_lease(
    ref: SampleRef,
    deadline: float,
    visibility_timeout: VisibilityTimeout,
    redelivery_count: int,
    lease_id: int,
    epoch: str,
) -> Lease:
    """A ``Lease`` of values the queue already holds valid, built without
    ``__init__`` (about half its cost; the acquire hot path pays it once per
    delivery).  The result is an ordinary ``Lease`` in every respect."""
    lease = _new(Lease)
    _set(
        lease,
        "__dict__",
        {
            "ref": ref,
            "deadline": deadline,
            "visibility_timeout": visibility_timeout,
            "redelivery_count": redelivery_count,
            "lease_id": lease_id,
            "epoch": epoch,
        },
    )
    return lease


@dataclass(frozen=True)
class DeadLetter:
    """A sample the queue gave up on (D7): its ref, why, and how often it was delivered.

    ``reason`` is ``"max_deliveries"`` when the queue dead-lettered it for
    reaching ``max_deliveries``, else the reason given to ``dead_letter``.
    """

    ref: SampleRef
    reason: str
    deliveries: int
