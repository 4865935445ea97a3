"""The ground the ``blocking`` phase's checks stand on: a fresh queue whose
calls run in their own threads, and a wakeup measured from the waking call's
return to the woken call's return.

``Attempt`` is one run of one check: the ``WaitQueue``s it made (each with
its store, a ``ManualClock`` at 100.0 and the kit's ``on_pause``/``on_resume``,
which record ``events`` and run the hook a check installs), wound down
after it.  ``WaitQueue.start`` runs a call in a daemon thread (a ``Call``);
``ask`` makes a call for the checking thread and waits for it at most
``give_up`` seconds (``GIVE_UP`` bounds, at least ``MIN_GIVE_UP``), so a hung
backend never hangs the kit; ``stays_blocked`` requires a call to wait
``SETTLE`` seconds (it reaches its wait meanwhile; an early return is a
failure of its own); ``waking`` makes a waking call after the attempt's next
random offset (``refqueue.conformance.timing``: the timing model, and the
probability with which a backend that polls escapes it); ``woken`` measures
the latency of a wakeup (every one is kept in ``latencies``) and raises
``Late`` past the bound (the check is then measured again on a fresh queue at
the same offsets, up to ``ATTEMPTS`` times) or ``Failed`` for a call never
woken.  A check's
verdict is ``Failed`` with the message; ``CallbackError`` is what the kit's
callbacks raise on purpose.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from refqueue.clock import ManualClock
from refqueue.conformance.contract import Backend
from refqueue.conformance.probe import observed
from refqueue.conformance.samples import STORE_META, UNIT_BYTES, default_store, sample_tensors
from refqueue.conformance.timing import Offsets
from refqueue.conformance.session import backend_seconds, open_clients

__all__ = [
    "ATTEMPTS", "GIVE_UP", "LONG_POLL", "MIN_GIVE_UP", "SETTLE", "VISIBILITY", "Attempt", "Call", "CallbackError",
    "Failed", "Late", "WaitQueue", "blocked_consumer", "blocked_producer", "expect_lease", "leased", "no_error",
    "outcome", "show",
]  # fmt: skip

ATTEMPTS = 3  # measurements of a wakeup that came late before it fails
LONG_POLL = 30.0  # the poll interval of every blocked call: a backend that waits it out is late
SETTLE = 0.05  # seconds a blocked call must stay blocked before it is woken (it reaches its wait meanwhile)
GIVE_UP = 20  # a call still blocked this many bounds (at least MIN_GIVE_UP s) after its waker is hung
MIN_GIVE_UP = 1.0
VISIBILITY = 30.0  # seconds; the injected clock moves past it where a lease must expire


class Failed(Exception):
    """A check's verdict: the backend did something the API forbids."""


class Late(Exception):
    """A wakeup came, later than the bound (measured again before it fails)."""

    def __init__(self, message: str, latency: float) -> None:
        super().__init__(message)
        self.latency = latency


class CallbackError(Exception):
    """Raised by the kit's callbacks on purpose (``callback-errors-propagate``)."""


class Call:
    """One backend call running in its own daemon thread; ``done`` is set when
    it returned or raised, and ``at`` is ``time.monotonic()`` at that moment."""

    def __init__(self, check: str, what: str, fn: Callable[[], Any]) -> None:
        self.what = what
        self.started = time.monotonic()
        self.done = threading.Event()
        self.at = 0.0
        self.value: Any = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                self.value = fn()
            except BaseException as exc:  # noqa: BLE001 - reported by the check that waits on it
                self.error = exc
            finally:
                self.at = time.monotonic()
                self.done.set()

        self.thread = threading.Thread(target=run, name=f"refqueue-blocking-{check}", daemon=True)
        self.thread.start()


