"""The first lockstep test: the production ``SampleRefQueue`` (on a
``BytesStore`` and a ``ManualClock``) and the reference model, driven side by
side by a Hypothesis state machine, compared after every step.

Each rule applies one call to both and compares what came back: the leased
sample, its redelivery count and deadline; True/False of ack, fail, extend
and dead_letter; reclaim counts; and, for a rejected call, the exception's
kind (``KIND`` of the ``refqueue.errors`` class, ``"invalid"`` for a plain
``TypeError``/``ValueError``) against the model's ``Rejection.kind``.  The
invariant compares everything else a caller can observe: pending and
outstanding counts, ``is_closed``, ``is_drained``, ``is_paused``, the dead
letters, the store's health, and the sequence of ``on_pause``/``on_resume``
calls.

Leases are kept in a bundle for the whole run, so stale leases (reclaimed,
acked, failed, superseded) are handed back all the time, as copies, deep
copies and JSON round trips as well as the originals.  The configuration
(visibility timeout, watermarks from the queue, the store or both, the
store's capacity, ``max_deliveries``, ``dedup_window``) is drawn once per run.
"""

from __future__ import annotations

import copy
import dataclasses
import math

from bytes_store import BytesStore, features, make_ref
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, multiple, rule

from refqueue import model as M
from refqueue.clock import ManualClock
from refqueue.errors import PutAborted, RefQueueError
from refqueue.model import actions as A
from refqueue.queue import Lease, SampleRefQueue, VisibilityTimeout

SAMPLES = ("s0", "s1", "s2", "s3")
SIZES = {"s0": 1, "s1": 2, "s2": 3, "s3": 2}
REFS = {sid: make_ref(sid, SIZES[sid]) for sid in SAMPLES}
OTHER_EPOCH = "f" * 32

sample_ids = st.sampled_from(SAMPLES)
lease_forms = st.sampled_from(["original", "copy", "deepcopy", "json"])


def kind_of(exc: BaseException) -> str:
    """The model's rejection kind of a production exception."""
    if isinstance(exc, RefQueueError):
        return type(exc).KIND
    if isinstance(exc, (TypeError, ValueError)):
        return "invalid"
    raise exc


def call(fn, *args, **kwargs):
    """``(value, kind)``: what ``fn`` returned, or the kind of what it raised."""
    try:
        return fn(*args, **kwargs), None
    except (RefQueueError, TypeError, ValueError) as exc:
        return None, kind_of(exc)


def as_form(lease: Lease, form: str) -> Lease:
    if form == "copy":
        return copy.copy(lease)
    if form == "deepcopy":
        return copy.deepcopy(lease)
    if form == "json":
        return Lease.from_json(lease.to_json())
    return lease


@st.composite
def configs(draw):
    """Keyword arguments for the store, the queue and ``make_config``."""
    vt = draw(st.sampled_from([1.0, 2.5]))
    watermarks = draw(st.sampled_from(["none", "queue", "store", "queue_high", "queue_low"]))
    store_kw: dict = {}
    queue_kw: dict = {}
    if watermarks == "queue":
        queue_kw = dict(high_watermark_bytes=4, low_watermark_bytes=draw(st.sampled_from([0, 2])))
    elif watermarks != "none":
        store_kw = dict(high_watermark_bytes=5, low_watermark_bytes=2)
        if watermarks == "queue_high":
            queue_kw = dict(high_watermark_bytes=3)
        elif watermarks == "queue_low":
            queue_kw = dict(low_watermark_bytes=0)
    capacity = draw(st.sampled_from([None, 6, 8]))
    if capacity is not None:
        store_kw["capacity_bytes"] = capacity
    return dict(
        vt=vt,
        store_kw=store_kw,
        queue_kw=queue_kw,
        max_deliveries=draw(st.sampled_from([None, 1, 2, 3])),
        dedup_window=draw(st.sampled_from([0, 0, 1, 2])),
    )


