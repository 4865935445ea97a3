"""One check of the ``faults`` phase as it runs: a queue of a backend that
declares faults, the clients it opens, the reference model beside it, and
the history of the check, faults included.

``FaultRun`` makes the first client (``"A"``) with the factory on the kit's
store (or the backend's own) and a ``ManualClock`` at 100.0, and opens more
with ``FaultHooks.open_client``.  Every call names the client that makes it
and goes through one method (``put``, ``acquire``, ``ack``, ...), which makes
the call, steps the model (``refqueue.model.actions`` with ``two_step_ack``:
an ack or dead-letter commits with a scrub intent, its data leaving the
store at a later ``scrub_intent``) and writes a line of the history.  A
call may carry a fault:

``"lost"``   ``FaultHooks.lose_next_reply``: the call must raise an error of
             kind ``"unavailable"``, and the model takes its effect (it ran
             on the server); the client never scrubs, so an ack or
             dead-letter leaves its intent pending
``"crash"``  ``FaultHooks.crash_after_commit``: the call must raise
             ``ClientCrashed``; the model takes its effect, intent pending,
             and the client is never used again

Without a fault, the answer must be the model's, and a committed ack or
dead-letter (or a fail or reclaim that dead-letters) was scrubbed by the
client that made it (``scrub_intent`` at once).  ``observe`` compares a
client's counts, flags and dead letters with the model, and the store's
residency: while intents are pending the store may hold the data of exactly
some of those samples besides the model's (the backend may collect some
early), never anything else.  ``collect`` moves the clock past
``intent_timeout`` and calls ``reclaim_expired`` on a client: every intent
must be collected then, and ``gone`` asks the store for the data of each
completed sample (it must be missing).

Every verdict is a ``Failed`` whose message ends with the check's history:
the calls and their answers, the faults and the passage of time, in order
(a fault is an operation of the history, as Jepsen's nemesis writes its
own).  Calls are the kit's, made one at a time from the checking thread.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from refqueue.clock import ManualClock
from refqueue.conformance.contract import Backend, ClientCrashed, rejection_kind
from refqueue.conformance.probe import Failed
from refqueue.conformance.samples import STORE_META, UNIT_BYTES, default_store, model_limits, sample_tensors
from refqueue.conformance.session import CLOCK_START
from refqueue.model import actions as A
from refqueue.model.state import DONE, Config, ModelLease, State, initial_state, make_config

__all__ = ["FaultRun", "visibility_for"]

_REASON = "kit"  # the reason of every dead_letter the checks make


def visibility_for(intent_timeout: float) -> float:
    """The visibility timeout of a faults check's queue: longer than the time
    ``collect`` moves the clock by, so collecting intents never expires a lease."""
    return 2.0 * (intent_timeout + 1.0) + 30.0


class FaultRun:
    """One faults check: its queue's clients, store, clock, model and history."""

    def __init__(self, backend: Backend, check: str, *, max_deliveries: int | None = None) -> None:
        self.backend = backend
        self.check = check
        self.hooks = backend.faults
        self.caps = backend.capabilities
        self.intent_timeout = float(self.hooks.intent_timeout)
        self.vt = visibility_for(self.intent_timeout)
        self.store = backend.make_store() if backend.make_store is not None else default_store()
        self.clock = ManualClock(CLOCK_START)
        self.cfg: Config = make_config(
            visibility_timeout=self.vt,
            max_deliveries=max_deliveries,
            fifo=self.caps.fifo,
            epoch="queue",
            two_step_ack=True,
            **model_limits(self.store),
        )
        self.state: State = initial_state(CLOCK_START)
        self.config: dict[str, Any] = {"visibility_timeout": self.vt}
        if max_deliveries is not None:
            self.config["max_deliveries"] = max_deliveries
        self.clients: dict[str, Any] = {}
        self.dead: set[str] = set()  # clients that crashed: never used again
        self.history: list[str] = []
        self.refs: dict[str, Any] = {}  # sample id -> its latest ref
        self.leases: dict[str, tuple[Any, ModelLease]] = {}  # name -> (the backend's lease or None, the model's)
        self.steps = 0
        self._tags = itertools.count(1)
        self.clients["A"] = backend.factory(
            self.store, self.clock, on_pause=lambda h: None, on_resume=lambda h: None, **self.config
        )
        self.note("A: a fresh queue made by the factory (visibility timeout %g s)" % self.vt)

    # -- the history --------------------------------------------------------------------

    def note(self, line: str) -> None:
        self.history.append(line)

    def fail(self, problem: str) -> Failed:
        """The verdict ``problem``, with the history of the check so far."""
        lines = "\n".join(f"    {k + 1:>2}. {line}" for k, line in enumerate(self.history))
        return Failed(f"{problem}\n  the check's history (calls, answers and faults, in order):\n{lines}")

    # -- clients --------------------------------------------------------------------------

    def client(self, who: str) -> Any:
        if who in self.dead:
            raise AssertionError(f"the kit used client {who} after it crashed")  # a bug of the check
        return self.clients[who]

    def open(self, who: str, like: str = "A") -> Any:
        """Open client ``who`` of the same queue as ``like`` (``FaultHooks.open_client``)."""
        self.steps += 1
        try:
            client = self.hooks.open_client(self.clients[like], self.store)
        except Exception as exc:  # noqa: BLE001 - the hook's failure is the backend's
            raise self.fail(f"open_client of {like}'s queue raised {type(exc).__name__}: {exc}") from exc
        self.clients[who] = client
        self.note(f"{who}: opened (open_client of {like}'s queue)")
        return client

    # -- one call ---------------------------------------------------------------------------

    def _arm(self, who: str, fault: str | None) -> None:
        if fault == "lost":
            self.hooks.lose_next_reply(self.client(who))
            self.note(f"fault: the reply to {who}'s next state-changing call will be lost")
        elif fault == "crash":
            self.hooks.crash_after_commit(self.client(who))
            self.note(f"fault: {who} will crash right after its next completion commits")

    def _call(self, who: str, what: str, fn: Callable[[Any], Any], fault: str | None) -> tuple[bool, Any]:
        """Make ``fn(client)`` under ``fault``: ``(True, value)``, or ``(False, None)``
        when the fault struck as it must.  Any other outcome is a verdict."""
        self._arm(who, fault)
        client = self.client(who)
        self.steps += 1
        call = f"{who}: {what}"
        try:
            value = fn(client)
        except ClientCrashed as exc:
            if fault != "crash":
                raise self.fail(f"{call} raised ClientCrashed ({exc}) with no crash armed") from exc
            self.dead.add(who)
            self.note(f"{call} -> crashed (ClientCrashed): {who} is gone")
            return False, None
        except Exception as exc:  # noqa: BLE001 - judged below
            kind = rejection_kind(exc)
            if fault == "lost" and kind == "unavailable":
                self.note(f"{call} -> raised {type(exc).__name__} (kind 'unavailable'): its reply was lost")
                return False, None
            self.note(f"{call} -> raised {type(exc).__name__} (kind {kind!r}): {exc}")
            raise _Raised(exc, kind) from exc
        self.note(f"{call} -> {_show(value)}")
        if fault == "lost":
            raise self.fail(
                f"{call} returned {_show(value)} although its reply was lost (lose_next_reply); the caller cannot "
                f"have seen an answer: it must raise an error of kind 'unavailable'"
            )
        if fault == "crash":
            raise self.fail(f"{call} returned {_show(value)} although its client was to crash (crash_after_commit): "
                            f"it must raise ClientCrashed")
        return True, value

    def do(self, who: str, what: str, fn: Callable[[Any], Any], model: Callable[[State], A.Outcome], fault: str | None = None,
           compare: Callable[[Any, Any], str | None] | None = None, says: str | None = None) -> Any:
        """Make a call and step the model; the backend's answer, or None when a
        fault struck.  ``says`` words the model's answer for a message."""
        before = self.state
        out = model(self.state)
        try:
            answered, value = self._call(who, what, fn, fault)
        except _Raised as raised:
            if fault is None and out.error is not None and raised.kind == out.error.kind:
                return None
            want = f"it raises an error of kind {out.error.kind!r} ({out.error.message})" if out.error else (
                says or f"it returns {_show(out.value)}")
            raise self.fail(
                f"{who}: {what} raised {type(raised.exc).__name__} (kind {raised.kind!r}): {raised.exc}; the model "
                f"says {want}"
            ) from raised.exc
        if out.error is not None:
            if answered:
                raise self.fail(f"{who}: {what} returned {_show(value)}; the model says it raises ({out.error.kind!r}): "
                                f"{out.error.message}")
            raise self.fail(f"{who}: {what} is refused by the model ({out.error.message}); a fault cannot make it commit")
        self.state = out.state
        if answered:
            wrong = compare(value, out.value) if compare else (None if value == out.value else f"the model says {_show(out.value)}")
            if wrong is not None:
                raise self.fail(f"{who}: {what} returned {_show(value)}; {wrong}")
            self._scrubbed(before)  # the client that committed a completion scrubbed its data
        return value

    def _scrubbed(self, before: State) -> None:
        """The model's ``scrub_intent`` of every intent the last call recorded."""
        for sample_id in self.state.intents:
            if sample_id not in before.intents:
                self.state = A.scrub_intent(self.cfg, self.state, sample_id).state

    # -- the calls ----------------------------------------------------------------------------

    def store_put(self, sample_id: str, units: int = 1) -> Any:
        """``store.put`` of the kit's sample (not a queue call: never faulted)."""
        ref = self.store.put(sample_id, sample_tensors(units, next(self._tags)), num_tokens=units, **STORE_META)
        self.state = A.store_put(self.cfg, self.state, sample_id, units).state
        self.refs[sample_id] = ref
        self.note(f"store.put({sample_id!r}) ({units * UNIT_BYTES} bytes)")
        return ref

    def put(self, who: str, sample_id: str, *, fault: str | None = None, retry: bool = False, step: bool = False) -> None:
        """``put`` (``step``: one ``put_blocks_until_below`` step) of the sample's
        ref; ``retry``: the same ref again after its reply was lost."""
        ref = self.refs[sample_id]
        if step:
            what = f"put_blocks_until_below({sample_id!r}{', abort_when=lambda: True' if self.caps.abort_when else ''})"
            fn = (lambda q: q.put_blocks_until_below(ref, abort_when=lambda: True)) if self.caps.abort_when else (
                lambda q: q.put_blocks_until_below(ref))
        else:
            what, fn = f"put({sample_id!r})", (lambda q: q.put(ref))
        if retry:
            what += " again (a retry)"
            says = "it returns and changes nothing (put_retry: the queue knows the ref it enqueued)"
            self.do(who, what, fn, lambda s: A.put_retry(self.cfg, s, sample_id), fault, says=says,
                    compare=lambda got, want: None if got is None else f"put returns None; the model says {says}")
            return
        model = (lambda s: A.put_step(self.cfg, s, sample_id, self._units(sample_id))) if step else (
            lambda s: A.put(self.cfg, s, sample_id))
        self.do(who, what, fn, model, fault, says="it returns None",
                compare=lambda got, want: None if got is None else "put returns None")

    def acquire(self, who: str, name: str, *, fault: str | None = None) -> Any:
        """``acquire_nowait()`` (or ``acquire`` with a short interval): the lease, named ``name``."""
        fn = (lambda q: q.acquire_nowait()) if self.caps.acquire_nowait else (lambda q: q.acquire(poll_interval=0.001))
        what = "acquire_nowait()" if self.caps.acquire_nowait else "acquire(poll_interval=0.001)"
        out = A.acquire(self.cfg, self.state)
        value = self.do(who, what, fn, lambda s: out, fault, compare=self._same_lease)
        if out.value is not None:
            self.leases[name] = (value, out.value)
            if value is not None:
                self.note(f"   ({name} is lease {getattr(value, 'lease_id', '?')} of epoch {getattr(value, 'epoch', '?')!r})")
        return value

    def _same_lease(self, got: Any, want: ModelLease | None) -> str | None:
        if want is None:
            return None if got is None else "the model says None (nothing pending)"
        ref = getattr(got, "ref", None)
        if ref is None or ref.sample_id != want.sample_id:
            return f"the model hands out {want.sample_id!r}"
        if got.redelivery_count != want.redelivery_count:
            return f"the model says redelivery_count {want.redelivery_count}"
        deadline = A.lease_deadline(self.state, want)
        if self.caps.injected_clock and got.deadline != deadline:
            return f"the model says deadline {deadline}"
        return None

    def _lease_call(self, who: str, call: str, name: str, fault: str | None, *extra: Any) -> Any:
        lease, model_lease = self.leases[name]
        args = "".join(f", {a!r}" for a in extra)
        fn = {
            "ack": lambda q: q.ack(lease),
            "fail": lambda q: q.fail(lease),
            "extend": lambda q: q.extend(lease, *extra),
            "dead_letter": lambda q: q.dead_letter(lease, _REASON),
        }[call]
        model = {
            "ack": lambda s: A.ack(self.cfg, s, model_lease),
            "fail": lambda s: A.fail(self.cfg, s, model_lease),
            "extend": lambda s: A.extend(self.cfg, s, model_lease, *extra),
            "dead_letter": lambda s: A.dead_letter(self.cfg, s, model_lease, _REASON),
        }[call]
        if call == "dead_letter":
            args = f", {_REASON!r}"
        return self.do(who, f"{call}({name}{args})", fn, model, fault)

    def ack(self, who: str, name: str, *, fault: str | None = None) -> Any:
        return self._lease_call(who, "ack", name, fault)

    def fail_lease(self, who: str, name: str, *, fault: str | None = None) -> Any:
        return self._lease_call(who, "fail", name, fault)

    def extend(self, who: str, name: str, seconds: float, *, fault: str | None = None) -> Any:
        return self._lease_call(who, "extend", name, fault, seconds)

    def dead_letter(self, who: str, name: str, *, fault: str | None = None) -> Any:
        return self._lease_call(who, "dead_letter", name, fault)

    def reclaim(self, who: str, *, fault: str | None = None) -> Any:
        return self.do(who, "reclaim_expired()", lambda q: q.reclaim_expired(), lambda s: A.reclaim_expired(self.cfg, s), fault)

    def close(self, who: str, *, fault: str | None = None) -> Any:
        return self.do(who, "close()", lambda q: q.close(), lambda s: A.close(self.cfg, s), fault)

    def tick(self, seconds: float, why: str) -> None:
        self.clock.advance(seconds)
        self.state = A.tick(self.cfg, self.state, seconds).state
        self.note(f"time passes: the clock moves {seconds:g} s ({why})")

    def _units(self, sample_id: str) -> int:
        rec = A.rec_of(self.state, sample_id)
        return 0 if rec is None else rec.nbytes

    # -- what the clients and the store show ------------------------------------------------------

    def lease_state(self, who: str, name: str) -> None:
        """``lease_state(lease)``, where the backend has it, must be the model's."""
        client = self.client(who)
        if not callable(getattr(client, "lease_state", None)):
            return
        lease, model_lease = self.leases[name]
        want = A.lease_state(self.state, model_lease)
        self.steps += 1
        try:
            got = client.lease_state(lease)
        except Exception as exc:  # noqa: BLE001
            self.note(f"{who}: lease_state({name}) -> raised {type(exc).__name__}: {exc}")
            raise self.fail(f"{who}: lease_state({name}) raised {type(exc).__name__}: {exc}; the model says {want!r}") from exc
        self.note(f"{who}: lease_state({name}) -> {got!r}")
        if got != want:
            raise self.fail(f"{who}: lease_state({name}) is {got!r}; the model says {want!r}")

    def observe(self, who: str, after: str) -> None:
        """``who``'s counts, flags and dead letters, and the store's residency, against the model."""
        q = self.client(who)
        s = self.state
        wants = [
            ("pending_count()", lambda: q.pending_count(), A.pending_count(s)),
            ("outstanding_count()", lambda: q.outstanding_count(), A.outstanding_count(s)),
            ("is_closed", lambda: q.is_closed, s.closed),
            ("is_drained", lambda: q.is_drained, A.is_drained(s)),
        ]
        if self.caps.dead_letter or self.caps.max_deliveries:
            wants.append(("dead_letters()", lambda: [(d.ref.sample_id, d.reason) for d in q.dead_letters()], list(s.dead)))
        wrong = []
        for name, read, want in wants:
            self.steps += 1
            try:
                got = read()
            except Exception as exc:  # noqa: BLE001
                raise self.fail(f"after {after}, {who}: {name} raised {type(exc).__name__}: {exc}") from exc
            if got != want:
                wrong.append(f"{name} is {got!r}, the model says {want!r}")
        wrong += self._residency()
        self.note(f"{who}: the counts, flags and dead letters read" + (" (wrong)" if wrong else " as the model's"))
        if wrong:
            raise self.fail(f"after {after}, {who} and the store disagree with the model: " + "; ".join(wrong))

    def _residency(self) -> list[str]:
        """What is wrong with the store's residency, given the pending intents."""
        health = self.store.health()
        model = A.health(self.cfg, self.state)
        sizes = [A.rec_of(self.state, sid).nbytes for sid in self.state.intents]  # type: ignore[union-attr]
        for n in range(len(sizes) + 1):
            for subset in itertools.combinations(range(len(sizes)), n):
                units = model.resident_bytes - sum(sizes[k] for k in subset)
                if health.resident_bytes == units * UNIT_BYTES and health.sample_count == model.sample_count - n:
                    return []
        intents = ", ".join(repr(s) for s in self.state.intents) or "none"
        return [
            f"the store holds {health.resident_bytes} bytes in {health.sample_count} samples; the model's data is "
            f"{(model.resident_bytes - sum(sizes)) * UNIT_BYTES} bytes in {model.sample_count - len(sizes)} samples, "
            f"plus at most the data of the samples whose scrub intent is pending ({intents})"
        ]

    def collect(self, who: str) -> None:
        """Move the clock past ``intent_timeout`` and call ``reclaim_expired`` on
        ``who``: every pending intent is collected then (the model scrubs them)."""
        self.tick(self.intent_timeout + 1.0, f"past intent_timeout = {self.intent_timeout:g} s")
        self.reclaim(who)
        for sample_id in self.state.intents:
            self.state = A.scrub_intent(self.cfg, self.state, sample_id).state
        self.observe(who, f"reclaim_expired() with the clock past intent_timeout ({self.intent_timeout:g} s)")
        self.gone()

    def gone(self) -> None:
        """The store must hold nothing of a completed sample whose data the model scrubbed."""
        for sample_id, ref in self.refs.items():
            rec = A.rec_of(self.state, sample_id)
            if rec is None or rec.status not in DONE or rec.resident:
                continue
            self.steps += 1
            try:
                _, handle = self.store.get(ref)
            except Exception as exc:  # noqa: BLE001 - missing, as it must be
                if rejection_kind(exc) == "missing":
                    continue
                raise self.fail(f"store.get({sample_id!r}) raised {type(exc).__name__}: {exc}; expected SampleMissing") from exc
            self.store.release(handle)
            self.note(f"store.get({sample_id!r}) -> its data")
            raise self.fail(f"the store still holds the data of {sample_id!r}, completed and collected; nothing of it may remain")

    def close_all(self) -> None:
        """Wind down: stop reclaimers, close the clients that live and the store (best effort)."""
        for who, client in self.clients.items():
            if who in self.dead:
                continue
            for name in ("stop_reclaimer", "close"):
                fn = getattr(client, name, None)
                try:
                    if fn is not None:
                        fn()
                except Exception:  # noqa: BLE001 - winding down changes no verdict
                    pass
        try:
            self.store.close()
        except Exception:  # noqa: BLE001
            pass


class _Raised(Exception):
    """A call raised an error that no fault explains (judged against the model)."""

    def __init__(self, exc: BaseException, kind: str | None) -> None:
        super().__init__(str(exc))
        self.exc = exc
        self.kind = kind


def _show(value: Any) -> str:
    ref = getattr(value, "ref", None)
    if ref is not None:
        return f"a lease on {ref.sample_id!r} (redelivery {getattr(value, 'redelivery_count', '?')})"
    return repr(value)
