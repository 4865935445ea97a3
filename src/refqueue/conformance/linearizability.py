"""Is a real multi-threaded history explained by the reference model?

A history (``refqueue.conformance.history``) is *linearizable* when its calls
can be put in one total order that

* respects real time: a call that responded before another was invoked
  comes first, and
* explains every answer: applying the calls in that order to the model
  (``refqueue.model.actions``, pure functions of an immutable ``State``)
  gives, call by call, the answers the threads saw.

``check(history)`` searches for such an order as Wing & Gong do, with Lowe's
memoisation, as Porcupine does (its ``checkSingle``): the calls and returns
form one list sorted by time; the search repeatedly tries to linearize a call
that was invoked before the earliest pending return, moving the model one
step; it backtracks when it reaches a return whose call could not be placed;
and it never explores twice a (set of linearized calls, model state) pair.

A queue is the hard case for this search: the order in which two concurrent
puts took effect shows only when their refs are acquired, maybe much later,
and every wrong guess in between multiplies the work.  Three refinements
keep it close to linear on real histories:

* the calls that may come next are tried earliest *response* first, which
  is usually the order in which they took effect;
* a call whose answer says it changed nothing (a read, a stale hand-back, an
  empty acquire, a rejection) is placed at once when the model agrees with
  it and stays in the same state, and nothing else is tried in its place:
  any linearization can be rearranged to put it there, since everything
  that must precede it is placed already and moving it earlier changes no
  other call's answer;
* for a FIFO backend, a state whose pending order contradicts the real-time
  order of the acquires still to come is dropped at once (``doomed``).

Leases: an acquire mints a lease the history later names by its identity
``(epoch, lease_id)``, as the lockstep harness does.  *Which* model lease
(sample, incarnation, delivery) that identity stands for depends on where
the acquire falls in the order, so the bindings of identities to model
leases are part of the search state (and of the memo key).  An acquire is
explained when the model, at that point, hands out the same sample (the head
for a FIFO backend; any pending ref for one that is not) with the same
redelivery count and, when the backend honours the injected clock, the same
deadline; and the identity must not already stand for another delivery.

Freedoms of the contract the model leaves open are followed the same way:
refs requeued by one reclaim from leases due at the same instant may be
pending in any order, and its dead letters too (the first ``dead_letters``
read fixes their order).  Callbacks: a blocking put's step fires
``"pause"``/``"resume"`` as the model's ``put_step`` does; a backend may run
them later, in order, in any call of any thread, so the fired-but-undelivered
callbacks are part of the search state, each ``callback`` event delivers the
oldest, and a linearization must leave none undelivered.  A ``health()``
answer that no state gives (its bytes and sample count disagree, or its flags
contradict the watermarks) is illegal before any search; a ``health()``
read that overlaps a reclaim dead-lettering several samples may show some of
them scrubbed and the others not (the store is read directly, and the reclaim
scrubs them one after another).  A backend that
completes in two steps (D9, the history's ``scrub_window``: an ack or dead
letter commits with a scrub intent and its call scrubs the data before it
returns) may refuse a put of the id as a duplicate (``ScrubPending``) while
that call still runs: a put the model would take is explained as such a
refusal, changing nothing, only where the sample's last incarnation has
completed in the order so far and a call that handed its lease back with
True overlaps the put in time.

Three answers, as Porcupine's ``CheckResult``:

``ok``       an order exists (``Verdict.order`` is one).
``illegal``  no order exists.  ``Verdict.describe()`` prints the longest
             linearizable prefix the search found and the call it could not
             place after it, with what the model says that call returns there.
``unknown``  the step or time budget ran out first.  *Unknown is not a pass*:
             it says nothing either way (a larger budget may decide it).  The
             certification counts it as a failure (see ``certify``).

The checker reads the history only; it never touches a backend.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from refqueue.conformance.history import Event, History, answer_text, lease_text
from refqueue.model import actions as A
from refqueue.model.state import ACKED, DEAD, Config, ModelLease, State, initial_state, make_config

__all__ = ["ILLEGAL", "OK", "UNKNOWN", "UNDECIDED_TRIES", "Decided", "Verdict", "check", "until_decided"]

OK = "ok"
ILLEGAL = "illegal"
UNKNOWN = "unknown"

# Recordings a phase makes of one seed before a history the checker cannot
# decide (``UNKNOWN``) fails it: undecided says nothing either way, so the seed
# is recorded again and the first decided recording counts in its place (the
# threads phase, and the faults phase's multi-process history).
UNDECIDED_TRIES = 3

_READS = ("pending_count", "outstanding_count", "is_drained", "is_closed", "dead_letters", "health", "is_paused")
_LEASE_CALLS = ("ack", "fail", "dead_letter", "extend")
_ACQUIRES = ("acquire", "acquire_nowait")

# The search state: (model state, lease bindings, deliveries of each dead
# letter, tie groups, dead-letter ties, undelivered callbacks).  The bindings give the model lease
# each minted lease identity stands for so far (by slot; None while
# unminted); the model lists a dead letter as (sample_id, reason) only, so
# its deliveries are kept beside it.  A tie group is a set of pending ids
# requeued by one reclaim with equal deadlines, whose order is free (a FIFO
# acquire may take any of them first).  A dead-letter tie is a range
# [start, end) of the dead letters made by one reclaim from leases due at the
# same instant: their order is free too, and the first ``dead_letters`` read
# that shows them fixes it (the model's order, by sample id, is one choice).
# The undelivered callbacks are the "pause"/"resume" the steps of blocking
# puts fired and no ``callback`` event delivered yet: a backend delivers them
# in order, outside its locks, maybe in another thread's call.
Search = tuple[
    State,
    tuple[ModelLease | None, ...],
    tuple[int, ...],
    tuple[frozenset[str], ...],
    tuple[tuple[int, int], ...],
    tuple[str, ...],
]


@dataclass(frozen=True)
class Verdict:
    """The answer of ``check``; ``ok`` is true only for ``result == "ok"``.

    ``order`` is a linearization (``ok``) or the longest linearizable prefix
    found (``illegal``, ``unknown``), as event ids; ``blocker`` the call that
    could not be placed after that prefix (``illegal``); ``model_says`` what
    the model answers for it there; ``reason`` why the search stopped
    (``unknown``); ``steps`` the model steps tried.
    """

    result: str
    history: History = field(repr=False)
    order: tuple[int, ...]
    steps: int
    seconds: float
    blocker: int | None = None
    model_says: str | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.result == OK

    @property
    def operations(self) -> int:
        return len(self.history.events)

    def describe(self, *, context: int = 8, concurrent: int = 12) -> str:
        """The verdict for a reader: for ``illegal``, the last ``context`` calls
        of the longest linearizable prefix, the call that could not follow,
        what the model says it returns there, and up to ``concurrent`` calls
        that overlapped it in time."""
        h = self.history
        events = h.events
        what = f"{len(events)} operations of {h.threads} threads (seed {h.seed}, {h.backend})"
        if self.result == OK:
            return f"ok: {what} are linearizable ({self.steps:,} model steps)"
        lines = []
        if self.result == UNKNOWN:
            lines.append(f"unknown: {what} could not be decided: {self.reason}. This is not a pass.")
        else:
            lines.append(f"illegal: {what} are not linearizable ({self.steps:,} model steps).")
        count = len(self.order)
        plural = "" if count == 1 else "s"
        lines.append(f"The longest linearizable prefix found has {count} operation{plural}" + (":" if count else "."))
        shown = self.order[-context:]
        if len(self.order) > len(shown):
            lines.append(f"  ... {len(self.order) - len(shown)} earlier operations")
        lines += [f"  {events[i].text(h.epoch)}" for i in shown]
        if self.blocker is not None:
            b = events[self.blocker]
            lines.append("No order places this operation next (everything invoked after it responded must follow it):")
            lines.append(f"  {b.text(h.epoch)}")
            lines.append(f"After the prefix, the model says: {self.model_says}")
            placed = set(self.order)
            overlapping = [
                e for e in events if e.id != b.id and e.id not in placed and e.invoke < b.respond and b.invoke < e.respond
            ]
            if overlapping:
                lines.append(f"Operations not in the prefix that overlapped it in time ({len(overlapping)}):")
                lines += [f"  {e.text(h.epoch)}" for e in overlapping[:concurrent]]
                if len(overlapping) > concurrent:
                    lines.append(f"  ... and {len(overlapping) - concurrent} more")
        return "\n".join(lines)


class _Context:
    """What the step function needs that does not change during the search."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.events = history.events
        self.epoch = history.epoch
        self.deadlines = history.deadlines
        self.stored = dict(history.stored)  # sample id -> its size in units, written before the first event
        self.sizes = {**history.stored, **history.sizes}  # sample id -> the size in units of its ref
        c, s = history.config, history.store
        self.cfg: Config = make_config(
            visibility_timeout=c["visibility_timeout"],
            max_deliveries=c.get("max_deliveries"),
            dedup_window=c.get("dedup_window") or 0,
            store_high_watermark_bytes=s.get("high"),
            store_low_watermark_bytes=s.get("low"),
            capacity_bytes=s.get("capacity"),
            max_samples=s.get("max_samples"),
            fifo=history.fifo,
            epoch="queue",
        )
        slots: dict[tuple[str, int], int] = {}
        for e in self.events:
            key = e.minted()
            if key is not None and key not in slots:
                slots[key] = len(slots)
        self.slots = slots
        # For the FIFO pruning: the acquires that return each (sample, redelivery count).
        self.deliveries: dict[tuple[str, int], list[Event]] = {}
        for e in self.events:
            if e.minted() is not None:
                self.deliveries.setdefault((e.returned["sample_id"], e.returned["redelivery_count"]), []).append(e)
        # D9's commit-to-scrub window (``history.scrub_window``): the calls that
        # handed back a lease of each sample and answered True (each may have
        # completed it), as (invoke, respond).
        self.handed_back: dict[str, list[tuple[int, int]]] = {}
        if history.scrub_window:
            sample_of = {e.minted(): e.returned["sample_id"] for e in self.events if e.minted() is not None}
            for e in self.events:
                key = e.lease_arg()
                if e.call in ("ack", "dead_letter", "fail") and key in sample_of and e.returned is True:
                    self.handed_back.setdefault(sample_of[key], []).append((e.invoke, e.respond))
        # The reclaims that took back two leases or more, as (invoke, respond): one that dead-letters
        # several samples scrubs them one after another, so a store read may fall between two scrubs.
        self.reclaims = [(e.invoke, e.respond) for e in self.events
                         if e.call == "reclaim_expired" and isinstance(e.returned, int) and e.returned > 1]

    def in_scrub_window(self, state: State, e: Event) -> bool:
        """Whether ``e``, a put refused as a duplicate where the model would take
        it, met D9's window: its sample's last incarnation completed in this
        order, by a call (an ack, a dead letter, a fail at the cap) that was
        still running, so scrubbing its data, while ``e`` ran."""
        sample_id = e.args[0]
        rec = A.rec_of(state, sample_id)
        if rec is None or rec.status not in (ACKED, DEAD):
            return False
        return _overlaps(self.handed_back.get(sample_id, ()), e)

    def between_scrubs(self, state: State, e: Event) -> bool:
        """Whether ``e``, a ``health()`` read the model does not answer so in
        ``state``, fell between the scrubs of one reclaim: a reclaim that
        overlaps it in time dead-letters two samples or more from ``state``,
        and the read shows some of them scrubbed and the others not (the
        store is read directly, not through the queue, and a reclaim scrubs
        its dead letters one after another)."""
        got = e.returned
        if not isinstance(got, dict) or not _overlaps(self.reclaims, e):
            return False
        after = A.reclaim_expired(self.cfg, state).state
        made = after.dead[len(state.dead):]
        if len(made) < 2:
            return False
        # (how many scrubbed, their units) for every set of them: a set of pairs, not of sets
        reach = {(0, 0)}
        for sid, _ in made:
            units = A.rec_of(state, sid).nbytes  # type: ignore[union-attr]
            reach |= {(j + 1, scrubbed + units) for j, scrubbed in reach}
        resident, count = state.resident_bytes, state.resident_count
        cfg = self.cfg
        for j, scrubbed in reach:
            if 0 < j < len(made):
                left = resident - scrubbed
                if got == {"resident": left, "count": count - j,
                           "high": cfg.store_high is not None and left >= cfg.store_high,
                           "low": cfg.store_low is not None and left <= cfg.store_low}:
                    return True
        return False

    def initial(self) -> Search:
        state = initial_state(self.history.clock_start)
        for sample_id, units in self.history.stored.items():
            out = A.store_put(self.cfg, state, sample_id, units)
            if out.error is not None:
                raise ValueError(
                    f"the history's stored data cannot be written in the model: {out.error.message}; "
                    f"fix its 'stored' or 'store' fields"
                )
            state = out.state
        return state, (None,) * len(self.slots), (), (), (), ()

    def lease_of(self, search: Search, e: Event) -> ModelLease | None:
        key = e.lease_arg()
        slot = self.slots.get(key) if key is not None else None
        return None if slot is None else search[1][slot]

    # -- the model's answer to one call ---------------------------------------------------

    def outcome(self, search: Search, e: Event) -> A.Outcome | None:
        """The model's outcome of ``e`` (not an acquire) in ``search``; None
        when ``e`` names a lease not minted yet in this order."""
        cfg, state = self.cfg, search[0]
        call, args = e.call, e.args
        if call == "put":
            return A.put(cfg, state, args[0])
        if call == "put_blocks":
            # put_blocks_until_below(ref, abort_when=lambda: True) is exactly the
            # model's put_step (D8): one step, the ref's own bytes (its size in
            # units) not counted, never left parked.  The value is the step's
            # TryPutResult (its callbacks), kept when the step aborts.
            out = A.put_step(cfg, state, args[0], self.sizes.get(args[0], 0))
            if out.error is None and not out.value.enqueued:
                return A.Outcome(out.state, out.value, A.Rejection("aborted", "paused, and abort_when() is true"))
            return out
        if call == "store_put":
            return A.store_put(cfg, state, args[0], self.sizes[args[0]])
        if call == "scrub":  # the producer's scrub of data the queue refused: True if it was resident
            rec = A.rec_of(state, args[0])
            out = A.scrub(cfg, state, args[0])
            return A.Outcome(out.state, rec is not None and rec.resident, out.error)
        if call in _LEASE_CALLS:
            lease = self.lease_of(search, e)
            if lease is None:
                return None
            if call == "extend":
                seconds = cfg.visibility_timeout if args[1] is None else args[1]
                return A.extend(cfg, state, lease, seconds)
            if call == "dead_letter":
                return A.dead_letter(cfg, state, lease, args[1])
            return A.ack(cfg, state, lease) if call == "ack" else A.fail(cfg, state, lease)
        if call == "reclaim_expired":
            return A.reclaim_expired(cfg, state)
        if call == "close":
            return A.close(cfg, state)
        if call == "tick":
            return A.tick(cfg, state, args[0])
        return A.Outcome(state, self.read(search, call), None)

    def read(self, search: Search, call: str) -> Any:
        state = search[0]
        if call == "pending_count":
            return A.pending_count(state)
        if call == "outstanding_count":
            return A.outstanding_count(state)
        if call == "is_drained":
            return A.is_drained(state)
        if call == "is_closed":
            return state.closed
        if call == "dead_letters":
            return [[sid, reason, n] for (sid, reason), n in zip(state.dead, search[2])]
        if call == "is_paused":
            return state.paused
        if call == "health":
            h = A.health(self.cfg, state)
            return {"resident": h.resident_bytes, "count": h.sample_count, "high": h.high_watermark_hit,
                    "low": h.low_watermark_hit}  # fmt: skip
        raise ValueError(f"unknown call {call!r}")

    def _dead_letters(self, search: Search, e: Event) -> Search | None:
        """``search`` after a ``dead_letters`` read ``e``, or None if the model
        cannot explain it: outside the open dead-letter ties the list must be
        the model's; inside each, any order of the same entries, which the
        read then fixes (a later read must show that order again)."""
        got = e.returned
        want = self.read(search, "dead_letters")
        if e.did_raise or not isinstance(got, list) or len(got) != len(want):
            return None
        open_ties = search[4]
        if not open_ties:
            return search if got == want else None
        inside = [False] * len(want)
        for start, end in open_ties:
            for j in range(start, end):
                inside[j] = True
            if sorted(map(repr, got[start:end])) != sorted(map(repr, want[start:end])):
                return None
        if any(not inside[j] and got[j] != want[j] for j in range(len(want))):
            return None
        if got == want:
            return search[:4] + ((), search[5])  # type: ignore[return-value]
        state = search[0]._replace(dead=tuple((sid, reason) for sid, reason, _ in got))
        return state, search[1], tuple(n for _, _, n in got), search[3], (), search[5]

    def step(self, search: Search, e: Event) -> Search | None:
        """``search`` after ``e`` if the model explains ``e``'s answer there, else None."""
        if e.call in _ACQUIRES:
            return self._acquire(search, e)
        if e.call == "dead_letters":
            return self._dead_letters(search, e)
        if e.call == "callback":  # delivers the oldest undelivered callback
            undelivered = search[5]
            if not undelivered or undelivered[0] != e.args[0]:
                return None
            return search[:5] + (undelivered[1:],)  # type: ignore[return-value]
        out = self.outcome(search, e)
        if out is None:
            return None
        if not _same(e, out):
            if (e.call == "put" and e.raised == "duplicate" and out.error is None and self.handed_back
                    and self.in_scrub_window(search[0], e)):
                return search  # refused while the completion's scrub ran (D9): nothing changed
            if e.call == "health" and self.reclaims and self.between_scrubs(search[0], e):
                return search  # a read between two scrubs of one reclaim: nothing changed
            return None
        fired = _callbacks(e, out)
        if fired:
            search = search[:5] + (search[5] + fired,)  # type: ignore[assignment]
        state = out.state
        if state is search[0]:
            return search
        dead = search[2]
        if len(state.dead) > len(dead):
            dead += tuple(A.rec_of(state, sid).deliveries for sid, _ in state.dead[len(dead) :])  # type: ignore[union-attr]
        ties, dead_ties = search[3], search[4]
        if e.call == "reclaim_expired" and e.returned and e.returned > 1:
            ties += _tie_groups(search[0], state)
            dead_ties += _dead_tie_ranges(search[0], state)
        return state, search[1], dead, ties, dead_ties, search[5]

    def _acquire(self, search: Search, e: Event) -> Search | None:
        state = search[0]
        if e.did_raise:
            return None  # the model's acquire never refuses
        got = e.returned
        if got is None:
            return search if not state.pending else None
        ties = search[3]
        sample_id = got["sample_id"]
        if self.cfg.fifo and ties and state.pending and sample_id != state.pending[0]:
            head = next((g for g in ties if state.pending[0] in g), None)
            if head is not None and sample_id in head:
                # a tie the model leaves free: this one was requeued first
                state = state._replace(pending=(sample_id, *(x for x in state.pending if x != sample_id)))
        out = A.acquire(self.cfg, state, sample_id)
        if out.error is not None or out.value is None:
            return None
        lease: ModelLease = out.value
        if (
            got["redelivery_count"] != lease.redelivery_count
            or got["epoch"] != self.epoch
            or not got["ref_ok"]
            or (self.deadlines and got["deadline"] != state.now + self.cfg.visibility_timeout)
        ):
            return None
        slot = self.slots[(got["epoch"], got["lease_id"])]
        bindings = search[1]
        if bindings[slot] is not None:
            return None  # that identity already stands for another delivery
        if ties:
            ties = tuple(g - {sample_id} for g in ties if len(g - {sample_id}) > 1)
        return out.state, bindings[:slot] + (lease,) + bindings[slot + 1 :], search[2], ties, search[4], search[5]

    def doomed(self, before: Search, after: Search, linearized: int) -> tuple[int, str] | None:
        """Whether ``after`` (reached with ``linearized``) can never lead to a
        linearization because of its pending order; the acquire that cannot be
        placed and why, or None.

        A FIFO rule of the model: a pending ref leaves ``pending`` only by an
        acquire, and only from the head.  So if ``y`` is just ahead of ``x``,
        an acquire returning ``y``'s current delivery must come before the one
        returning ``x``'s.  When every remaining acquire of ``x``'s delivery
        responded before every remaining acquire of ``y``'s was invoked (or
        none returns ``y``'s), no order works.  This lets the search drop a
        wrong guess about the order of concurrent puts, fails and reclaims at
        once instead of when the acquires that reveal it are reached.
        """
        pending = after[0].pending
        if not self.cfg.fifo or len(pending) < 2 or pending is before[0].pending:
            return None
        state = after[0]
        ids, recs, deliveries = state.ids, state.recs, self.deliveries
        rcs = [recs[ids.index(sid)].redeliveries for sid in pending]
        ties = after[3]
        for j in range(len(pending) - 1):
            y, x = pending[j], pending[j + 1]
            if any(y in g and x in g for g in ties):
                continue  # tied: either may leave first
            cx = [e for e in deliveries.get((x, rcs[j + 1]), ()) if not linearized >> e.id & 1]
            if not cx:
                continue
            cy = [e for e in deliveries.get((y, rcs[j]), ()) if not linearized >> e.id & 1]
            latest = max(e.respond for e in cx)
            if cy and min(e.invoke for e in cy) <= latest:
                continue
            first = min(cx, key=lambda e: e.respond)
            why = (
                "no acquire left in the history returns it"
                if not cy
                else f"every acquire left that returns it ({', '.join(f'#{e.id}' for e in cy)}) was invoked after "
                f"the acquires that return {x!r} responded"
            )
            return first.id, (
                f"{y!r} (redelivery {rcs[j]}) is just ahead of {x!r} (redelivery {rcs[j + 1]}) in pending, and a "
                f"pending ref leaves only by an acquire from the head; so an acquire must return {y!r} before #"
                f"{first.id} returns {x!r}, but {why}"
            )
        return None

    def model_says(self, search: Search, e: Event) -> str:
        """What the model answers for ``e`` in ``search``, for a reader."""
        state = search[0]
        if e.call in _ACQUIRES:
            allowed = A.allowed_acquires(self.cfg, state)
            if not allowed:
                said = "acquire returns None (nothing is pending)"
            else:
                offers = []
                for sample_id in allowed:
                    lease = A.acquire(self.cfg, state, sample_id).value
                    offers.append(
                        answer_text(
                            e.call,
                            {"sample_id": sample_id, "redelivery_count": lease.redelivery_count,
                             "deadline": state.now + self.cfg.visibility_timeout if self.deadlines else None},
                            self.epoch,
                        )
                    )  # fmt: skip
                said = "acquire returns " + " or ".join(offers)
            got = e.returned if not e.did_raise else None
            if isinstance(got, dict):
                rec = A.rec_of(state, got["sample_id"])
                where = "unknown to the queue" if rec is None else f"{rec.status}"
                said += f"; {got['sample_id']!r} is {where} there"
                key = (got["epoch"], got["lease_id"])
                slot = self.slots.get(key)
                if slot is not None and search[1][slot] is not None:
                    said += f"; {lease_text(key, self.epoch)} already stands for an earlier delivery"
            if self.step(search, e) is not None:
                said += " (that explains this call, but every order of the rest after it fails)"
            return said
        if e.call == "callback":
            undelivered = search[5]
            return (
                f"no callback is waiting to be delivered (on_{e.args[0]} ran once too often)"
                if not undelivered
                else f"the next callback to deliver is on_{undelivered[0]} (waiting: "
                f"{', '.join('on_' + c for c in undelivered)})"
            )
        out = self.outcome(search, e)
        if out is None:
            key = e.lease_arg()
            lease = lease_text(key, self.epoch) if key else "its lease"
            return f"{lease} has not been handed out at this point of the order"
        said = (
            f"{e.call} raises kind {out.error.kind!r} ({out.error.message})"
            if out.error is not None
            else f"{e.call} returns {None if e.call == 'put_blocks' else out.value!r}"
        )
        ran = _callbacks(e, out)
        if ran:
            said += f", firing {' and '.join(f'on_{c}' for c in ran)}"
        if e.call == "dead_letters" and search[4]:
            free = ", ".join(f"entries {start}-{end - 1}" for start, end in search[4])
            said += f" ({free} may be in any order: each is a reclaim's tie)"
        if _same(e, out) or (e.call == "dead_letters" and self.step(search, e) is not None):
            said += " (that explains this call, but every order of the rest after it fails)"
        return said