class QueueMatchesModel(RuleBasedStateMachine):
    leases = Bundle("leases")  # (production Lease, model ModelLease) of every acquire

    @initialize(c=configs())
    def setup(self, c):
        self.store = BytesStore(**c["store_kw"])
        self.clock = ManualClock(0.0)
        self.events: list[tuple[str, int]] = []
        self.q = SampleRefQueue(
            self.store,
            VisibilityTimeout(c["vt"]),
            on_pause=lambda h: self.events.append(("pause", h.resident_bytes)),
            on_resume=lambda h: self.events.append(("resume", h.resident_bytes)),
            max_deliveries=c["max_deliveries"],
            dedup_window=c["dedup_window"],
            clock=self.clock,
            **c["queue_kw"],
        )
        skw, qkw = c["store_kw"], c["queue_kw"]
        self.cfg = M.make_config(
            visibility_timeout=c["vt"],
            high_watermark_bytes=qkw.get("high_watermark_bytes"),
            low_watermark_bytes=qkw.get("low_watermark_bytes"),
            store_high_watermark_bytes=skw.get("high_watermark_bytes"),
            store_low_watermark_bytes=skw.get("low_watermark_bytes"),
            capacity_bytes=skw.get("capacity_bytes"),
            max_deliveries=c["max_deliveries"],
            dedup_window=c["dedup_window"],
            epoch=self.q.epoch,
        )
        self.state = M.initial_state(0.0)
        self.model_events: list[tuple[str, int]] = []

    def step(self, outcome: A.Outcome, value, kind):
        """Compare one call's result with the model's, then adopt the model's state."""
        expected_kind = outcome.error.kind if outcome.error is not None else None
        assert kind == expected_kind, (kind, outcome.error)
        if kind is None:
            assert value == outcome.value, (value, outcome.value)
        self.state = outcome.state

    # -- the producer ---------------------------------------------------------------

    @rule(sid=sample_ids)
    def store_put(self, sid):
        _, kind = call(self.store.put, sid, features(b"x" * SIZES[sid]))
        self.step(A.store_put(self.cfg, self.state, sid, SIZES[sid]), None, kind)

    @rule(sid=sample_ids, json_copy=st.booleans())
    def put(self, sid, json_copy):
        ref = REFS[sid] if not json_copy else type(REFS[sid]).from_json(REFS[sid].to_json())
        value, kind = call(self.q.put, ref)
        self.step(A.put(self.cfg, self.state, sid), value, kind)

    @rule(sid=sample_ids)
    def put_one_step(self, sid):
        """``put_blocks_until_below(ref, abort_when=lambda: True)``: the model's ``put_step``."""
        resident = self.state.resident_bytes
        try:
            self.q.put_blocks_until_below(REFS[sid], abort_when=lambda: True)
            enqueued, kind = True, None
        except PutAborted:
            enqueued, kind = False, None
        except (RefQueueError, TypeError, ValueError) as exc:
            enqueued, kind = None, kind_of(exc)
        out = A.put_step(self.cfg, self.state, sid, REFS[sid].estimated_bytes)
        if out.error is None:
            self.model_events.extend((event, resident) for event in out.value.events)
            self.step(out._replace(value=out.value.enqueued), enqueued, kind)
        else:
            self.step(out, None, kind)

    @rule(what=st.sampled_from(["not a ref", "other store"]))
    def put_invalid(self, what):
        ref = "s0" if what == "not a ref" else make_ref("s0", 1, store_uri="mem://elsewhere")
        _, kind = call(self.q.put, ref)
        assert kind == "invalid"

    # -- the consumers ----------------------------------------------------------------

    @rule(target=leases, blocking=st.booleans())
    def acquire(self, blocking):
        lease = self.q.acquire(poll_interval=0.001) if blocking else self.q.acquire_nowait()
        out = A.acquire(self.cfg, self.state)
        self.state = out.state
        if out.value is None:
            assert lease is None
            return multiple()  # nothing for the bundle
        assert lease is not None, f"the model leased {out.value}, the queue returned None"
        assert lease.ref == REFS[out.value.sample_id]
        assert lease.redelivery_count == out.value.redelivery_count
        assert lease.deadline == A.lease_deadline(self.state, out.value)
        assert lease.epoch == self.q.epoch
        return multiple((lease, out.value))

    @rule(target=leases)
    def acquire_all(self):
        """Lease everything pending at one instant: equal deadlines, so a later
        reclaim must order them by sample id."""
        pairs = []
        while self.state.pending:
            pairs.extend(self.acquire(blocking=False).values)
        assert self.q.acquire_nowait() is None
        return multiple(*pairs)

    @rule(pair=leases, form=lease_forms)
    def ack(self, pair, form):
        value, kind = call(self.q.ack, as_form(pair[0], form))
        self.step(A.ack(self.cfg, self.state, pair[1]), value, kind)

    @rule(pair=leases, form=lease_forms)
    def fail(self, pair, form):
        value, kind = call(self.q.fail, as_form(pair[0], form))
        self.step(A.fail(self.cfg, self.state, pair[1]), value, kind)

    @rule(pair=leases, form=lease_forms, reason=st.sampled_from(["poison", ""]))
    def dead_letter(self, pair, form, reason):
        value, kind = call(self.q.dead_letter, as_form(pair[0], form), reason)
        self.step(A.dead_letter(self.cfg, self.state, pair[1], reason), value, kind)

    @rule(pair=leases, form=lease_forms, seconds=st.sampled_from([None, 0.5, 2.0, 0.0, -1.0, math.nan, True]))
    def extend(self, pair, form, seconds):
        value, kind = call(self.q.extend, as_form(pair[0], form), seconds)
        model_seconds = self.cfg.visibility_timeout if seconds is None else seconds
        self.step(A.extend(self.cfg, self.state, pair[1], model_seconds), value, kind)

    @rule(pair=leases, action=st.sampled_from(["ack", "fail", "extend", "dead_letter"]))
    def foreign_lease(self, pair, action):
        lease, model_lease = pair
        args = {"ack": (), "fail": (), "extend": (1.0,), "dead_letter": ("poison",)}[action]
        value, kind = call(getattr(self.q, action), dataclasses.replace(lease, epoch=OTHER_EPOCH), *args)
        model_action = getattr(A, action)
        self.step(model_action(self.cfg, self.state, model_lease._replace(epoch=OTHER_EPOCH), *args), value, kind)

    @rule(sid=sample_ids)
    def get_and_release(self, sid):
        try:
            _, handle = self.store.get(REFS[sid])
            kind = None
        except (RefQueueError, TypeError, ValueError) as exc:
            kind = kind_of(exc)
        self.step(A.get(self.cfg, self.state, sid), True if kind is None else None, kind)
        if kind is None:
            self.store.release(handle)
            self.step(A.release(self.cfg, self.state, sid), None, None)

    # -- the environment ----------------------------------------------------------------

    @rule(seconds=st.sampled_from([0.5, 1.0, 2.5]))
    def tick(self, seconds):
        self.clock.advance(seconds)
        self.step(A.tick(self.cfg, self.state, seconds), None, None)

    @rule()
    def reclaim_expired(self):
        value, kind = call(self.q.reclaim_expired)
        self.step(A.reclaim_expired(self.cfg, self.state), value, kind)

    @rule()
    def close(self):
        value, kind = call(self.q.close)
        self.step(A.close(self.cfg, self.state), value, kind)

    # -- everything else a caller can see ----------------------------------------------

    @invariant()
    def observables_agree(self):
        if not hasattr(self, "q"):
            return
        s, q = self.state, self.q
        assert q.pending_count() == A.pending_count(s)
        assert q.outstanding_count() == A.outstanding_count(s)
        assert q.is_closed == s.closed
        assert q.is_drained == A.is_drained(s)
        assert q.is_paused == s.paused
        assert [(d.ref.sample_id, d.reason) for d in q.dead_letters()] == list(s.dead)
        health = self.store.health()
        expected = A.health(self.cfg, s)
        assert (health.resident_bytes, health.capacity_bytes, health.sample_count,
                health.high_watermark_hit, health.low_watermark_hit) == tuple(expected)
        assert self.events == self.model_events


# Hypothesis's defaults for state machines (no deadline, no health checks)
# under the active profile (``ci`` when CI=true), with at least 300 runs:
# about 5 s, and rare orders (equal deadlines reclaimed together) need them.
QueueMatchesModel.TestCase.settings = settings(
    QueueMatchesModel.TestCase.settings,
    max_examples=max(300, QueueMatchesModel.TestCase.settings.max_examples),
)
TestQueueMatchesModel = QueueMatchesModel.TestCase
