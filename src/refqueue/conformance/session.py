"""The backend side of a conformance run: one queue a factory made, its store
and its clock, and the few helpers a replayed trace needs.

The lockstep harness drives a ``Session``; a counterexample printed by
``refqueue certify`` builds one too (``Session.start("module:factory", ...)``)
and then calls the queue directly, so the printed test reads like the calls
it replays.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from refqueue.clock import ManualClock
from refqueue.conformance.contract import CLIENT_SKEW, Backend, load_backend, rejection_kind
from refqueue.conformance.samples import STORE_META, default_store, same_tensors, sample_tensors

__all__ = ["Session", "SkewedClock", "REAL_CLOCK_SCALE", "backend_seconds", "CLOCK_START", "OTHER_STORE_URI", "client_skew", "open_clients"]

# Without an injected clock the kit never lets time pass and compares no
# deadline, but the backend's own clock runs: every duration the kit hands such
# a backend (the visibility timeout, extends) is this many times longer, so no
# lease of a run expires by itself however long the run takes (1 s: an hour).
REAL_CLOCK_SCALE = 3600.0
CLOCK_START = 100.0  # the clock starts here, not at 0, so a deadline is never just the timeout
OTHER_STORE_URI = "other://conformance-elsewhere"  # names a store no queue is bound to


class SkewedClock:
    """The clock of another machine: ``base``'s reading plus ``skew`` seconds.
    Only the kit moves time (on ``base``); a client never advances it."""

    def __init__(self, base: Any, skew: float) -> None:
        self.base = base
        self.skew = skew

    def now(self) -> float:
        return float(self.base.now()) + self.skew

    def __repr__(self) -> str:
        return f"SkewedClock({self.base!r}, skew={self.skew:+g})"


def backend_seconds(backend: Backend, seconds: Any) -> Any:
    """``seconds`` of the kit's clock as handed to ``backend``: unchanged on an
    injected clock; on the backend's own clock a finite positive number of
    seconds is ``REAL_CLOCK_SCALE`` times longer (anything else, a value the
    call must refuse, is passed as it is)."""
    if backend.capabilities.injected_clock or isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return seconds
    if not 0 < seconds < float("inf"):
        return seconds
    return float(seconds) * REAL_CLOCK_SCALE


def client_skew(index: int) -> float:
    """How far the clock of client ``index`` (1, 2, ...) is off the factory's:
    ``+CLIENT_SKEW``, ``-CLIENT_SKEW``, ``+2 * CLIENT_SKEW``, ..."""
    step = (index + 1) // 2
    return step * CLIENT_SKEW if index % 2 else -step * CLIENT_SKEW


def open_clients(backend: Backend, queue: Any, store: Any, clock: Any, count: int | None = None) -> list[Any]:
    """``queue`` and the other clients of it the kit drives (``backend.clients``
    in all, or ``count``): client ``i`` is ``backend.open_client(queue, store,
    SkewedClock(clock, client_skew(i)))``."""
    count = backend.clients if count is None else count
    clients = [queue]
    for index in range(1, count):
        if backend.open_client is None:
            raise ValueError(f"{backend.target} has no open_client: it can be driven through one client only")
        clients.append(backend.open_client(queue, store, SkewedClock(clock, client_skew(index))))
    return clients


class Session:
    """One backend instance under test.

    ``config`` is what the factory receives (see ``refqueue.conformance.contract``);
    the session adds ``on_pause``/``on_resume``, which record
    ``(event, resident_bytes)`` in ``events``.  ``sizes`` gives each sample
    id its size in units; ``store`` the default store's caps and watermarks
    in units (ignored when the backend brings its own ``make_store``); the
    clock starts at ``clock_start``.
    """

    def __init__(
        self,
        backend: Backend,
        config: Mapping[str, Any],
        *,
        sizes: Mapping[str, int],
        store: Mapping[str, int | None] | None = None,
        clock_start: float = CLOCK_START,
        clients: int | None = None,
    ) -> None:
        self.backend = backend
        self.sizes = dict(sizes)
        self.config = dict(config)
        if "visibility_timeout" in self.config:
            self.config["visibility_timeout"] = backend_seconds(backend, self.config["visibility_timeout"])
        self.store_config = dict(store or {})
        self.clock = ManualClock(clock_start)
        self.store = backend.make_store() if backend.make_store is not None else default_store(**self.store_config)
        self.events: list[tuple[str, Any]] = []
        self.written: dict[str, dict[str, Any]] = {}  # sample id -> tensors of its last successful store put
        self._tags = itertools.count(1)
        self._other: Any = None  # (store, queue) of the second instance, made on first use
        self._foreign = itertools.count(1)
        self.lease_keys: set[tuple[Any, Any]] = set()  # (epoch, lease_id) of every lease seen (expect_lease)
        self.queue = backend.factory(
            self.store, self.clock, **self.config, on_pause=self._on_pause, on_resume=self._on_resume
        )
        # The queue's clients: the factory's, then those open_client opened (on
        # skewed clocks); a run spreads its calls over them.
        self.clients = open_clients(backend, self.queue, self.store, self.clock, clients)

    def seconds(self, seconds: Any) -> Any:
        """``seconds`` of the kit's clock as this backend is handed them (``backend_seconds``)."""
        return backend_seconds(self.backend, seconds)

    def client(self, index: int) -> Any:
        """Client ``index`` of the queue (0: the factory's queue)."""
        return self.clients[index]

    @classmethod
    def start(
        cls,
        target: str | Backend,
        *,
        sizes: Mapping[str, int],
        store: Mapping[str, int | None] | None = None,
        clock_start: float = CLOCK_START,
        clients: int | None = None,
        **config: Any,
    ) -> Session:
        """A session of the backend ``"module:factory"`` (or a loaded ``Backend``:
        what a printed counterexample passes, having imported it at module level)."""
        backend = target if isinstance(target, Backend) else load_backend(target)
        return cls(backend, config, sizes=sizes, store=store, clock_start=clock_start, clients=clients)

    def _on_pause(self, health: Any) -> None:
        self.events.append(("pause", getattr(health, "resident_bytes", health)))

    def _on_resume(self, health: Any) -> None:
        self.events.append(("resume", getattr(health, "resident_bytes", health)))

    # -- the producer's data ------------------------------------------------------

    def store_put(self, sample_id: str) -> Any:
        """``store.put`` of the kit's sample for ``sample_id`` (size from ``sizes``)."""
        units = self.sizes[sample_id]
        tensors = sample_tensors(units, next(self._tags))
        ref = self.store.put(sample_id, tensors, num_tokens=units, **STORE_META)
        self.written[sample_id] = tensors
        return ref

    def other_store_ref(self, ref: Any) -> Any:
        """``ref`` as if it named another store (a queue must refuse it)."""
        return dataclasses.replace(ref, store_uri=OTHER_STORE_URI)

    def foreign_lease(self) -> Any:
        """A live lease of a second queue the same factory made (another epoch)."""
        if self._other is None:
            make_store = self.backend.make_store
            store = make_store() if make_store is not None else default_store(**self.store_config)
            queue = self.backend.factory(store, self.clock, **self.config)
            self._other = (store, queue)
        store, queue = self._other
        sample_id = f"foreign{next(self._foreign)}"
        ref = store.put(sample_id, sample_tensors(1, 0), num_tokens=1, **STORE_META)
        queue.put(ref)
        nowait = self.backend.capabilities.acquire_nowait
        lease = queue.acquire_nowait() if nowait else queue.acquire(poll_interval=0.001)
        if lease is None:
            raise AssertionError(f"the second queue made by {self.backend.target} put {sample_id!r} but acquire returned None")
        self.lease_keys.add((lease.epoch, lease.lease_id))
        return lease

    def close(self) -> None:
        """Close the stores this session made (a store that cannot close changes no verdict)."""
        stores = [self.store] if self._other is None else [self.store, self._other[0]]
        for store in stores:
            try:
                store.close()
            except Exception:  # noqa: BLE001
                pass

    # -- assertions a printed counterexample uses -------------------------------------

    @contextlib.contextmanager
    def rejects(self, kind: str) -> Iterator[None]:
        """The block must raise an error of the model's rejection ``kind``."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - any exception is classified below
            got = rejection_kind(exc)
            if got != kind:
                raise AssertionError(
                    f"raised {type(exc).__name__} (kind {got!r}): {exc}; the model rejects the call as {kind!r}"
                ) from exc
            return
        raise AssertionError(f"the call returned normally; the model rejects it as {kind!r}")

    def expect_lease(self, lease: Any, *, ref: Any, redelivery_count: int, deadline: float | None) -> None:
        """``lease`` is a fresh lease on ``ref`` with the model's count and deadline:
        of the queue's epoch, with an ``(epoch, lease_id)`` no earlier lease had."""
        if lease is None:
            raise AssertionError(f"acquire returned None; the model hands out {ref.sample_id!r}")
        key = (lease.epoch, lease.lease_id)
        assert lease.epoch == self.queue.epoch, (
            f"lease.epoch is {lease.epoch!r}; the queue's epoch is {self.queue.epoch!r}"
        )
        assert key not in self.lease_keys, f"the lease has the (epoch, lease_id) {key!r} of an earlier lease"
        self.lease_keys.add(key)
        assert lease.ref == ref, f"lease.ref is {lease.ref.sample_id!r}, the model hands out {ref.sample_id!r}"
        assert lease.redelivery_count == redelivery_count, (
            f"lease.redelivery_count is {lease.redelivery_count}, the model says {redelivery_count}"
        )
        if deadline is not None:
            assert lease.deadline == deadline, f"lease.deadline is {lease.deadline!r}, the model says {deadline!r}"

    def expect_data(self, tensors: Mapping[str, Any], sample_id: str, written: Mapping[str, Any] | None = None) -> None:
        """``tensors`` are what the last store put of ``sample_id`` wrote (or ``written``)."""
        problem = same_tensors(tensors, self.written[sample_id] if written is None else written)
        assert problem is None, f"get({sample_id!r}): {problem}"

    def expect(
        self,
        *,
        pending: int,
        outstanding: int,
        closed: bool,
        drained: bool,
        paused: bool | None,
        dead: list[tuple[str, str, int]] | None,
        resident_bytes: int,
        sample_count: int,
        high_watermark_hit: bool,
        low_watermark_hit: bool,
        events: list[tuple[str, int]],
    ) -> None:
        """The queue's and the store's observables are the model's."""
        q = self.queue
        health = self.store.health()
        got = {
            "pending_count()": q.pending_count(),
            "outstanding_count()": q.outstanding_count(),
            "is_closed": q.is_closed,
            "is_drained": q.is_drained,
            "health().resident_bytes": health.resident_bytes,
            "health().sample_count": health.sample_count,
            "health().high_watermark_hit": health.high_watermark_hit,
            "health().low_watermark_hit": health.low_watermark_hit,
            "on_pause/on_resume calls": self.events,
        }
        want: dict[str, Any] = {
            "pending_count()": pending,
            "outstanding_count()": outstanding,
            "is_closed": closed,
            "is_drained": drained,
            "health().resident_bytes": resident_bytes,
            "health().sample_count": sample_count,
            "health().high_watermark_hit": high_watermark_hit,
            "health().low_watermark_hit": low_watermark_hit,
            "on_pause/on_resume calls": events,
        }
        if paused is not None:
            got["is_paused"], want["is_paused"] = q.is_paused, paused
        if dead is not None:
            got["dead_letters()"] = [(d.ref.sample_id, d.reason, d.deliveries) for d in q.dead_letters()]
            want["dead_letters()"] = dead
        wrong = [f"{k} is {got[k]!r}, the model says {want[k]!r}" for k in want if got[k] != want[k]]
        assert not wrong, "; ".join(wrong)
