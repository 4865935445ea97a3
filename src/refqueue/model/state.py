"""The state of the reference model: immutable tuples that hash and compare by value.

Names follow ``spec/SampleRefQueue.tla``: one ``Rec`` per sample the model has
seen (its status, incarnation, delivery counts, lease deadline and whether its
data is resident in the store), the FIFO ``pending`` sequence, the clock
``now``, the ``closed`` and ``paused`` flags, the store's counters, the
dead-letter list and the dedup window; for a deployment over two systems
(D9), the recorded scrub intents and the queue's epoch.

Everything is a ``NamedTuple`` of ints, strings, bools and tuples, so two equal
states hash equal (Porcupine's ``Equal``/``Hash`` come free) and a state can be
a dict key in the explorer.  The model never reads a machine clock and imports
neither torch nor threading.
"""

from __future__ import annotations

import functools
import itertools
import math
import sys
from collections.abc import Iterator
from typing import Any, NamedTuple

__all__ = [
    "STORED",
    "PENDING",
    "LEASED",
    "ACKED",
    "DEAD",
    "DROPPED",
    "LOST",
    "STATUSES",
    "LIVE",
    "DONE",
    "MAX_DELIVERIES_REASON",
    "Config",
    "ModelLease",
    "Rec",
    "State",
    "make_config",
    "initial_state",
    "lease_epoch",
    "epoch_generation",
]

# Sample statuses (TLA+: the strings of the same spelling).
STORED = "stored"  # data written to the store, ref not (yet) enqueued
PENDING = "pending"  # enqueued, waiting for an acquire
LEASED = "leased"  # handed out under a live lease
ACKED = "acked"  # terminal: a live ack committed, data scrubbed (two_step_ack: or its scrub intended)
DEAD = "dead"  # terminal: dead-lettered, data scrubbed (or intended), ref + reason listed
DROPPED = "dropped"  # an orphan (stored, never enqueued, its producer gone) whose data was scrubbed
LOST = "lost"  # forgotten by a lossy restart, its data resident, awaiting the operator's recover (D9)
STATUSES = frozenset({STORED, PENDING, LEASED, ACKED, DEAD, DROPPED, LOST})
LIVE = frozenset({PENDING, LEASED})  # a put of the same id is a duplicate
DONE = frozenset({ACKED, DEAD})  # completed: counted by the dedup window

# The reason recorded when a sample is dead-lettered for reaching max_deliveries.
MAX_DELIVERIES_REASON = "max_deliveries"


class Config(NamedTuple):
    """Fixed parameters of one model run; build it with ``make_config``.

    ``high``/``low`` are the *effective* watermarks (the queue's override where
    given, else the store's own); ``store_high``/``store_low`` are the store's,
    which decide ``StoreHealth.high_watermark_hit``/``low_watermark_hit``.
    ``two_step_ack`` is a deployment over two systems (D9, the spec's
    ``TwoStepAck``): an ack or dead-letter commits with a scrub intent and
    leaves the data resident until ``scrub_intent``; off (the in-process
    queue), it scrubs in the same step.
    """

    visibility_timeout: float
    high: int | None
    low: int | None
    store_high: int | None
    store_low: int | None
    capacity_bytes: int | None
    max_samples: int | None
    max_deliveries: int | None
    dedup_window: int
    fifo: bool
    epoch: str
    two_step_ack: bool = False


class ModelLease(NamedTuple):
    """A lease's identity: which queue, which sample, which incarnation, which delivery.

    ``redelivery_count`` is the number of earlier deliveries of this
    incarnation, so it also numbers the delivery.  Identity is the whole
    tuple: a copy or a JSON round trip of a lease is the same lease (D1).
    ``epoch`` names the queue and its epoch: ``lease_epoch(cfg, n)`` after
    the queue's n-th detected loss (D9), so no lease identity is reused.
    The deadline is not part of the identity (``extend`` moves it); read it
    from the state with ``lease_deadline``.
    """

    epoch: str
    sample_id: str
    incarnation: int
    redelivery_count: int


class Rec(NamedTuple):
    """What the model knows of one sample id.

    Invariants (checked by ``refqueue.model.invariants``):
    ``status in (STORED, PENDING, LEASED, LOST) => resident`` (NoScrubBeforeAck),
    ``status in (ACKED, DEAD) and resident => a scrub intent is recorded``
    (NothingResidentAfterAck),
    ``deadline is not None <=> status == LEASED``,
    ``deliveries == redeliveries + (status == LEASED)`` for a live sample
    (RedeliveryCountsDeliveries).
    """

    status: str
    incarnation: int  # 0 until the first put; +1 per put of this id
    deliveries: int  # acquires of this incarnation
    redeliveries: int  # fails + reclaims of this incarnation
    deadline: float | None  # the live lease's deadline, only while LEASED
    resident: bool  # the store holds this sample's data
    nbytes: int  # the data's size (estimated_bytes of the ref)


