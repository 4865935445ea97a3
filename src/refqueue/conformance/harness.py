"""Lockstep: apply each operation to a backend and to the reference model, and
compare everything the backend lets a caller observe.

A ``Harness`` owns one ``Session`` (the backend side) and one model state
(``refqueue.model.actions``, pure functions).  Each public method is one
operation of a producer, a consumer or the environment; it

1. asks the model what the call must do (``Outcome``: a value, or a
   ``Rejection`` with its kind),
2. records a ``Step`` (the call, the model's answer, the model's
   observables afterwards) in ``trace``,
3. makes the call on the backend and compares the answer: the returned value
   (a lease's sample, redelivery count and deadline; True/False; a count), or
   the rejection kind of the exception (``rejection_kind``),
4. compares the observables: ``pending_count()``, ``outstanding_count()``,
   ``is_closed``, ``is_drained``, ``is_paused``, ``dead_letters()``, the
   store's ``health()``, and the ``on_pause``/``on_resume`` calls so far.

The first difference raises ``Divergence`` (an ``AssertionError``) naming the
step; ``trace`` up to that step is the failing run, which
``refqueue.conformance.render`` prints as a pytest function.

Backend leases map to model leases through ``table``, keyed by
``(epoch, lease_id)``: the lease an acquire returned, its copies and its JSON
round trips all find the ``ModelLease`` of that delivery.  The model counts bytes in units
(``refqueue.conformance.samples``).

Operations may also be *given* the model's outcome (``expect=``): the
exhaustive walk reads outcomes off the explorer's graph instead of
recomputing them.
"""

from __future__ import annotations

import copy as _copy
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from refqueue.conformance.contract import Backend, rejection_kind
from refqueue.conformance.samples import UNIT_BYTES, model_limits, same_tensors
from refqueue.conformance.session import CLOCK_START, Session
from refqueue.model import actions as A
from refqueue.model.state import Config, ModelLease, State, initial_state, make_config

__all__ = ["Divergence", "Failure", "Harness", "Leased", "ModelConfig", "Step", "OBSERVABLES", "FOREIGN_EPOCH"]

FOREIGN_EPOCH = "foreign"  # the model's epoch of every lease taken from the second queue
_EPOCH = "queue"  # the model's epoch of the queue under test

# What ``Step.obs`` holds, in order (``None`` where the backend does not declare it).
OBSERVABLES = (
    "pending_count()",
    "outstanding_count()",
    "is_closed",
    "is_drained",
    "is_paused",
    "dead_letters()",
    "health().resident_bytes",
    "health().sample_count",
    "health().high_watermark_hit",
    "health().low_watermark_hit",
    "on_pause/on_resume calls",
)


class ModelConfig(NamedTuple):
    """A run's queue configuration in the model's units (``None``: not passed)."""

    visibility_timeout: float = 30.0
    high: int | None = None
    low: int | None = None
    max_deliveries: int | None = None
    dedup_window: int | None = None
    dead_letter_limit: int | None = None

    def backend_config(self) -> dict[str, Any]:
        """The factory's keywords, in real bytes; keys whose value is None are left out."""
        config: dict[str, Any] = {"visibility_timeout": self.visibility_timeout}
        if self.high is not None:
            config["high_watermark_bytes"] = self.high * UNIT_BYTES
        if self.low is not None:
            config["low_watermark_bytes"] = self.low * UNIT_BYTES
        if self.max_deliveries is not None:
            config["max_deliveries"] = self.max_deliveries
        if self.dedup_window is not None:
            config["dedup_window"] = self.dedup_window
        if self.dead_letter_limit is not None:
            config["dead_letter_limit"] = self.dead_letter_limit
        return config

    def byte_config(self, store: Any, *, fifo: bool) -> Config:
        """The model's ``Config`` for this queue over ``store`` in real bytes (no
        rounding: what the construction check decides with, and what its
        messages say; raises as ``make_config``)."""
        from refqueue.conformance.samples import byte_limits

        return make_config(
            visibility_timeout=self.visibility_timeout,
            high_watermark_bytes=None if self.high is None else self.high * UNIT_BYTES,
            low_watermark_bytes=None if self.low is None else self.low * UNIT_BYTES,
            max_deliveries=self.max_deliveries,
            dedup_window=self.dedup_window or 0,
            fifo=fifo,
            epoch=_EPOCH,
            dead_letter_limit=self.dead_letter_limit,
            **byte_limits(store),
        )

    def model_config(self, store: Any, *, fifo: bool) -> Config:
        """The model's ``Config`` for this queue over ``store`` (raises as ``make_config``)."""
        return make_config(
            visibility_timeout=self.visibility_timeout,
            high_watermark_bytes=self.high,
            low_watermark_bytes=self.low,
            max_deliveries=self.max_deliveries,
            dedup_window=self.dedup_window or 0,
            fifo=fifo,
            epoch=_EPOCH,
            dead_letter_limit=self.dead_letter_limit,
            **model_limits(store),
        )


