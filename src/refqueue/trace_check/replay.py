"""Replay one queue's event records against the reference model.

``QueueReplay`` holds the model's ``Config`` and ``State`` for one queue (and
the store bound to it) and maps each record to the model action of the same
name (``refqueue.model.actions``); ``step(record)`` returns None when the
model allows what the record says happened, else a message naming what the
model does instead.  The state is changed only by model actions, with three
documented exceptions where production splits one model step in two or the
store is not logged:

* **Parking.**  The model's ``try_put`` parks a ref in the step that does
  not admit it; the queue parks it later, in its own critical section (the
  ``park`` record), after ``abort_when`` said no.  So a step that does not
  admit a ref that was not parked is followed by the model's ``abort_put``,
  and the ``park`` record adds ``(sample, nbytes)`` to ``parked``.
* **An unlogged store** (no ``store_open`` for the queue's store): the
  store's ``resident_bytes`` is an input the queue reads; each ``try_put``
  sets the model's to the logged health read before the step.
* **Finished records are compacted**: once finished records are a quarter
  of ``ids``, every sample acked or dead-lettered (out of the dedup window,
  data not resident) leaves ``ids``/``recs`` at once; its incarnation is kept and restored as a terminal record if the id comes back,
  so ``put``/``store_put`` see exactly the record they would have (the
  dead-letter list keeps only its newest entry; no action reads it).  This keeps
  every action O(live samples), not O(samples ever seen).

Time: before an action that reads the model's clock (acquire, extend,
reclaim) the model's ``now`` is moved to the record's ``t`` (queue clock)
through ``tick``; a record whose ``t`` is before an earlier one's is a
violation (the clock went back).
"""

from __future__ import annotations

from itertools import compress, count
from operator import attrgetter
from typing import Any

from refqueue.events import LOADER_EVENTS
from refqueue.model import actions as A
from refqueue.model.state import (
    ACKED,
    DEAD,
    LEASED,
    PENDING,
    STORED,
    Config,
    ModelLease,
    Rec,
    State,
    initial_state,
    make_config,
    with_id_appended,
)

__all__ = ["QueueReplay", "BadTrace", "describe_state"]

# The records whose model action reads the model's clock: the model ticks to
# their time first.  (Every other action is independent of ``now``.)
_TIMED = frozenset({"acquire", "extend", "reclaim"})
_FINISHED = frozenset({ACKED, DEAD})
# The queue records that do not finish a step a store scrub began (see step).
_NOT_FINISHING = frozenset({"pause", "resume", "unpark", "wait", *LOADER_EVENTS})
_status = attrgetter("status")


class BadTrace(ValueError):
    """The records cannot be replayed at all (not a protocol violation): a
    missing field, an unknown event, a queue with no ``open`` record."""


def _field(record: dict[str, Any], name: str) -> Any:
    try:
        return record[name]
    except KeyError:
        raise BadTrace(
            f"record seq={record.get('seq')!r} ev={record.get('ev')!r} has no {name!r} field; "
            f"pass records written by refqueue.events"
        ) from None


def _missing(record: dict[str, Any], exc: KeyError) -> BadTrace:
    return BadTrace(
        f"record seq={record.get('seq')!r} ev={record.get('ev')!r} has no {exc.args[0]!r} field; "
        f"pass records written by refqueue.events"
    )