# The sequences of a state (``pending``, ``ids``, ``recs``) are kept inside
# as tuples of chunks of at most ``CHUNK`` items, so an update copies one
# chunk and the (short) tuple of chunks instead of the whole sequence;
# ``pending`` also has an offset into its first chunk, so taking its head
# copies nothing.  A state shows each sequence as a plain tuple, built on
# first read and kept (a property, not ``__getattr__``: a class with
# ``__getattr__`` has every attribute read, hot or not, go the slow generic
# way, about three times the cost of a plain slot read).
CHUNK = 32
_SHIFT = 5
_MASK = CHUNK - 1

_FIELDS = (
    "now", "closed", "paused", "pending", "ids", "recs", "resident_bytes", "resident_count", "dead",
    "completed", "parked", "intents", "epoch",
)
_new = object.__new__
_chain = itertools.chain.from_iterable


def _chunked(items: tuple) -> tuple[tuple, ...]:
    """``items`` cut into chunks of ``CHUNK`` (the last one shorter); () when empty."""
    if len(items) <= CHUNK:
        return (items,) if items else ()
    return tuple(items[k : k + CHUNK] for k in range(0, len(items), CHUNK))


def _flat(chunks: tuple[tuple, ...], off: int) -> tuple:
    """The items of ``chunks`` from ``off`` on, as one tuple."""
    if len(chunks) == 1:
        c = chunks[0]
        return c[off:] if off else c
    out = tuple(_chain(chunks))
    return out[off:] if off else out


def _appended(chunks: tuple[tuple, ...], item: object) -> tuple[tuple, ...]:
    """``chunks`` with ``item`` appended: copies the last chunk and the tuple of chunks."""
    if chunks:
        last = chunks[-1]
        if len(last) < CHUNK:
            return chunks[:-1] + (last + (item,),)
    return chunks + ((item,),)


