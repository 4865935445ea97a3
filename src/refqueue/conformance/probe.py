"""One queue of a backend on a fresh store, its calls made and judged one at a
time: the ground the ``calls`` and ``faults`` phases' checks stand on.

``Probe(backend)`` makes a queue with the factory on the kit's store (or the
backend's own, ``make_store``) and a ``ManualClock`` at 100.0.  ``call``
makes a call that must return (any exception is a ``Failed`` naming the
call), ``refuses`` one that must raise an error of a rejection kind,
``expect_counts`` compares ``pending_count()``, ``outstanding_count()`` and
the store's resident bytes.  ``bounded`` runs a call that must return at
once in a daemon thread joined with a timeout.  ``ScrubSwitch`` is a store
that forwards every call to another and whose ``scrub`` fails on demand.

A check raises ``Failed`` with its verdict, or ``NotRun`` when it cannot run
on this backend (the reason).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from refqueue.clock import ManualClock
from refqueue.conformance.contract import Backend, rejection_kind
from refqueue.conformance.samples import STORE_META, default_store, sample_tensors
from refqueue.refs import SampleRef
from refqueue.store import FeatureStore

__all__ = ["WITHIN", "Failed", "NotRun", "Probe", "ScrubSwitch", "bounded", "observed", "scrub_switch_probe"]

WITHIN = 5.0  # seconds a call that must return at once may take before it counts as hung


class Failed(Exception):
    """A check's verdict: the backend did something docs/API.md forbids (the message says what)."""


class NotRun(Exception):
    """The check cannot run on this backend (its own store is too small); the reason."""