class Step(NamedTuple):
    """One operation of a run, with what the model says about it.

    ``expect`` is the model's answer: the value the call returns, or the
    ``Rejection`` it must raise.  ``obs`` are the model's observables after
    the step (see ``OBSERVABLES``).  ``result`` is the name the step bound
    (``"ref3"``, ``"lease2"``, ``"handle1"``), if any.
    """

    op: str
    args: tuple[Any, ...]
    result: str | None
    expect: Any
    obs: tuple[Any, ...]
    client: int = 0  # which client of the queue made the call (``Session.clients``)


class Leased(NamedTuple):
    """What the model says an acquire returns: the delivery, its deadline
    (None when the backend does not honour the injected clock) and the name
    of the ref the sample's incarnation was put with."""

    lease: ModelLease
    deadline: float | None
    ref: str


@dataclass
class Failure:
    """A failing run: its steps (the last one failed), how it was configured, and the error."""

    trace: list[Step]
    config: ModelConfig
    store: Mapping[str, int | None]
    sizes: Mapping[str, int]
    error: BaseException
    clock_start: float = CLOCK_START

    @property
    def message(self) -> str:
        return f"{type(self.error).__name__}: {self.error}"


class Divergence(AssertionError):
    """The backend answered a step differently from the model."""

    def __init__(self, index: int, call: str, detail: str) -> None:
        where = f"step {index + 1}" if index >= 0 else "before the first step"
        super().__init__(f"{where}, {call}: {detail}")
        self.index = index
        self.call = call
        self.detail = detail