class WaitQueue:
    """A fresh queue of the backend, its store and clock, and the kit's callbacks.

    ``on_pause``/``on_resume`` append to ``events`` and then run the hook the
    check installed (``pause_hook``/``resume_hook``), if any."""

    def __init__(
        self,
        backend: Backend,
        check: str,
        bound: float,
        *,
        watermarks: bool | tuple[int, int],
        visibility: float,
        offsets: Offsets | None = None,
        max_deliveries: int | None = None,
    ) -> None:
        self.check = check
        self.bound = bound
        self.offsets = offsets  # None: a waking call is made at once
        self.latencies: list[float] = []  # every wakeup measured by ``woken``, on time or late
        self.waking_calls: dict[str, int] = {}  # the blocked call each waking call must wake -> how many
        self.give_up = max(GIVE_UP * bound, MIN_GIVE_UP)
        self.clock = ManualClock(100.0)
        self.store = backend.make_store() if backend.make_store is not None else default_store()
        self.events: list[str] = []
        self.pause_hook: Callable[[Any], None] | None = None
        self.resume_hook: Callable[[Any], None] | None = None
        self.steps = 0
        self.calls: list[Call] = []
        config: dict[str, Any] = {"visibility_timeout": backend_seconds(backend, visibility)}
        if max_deliveries is not None:
            config["max_deliveries"] = max_deliveries
        if watermarks:
            high, low = (2, 1) if watermarks is True else watermarks  # in units
            config.update(high_watermark_bytes=high * UNIT_BYTES, low_watermark_bytes=low * UNIT_BYTES)
        self.q = backend.factory(self.store, self.clock, **config, on_pause=self._on_pause, on_resume=self._on_resume)
        # The waking calls are made through ``w``: another client of the queue
        # when the backend opens more (a waiter must be woken by any client's
        # call, not only its own), else the queue itself.
        self.w = open_clients(backend, self.q, self.store, self.clock)[-1]

    def _on_pause(self, health: Any) -> None:
        self.events.append("pause")
        if self.pause_hook is not None:
            self.pause_hook(health)

    def _on_resume(self, health: Any) -> None:
        self.events.append("resume")
        if self.resume_hook is not None:
            self.resume_hook(health)

    def store_put(self, sample_id: str, units: int) -> Any:
        self.steps += 1
        return self.store.put(sample_id, sample_tensors(units, 1), num_tokens=units, **STORE_META)

    def start(self, what: str, fn: Callable[[], Any]) -> Call:
        """``fn`` in its own thread (the call that is to block)."""
        self.steps += 1
        call = Call(self.check, what, fn)
        self.calls.append(call)
        return call

    def ask(self, what: str, fn: Callable[[], Any]) -> Any:
        """``fn()`` made for the checking thread and waited for at most ``give_up``
        seconds (a hung backend cannot hang the kit); its value, or ``Failed``."""
        call = self.start(what, fn)
        if not call.done.wait(self.give_up):
            raise Failed(f"{what} hung: it did not return within {self.give_up} s ({self.observed()})")
        if call.error is not None:
            raise Failed(f"{what} raised {type(call.error).__name__}: {call.error}")
        return call.value

    def ask_at(self, what: str, fn: Callable[[], Any]) -> tuple[Any, float]:
        """``ask``, and the ``time.monotonic()`` at which ``fn`` returned."""
        value, at = self.ask(what, lambda: (fn(), time.monotonic()))
        return value, at

    def after_offset(self, wakes: str) -> float:
        """Sleep the attempt's next random offset (none without ``offsets``) before a
        waking call that must wake a blocked ``wakes`` (``"acquire"``,
        ``"put_blocks_until_below"``); the offset.  A timing design, not a
        synchronisation: the waiter is already known to be blocked (``stays_blocked``)."""
        self.waking_calls[wakes] = self.waking_calls.get(wakes, 0) + 1
        if self.offsets is None:
            return 0.0
        offset = self.offsets.next()
        time.sleep(offset)
        return offset

    def waking(self, what: str, fn: Callable[[], Any], *, wakes: str) -> tuple[Any, float]:
        """``ask_at`` of the waking call ``fn`` after the next random offset (``after_offset``)."""
        self.after_offset(wakes)
        return self.ask_at(what, fn)

    def stays_blocked(self, call: Call, why: str) -> None:
        """``call`` must not return within ``SETTLE`` seconds (``why`` says why it must wait)."""
        if call.done.wait(SETTLE):
            got = f"raised {type(call.error).__name__}: {call.error}" if call.error else f"returned {show(call.value)}"
            raise Failed(f"{call.what} {got} after {call.at - call.started:.3f} s; {why}")

    def woken(self, call: Call, by: str, at: float) -> float:
        """Wait (bounded) for ``call`` to end after the waking call ``by`` returned at
        ``at``; the latency, or ``Late``/``Failed``."""
        if not call.done.wait(self.give_up):
            raise Failed(
                f"{call.what} was still blocked {self.give_up} s after {by} returned (bound {self.bound} s; "
                f"{self.observed()}): it was not woken, and waits out its poll interval of {LONG_POLL} s"
            )
        latency = max(0.0, call.at - at)
        self.latencies.append(latency)
        if latency > self.bound:
            raise Late(
                f"{call.what} returned {latency:.3f} s after {by} returned, past the bound of {self.bound} s "
                f"(in each of {ATTEMPTS} attempts at the same offset); {by} must wake it at once",
                latency,
            )
        return latency

    def observed(self) -> str:
        """The queue's counts, for a message; never raises, never waits long on a stuck lock."""
        reads = (
            ("pending", self.q.pending_count),
            ("outstanding", self.q.outstanding_count),
            ("paused", lambda: self.q.is_paused),
            ("closed", lambda: self.q.is_closed),
        )
        return observed(reads, within=0.5, hung="the next read hung", name=f"refqueue-blocking-{self.check}-observer")

    def finish(self) -> None:
        """Close the queue and the store (best effort, bounded); stop a reclaimer."""
        def wind_down() -> None:
            for fn in (getattr(self.q, "stop_reclaimer", None), self.q.close, self.store.close):
                if fn is None:
                    continue
                try:
                    fn()
                except Exception:  # noqa: BLE001 - winding down changes no verdict
                    pass

        closer = threading.Thread(target=wind_down, name=f"refqueue-blocking-{self.check}-close", daemon=True)
        closer.start()
        closer.join(self.give_up)