class ScrubSwitch(FeatureStore):
    """A store that forwards every call to ``inner``, and whose ``scrub``
    raises ``OSError`` while ``failing`` is set (a disk that went away), its
    ``health`` while ``health_failing`` is."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.failing = False
        self.scrubs_refused = 0
        self.health_failing = False
        self.health_refused = 0
        self.refused = threading.Event()  # set at the first scrub refused

    def __getattr__(self, name: str) -> Any:
        # what the backend's own store offers beyond FeatureStore (a hook its queue calls) reaches it too
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def uri(self) -> str:
        return self.inner.uri

    @property
    def high_watermark_bytes(self) -> int | None:
        return self.inner.high_watermark_bytes

    @property
    def low_watermark_bytes(self) -> int | None:
        return self.inner.low_watermark_bytes

    @property
    def capacity_bytes(self) -> int | None:
        return self.inner.capacity_bytes

    def put(self, sample_id: str, tensors: Any, **meta: Any) -> SampleRef:
        return self.inner.put(sample_id, tensors, **meta)

    def get(self, ref: SampleRef, device: Any = None) -> Any:
        return self.inner.get(ref, device)

    def release(self, handle: Any) -> None:
        self.inner.release(handle)

    def scrub(self, ref: SampleRef) -> bool:
        if self.failing:
            self.scrubs_refused += 1
            self.refused.set()
            raise OSError(f"scrub({ref.sample_id!r}) failed on demand (the conformance kit's failing store)")
        return self.inner.scrub(ref)

    def gc(self) -> int:
        return self.inner.gc()

    def health(self) -> Any:
        if self.health_failing:
            self.health_refused += 1
            raise OSError("health() failed on demand (the conformance kit's failing store)")
        return self.inner.health()

    def close(self) -> None:
        self.inner.close()


class Probe:
    """One queue of the backend on its own (or a given) store, with a manual clock."""

    def __init__(self, backend: Backend, *, store: Any = None, clock: ManualClock | None = None, **config: Any) -> None:
        self.backend = backend
        self.caps = backend.capabilities
        self.own_store = store is None
        if store is None:
            store = backend.make_store() if backend.make_store is not None else default_store()
        self.store = store
        self.clock = clock or ManualClock(100.0)
        self.calls = 0
        config.setdefault("visibility_timeout", 30.0)
        config.setdefault("on_pause", lambda h: None)  # a check may pass its own callbacks
        config.setdefault("on_resume", lambda h: None)
        self.q = backend.factory(store, self.clock, **config)
        self._tags = 0

    def call(self, what: str, fn: Callable[[], Any]) -> Any:
        self.calls += 1
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - any raise of a call that must return is a failure
            raise Failed(f"{what} raised {type(exc).__name__}: {exc}") from exc

    def refuses(self, what: str, fn: Callable[[], Any], kind: str) -> None:
        self.calls += 1
        try:
            value = fn()
        except Exception as exc:  # noqa: BLE001 - classified below
            got = rejection_kind(exc)
            if got != kind:
                raise Failed(f"{what} raised {type(exc).__name__} (kind {got!r}): {exc}; docs/API.md says {kind!r}") from exc
            return
        raise Failed(f"{what} returned {value!r}; docs/API.md says it raises ({kind!r})")

    def refuses_replay(self, sample_id: str, what: str, client: Any = None) -> None:
        """``sample_id`` stored again (as its producer would) and put through ``client``
        (default: this probe's queue) is refused as a replay (``what`` names the call); the
        data stored for it is scrubbed after."""
        q = self.q if client is None else client
        again = self.ref(sample_id)
        try:
            self.refuses(what, lambda: q.put(again), "replay")
        finally:
            self.store.scrub(again)

    def ref(self, sample_id: str, meta: Mapping[str, Any] = STORE_META) -> Any:
        """A one-unit sample stored under ``sample_id`` with ``meta`` (FeatureStore.put's keywords)."""
        self._tags += 1
        return self.call(
            f"store.put({sample_id!r})" if meta is STORE_META else f"store.put({sample_id!r}, {dict(meta)})",
            lambda: self.store.put(sample_id, sample_tensors(1, self._tags), num_tokens=1, **meta),
        )

    def leased(self, sample_id: str, meta: Mapping[str, Any] = STORE_META) -> Any:
        ref = self.ref(sample_id, meta)
        self.call(f"put({sample_id!r})", lambda: self.q.put(ref))
        lease = self.acquire(f"acquire() with {sample_id!r} pending")
        if lease is None or lease.ref.sample_id != sample_id:
            raise Failed(f"acquire() with only {sample_id!r} pending returned {lease!r}")
        return lease

    def acquire(self, what: str, client: Any = None) -> Any:
        """One acquire that does not wait, through ``client`` (default: this probe's queue)."""
        q = self.q if client is None else client
        if self.caps.acquire_nowait:
            return self.call(what, q.acquire_nowait)
        return self.call(what, lambda: q.acquire(poll_interval=0.001))

    def counts(self) -> tuple[int, int, int]:
        health = self.store.health()
        return self.q.pending_count(), self.q.outstanding_count(), health.resident_bytes

    def expect_counts(self, want: tuple[int, int, int], after: str) -> None:
        got = self.counts()
        if got != want:
            names = ("pending_count()", "outstanding_count()", "health().resident_bytes")
            wrong = [f"{n} is {g!r}, expected {w!r}" for n, g, w in zip(names, got, want) if g != w]
            raise Failed(f"after {after}: " + "; ".join(wrong))

    def close(self) -> None:
        if self.caps.reclaimer:
            try:
                self.q.stop_reclaimer()
            except Exception:  # noqa: BLE001 - a check already judged the reclaimer
                pass
        if self.own_store:
            try:
                self.store.close()
            except Exception:  # noqa: BLE001
                pass


def scrub_switch_probe(backend: Backend, **config: Any) -> tuple[Probe, ScrubSwitch]:
    """A ``Probe`` whose store is the backend's own (or the kit's) behind a
    ``ScrubSwitch``: the queue and the switch a failing-scrub check drives.
    The probe's ``close`` closes the store."""
    inner = backend.make_store() if backend.make_store is not None else default_store()
    switch = ScrubSwitch(inner)
    qq = Probe(backend, store=switch, **config)
    qq.own_store = True  # (the switch's close closes the store under it)
    return qq, switch


def raises_while_scrubs_fail(qq: Probe, store: ScrubSwitch, what: str, fn: Callable[[], Any]) -> None:
    """``fn()`` (``what`` names it) made while ``store``'s scrub raises: it must
    raise too (the store's failure reaching the caller), else Failed."""
    store.failing = True
    qq.calls += 1
    try:
        value = fn()
    except Exception:  # noqa: BLE001 - the store's failure reached the caller: as documented
        return
    finally:
        store.failing = False
    raise Failed(f"{what} returned {value!r} although the store's scrub raised; it must raise and commit nothing")


def bounded(what: str, fn: Callable[[], Any], within: float = WITHIN) -> Any:
    """``fn()`` in a daemon thread joined with a timeout: its value, or Failed."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - reported below
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name=f"refqueue-calls-{what}", daemon=True).start()
    if not done.wait(within):
        raise Failed(f"{what} had not returned after {within} s; it must return at once")
    if "error" in box:
        error = box["error"]
        raise Failed(f"{what} raised {type(error).__name__}: {error}") from error
    return box.get("value")


def observed(reads: Sequence[tuple[str, Callable[[], Any]]], *, within: float, hung: str, name: str) -> str:
    """``"pending 1, outstanding 0, ..."``: each read that answers, for a
    failure message.  Never raises (a read that raises is left out) and never
    waits more than ``within`` seconds on a backend that holds its lock for
    ever: the reads run in a daemon thread named ``name``, and ``hung`` ends
    the message when it has not finished."""
    parts: list[str] = []

    def read_all() -> None:
        for what, read in reads:
            try:
                parts.append(f"{what} {read()}")
            except Exception:  # noqa: BLE001 - a missing observable is not the message's concern
                continue

    reader = threading.Thread(target=read_all, name=name, daemon=True)
    reader.start()
    reader.join(within)
    return ", ".join([*parts, hung] if reader.is_alive() else parts)