class State:
    """The whole observable state of a queue bound to its store.

    Fields, in this order (the TLA+ variables of the same names):

    ``now``             the clock
    ``closed``          close() was called
    ``paused``          the producer is paused (D4)
    ``pending``         the PENDING ids in delivery order (FIFO)
    ``ids``, ``recs``   parallel: ``recs[i]`` describes ``ids[i]``; ids are kept
                        in the order they were first seen, never removed
    ``resident_bytes``  the store's counter; = sum of resident recs' nbytes
    ``resident_count``  the store's counter; = number of resident recs
    ``dead``            (sample_id, reason), in dead-letter order
    ``completed``       the last dedup_window completed ids, oldest first
    ``parked``          refs whose producers wait in put_blocks_until_below,
                        as (sample_id, nbytes) sorted by id: their bytes are
                        not counted against the watermarks (D8)
    ``intents``         the ids whose scrub intent a two-step completion
                        recorded, sorted: acked or dead-lettered, their data
                        still resident until scrub_intent (D9)
    ``epoch``           0, then one more per detected lossy restart; a lease
                        carries it (lease_epoch)

    ``intents`` and ``epoch`` matter only in a deployment (D9); their
    defaults (and ``parked``'s) are the in-process queue's.

    Immutable (set nothing on it), and it behaves as the ``NamedTuple`` it
    was: built from the field values positionally or by name, ``_replace``,
    ``_fields``, iteration, and equal to, hashed and ordered like the tuple
    of its fields.  The hash is computed once per state.  Inside, the three
    sequences share structure with the state an action made this one from
    (``CHUNK``), and the index of each id in ``ids`` is kept, so an action
    costs about the same at a thousand live samples as at ten.
    """

    __slots__ = (
        "now", "closed", "paused", "resident_bytes", "resident_count", "dead", "completed", "parked",
        "intents", "epoch",
        "_pt", "_it", "_rt",  # the plain tuples of pending, ids and recs; None until first read
        "_pc", "_po", "_pn",  # pending: its chunks, the offset into the first, its length
        "_ic", "_rc", "_n",  # ids and recs: their chunks (no offset), their length
        "_where",  # {sample_id: its index in ids} or None (see index_of)
        "_h",  # the hash, or None until computed
    )

    _fields = _FIELDS
    _field_defaults = {"parked": (), "intents": (), "epoch": 0}

    def __new__(
        cls,
        now: float,
        closed: bool,
        paused: bool,
        pending: tuple[str, ...],
        ids: tuple[str, ...],
        recs: tuple[Rec, ...],
        resident_bytes: int,
        resident_count: int,
        dead: tuple[tuple[str, str], ...],
        completed: tuple[str, ...],
        parked: tuple[tuple[str, int], ...] = (),
        intents: tuple[str, ...] = (),
        epoch: int = 0,
    ) -> State:
        self = _new(cls)
        self.now = now
        self.closed = closed
        self.paused = paused
        self.resident_bytes = resident_bytes
        self.resident_count = resident_count
        self.dead = dead
        self.completed = completed
        self.parked = parked
        self.intents = intents
        self.epoch = epoch
        pending = pending if type(pending) is tuple else tuple(pending)
        ids = ids if type(ids) is tuple else tuple(ids)
        recs = recs if type(recs) is tuple else tuple(recs)
        self._pt, self._it, self._rt = pending, ids, recs
        self._pc, self._po, self._pn = _chunked(pending), 0, len(pending)
        if len(ids) == len(recs):
            self._ic, self._rc, self._n = _chunked(ids), _chunked(recs), len(ids)
        else:  # not a state any action makes (TypeOK fails on it): kept as given, updated by rebuilding
            self._ic, self._rc, self._n = (), (), -1
        self._where = None
        self._h = None
        return self

    @property
    def pending(self) -> tuple[str, ...]:
        p = self._pt
        if p is None:
            p = self._pt = _flat(self._pc, self._po)
        return p

    @property
    def ids(self) -> tuple[str, ...]:
        i = self._it
        if i is None:
            i = self._it = _flat(self._ic, 0)
        return i

    @property
    def recs(self) -> tuple[Rec, ...]:
        r = self._rt
        if r is None:
            r = self._rt = _flat(self._rc, 0)
        return r

    def _tuple(self) -> tuple:
        return (
            self.now, self.closed, self.paused, self.pending, self.ids, self.recs, self.resident_bytes,
            self.resident_count, self.dead, self.completed, self.parked, self.intents, self.epoch,
        )

    def __iter__(self) -> Iterator[Any]:
        return iter(self._tuple())

    def __len__(self) -> int:
        return 13

    def __getitem__(self, index: Any) -> Any:
        return self._tuple()[index]

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(_FIELDS, self._tuple()))

    def __hash__(self) -> int:
        h = self._h
        if h is None:
            h = self._h = hash(self._tuple())
        return h

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is State:
            if (
                self._n != other._n or self._pn != other._pn or self.now != other.now
                or self.resident_bytes != other.resident_bytes
            ):
                return False
            h, g = self._h, other._h
            if h is not None and g is not None and h != g:
                return False
            return self._tuple() == other._tuple()
        if isinstance(other, tuple):
            return self._tuple() == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __lt__(self, other: object) -> bool:
        o = _as_tuple(other)
        return NotImplemented if o is None else self._tuple() < o

    def __le__(self, other: object) -> bool:
        o = _as_tuple(other)
        return NotImplemented if o is None else self._tuple() <= o

    def __gt__(self, other: object) -> bool:
        o = _as_tuple(other)
        return NotImplemented if o is None else self._tuple() > o

    def __ge__(self, other: object) -> bool:
        o = _as_tuple(other)
        return NotImplemented if o is None else self._tuple() >= o

    def __repr__(self) -> str:
        return "State(" + ", ".join(f"{n}={v!r}" for n, v in zip(_FIELDS, self._tuple())) + ")"

    def __reduce__(self) -> tuple:
        return (State, self._tuple())

    def __copy__(self) -> State:
        return self

    def __deepcopy__(self, memo: dict) -> State:
        return self

    def _replace(self, **changes: Any) -> State:
        """The state with the fields named in ``changes`` set (``NamedTuple._replace``)."""
        for name in changes:
            if name not in _FIELDS:
                raise ValueError(f"Got unexpected field names: {sorted(set(changes).difference(_FIELDS))!r}")
        if "ids" in changes or "recs" in changes or self._n < 0:
            return State(*[changes[n] if n in changes else getattr(self, n) for n in _FIELDS])
        t = _clone(self)
        for name, value in changes.items():
            if name == "pending":
                value = value if type(value) is tuple else tuple(value)
                t._pc, t._po, t._pn, t._pt = _chunked(value), 0, len(value), value
            else:
                setattr(t, name, value)
        return t

    @classmethod
    def _make(cls, iterable: Any) -> State:
        return cls(*iterable)