def _tie_groups(before: State, after: State) -> tuple[frozenset[str], ...]:
    """The groups of ids a reclaim from ``before`` requeued with equal deadlines
    (two or more each): their order in ``after.pending`` is free."""
    due: dict[float, set[str]] = {}
    requeued = set(after.pending) - set(before.pending)
    for i in A.expired(before):
        if before.ids[i] in requeued:
            due.setdefault(before.recs[i].deadline, set()).add(before.ids[i])  # type: ignore[arg-type]
    return tuple(frozenset(g) for g in due.values() if len(g) > 1)


def _overlaps(spans: Iterable[tuple[int, int]], e: Event) -> bool:
    """Whether one of ``spans`` (a call's (invoke, respond)) overlaps ``e`` in time."""
    return any(invoke < e.respond and respond > e.invoke for invoke, respond in spans)


def _impossible_read(ctx: _Context) -> tuple[int, str] | None:
    """A ``health()`` answer that no model state gives, whatever the order.

    In every state the resident bytes are the sizes of the resident samples
    and the flags compare them with the watermarks, so where every sample of
    the history has the same size ``s``, ``resident == s * count``; such an
    answer is illegal before any search (which would otherwise have to try
    every order of the calls around it to say so).  The first one, and why.
    """
    sizes = set(ctx.sizes.values())
    cfg = ctx.cfg
    for e in ctx.events:
        if e.call != "health" or e.did_raise or not isinstance(e.returned, dict):
            continue
        got = e.returned
        resident, count = got.get("resident"), got.get("count")
        why = None
        if len(sizes) == 1 and isinstance(count, int) and resident != count * next(iter(sizes)):
            why = (
                f"every sample of the history is {next(iter(sizes))} unit(s), so no state holds {resident!r} units "
                f"in {count!r} samples"
            )
        elif isinstance(resident, (int, float)) and (
            got.get("high") != (high := cfg.store_high is not None and resident >= cfg.store_high)
            or got.get("low") != (low := cfg.store_low is not None and resident <= cfg.store_low)
        ):
            why = (
                f"with the store's watermarks (high {cfg.store_high!r}, low {cfg.store_low!r} units), {resident!r} "
                f"units answer high={high}, low={low}"
            )
        if why is not None:
            return e.id, f"no state answers health() so: {why}"
    return None