class Harness:
    """One backend instance in lockstep with the model; see the module docstring.

    ``sizes`` maps each sample id the run may use to its size in units;
    ``store`` the default store's caps and watermarks in units; the clock
    (and the model's ``now``) start at ``clock_start``.
    """

    def __init__(
        self,
        backend: Backend,
        config: ModelConfig,
        *,
        sizes: Mapping[str, int],
        store: Mapping[str, int | None] | None = None,
        clock_start: float = CLOCK_START,
    ) -> None:
        self.backend = backend
        self.caps = backend.capabilities
        self.clock_start = clock_start
        self.config = config
        self.sizes = dict(sizes)
        self.trace: list[Step] = []
        self.session = Session(backend, config.backend_config(), sizes=sizes, store=store, clock_start=clock_start)
        # Step k is made (and observed) through client k % len(clients): with
        # several clients of one queue, each call's successor is another's.
        self._client = 0
        self.store = self.session.store
        self.cfg = config.model_config(self.store, fifo=self.caps.fifo)
        self.state: State = initial_state(clock_start)
        self._dead_api = self.caps.dead_letter or self.caps.max_deliveries
        self.dead: tuple[tuple[str, str, int], ...] = ()
        self.events: tuple[tuple[str, int], ...] = ()
        self.refs: dict[str, Any] = {}  # name -> SampleRef
        self.latest_ref: dict[str, str] = {}  # sample id -> name of its latest ref
        self.put_ref: dict[str, str] = {}  # sample id -> name of the ref its current incarnation was put with
        self.leases: dict[str, Any] = {}  # name -> backend lease
        self.own_leases: list[str] = []  # names of this queue's leases and their copies, oldest first
        self.foreign_leases: list[str] = []
        self.handles: dict[str, tuple[Any, Any, str, Any]] = {}  # name -> (handle, data, sample id, written)
        self.handle_names: list[str] = []
        # (epoch, lease_id) -> the model's lease: every lease this queue handed out
        # (its copies share the key) and every foreign one the run took.
        self.table: dict[tuple[Any, Any], ModelLease] = {}
        self._counts = {"ref": 0, "lease": 0, "handle": 0, "foreign": 0}
        # Groups of pending sample ids whose order is free: leases due at the same
        # instant, taken back by one reclaim, may be requeued in any order.  A
        # group's members stay contiguous in ``state.pending`` (only an acquire
        # takes a ref out, and from the head); groups of fewer than two are dropped.
        self.ties: list[frozenset[str]] = []
        self.tie_taken = False  # the last acquire took a tied ref ahead of the model's head
        self.dead_reordered = False  # the last reclaim dead-lettered a tie in another order than the model's
        try:
            self.epoch = self.queue.epoch
        except Exception as exc:  # noqa: BLE001 - a missing property is a failed contract
            raise Divergence(-1, "q.epoch", f"raised {type(exc).__name__}: {exc}; docs/API.md requires the property") from exc
        health = self.store.health()
        if health.capacity_bytes != self.store.capacity_bytes:
            raise Divergence(
                -1,
                "store.health()",
                f"capacity_bytes is {health.capacity_bytes!r} but store.capacity_bytes is {self.store.capacity_bytes!r}",
            )

    @property
    def queue(self) -> Any:
        """The client of the queue the current step is made through."""
        return self.session.clients[self._client]

    # -- bookkeeping ---------------------------------------------------------------

    def _name(self, kind: str) -> str:
        self._counts[kind] += 1
        return f"{kind}{self._counts[kind]}"

    def _expected(self) -> tuple[Any, ...]:
        st = self.state
        pending = len(st.pending)
        outstanding = A.outstanding_count(st)
        health = A.health(self.cfg, st)
        return (
            pending,
            outstanding,
            st.closed,
            st.closed and not pending and not outstanding,
            st.paused,
            self.dead if self._dead_api else None,
            health.resident_bytes * UNIT_BYTES,
            health.sample_count,
            health.high_watermark_hit,
            health.low_watermark_hit,
            self.events,
        )

    def _apply(self, op: str, args: tuple[Any, ...], out: A.Outcome, result: str | None = None) -> Step:
        """Move the model to ``out.state`` and record the step."""
        old, new = self.state, out.state
        if len(new.dead) > len(old.dead):
            for sample_id, reason in new.dead[len(old.dead) :]:
                self.dead += ((sample_id, reason, A.rec_of(new, sample_id).deliveries),)  # type: ignore[union-attr]
        self.state = new
        self._client = len(self.trace) % len(self.session.clients)
        step = Step(op, args, result, out.error if out.error is not None else out.value, self._expected(), self._client)
        self.trace.append(step)
        return step

    def failure(self, error: BaseException) -> Failure:
        """The run so far as a ``Failure`` with ``error`` (what ``render_test`` prints)."""
        return Failure(
            list(self.trace), self.config, self.session.store_config, self.sizes, error, clock_start=self.clock_start
        )

    def _diverge(self, step: Step, detail: str) -> Divergence:
        from refqueue.conformance.render import call_text

        return Divergence(len(self.trace) - 1, call_text(step), detail)

    def _observed(self) -> tuple[Any, ...]:
        q = self.queue
        health = self.store.health()
        return (
            q.pending_count(),
            q.outstanding_count(),
            q.is_closed,
            q.is_drained,
            q.is_paused,
            tuple((d.ref.sample_id, d.reason, d.deliveries) for d in q.dead_letters()) if self._dead_api else None,
            health.resident_bytes,
            health.sample_count,
            health.high_watermark_hit,
            health.low_watermark_hit,
            tuple(self.session.events),
        )

    def _observe(self, step: Step) -> None:
        try:
            got = self._observed()
        except Exception as exc:  # noqa: BLE001 - any crash of the backend is a divergence
            raise self._diverge(step, f"reading the observables raised {type(exc).__name__}: {exc}") from exc
        if got != step.obs:
            wrong = [
                f"{name} is {g!r}, the model says {w!r}"
                for name, g, w in zip(OBSERVABLES, got, step.obs)
                if g != w
            ]
            raise self._diverge(step, "after the call " + "; ".join(wrong))

    def _rejected(self, step: Step, exc: Exception, accept: tuple[str, ...] = ()) -> None:
        """The backend raised ``exc``: fine if the model rejects the call with that kind."""
        kind = rejection_kind(exc)
        want = step.expect
        if not isinstance(want, A.Rejection):
            raise self._diverge(
                step, f"raised {type(exc).__name__} (kind {kind!r}): {exc}; the model accepts the call and returns {want!r}"
            ) from exc
        if kind != want.kind and kind not in accept:
            raise self._diverge(
                step,
                f"raised {type(exc).__name__} (kind {kind!r}): {exc}; the model rejects the call as "
                f"{want.kind!r}: {want.message}",
            ) from exc

    def _returned(self, step: Step, value: Any, want: Any = None) -> None:
        """The backend returned ``value``: fine if the model returns ``want`` (``is``-equal for
        None and bools, ``==`` and same type for ints)."""
        if isinstance(step.expect, A.Rejection):
            raise self._diverge(
                step, f"returned {value!r}; the model rejects the call as {step.expect.kind!r}: {step.expect.message}"
            )
        if want is None or isinstance(want, bool):
            ok = value is want
        else:
            ok = type(value) is type(want) and value == want
        if not ok:
            raise self._diverge(step, f"returned {value!r}; the model says {want!r}")

    def _run(self, step: Step, call: Callable[[], Any], want: Any = None, accept: tuple[str, ...] = ()) -> Any:
        """Make the backend call of ``step``; compare its answer and the observables."""
        try:
            value = call()
        except Exception as exc:  # noqa: BLE001 - classified against the model
            self._rejected(step, exc, accept)
            self._observe(step)
            return None
        self._returned(step, value, want)
        self._observe(step)
        return value

    # -- the producer ------------------------------------------------------------

    def store_put(self, sample_id: str) -> str | None:
        """``store.put`` of the kit's data for ``sample_id``; the ref's name, or None if rejected."""
        out = A.store_put(self.cfg, self.state, sample_id, self.sizes[sample_id])
        name = self._name("ref") if out.error is None else None
        step = self._apply("store_put", (sample_id,), out, name)
        try:
            ref = self.session.store_put(sample_id)
        except Exception as exc:  # noqa: BLE001
            self._rejected(step, exc)
            self._observe(step)
            return None
        if out.error is not None:
            raise self._diverge(step, f"returned a ref; the model rejects the call as {out.error.kind!r}: {out.error.message}")
        want = (sample_id, self.sizes[sample_id] * UNIT_BYTES, self.store.uri)
        got = (ref.sample_id, ref.estimated_bytes, ref.store_uri)
        if got != want:
            raise self._diverge(step, f"returned a ref with (sample_id, estimated_bytes, store_uri) {got!r}, expected {want!r}")
        assert name is not None
        self.refs[name] = ref
        self.latest_ref[sample_id] = name
        self._observe(step)
        return name

    def put(self, ref_name: str) -> None:
        """``q.put(ref)``."""
        ref = self.refs[ref_name]
        out = A.put(self.cfg, self.state, ref.sample_id)
        step = self._apply("put", (ref_name,), out)
        self._run(step, lambda: self.queue.put(ref))
        if out.error is None:
            self.put_ref[ref.sample_id] = ref_name

    def try_put(self, ref_name: str) -> None:
        """One step of the blocking put: ``q.put_blocks_until_below(ref, abort_when=lambda: True)``.

        That call is the model's ``put_step`` (D8): one ``try_put`` against the
        effective residency, the ref's own bytes (its size in units) not
        counted, and the call returns either way, so the ref is never left
        parked (``state.parked`` stays empty in a harness run).
        """
        ref = self.refs[ref_name]
        before = self.state
        out = A.put_step(self.cfg, before, ref.sample_id, self.sizes[ref.sample_id])
        if not self.caps.abort_when:
            # Without abort_when the call waits until it enqueues: made only where it does at once.
            if out.error is None and not out.value.enqueued:
                raise ValueError("try_put of a backend without abort_when needs a put the model enqueues at once")
            if out.error is None:
                resident = before.resident_bytes * UNIT_BYTES
                self.events += tuple((event, resident) for event in out.value.events)
            step = self._apply("try_put", (ref_name, "no_abort"), out._replace(value=None))
            self._run(step, lambda: self.queue.put_blocks_until_below(ref))
            if out.error is None:
                self.put_ref[ref.sample_id] = ref_name
            return
        if out.error is None:
            resident = before.resident_bytes * UNIT_BYTES
            self.events += tuple((event, resident) for event in out.value.events)
            if not out.value.enqueued:
                out = A.Outcome(
                    out.state,
                    None,
                    A.Rejection("aborted", "the producer is paused and abort_when() is true: PutAborted"),
                )
        step = self._apply("try_put", (ref_name,), out)
        self._run(step, lambda: self.queue.put_blocks_until_below(ref, abort_when=lambda: True))
        if out.error is None:
            self.put_ref[ref.sample_id] = ref_name

    def try_put_enqueues(self, ref_name: str) -> bool:
        """Whether one blocking-put step of ``ref_name`` returns at once without
        ``abort_when`` (it enqueues, or it is refused)."""
        ref = self.refs[ref_name]
        out = A.put_step(self.cfg, self.state, ref.sample_id, self.sizes[ref.sample_id])
        return out.error is not None or out.value.enqueued

    def put_wrong(self, ref_name: str, how: str) -> None:
        """A put the queue must refuse as an argument error: ``how`` is ``"type"``
        (a sample id str instead of a ref) or ``"uri"`` (a ref of another store)."""
        ref = self.refs[ref_name]
        if how == "type":
            out = A.put(self.cfg, self.state, None)  # the model's argument error
            accept: tuple[str, ...] = ()
            arg: Any = ref.sample_id
        elif how == "uri":
            out = A.Outcome(self.state, None, A.Rejection("invalid", "a ref of a store this queue is not bound to"))
            # The model does not order this check against its own; its kind is accepted too.
            model = A.put(self.cfg, self.state, ref.sample_id)
            accept = (model.error.kind,) if model.error is not None else ()
            arg = self.session.other_store_ref(ref)
        else:
            raise ValueError(f"put_wrong(how={how!r}): how must be 'type' or 'uri'")
        step = self._apply("put_wrong", (ref_name, how), out)
        self._run(step, lambda: self.queue.put(arg), accept=accept)

    # -- the consumer ------------------------------------------------------------

    def acquire(self) -> str | None:
        """``q.acquire_nowait()``; the lease's name, or None.

        A backend without ``acquire_nowait`` gets ``q.acquire(poll_interval=0.001)``
        where the model says it returns at once; elsewhere the call would wait,
        so it is not made (an ``idle`` step: the observables are still compared).
        """
        if self.caps.acquire_nowait:
            return self._acquire("acquire", lambda: self.queue.acquire_nowait())
        if self.acquire_returns_at_once():
            return self._acquire("acquire_wait", lambda: self.queue.acquire(poll_interval=0.001), 0.001)
        step = self._apply("idle", (), A.acquire(self.cfg, self.state))
        self._observe(step)
        return None

    def acquire_wait(self, poll_interval: float) -> str | None:
        """``q.acquire(poll_interval=...)`` where the model says it returns at once
        (something is pending, or the queue is drained), or with a bad interval."""
        if not (math.isfinite(poll_interval) and poll_interval > 0):
            out = A.Outcome(
                self.state, None, A.Rejection("invalid", f"poll_interval={poll_interval!r} is not finite and > 0")
            )
            step = self._apply("acquire_wait", (poll_interval,), out)
            self._run(step, lambda: self.queue.acquire(poll_interval=poll_interval))
            return None
        if not self.acquire_returns_at_once():
            raise ValueError("acquire_wait with a valid interval needs something pending or a drained queue")
        return self._acquire("acquire_wait", lambda: self.queue.acquire(poll_interval=poll_interval), poll_interval)

    def allowed_acquires(self) -> tuple[str, ...]:
        """What an acquire may return now: the model's ``allowed_acquires``, and
        for a FIFO backend the whole tie group at the head of pending too."""
        allowed = A.allowed_acquires(self.cfg, self.state)
        pending = self.state.pending
        if self.caps.fifo and pending:
            for group in self.ties:
                if pending[0] in group:
                    return tuple(sid for sid in pending if sid in group)
        return allowed

    def _took(self, sample_id: str) -> None:
        """``sample_id`` left pending: it leaves its tie group."""
        self.ties = [g - {sample_id} for g in self.ties]
        self.ties = [g for g in self.ties if len(g) > 1]

    def _acquire(self, op: str, call: Callable[[], Any], *args: Any) -> str | None:
        allowed = self.allowed_acquires()
        error: Exception | None = None
        self._client = len(self.trace) % len(self.session.clients)  # the client of the step recorded below
        try:
            lease = call()
        except Exception as exc:  # noqa: BLE001 - acquire never fails: a divergence below
            lease, error = None, exc
        sample_id = None if lease is None else getattr(getattr(lease, "ref", None), "sample_id", None)
        choose = sample_id if not self.caps.fifo and sample_id in allowed else None
        self.tie_taken = False
        if self.caps.fifo and sample_id in allowed and sample_id != self.state.pending[0]:
            self.tie_taken = True
            # A tie the model leaves free: the backend requeued this one first.
            pending = self.state.pending
            self.state = self.state._replace(pending=(sample_id, *(x for x in pending if x != sample_id)))
        out = A.acquire(self.cfg, self.state, choose=choose)
        if out.value is not None:
            self._took(out.value.sample_id)
        name = None
        if out.value is not None:
            mlease: ModelLease = out.value
            rec = A.rec_of(out.state, mlease.sample_id)
            deadline = rec.deadline if self.caps.injected_clock else None  # type: ignore[union-attr]
            name = self._name("lease")
            out = out._replace(value=Leased(mlease, deadline, self.put_ref[mlease.sample_id]))
        step = self._apply(op, args, out, name)
        want: Leased | None = out.value
        if error is not None:
            raise self._diverge(step, f"raised {type(error).__name__}: {error}; acquire never fails") from error
        if lease is None:
            if want is not None:
                raise self._diverge(step, f"returned None; the model hands out {want.lease.sample_id!r}")
            self._observe(step)
            return None
        if want is None or sample_id != want.lease.sample_id:
            say = "returns None (nothing is pending)" if want is None else f"hands out {want.lease.sample_id!r}"
            if want is not None and len(allowed) > 1:
                say = f"allows one of {list(allowed)}"
            raise self._diverge(step, f"returned a lease on {sample_id!r}; the model {say}")
        assert name is not None
        key = (lease.epoch, lease.lease_id)
        if lease.epoch != self.epoch:
            raise self._diverge(step, f"returned a lease of epoch {lease.epoch!r}; the queue's epoch is {self.epoch!r}")
        if key in self.table:
            raise self._diverge(step, f"returned a lease with the (epoch, lease_id) {key!r} of an earlier lease")
        if lease.ref != self.refs[want.ref]:
            raise self._diverge(step, f"returned a lease whose ref differs from {want.ref}, the ref {sample_id!r} was put with")
        if lease.redelivery_count != want.lease.redelivery_count:
            raise self._diverge(
                step,
                f"returned a lease with redelivery_count {lease.redelivery_count!r}; the model says "
                f"{want.lease.redelivery_count}",
            )
        if want.deadline is not None and lease.deadline != want.deadline:
            raise self._diverge(step, f"returned a lease with deadline {lease.deadline!r}; the model says {want.deadline!r}")
        self.table[key] = want.lease
        self.leases[name] = lease
        self.own_leases.append(name)
        self._observe(step)
        return name

    def _lease_op(self, op: str, name: str, model: Callable[..., A.Outcome], call: Callable[[], Any], *extra: Any) -> Any:
        out = model(self.cfg, self.state, self.model_lease(name), *extra)
        step = self._apply(op, (name, *extra), out)
        return self._run(step, call, out.value)

    def ack(self, name: str) -> None:
        """``q.ack(lease)``: True live, False stale, ForeignLease foreign."""
        lease = self.leases[name]
        self._lease_op("ack", name, A.ack, lambda: self.queue.ack(lease))

    def fail(self, name: str) -> None:
        """``q.fail(lease)``."""
        lease = self.leases[name]
        self._lease_op("fail", name, A.fail, lambda: self.queue.fail(lease))

    def dead_letter(self, name: str, reason: str) -> None:
        """``q.dead_letter(lease, reason)`` (``""`` is an argument error)."""
        lease = self.leases[name]
        self._lease_op("dead_letter", name, A.dead_letter, lambda: self.queue.dead_letter(lease, reason), reason)

    def extend(self, name: str, seconds: float | None) -> None:
        """``q.extend(lease, seconds)``; ``None`` calls ``q.extend(lease)`` (the queue's timeout)."""
        lease = self.leases[name]
        model_seconds = self.cfg.visibility_timeout if seconds is None else seconds
        out = A.extend(self.cfg, self.state, self.model_lease(name), model_seconds)
        step = self._apply("extend", (name, seconds), out)
        if seconds is None:
            self._run(step, lambda: self.queue.extend(lease), out.value)
        else:
            given = self.session.seconds(seconds)  # longer on the backend's own clock
            self._run(step, lambda: self.queue.extend(lease, given), out.value)

    def lease_wrong(self, call: str) -> None:
        """``q.<call>("lease")``: a non-lease argument, an argument error."""
        model = {"ack": A.ack, "fail": A.fail, "extend": A.extend, "dead_letter": A.dead_letter}[call]
        extra = {"extend": (1.0,), "dead_letter": ("poison",)}.get(call, ())
        out = model(self.cfg, self.state, "lease", *extra)
        step = self._apply("lease_wrong", (call,), out)
        method = getattr(self.queue, call)
        self._run(step, lambda: method("lease", *extra))

    def copy(self, name: str, how: str) -> str:
        """A copy of a lease: ``how`` is ``"copy"``, ``"deepcopy"`` or ``"json"``
        (``type(lease).from_json(lease.to_json())``); it must equal the original."""
        if how not in ("copy", "deepcopy", "json"):
            raise ValueError(f"copy(how={how!r}): how must be 'copy', 'deepcopy' or 'json'")
        if how == "json" and not self.caps.lease_json:
            raise ValueError("copy(how='json') of a backend without lease_json")
        lease = self.leases[name]
        new = self._name("lease")
        step = self._apply("copy", (name, how), A.Outcome(self.state, None, None), new)
        try:
            if how == "copy":
                twin = _copy.copy(lease)
            elif how == "deepcopy":
                twin = _copy.deepcopy(lease)
            else:
                twin = type(lease).from_json(lease.to_json())
            same = twin == lease and hash(twin) == hash(lease) and (twin.epoch, twin.lease_id) == (lease.epoch, lease.lease_id)
        except Exception as exc:  # noqa: BLE001
            raise self._diverge(step, f"raised {type(exc).__name__}: {exc}; a lease copies and round-trips through JSON") from exc
        if not same:
            raise self._diverge(step, f"made {twin!r}, which is not equal (==, hash, epoch and lease_id) to {lease!r}")
        self.leases[new] = twin
        (self.foreign_leases if name in self.foreign_leases else self.own_leases).append(new)
        self._observe(step)
        return new

    def foreign(self) -> str:
        """A lease taken from a second queue the same factory made."""
        name = self._name("foreign")
        step = self._apply("foreign", (), A.Outcome(self.state, None, None), name)
        try:
            lease = self.session.foreign_lease()
        except Exception as exc:  # noqa: BLE001
            raise self._diverge(step, f"raised {type(exc).__name__}: {exc}") from exc
        if lease.epoch == self.epoch:
            raise self._diverge(step, f"two queues made by the factory share the epoch {lease.epoch!r}")
        self.leases[name] = lease
        self.table[(lease.epoch, lease.lease_id)] = ModelLease(FOREIGN_EPOCH, lease.ref.sample_id, 1, lease.redelivery_count)
        self.foreign_leases.append(name)
        self._observe(step)
        return name

    def crash(self, name: str) -> None:
        """A consumer crashes holding ``name``: nothing happens to the queue (a trace marker)."""
        step = self._apply("crash", (name,), A.Outcome(self.state, None, None))
        self._observe(step)

    def producer_crash(self, ref_name: str) -> None:
        """A producer dies between ``store.put`` and the queue's put of ``ref_name``: its
        data becomes an orphan (a trace marker; a one-step put never leaves the ref parked,
        so the model's ``abort_put`` changes nothing here)."""
        ref = self.refs[ref_name]
        out = A.abort_put(self.cfg, self.state, ref.sample_id)
        step = self._apply("producer_crash", (ref_name,), out)
        self._observe(step)

    def collect(self, ref_name: str) -> None:
        """``store.scrub(ref)`` of an orphan (the model's ``drop``): the data of a
        sample stored but never enqueued leaves the store; the call returns True."""
        ref = self.refs[ref_name]
        out = A.drop(self.cfg, self.state, ref.sample_id)
        if out.error is not None:
            raise ValueError(f"collect({ref_name}): {out.error.message}")
        step = self._apply("collect", (ref_name,), out._replace(value=True))
        self._run(step, lambda: self.store.scrub(ref), True)

    def stop(self) -> None:
        """A consumer stops: ``acquire_nowait()`` is None and ``is_drained`` is True."""
        out = A.acquire(self.cfg, self.state)
        if out.value is not None or not A.is_drained(self.state):
            raise ValueError("stop needs a drained queue")
        step = self._apply("stop", () if self.caps.acquire_nowait else (0.001,), out)
        if self.caps.acquire_nowait:
            self._run(step, self.queue.acquire_nowait)
        else:
            self._run(step, lambda: self.queue.acquire(poll_interval=0.001))

    def get(self, name: str) -> str | None:
        """``store.get(lease.ref)`` by the holder of ``name`` (live or stale); the handle's name."""
        lease = self.leases[name]
        sample_id = self.model_lease(name).sample_id
        out = A.get(self.cfg, self.state, sample_id)
        handle_name = self._name("handle") if out.error is None else None
        step = self._apply("get", (name, sample_id), out, handle_name)
        try:
            data, handle = self.store.get(lease.ref)
        except Exception as exc:  # noqa: BLE001
            self._rejected(step, exc)
            self._observe(step)
            return None
        if out.error is not None:
            raise self._diverge(step, f"returned data; the model rejects the call as {out.error.kind!r}: {out.error.message}")
        written = self.session.written[sample_id]
        problem = same_tensors(data, written)
        if problem is not None:
            raise self._diverge(step, problem)
        assert handle_name is not None
        self.handles[handle_name] = (handle, data, sample_id, written)
        self.handle_names.append(handle_name)
        self._observe(step)
        return handle_name

    def release(self, handle_name: str) -> None:
        """``store.release(handle)``; what ``get`` returned must still hold the data (D2)."""
        handle, data, sample_id, written = self.handles[handle_name]
        out = A.release(self.cfg, self.state, sample_id)
        step = self._apply("release", (handle_name, sample_id), out)
        self._run(step, lambda: self.store.release(handle))
        problem = same_tensors(data, written)
        if problem is not None:
            raise self._diverge(step, f"the holder's data changed: {problem}")

    # -- the environment -----------------------------------------------------------

    def tick(self, seconds: float) -> None:
        """Time passes: ``clock.advance(seconds)``."""
        out = A.tick(self.cfg, self.state, seconds)
        step = self._apply("tick", (seconds,), out)
        self.session.clock.advance(seconds)
        self._observe(step)

    def reclaim(self) -> None:
        """``q.reclaim_expired()``: how many leases were taken back.

        Leases due at the same instant may be taken back in any order: those
        requeued form a tie group (``ties``, any may be acquired first), and
        those dead-lettered may be listed in any order among themselves.
        """
        before = self.state
        groups: dict[float, list[str]] = {}
        for i in A.expired(before):
            groups.setdefault(before.recs[i].deadline, []).append(before.ids[i])  # type: ignore[arg-type]
        out = A.reclaim_expired(self.cfg, before)
        dead_before = len(self.dead)
        self.dead_reordered = False
        step = self._apply("reclaim", (), out)
        requeued = set(out.state.pending) - set(before.pending)
        for ids in groups.values():
            group = frozenset(sid for sid in ids if sid in requeued)
            if len(group) > 1:
                self.ties.append(group)
        try:
            value = self.queue.reclaim_expired()
        except Exception as exc:  # noqa: BLE001 - classified against the model
            self._rejected(step, exc)
            self._observe(step)
            return
        self._returned(step, value, out.value)
        if self._dead_api and len(self.dead) - dead_before > 1:
            step = self._adopt_dead_order(step, dead_before, groups, before)
        self._observe(step)

    def _adopt_dead_order(self, step: Step, start: int, groups: dict[float, list[str]], before: State) -> Step:
        """The step, with the backend's order of the dead letters this reclaim
        added when it only permutes leases due at the same instant.  The
        model takes the same order: its dead letters, and the dedup window,
        whose newest completions are these dead letters in the order they
        were made (D5: a window of 1 then remembers the backend's last)."""
        try:
            got = tuple((d.ref.sample_id, d.reason, d.deliveries) for d in self.queue.dead_letters())
        except Exception:  # noqa: BLE001 - _observe reads it again and reports the crash
            return step
        mine = self.dead
        due = {sid: deadline for deadline, ids in groups.items() for sid in ids}
        if (
            got == mine
            or len(got) != len(mine)
            or got[:start] != mine[:start]
            or sorted(got[start:]) != sorted(mine[start:])
            or [due.get(d[0]) for d in got[start:]] != [due.get(d[0]) for d in mine[start:]]
        ):
            return step
        self.dead = got
        order = [d[0] for d in got[start:]]
        state = self.state
        mine_tail = {entry[0]: entry for entry in state.dead[len(before.dead):]}
        if sorted(mine_tail) != sorted(order):  # not only this reclaim's dead letters: keep the model's
            return step._replace(obs=self._expected())
        completed = before.completed
        if self.cfg.dedup_window:
            for sid in order:
                completed = (completed + (sid,))[-self.cfg.dedup_window :]
        else:
            completed = state.completed
        self.state = state._replace(
            dead=state.dead[: len(before.dead)] + tuple(mine_tail[sid] for sid in order), completed=completed
        )
        self.dead_reordered = True
        step = step._replace(obs=self._expected())
        self.trace[-1] = step
        return step

    def close(self) -> None:
        """``q.close()`` (idempotent)."""
        out = A.close(self.cfg, self.state)
        step = self._apply("close", (), out)
        self._run(step, self.queue.close)

    # -- helpers for the drivers ------------------------------------------------------

    def model_lease(self, name: str) -> ModelLease:
        """The model's lease of the backend lease ``name``, looked up by its (epoch, lease_id)."""
        lease = self.leases[name]
        return self.table[(lease.epoch, lease.lease_id)]

    def acquire_returns_at_once(self) -> bool:
        """Whether the model has a ref to hand out, or says the queue is drained."""
        return bool(self.state.pending) or A.is_drained(self.state)

    def dispose(self) -> None:
        """Let go of the backend (closes its stores)."""
        self.session.close()