def _as_tuple(other: object) -> tuple | None:
    if type(other) is State:
        return other._tuple()
    return other if isinstance(other, tuple) else None


def _clone(s: State) -> State:
    """A copy of ``s`` without its hash, for an update to change before anyone
    sees it.  It keeps the plain sequences ``s`` has built: whatever changes
    a sequence's chunks drops its plain tuple (``with_rec``, ``appended_id``,
    the ``pending_*`` helpers), so a tick or an ack keeps ``pending``'s."""
    t = _new(State)
    t.now = s.now
    t.closed = s.closed
    t.paused = s.paused
    t.resident_bytes = s.resident_bytes
    t.resident_count = s.resident_count
    t.dead = s.dead
    t.completed = s.completed
    t.parked = s.parked
    t.intents = s.intents
    t.epoch = s.epoch
    t._pc = s._pc
    t._po = s._po
    t._pn = s._pn
    t._ic = s._ic
    t._rc = s._rc
    t._n = s._n
    t._where = s._where
    t._h = None
    t._pt = s._pt
    t._it = s._it
    t._rt = s._rt
    return t


def index_of(s: State, sample_id: str) -> int:
    """The index of ``sample_id`` in ``s.ids``, or -1 (``ids.index``, without the scan).

    The map from ids to indices is shared along a line of states: ids are
    only ever appended, so the map of a state is right for every state with
    a prefix of its ids, read with ``i < len(ids)``; ``appended_id`` extends
    it in place when the state appended to is its last owner and copies it
    otherwise."""
    n = s._n
    if n <= CHUNK:  # one chunk (or a state TypeOK refuses): a scan in C is as quick
        ids = s.ids
        return ids.index(sample_id) if sample_id in ids else -1
    w = s._where
    if w is None:
        # built in C, last index first so that the first index of an id
        # seen twice (only in a state TypeOK refuses) is the one kept
        w = s._where = dict(zip(reversed(s.ids), range(n - 1, -1, -1)))
    i = w.get(sample_id, -1)
    if i < 0 or i >= n:
        return -1
    held = s._ic[i >> _SHIFT][i & _MASK]
    if held is sample_id or held == sample_id:
        return i
    return _scan(s.ids, sample_id)  # (never for a state the actions made)


def _scan(ids: tuple[str, ...], sample_id: str) -> int:
    try:
        return ids.index(sample_id)
    except ValueError:
        return -1


def rec_at(s: State, i: int) -> Rec:
    """``s.recs[i]`` without making the plain tuple."""
    if s._n < 0:
        return s.recs[i]
    return s._rc[i >> _SHIFT][i & _MASK]


def id_at(s: State, i: int) -> str:
    """``s.ids[i]`` without making the plain tuple."""
    if s._n < 0:
        return s.ids[i]
    return s._ic[i >> _SHIFT][i & _MASK]


def pending_head(s: State) -> str:
    """``s.pending[0]`` (pending must not be empty)."""
    return s._pc[0][s._po]


def with_rec(s: State, i: int, rec: Rec) -> State:
    """``s`` with ``recs[i]`` replaced by ``rec`` (nothing else changed, not settled).

    It copies one chunk of ``recs`` and the tuple of chunks, each through a
    list (one copy in C, one store, one copy back: about half the cost of
    gluing three slices together)."""
    if s._n < 0:
        recs = s.recs
        return State(*[recs[:i] + (rec,) + recs[i + 1 :] if n == "recs" else getattr(s, n) for n in _FIELDS])
    t = _clone(s)
    chunks = s._rc
    j = i >> _SHIFT
    chunk = list(chunks[j])
    chunk[i & _MASK] = rec
    if len(chunks) == 1:
        t._rc = (tuple(chunk),)
    else:
        out = list(chunks)
        out[j] = tuple(chunk)
        t._rc = tuple(out)
    t._rt = None
    return t


def with_rec_popped(s: State, i: int, rec: Rec) -> State:
    """``s`` with ``recs[i]`` replaced by ``rec`` and the head of pending taken
    off (an acquire of the head; pending must not be empty)."""
    t = with_rec(s, i, rec)
    pending_popped(t, s)
    return t