def _dead_tie_ranges(before: State, after: State) -> tuple[tuple[int, int], ...]:
    """The ranges [start, end) of ``after.dead`` that a reclaim from ``before``
    dead-lettered from leases due at the same instant (two or more each).

    The model reclaims by deadline, ties by sample id, so the dead letters of
    one deadline are adjacent; the backend may have made them in any order.
    """
    made = after.dead[len(before.dead) :]
    if len(made) < 2:
        return ()
    deadline = {before.ids[i]: before.recs[i].deadline for i in A.expired(before)}
    out = []
    start = 0
    for j in range(1, len(made) + 1):
        if j == len(made) or deadline.get(made[j][0]) != deadline.get(made[start][0]):
            if j - start > 1:
                out.append((len(before.dead) + start, len(before.dead) + j))
            start = j
    return tuple(out)


def _quiet(e: Event) -> bool:
    """Whether ``e``'s answer says it changed nothing wherever the model agrees
    with it, so that placing it early loses no order.

    A blocking put's step that raised ``PutAborted`` is not quiet: it changes
    nothing where the queue was already paused, but placed where it was not,
    the same answer comes with a pause (and an ``on_pause`` to deliver).
    Taking it at once at a paused node would leave that callback to nobody."""
    if e.call == "put_blocks" and e.raised == "aborted":
        return False
    if e.did_raise or e.call in _READS:
        return True
    if e.call in _LEASE_CALLS:
        return e.returned is False
    if e.call in _ACQUIRES:
        return e.returned is None
    return e.call == "reclaim_expired" and e.returned == 0