class QueueReplay:
    """The model of one queue, stepped by that queue's (and its store's) records."""

    def __init__(self, open_record: dict[str, Any], store_open: dict[str, Any] | None = None) -> None:
        r = open_record
        try:
            self.cfg: Config = make_config(
                visibility_timeout=_field(r, "visibility_timeout"),
                high_watermark_bytes=r.get("high"),
                low_watermark_bytes=r.get("low"),
                store_high_watermark_bytes=r.get("store_high"),
                store_low_watermark_bytes=r.get("store_low"),
                capacity_bytes=None if store_open is None else store_open.get("capacity_bytes"),
                max_samples=None if store_open is None else store_open.get("max_samples"),
                max_deliveries=r.get("max_deliveries"),
                dedup_window=r.get("dedup_window", 0),
                fifo=r.get("fifo", True),
                epoch=_field(r, "epoch"),
            )
        except (TypeError, ValueError) as exc:
            raise BadTrace(f"the open record seq={r.get('seq')!r} has a configuration the model refuses: {exc}") from None
        t = r.get("t")
        self.state: State = initial_state(0.0 if t is None else t)
        self.last_t: float = self.state.now  # the latest queue clock time logged
        self.store_logged = store_open is not None
        self.leases: dict[int, ModelLease] = {}
        self.incarnations: dict[str, int] = {}  # compacted ids -> their last incarnation
        self.finished = 0  # finished records in ids/recs since the last compaction
        self.scrubbed: dict[str, int] = {}  # sample -> seq of a store scrub of live data, awaiting its finish
        self.announced: str | None = None  # a pause/resume record awaiting its try_put
        self.samples: set[str] = set()
        self.acquired = 0
        self.redeliveries = 0
        self.dead = 0
        self._queue_steps = {
            "put": self._put, "try_put": self._try_put, "park": self._park, "unpark": self._unpark,
            "pause": self._announce, "resume": self._announce, "acquire": self._acquire, "wait": self._nothing,
            "ack": self._finish, "fail": self._fail, "dead_letter": self._dead_letter, "extend": self._extend,
            "reclaim": self._reclaim, "close": self._close, "open": self._nothing,
            # a loader's records (SampleRefQueue.emit_event) change no queue state
            **dict.fromkeys(LOADER_EVENTS, self._nothing),
        }
        self._store_steps = {
            "store_put": self._store_put, "get": self._get, "release": self._nothing, "scrub": self._scrub,
            "store_close": self._nothing, "store_open": self._nothing,
        }

    # -- the entry point ---------------------------------------------------------------

    def step(self, record: dict[str, Any]) -> str | None:
        """Apply ``record``; None if the model allows it, else why not."""
        if "q" in record:
            return self.step_queue(record)
        ev = record.get("ev")
        try:
            handler = self._store_steps[ev]
        except (KeyError, TypeError):  # (TypeError: an ev that is not a str, a list say)
            raise BadTrace(f"record seq={record.get('seq')!r}: unknown store event {ev!r}") from None
        try:
            return handler(record)
        except KeyError as exc:
            raise _missing(record, exc) from None

    def step_queue(self, record: dict[str, Any]) -> str | None:
        """``step`` of a record of the queue (one with a ``q``; the trace
        checker's loop calls it straight for the queue it knows)."""
        ev = record.get("ev")
        try:
            handler = self._queue_steps[ev]
        except (KeyError, TypeError):  # (TypeError: an ev that is not a str, a list say)
            raise BadTrace(f"record seq={record.get('seq')!r}: unknown queue event {ev!r}") from None
        finishing = ev not in _NOT_FINISHING if self.scrubbed else False
        if finishing:
            problem = self._check_scrubs_finished(record)
            if problem is not None:
                return problem
        t = record.get("t")
        if t is not None:
            if t < self.last_t:
                return f"the queue's clock went back from {self.last_t!r} to {t!r}"
            self.last_t = t
            if ev in _TIMED and t != self.state.now:
                self._tick(t)  # only these actions read the model's clock
        try:
            problem = handler(record)
        except KeyError as exc:
            raise _missing(record, exc) from None
        if finishing:
            self.scrubbed.clear()
        return problem

    # -- helpers -----------------------------------------------------------------------

    def _tick(self, t: float) -> None:
        out = A.tick(self.cfg, self.state, t - self.state.now)
        state = out.state
        if state.now != t:  # float rounding of now + (t - now): keep the logged instant exactly
            state = state._replace(now=t)
        self.state = state

    def _restore(self, sample_id: str) -> None:
        """Put back the terminal record of a compacted id before it is used again."""
        inc = self.incarnations.pop(sample_id, None)
        if inc is not None:
            self.state = with_id_appended(self.state, sample_id, Rec(ACKED, inc, 0, 0, None, False, 0))

    def _compact(self) -> None:
        """Drop every finished record (acked or dead, data gone, out of the
        dedup window) from ids/recs at once, keeping its incarnation."""
        s = self.state
        completed = set(s.completed) if self.cfg.dedup_window else ()
        ids, recs = s.ids, s.recs
        # the finished records picked out in C (most records are live), then tested
        finished = compress(count(), map(_FINISHED.__contains__, map(_status, recs)))
        gone = [i for i in finished if not recs[i].resident and ids[i] not in completed]
        kept_ids: list[str] = []
        kept_recs: list[Rec] = []
        start = 0
        for i in gone:
            self.incarnations[ids[i]] = recs[i].incarnation
            kept_ids += ids[start:i]
            kept_recs += recs[start:i]
            start = i + 1
        kept_ids += ids[start:]
        kept_recs += recs[start:]
        self.state = State(
            s.now, s.closed, s.paused, s.pending, tuple(kept_ids), tuple(kept_recs),
            s.resident_bytes, s.resident_count, s.dead[-1:], s.completed, s.parked,
        )
        self.finished = 0

    def _after_finish(self) -> None:
        """Count a finished sample; compact once they are a quarter of ids
        (amortised O(1) per finish, and ids stays O(live samples))."""
        self.finished += 1
        if self.finished > 64 and 4 * self.finished > A.known_count(self.state):
            self._compact()

    def _lease(self, record: dict[str, Any]) -> ModelLease | str:
        lease_id = record["lease"]
        lease = self.leases.get(lease_id)
        if lease is None:
            return f"{record['ev']} of lease {lease_id!r}, which no acquire in this log issued"
        if lease.sample_id != record.get("sample"):
            return f"{record['ev']} names sample {record.get('sample')!r}, but lease {lease_id} was issued for {lease.sample_id!r}"
        return lease

    def _check_scrubs_finished(self, record: dict[str, Any]) -> str | None:
        """A store scrub of live data must be the first half of this very
        queue step (an ack or dead-letter, the queue lock held throughout)."""
        ev = record.get("ev")
        finishing: set[str] = set()
        if ev in ("ack", "dead_letter") and record.get("live"):
            finishing.add(record.get("sample"))  # type: ignore[arg-type]
        elif ev == "fail" and record.get("dead"):
            finishing.add(record.get("sample"))  # type: ignore[arg-type]
        elif ev == "reclaim":
            finishing.update(record.get("dead") or ())
        left = [s for s in self.scrubbed if s not in finishing]
        if left:
            sample = left[0]
            rec = A.rec_of(self.state, sample)
            return (f"the store scrubbed the data of {sample!r} (seq {self.scrubbed[sample]}) while it was "
                    f"{rec.status if rec is not None else 'unknown'}, and the queue's next step ({ev}) did not "
                    f"complete it: NoScrubBeforeAck")
        return None

    def _finish_scrub(self, sample_id: str, live: bool) -> str | None:
        """A live ack/dead-letter of resident data needs the store's scrub record first (D2)."""
        if not self.store_logged or not live:
            return None
        rec = A.rec_of(self.state, sample_id)
        if rec is not None and rec.resident and sample_id not in self.scrubbed:
            return (f"{sample_id!r} completes while the store still holds its data (no scrub record before "
                    f"the step): NothingResidentAfterAck")
        return None

    # -- queue steps -------------------------------------------------------------------

    def _nothing(self, record: dict[str, Any]) -> str | None:
        return None

    def _put(self, record: dict[str, Any]) -> str | None:
        sample = record["sample"]
        if sample in self.incarnations:  # (a compacted id comes back)
            self._restore(sample)
        out = A.put(self.cfg, self.state, sample)
        if out.error is not None:
            return f"the queue accepted put({sample!r}); the model rejects it ({out.error.kind}): {out.error.message}"
        self.state = out.state
        self.samples.add(sample)
        return None

    def _announce(self, record: dict[str, Any]) -> str | None:
        if self.announced is not None:
            return f"two transitions ({self.announced}, {record['ev']}) announced for one try_put step"
        self.announced = record["ev"]
        return None

    def _try_put(self, record: dict[str, Any]) -> str | None:
        sample, nbytes = record["sample"], record["nbytes"]
        announced, self.announced = self.announced, None
        if sample in self.incarnations:  # (a compacted id comes back)
            self._restore(sample)
        state = self.state
        if not self.store_logged:
            resident = record["resident_bytes"]
            if resident != state.resident_bytes:
                state = state._replace(resident_bytes=resident)
        was_parked = any(p[0] == sample for p in state.parked)
        out = A.try_put(self.cfg, state, sample, nbytes)
        if out.error is not None:
            return (f"the queue took a put_blocks_until_below step of {sample!r}; the model rejects it "
                    f"({out.error.kind}): {out.error.message}")
        enqueued, events = out.value
        if enqueued != record["enqueued"]:
            return (f"put_blocks_until_below({sample!r}): the queue {'enqueued' if record['enqueued'] else 'held back'} "
                    f"the ref; the model {'enqueues' if enqueued else 'holds it back'} (resident "
                    f"{state.resident_bytes}, parked {state.parked}, paused {state.paused}, "
                    f"high {self.cfg.high}, low {self.cfg.low})")
        expected = events[0] if events else None
        if expected != announced:
            return (f"put_blocks_until_below({sample!r}): the queue's step fired {announced or 'no transition'}; "
                    f"the model's fires {expected or 'none'} (resident {state.resident_bytes}, parked "
                    f"{state.parked}, paused {state.paused}, high {self.cfg.high}, low {self.cfg.low})")
        state = out.state
        if not enqueued and not was_parked:
            state = A.abort_put(self.cfg, state, sample).state  # parked by its own `park` record
        self.state = state
        if enqueued:
            self.samples.add(sample)
        return None

    def _park(self, record: dict[str, Any]) -> str | None:
        sample, nbytes = record["sample"], record["nbytes"]
        s = self.state
        if any(p[0] == sample for p in s.parked):
            return f"park of {sample!r}, which the model has parked already"
        self.state = s._replace(parked=tuple(sorted(s.parked + ((sample, nbytes),))))
        return None

    def _unpark(self, record: dict[str, Any]) -> str | None:
        sample = record["sample"]
        if not any(p[0] == sample for p in self.state.parked):
            return f"unpark of {sample!r}, which the model does not have parked"
        self.state = A.abort_put(self.cfg, self.state, sample).state
        return None

    def _acquire(self, record: dict[str, Any]) -> str | None:
        sample = record.get("sample")
        state = self.state
        if sample is None:
            if A.pending_count(state):
                return f"acquire returned None while the model has {len(state.pending)} pending (head {state.pending[0]!r})"
            return None
        after, lease, _ = A.acquire(self.cfg, state)
        if lease is None:
            return f"acquire returned {sample!r}; the model has nothing pending"
        if lease.sample_id != sample:
            return f"acquire returned {sample!r}; the model delivers the head of pending, {lease.sample_id!r}"
        if lease.redelivery_count != record.get("redeliveries"):
            return (f"acquire of {sample!r} says redelivery {record.get('redeliveries')!r}; the model says "
                    f"{lease.redelivery_count}")
        lease_id = record["lease"]
        if lease_id in self.leases:
            return f"acquire of {sample!r} minted lease id {lease_id}, already issued for {self.leases[lease_id].sample_id!r}"
        deadline = record.get("deadline")
        if deadline is not None and deadline != state.now + self.cfg.visibility_timeout:
            return (f"acquire of {sample!r} set deadline {deadline!r}; the model's is now + visibility_timeout = "
                    f"{state.now + self.cfg.visibility_timeout!r}")
        self.leases[lease_id] = lease
        self.state = after
        self.acquired += 1
        return None

    def _finish(self, record: dict[str, Any], reason: str | None = None, call: str = "ack") -> str | None:
        """An ack or dead_letter the queue logged, against the model: the
        lease it names, the scrub of its data, and the answer (``live``); on a
        live one the model takes ``ack`` (``reason`` None) or ``dead_letter``
        with ``reason``."""
        lease = self.leases.get(record["lease"])
        if lease is None or lease.sample_id != record.get("sample"):
            return self._lease(record)  # (what is wrong with it)
        live = record["live"]
        if live and self.store_logged:
            problem = self._finish_scrub(lease.sample_id, live)
            if problem is not None:
                return problem
        if reason is None:
            out = A.ack(self.cfg, self.state, lease)
        else:
            out = A.dead_letter(self.cfg, self.state, lease, reason)
        if out.error is not None:
            return f"{call} of {lease.sample_id!r}: the model rejects it: {out.error.message}"
        if out.value != live:
            return self._live_mismatch(call, lease, live, out.value)
        if live:
            self.state = out.state
            self._after_finish()
        return None

    def _fail(self, record: dict[str, Any]) -> str | None:
        lease = self._lease(record)
        if isinstance(lease, str):
            return lease
        live = record["live"]
        out = A.fail(self.cfg, self.state, lease)
        if out.value != live:
            return self._live_mismatch("fail", lease, live, out.value)
        if not live:
            return None
        rec = A.rec_of(out.state, lease.sample_id)
        model_dead = rec is not None and rec.status == DEAD
        if model_dead != bool(record.get("dead")):
            return (f"fail of {lease.sample_id!r}: the queue {'dead-lettered' if record.get('dead') else 'requeued'} it; "
                    f"the model {'dead-letters' if model_dead else 'requeues'} it (max_deliveries={self.cfg.max_deliveries})")
        if model_dead:
            problem = self._finish_scrub(lease.sample_id, True)
            if problem is not None:
                return problem
            self.dead += 1
        else:
            self.redeliveries += 1
        self.state = out.state
        if model_dead:
            self._after_finish()
        return None

    def _dead_letter(self, record: dict[str, Any]) -> str | None:
        reason = record.get("reason") or "unstated"
        problem = self._finish(record, reason, "dead_letter")
        if problem is None and record["live"]:
            self.dead += 1
        return problem

    def _extend(self, record: dict[str, Any]) -> str | None:
        lease = self._lease(record)
        if isinstance(lease, str):
            return lease
        live = record["live"]
        if not live:
            out = A.extend(self.cfg, self.state, lease, 1.0)
            if out.value:
                return self._live_mismatch("extend", lease, live, True)
            return None
        if "seconds" not in record:
            # A record that says live without its seconds: if the model says the
            # lease is stale, that is what is wrong with it (the outcome, at this
            # record); only a live one needs the seconds, and their absence is a
            # malformed record.
            probe = A.extend(self.cfg, self.state, lease, 1.0)
            if probe.value is not True:
                return self._live_mismatch("extend", lease, live, probe.value)
        seconds = record["seconds"]
        out = A.extend(self.cfg, self.state, lease, seconds)
        if out.error is not None:
            return f"extend of {lease.sample_id!r} by {seconds!r}: the model rejects it: {out.error.message}"
        if out.value is not True:
            return self._live_mismatch("extend", lease, live, out.value)
        deadline = record.get("deadline")
        if deadline is not None and deadline != self.state.now + seconds:
            return f"extend of {lease.sample_id!r} set deadline {deadline!r}; the model's is {self.state.now + seconds!r}"
        self.state = out.state
        return None

    def _reclaim(self, record: dict[str, Any]) -> str | None:
        state = self.state
        expected = [state.ids[i] for i in A.expired(state)]
        if "samples" not in record:  # a RecordedBackend: only the count is known
            count = record["count"]
            if count != len(expected):
                return (f"reclaim at t={state.now!r} took back {count} lease(s); the model takes back "
                        f"{len(expected)}: {expected} (every lease with deadline <= now)")
            samples = expected
        else:
            samples = list(record["samples"])
            if samples != expected:
                return (f"reclaim at t={state.now!r} took back {samples}; the model takes back {expected} "
                        f"(every lease with deadline <= now, by deadline, ties by sample id)")
        out = A.reclaim_expired(self.cfg, state)
        dead = [s for s in samples if (r := A.rec_of(out.state, s)) is not None and r.status == DEAD]
        if "samples" in record and dead != list(record.get("dead") or ()):
            return f"reclaim dead-lettered {record.get('dead')}; the model dead-letters {dead} (max_deliveries)"
        for sample in dead:
            problem = self._finish_scrub(sample, True)
            if problem is not None:
                return problem
        self.state = out.state
        self.redeliveries += len(samples) - len(dead)
        self.dead += len(dead)
        for sample in dead:
            self._after_finish()
        return None

    def _close(self, record: dict[str, Any]) -> str | None:
        self.state = A.close(self.cfg, self.state).state
        return None

    def _live_mismatch(self, call: str, lease: ModelLease, live: object, model: object) -> str:
        rec = A.rec_of(self.state, lease.sample_id)
        now = "compacted (completed)" if rec is None else (
            f"{rec.status}, incarnation {rec.incarnation}, redeliveries {rec.redeliveries}")
        return (f"{call} of {lease.sample_id!r} (lease of incarnation {lease.incarnation}, delivery "
                f"{lease.redelivery_count}) returned {live}; the model returns {model} (the sample is {now}): "
                f"{'a stale lease must change nothing (D1)' if not model else 'the lease is live'}")

    # -- store steps -------------------------------------------------------------------

    def _store_put(self, record: dict[str, Any]) -> str | None:
        sample, nbytes = record["sample"], record["nbytes"]
        if sample in self.incarnations:  # (a compacted id comes back)
            self._restore(sample)
        out = A.store_put(self.cfg, self.state, sample, nbytes)
        if out.error is not None:
            return f"the store accepted put of {sample!r}; the model rejects it ({out.error.kind}): {out.error.message}"
        self.state = out.state
        return self._check_residency(record)

    def _get(self, record: dict[str, Any]) -> str | None:
        sample = record["sample"]
        if sample in self.scrubbed:
            return f"get of {sample!r} succeeded after the store scrubbed it"
        out = A.get(self.cfg, self.state, sample)
        if out.error is not None:
            return f"the store handed out {sample!r}; the model says: {out.error.message}"
        return None

    def _scrub(self, record: dict[str, Any]) -> str | None:
        sample = record["sample"]
        rec = A.rec_of(self.state, sample)
        if rec is None or not rec.resident:
            return f"the store scrubbed {sample!r}, whose data the model says is not resident"
        if rec.status in (PENDING, LEASED):
            self.scrubbed[sample] = record.get("seq", -1)  # the first half of an ack or dead-letter
            return None
        if rec.status == STORED:
            if any(p[0] == sample for p in self.state.parked):
                return f"the store scrubbed {sample!r} while its producer is blocked putting it"
            self.state = A.drop(self.cfg, self.state, sample).state  # an orphan collected
            return self._check_residency(record)
        return f"the store scrubbed {sample!r}, which is {rec.status}"

    def _check_residency(self, record: dict[str, Any]) -> str | None:
        logged = record.get("resident_bytes")
        if logged is not None and logged != self.state.resident_bytes:
            return (f"the store holds {logged} bytes after this step; the model's residency is "
                    f"{self.state.resident_bytes} (ResidencyMatchesContents)")
        return None


def describe_state(state: State, limit: int = 8) -> str:
    """A few lines naming the model state (live samples only, the first ``limit``)."""
    leased = [(sid, r) for sid, r in zip(state.ids, state.recs) if r.status == LEASED]
    pending = list(state.pending[:limit])
    lines = [
        f"now={state.now!r} closed={state.closed} paused={state.paused} resident_bytes={state.resident_bytes} "
        f"resident_count={state.resident_count} parked={list(state.parked[:limit])}",
        f"pending ({len(state.pending)}): {pending}{' ...' if len(state.pending) > limit else ''}",
        f"leased ({len(leased)}): "
        + ", ".join(f"{sid} (deadline {r.deadline!r}, redeliveries {r.redeliveries})" for sid, r in leased[:limit])
        + (" ..." if len(leased) > limit else ""),
    ]
    return "\n".join(lines)