def with_rec_queued(s: State, i: int, rec: Rec) -> State:
    """``s`` with ``recs[i]`` replaced by ``rec`` and ``ids[i]`` appended to
    pending (a put, fail or reclaim of a known sample)."""
    t = with_rec(s, i, rec)
    pending_appended(t, s, id_at(s, i))
    return t


def appended_id(t: State, s: State, sample_id: str, rec: Rec) -> None:
    """Make ``t`` (a fresh clone of ``s``) hold ``sample_id`` with ``rec`` appended to ids and recs."""
    n = s._n
    if n < 0:
        t._it, t._rt = s.ids + (sample_id,), s.recs + (rec,)
        return
    t._ic = _appended(s._ic, sample_id)
    t._rc = _appended(s._rc, rec)
    t._n = n + 1
    t._it = t._rt = None
    w = s._where
    if w is not None:
        if len(w) == n and sample_id not in w:
            w[sample_id] = n  # s is the last state this map grew for: extend it, s still reads i < n
        else:
            w = {k: v for k, v in w.items() if v < n}
            w[sample_id] = n
    t._where = w


def with_id_appended(s: State, sample_id: str, rec: Rec) -> State:
    """``s._replace(ids=s.ids + (sample_id,), recs=s.recs + (rec,))``, the
    same state, made as an action makes it: sharing ``s``'s chunks and map
    of ids instead of building them all again."""
    if s._n < 0 or index_of(s, sample_id) >= 0:  # (an id held twice: the slow, general way)
        return s._replace(ids=s.ids + (sample_id,), recs=s.recs + (rec,))
    t = _clone(s)
    appended_id(t, s, sample_id, rec)
    return t


def pending_appended(t: State, s: State, sample_id: str) -> None:
    """Make ``t`` (a fresh clone of ``s``) have ``sample_id`` appended to pending."""
    pc = s._pc
    if pc:
        last = pc[-1]
        t._pc = pc[:-1] + (last + (sample_id,),) if len(last) < CHUNK else pc + ((sample_id,),)
    else:
        t._pc = ((sample_id,),)
    t._pn = s._pn + 1
    t._pt = None


def pending_popped(t: State, s: State) -> None:
    """Make ``t`` (a fresh clone of ``s``) have pending without its head (pending must not be empty)."""
    t._pt = None
    n = s._pn - 1
    if n == 0:
        t._pc, t._po, t._pn = (), 0, 0
        return
    off = s._po + 1
    if off == CHUNK:
        t._pc, t._po = s._pc[1:], 0
    else:
        t._po = off
    t._pn = n


def pending_set(t: State, pending: tuple[str, ...]) -> None:
    """Make ``t`` (a fresh clone) have ``pending`` (rebuilt: for the rare updates that are neither)."""
    t._pc, t._po, t._pn, t._pt = _chunked(pending), 0, len(pending), pending


def _check_int(name: str, value: object, minimum: int, fix: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{name} must be an int, got {value!r} ({type(value).__name__}); {fix}"
        )
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}; {fix}")


def _check_seconds(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, got {value!r} ({type(value).__name__})")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}; pass a positive number of seconds")