def _callbacks(e: Event, out: A.Outcome) -> tuple[str, ...]:
    """The callbacks the model's step for ``e`` fires (only a blocking put's step fires any)."""
    if e.call == "put_blocks" and isinstance(out.value, A.TryPutResult):
        return out.value.events
    return ()


def _same(e: Event, out: A.Outcome) -> bool:
    """Whether the recorded answer of ``e`` is the model's ``out``."""
    if out.error is not None:
        return e.did_raise and e.raised == out.error.kind
    if e.did_raise:
        return False
    want, got = (None if e.call == "put_blocks" else out.value), e.returned
    if want is None or isinstance(want, bool):
        return got is want
    if isinstance(want, int):
        return type(got) is int and got == want
    return got == want


def _check_budget(max_steps: Any, timeout: Any) -> None:
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1):
        raise ValueError(f"max_steps must be None (no limit) or an int >= 1, got {max_steps!r}")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0
    ):
        raise ValueError(f"timeout must be None (no limit) or a finite number of seconds > 0, got {timeout!r}")


def check(history: History, *, max_steps: int | None = 1_000_000, timeout: float | None = 30.0) -> Verdict:
    """Decide whether ``history`` is linearizable; see the module docstring.

    ``max_steps`` bounds the model steps tried and ``timeout`` the seconds
    spent (None: no bound); when either runs out the verdict is ``unknown``.
    """
    if not isinstance(history, History):
        raise TypeError(
            f"check needs a History, got {type(history).__name__}; load one with History.load(path) or record one"
        )
    _check_budget(max_steps, timeout)
    started = time.perf_counter()
    ctx = _Context(history)
    impossible = _impossible_read(ctx)
    if impossible is not None:
        blocker, says = impossible
        return Verdict(ILLEGAL, history, (), 0, time.perf_counter() - started, blocker=blocker, model_says=says)
    events = history.events
    n = len(events)
    # Entries 1..2n: 2i+1 is the call of event i, 2i+2 its return; 0 is the head.
    # A doubly linked list in time order (a call before a return at equal times:
    # such calls overlap) from which linearized calls are lifted with their returns.
    order = sorted(
        range(1, 2 * n + 1),
        key=lambda k: (events[(k - 1) // 2].invoke, 0) if k % 2 else (events[(k - 1) // 2].respond, 1),
    )
    nxt = [-1] * (2 * n + 1)
    prv = [-1] * (2 * n + 1)
    last = 0
    for k in order:
        nxt[last], prv[k] = k, last
        last = k

    # Calls whose answer says they changed nothing (reads, stale hand-backs, an
    # empty acquire, a rejection): when one is available and the model agrees
    # with it and leaves the state as it is, placing it at once loses no order
    # (it can be moved earlier, past calls it does not affect), so it is tried
    # first and, if the rest then fails, no alternative is tried in its place.
    quiet = [_quiet(e) for e in events]
    respond_of = [events[(k - 1) // 2].respond for k in range(2 * n + 1)]
    search = ctx.initial()
    linearized = 0
    seen: set[tuple[int, Search]] = set()
    # One frame per linearized call: the candidates of the node it was taken
    # at and that node's earliest pending return, where to resume among the
    # candidates, the call entry, the search state before it, and whether it
    # was placed at once (no alternatives then).
    frames: list[tuple[list[int], int, int, int, Search, bool]] = []
    best: tuple[int, ...] = ()
    best_depth = -1
    blocker: int | None = None
    blocker_says: Any = None  # what the model says of the blocker: a str, or (search state, event) to ask
    steps = 0
    deadline = None if timeout is None else time.monotonic() + timeout

    def prefix() -> tuple[int, ...]:
        return tuple((f[3] - 1) // 2 for f in frames)

    def stop(reason: str) -> Verdict:
        return Verdict(UNKNOWN, history, max(best, prefix(), key=len), steps, time.perf_counter() - started, reason=reason)

    def lift(k: int) -> None:
        """Take call entry ``k`` and its return out of the list."""
        r = k + 1
        nxt[prv[k]] = nxt[k]
        prv[nxt[k]] = prv[k]
        nxt[prv[r]] = nxt[r]
        if nxt[r] != -1:
            prv[nxt[r]] = prv[r]

    def unlift(k: int) -> None:
        """Put call entry ``k`` and its return back (in the reverse order of ``lift``)."""
        r = k + 1
        nxt[prv[r]] = r
        if nxt[r] != -1:
            prv[nxt[r]] = r
        nxt[prv[k]] = k
        prv[nxt[k]] = k

    def available() -> tuple[list[int], int]:
        """The calls that may come next (invoked before the earliest pending
        return), earliest response first; and that return's entry."""
        out = []
        k = nxt[0]
        while k != -1 and k % 2:
            out.append(k)
            k = nxt[k]
        out.sort(key=respond_of.__getitem__)
        return out, k

    cands, bound = available()
    pos = 0
    at_node = True  # a node not looked at yet: try its quiet calls first
    # Every call placed is a linearization only once every callback the steps
    # fired was delivered (a callback never run is a lost on_pause/on_resume).
    while nxt[0] != -1 or search[5]:
        steps_before = steps
        taken = None
        if at_node:
            at_node = False
            for k in cands:
                i = (k - 1) // 2
                if not quiet[i]:
                    continue
                steps += 1
                after = ctx.step(search, events[i])
                if after is not None and (after is search or after == search):
                    key = (linearized | (1 << i), after)
                    if key in seen:
                        pos = len(cands)  # tried from here before: the node fails
                    else:
                        seen.add(key)
                        taken = (k, after, True)
                    break
        while taken is None and pos < len(cands):
            k = cands[pos]
            pos += 1
            i = (k - 1) // 2
            steps += 1
            after = ctx.step(search, events[i])
            if after is not None:
                key = (linearized | (1 << i), after)
                if key not in seen:
                    seen.add(key)
                    doom = ctx.doomed(search, after, linearized | (1 << i))
                    if doom is None:
                        taken = (k, after, False)
                    elif len(frames) + 1 > best_depth:  # a dead end one call deeper
                        best_depth = len(frames) + 1
                        best = prefix() + (i,)
                        blocker, blocker_says = doom
        if max_steps is not None and steps > max_steps:
            return stop(f"the step budget ran out ({max_steps:,} model steps)")
        if deadline is not None and (steps >> 8) != (steps_before >> 8) and time.monotonic() > deadline:
            return stop(f"the time budget ran out ({timeout} s)")
        if taken is not None:
            k, after, at_once = taken
            frames.append((cands, bound, pos, k, search, at_once))
            search = after
            linearized |= 1 << ((k - 1) // 2)
            lift(k)
            cands, bound = available()
            pos = 0
            at_node = True
            continue
        # No call can come next here: remember the deepest such node, back up.
        if len(frames) > best_depth:
            best_depth = len(frames)
            best = prefix()
            if bound != -1:
                blocker, blocker_says = (bound - 1) // 2, (search, events[(bound - 1) // 2])
            else:  # every call placed, a callback left undelivered
                blocker = (frames[-1][3] - 1) // 2
                blocker_says = (
                    f"after every call, on_{', on_'.join(search[5])} fired by a blocking put's step was never run "
                    f"(a callback must be delivered, once)"
                )
        while True:
            if not frames:
                assert blocker is not None
                return Verdict(
                    ILLEGAL,
                    history,
                    best,
                    steps,
                    time.perf_counter() - started,
                    blocker=blocker,
                    model_says=blocker_says if isinstance(blocker_says, str) else ctx.model_says(*blocker_says),
                )
            cands, bound, pos, k, search, at_once = frames.pop()
            linearized &= ~(1 << ((k - 1) // 2))
            unlift(k)
            if not at_once:
                break
            # a call placed at once led nowhere: so does the node it was placed at
    return Verdict(OK, history, prefix(), steps, time.perf_counter() - started)


class Decided(NamedTuple):
    """What ``until_decided`` answers: the last recording, its verdict (``unknown``
    only when every try was undecided) and how many recordings were made again."""

    history: History
    verdict: Verdict
    again: int


def until_decided(
    record: Callable[[], History], judge: Callable[[History], Verdict], tries: int = UNDECIDED_TRIES
) -> Decided:
    """Record a history and judge it, up to ``tries`` times while the verdict is
    ``unknown``; the first decided verdict (``ok`` or ``illegal``) counts.

    Undecided says nothing either way (how the scheduler overlapped the calls,
    not the backend, decides how hard a history is), so the same seed is
    recorded again in its place.  Whatever ``record`` raises (a hang, say)
    propagates; the callers time and count inside ``record`` and ``judge``.
    """
    if isinstance(tries, bool) or not isinstance(tries, int):
        raise TypeError(f"tries must be an int, got {tries!r}; pass how many recordings to make at most")
    if tries < 1:
        raise ValueError(f"tries must be >= 1, got {tries!r}; pass how many recordings to make at most")
    for attempt in range(tries):
        history = record()
        verdict = judge(history)
        if verdict.result != UNKNOWN:
            break
    return Decided(history, verdict, attempt)