class Attempt:
    """One run of one check: the queues it made (each wound down after it)."""

    def __init__(self, backend: Backend, check: str, bound: float, offsets: Offsets | None = None) -> None:
        self.backend = backend
        self.check = check
        self.bound = bound
        self.offsets = offsets  # shared by the attempt's queues: one stream of offsets per trial
        self.queues: list[WaitQueue] = []

    def queue(
        self, *, watermarks: bool | tuple[int, int], visibility: float, max_deliveries: int | None = None
    ) -> WaitQueue:
        qq = WaitQueue(
            self.backend, self.check, self.bound, watermarks=watermarks, visibility=visibility, offsets=self.offsets,
            max_deliveries=max_deliveries,
        )
        self.queues.append(qq)
        return qq

    @property
    def steps(self) -> int:
        return sum(qq.steps for qq in self.queues)

    @property
    def latencies(self) -> list[float]:
        """Every wakeup the attempt measured, in order."""
        return [t for qq in self.queues for t in qq.latencies]

    @property
    def waking_calls(self) -> dict[str, int]:
        """How many waking calls the attempt made, by the call they had to wake."""
        total: dict[str, int] = {}
        for qq in self.queues:
            for wakes, n in qq.waking_calls.items():
                total[wakes] = total.get(wakes, 0) + n
        return total

    def finish(self) -> None:
        for qq in self.queues:
            qq.finish()


def show(value: Any) -> str:
    ref = getattr(value, "ref", None)
    if ref is not None:
        return f"a lease on {ref.sample_id!r}"
    return repr(value)


def expect_lease(value: Any, sample_id: str, redelivery: int, what: str) -> None:
    ref = getattr(value, "ref", None)
    if ref is None or ref.sample_id != sample_id:
        raise Failed(f"{what} returned {show(value)}; it should hand out {sample_id!r}")
    if getattr(value, "redelivery_count", None) != redelivery:
        raise Failed(f"{what} handed out {sample_id!r} with redelivery_count {value.redelivery_count}, not {redelivery}")


def blocked_consumer(
    qq: WaitQueue, who: str = "", why: str = "with nothing pending and the queue open it must wait"
) -> Call:
    """A consumer (``who`` names it among several) blocked in ``acquire(poll_interval=30)``
    (``why`` says why it must wait)."""
    consumer = qq.start(f"{who}acquire(poll_interval={LONG_POLL})", lambda: qq.q.acquire(poll_interval=LONG_POLL))
    qq.stays_blocked(consumer, why)
    return consumer


def blocked_producer(
    qq: WaitQueue, ref: Any, why: str, *, abort_when: Callable[[], bool] | None = None, poll: float = LONG_POLL
) -> Call:
    """A producer blocked in ``put_blocks_until_below(ref, poll_interval=poll)``, with
    ``abort_when`` or without (``why`` says why it must wait)."""
    name = ref.sample_id
    if abort_when is None:
        what = f"put_blocks_until_below({name!r}, poll_interval={poll}) without abort_when"
        producer = qq.start(what, lambda: qq.q.put_blocks_until_below(ref, poll_interval=poll))
    else:
        what = f"put_blocks_until_below({name!r}, poll_interval={poll}, abort_when=...)"
        producer = qq.start(what, lambda: qq.q.put_blocks_until_below(ref, poll_interval=poll, abort_when=abort_when))
    qq.stays_blocked(producer, why)
    return producer


def outcome(call: Call) -> str:
    """How ``call`` ended, for a message."""
    return f"raised {type(call.error).__name__}: {call.error}" if call.error else "returned normally"


def leased(qq: WaitQueue, sample_id: str) -> Any:
    """Put ``sample_id`` and lease it (an ``acquire`` that finds it pending)."""
    ref = qq.store_put(sample_id, 1)
    qq.ask(f"put({sample_id!r})", lambda: qq.q.put(ref))
    lease = qq.ask("acquire()", lambda: qq.q.acquire(poll_interval=qq.bound))
    expect_lease(lease, sample_id, 0, "acquire() with one ref pending")
    return lease


def no_error(call: Call) -> None:
    if call.error is not None:
        raise Failed(f"{call.what} raised {type(call.error).__name__}: {call.error}")