def make_config(
    *,
    visibility_timeout: float = 30.0,
    high_watermark_bytes: int | None = None,
    low_watermark_bytes: int | None = None,
    store_high_watermark_bytes: int | None = None,
    store_low_watermark_bytes: int | None = None,
    capacity_bytes: int | None = None,
    max_samples: int | None = None,
    max_deliveries: int | None = None,
    dedup_window: int = 0,
    fifo: bool = True,
    epoch: str = "model",
    two_step_ack: bool = False,
    dead_letter_limit: int | None = None,
) -> Config:
    """Validate the parameters and resolve the effective watermark pair (D4).

    ``dead_letter_limit`` (how many dead letters a queue keeps, 0 for none;
    None: not given) is validated only: the model keeps every dead letter, and
    the kit checks what a queue drops past its limit in its calls phase.

    The effective high (low) watermark is the queue's override if given, else
    the store's own; the pair must be both set or both unset, with
    ``low < high`` and ``high <= capacity_bytes``.  Raises ``TypeError`` or
    ``ValueError`` naming the value and the fix.
    """
    _check_seconds("visibility_timeout", visibility_timeout)
    for name, value in (
        ("high_watermark_bytes", high_watermark_bytes),
        ("low_watermark_bytes", low_watermark_bytes),
        ("store_high_watermark_bytes", store_high_watermark_bytes),
        ("store_low_watermark_bytes", store_low_watermark_bytes),
    ):
        if value is not None:
            _check_int(name, value, 0, "pass a byte count or None")
    if capacity_bytes is not None:
        _check_int("capacity_bytes", capacity_bytes, 1, "pass a positive byte cap or None")
    if max_samples is not None:
        _check_int("max_samples", max_samples, 1, "pass a positive sample cap or None")
    if max_deliveries is not None:
        _check_int("max_deliveries", max_deliveries, 1, "pass None for no limit or a count >= 1")
    _check_int("dedup_window", dedup_window, 0, "pass 0 to turn deduplication off")
    if dead_letter_limit is not None:
        _check_int("dead_letter_limit", dead_letter_limit, 0, "pass how many dead letters to keep, 0 for none")
        if dead_letter_limit > sys.maxsize:  # type: ignore[operator]
            raise ValueError(f"dead_letter_limit must be <= {sys.maxsize}, got {dead_letter_limit}; "
                             f"pass how many dead letters to keep, 0 for none")
    if not isinstance(fifo, bool):
        raise TypeError(f"fifo must be a bool, got {fifo!r}")
    if not isinstance(epoch, str) or not epoch:
        raise ValueError(f"epoch must be a non-empty str, got {epoch!r}")
    if EPOCH_MARK in epoch:
        raise ValueError(
            f"epoch must not contain {EPOCH_MARK!r} (the model marks a queue's later epochs with it), "
            f"got {epoch!r}; pick another name"
        )
    if not isinstance(two_step_ack, bool):
        raise TypeError(f"two_step_ack must be a bool, got {two_step_ack!r}; pass True or False")
    store_high, store_low = store_high_watermark_bytes, store_low_watermark_bytes
    if (store_high is None) != (store_low is None):
        raise ValueError(
            f"the store watermarks are half set (high={store_high!r}, low={store_low!r}); "
            f"set both or neither"
        )
    if store_high is not None and not store_low < store_high:  # type: ignore[operator]
        raise ValueError(
            f"store low watermark {store_low} must be < store high watermark {store_high}; "
            f"widen the hysteresis band"
        )
    high = high_watermark_bytes if high_watermark_bytes is not None else store_high_watermark_bytes
    low = low_watermark_bytes if low_watermark_bytes is not None else store_low_watermark_bytes
    if (high is None) != (low is None):
        raise ValueError(
            f"the effective watermark pair is half set (high={high!r}, low={low!r}); "
            f"give both high_watermark_bytes and low_watermark_bytes, or configure the store's"
        )
    if high is not None:
        assert low is not None
        if not low < high:
            raise ValueError(
                f"effective low watermark {low} must be < effective high watermark {high} "
                f"(queue override or store default, mixed included); lower low or raise high"
            )
        if capacity_bytes is not None and high > capacity_bytes:
            raise ValueError(
                f"effective high watermark {high} exceeds the store's capacity {capacity_bytes} "
                f"bytes, so the producer could never pause; use high <= {capacity_bytes}"
            )
    return Config(
        visibility_timeout=visibility_timeout,
        high=high,
        low=low,
        store_high=store_high_watermark_bytes,
        store_low=store_low_watermark_bytes,
        capacity_bytes=capacity_bytes,
        max_samples=max_samples,
        max_deliveries=max_deliveries,
        dedup_window=dedup_window,
        fifo=fifo,
        epoch=epoch,
        two_step_ack=two_step_ack,
    )


# What separates a queue's name from the number of its epoch (lease_epoch).
EPOCH_MARK = "#"


def lease_epoch(cfg: Config, epoch: int) -> str:
    """The epoch a lease of the queue's ``epoch`` carries (``ModelLease.epoch``):
    the configured ``cfg.epoch`` until the first detected loss, then
    ``"<cfg.epoch>#<n>"`` after the n-th (D9: no lease identity is reused)."""
    return cfg.epoch if epoch == 0 else f"{cfg.epoch}{EPOCH_MARK}{epoch}"


@functools.lru_cache(maxsize=1 << 10)
def epoch_generation(name: str) -> int:
    """The number of the epoch a lease's ``epoch`` names (0: the first; see ``lease_epoch``)."""
    head, mark, tail = name.rpartition(EPOCH_MARK)
    return int(tail) if mark and head and tail.isdigit() and tail[0] != "0" else 0


def initial_state(now: float = 0) -> State:
    """The empty queue and store at time ``now`` (TLA+: ``Init``)."""
    return State(
        now=now,
        closed=False,
        paused=False,
        pending=(),
        ids=(),
        recs=(),
        resident_bytes=0,
        resident_count=0,
        dead=(),
        completed=(),
    )
