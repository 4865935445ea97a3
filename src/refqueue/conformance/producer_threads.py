"""One check of the ``producers`` phase as it runs: a queue, the producer and
consumer threads it starts, and the bookkeeping of what they were admitted.

``ThreadedCheck`` keeps, under one lock, the calls made, the blocking puts
and the slowest, the bytes of admitted work (pending + leased: a lower bound
of the queue's, since a consumer subtracts a sample's bytes *before* its ack
and a producer adds them *after* its put returned) and the largest residency
seen; the first failure sets ``stop``, which winds every thread down.
Every call it makes is bounded: a blocking put gives up through
``abort_when`` after ``bound`` seconds, consumers poll with a short
``acquire`` interval, a call of the checking thread (``ask``) runs in a
helper thread joined with a timeout, and ``join`` reports a thread still
running as a hang, with the call it is in.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from refqueue.conformance.contract import rejection_kind
from refqueue.conformance.probe import observed

__all__ = ["GRACE", "POLL", "ThreadedCheck"]

POLL = 0.005  # put_blocks_until_below's and acquire's poll interval
FAIL_SHARE = 0.15  # how often a stress consumer fails a lease instead of acking it
# What a join allows on top of the bounds its threads' calls have: a producer gives
# up by itself (abort_when) at its bound, so only a backend that ignores abort_when
# (or hangs elsewhere) runs into this; then the thread is reported hung.
GRACE = 0.5


class ThreadedCheck:
    """One check's queue, threads and bookkeeping; the first failure stops it."""

    def __init__(self, name: str, session: Any, bound: float, *, work_bound: int | None = None, resident_bound: int | None = None) -> None:
        self.name = name
        self.session = session
        self.q = session.queue
        self.store = session.store
        self.bound = bound
        self.work_bound = work_bound  # bytes; admitted work must stay below it
        self.resident_bound = resident_bound  # bytes; residency must stay at or below it
        self.lock = threading.Lock()
        self.stop = threading.Event()  # set on the first failure: every thread winds down
        self.failures: list[str] = []
        self.doing: dict[str, str] = {}  # thread name -> the call it is in (for a hang report)
        self.threads: dict[threading.Thread, str] = {}  # thread -> who it is
        self.steps = 0
        self.puts = 0
        self.slowest = 0.0
        self.work = 0  # bytes admitted by blocking puts and not yet acked (a lower bound)
        self.max_work = 0
        self.max_resident = 0
        self.acked = 0  # live acks that returned True

    # -- outcomes ---------------------------------------------------------------------

    def fail(self, message: str) -> None:
        with self.lock:
            self.failures.append(message)
        self.stop.set()

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def observed(self) -> str:
        """The queue's observables, for a failure message; never raises, and never
        waits more than ``GRACE`` seconds on a backend that holds its lock forever."""
        q = self.q
        reads = (
            ("pending", q.pending_count),
            ("outstanding", q.outstanding_count),
            ("paused", lambda: q.is_paused),
            ("resident bytes", lambda: self.store.health().resident_bytes),
            ("parked_bytes", lambda: q.parked_bytes),
        )
        return observed(reads, within=GRACE, hung=f"the next read did not return within {GRACE} s",
                        name=f"refqueue-producers-{self.name}-observer")

    def ask(self, what: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
        """``fn()`` made by the checking thread, waited for at most ``bound + GRACE``
        seconds (in a helper thread, so a hung backend cannot hang the kit):
        ``(True, value)``, or ``(False, None)`` with the hang or the exception recorded."""
        box: list[Any] = []

        def run() -> None:
            try:
                box.append((True, fn()))
            except Exception as exc:  # noqa: BLE001 - any crash of a backend call fails the check
                box.append((False, exc))

        helper = threading.Thread(target=run, name=f"refqueue-producers-{self.name}-main", daemon=True)
        helper.start()
        helper.join(self.bound + GRACE)
        if not box:
            self.fail(f"{what} hung: it did not return within {self.bound + GRACE} s; no call may hang")
            return False, None
        ok, value = box[0]
        if not ok:
            self.fail(f"{what} raised {type(value).__name__}: {value}")
            return False, None
        return True, value

    # -- bounded calls ------------------------------------------------------------------

    def step(self) -> None:
        with self.lock:
            self.steps += 1

    def sample_residency(self) -> None:
        resident = self.store.health().resident_bytes
        with self.lock:
            self.max_resident = max(self.max_resident, resident)
        if self.resident_bound is not None and resident > self.resident_bound:
            self.fail(
                f"the store holds {resident} bytes, above the bound high + (producers + 1) x largest sample + "
                f"orphans = {self.resident_bound} bytes ({self.observed()})"
            )

    def store_put(self, who: str, sample_id: str) -> Any:
        self.doing[who] = f"store.put({sample_id!r})"
        try:
            ref = self.session.store_put(sample_id)
        finally:
            self.doing.pop(who, None)
        self.step()
        self.sample_residency()
        return ref

    def blocking_put(self, who: str, ref: Any) -> bool:
        """``put_blocks_until_below(ref)`` giving up (``abort_when``) after ``bound``
        seconds; whether the ref was admitted in time (a failure is recorded otherwise)."""
        sample_id = ref.sample_id
        started = time.monotonic()
        give_up = started + self.bound
        self.doing[who] = f"put_blocks_until_below({sample_id!r})"
        try:
            self.q.put_blocks_until_below(
                ref, poll_interval=POLL, abort_when=lambda: self.stop.is_set() or time.monotonic() > give_up
            )
        except Exception as exc:  # noqa: BLE001 - classified below
            if self.stop.is_set():
                return False  # another thread failed first
            if rejection_kind(exc) == "aborted":
                self.fail(
                    f"{who}'s put_blocks_until_below({sample_id!r}) was still blocked {self.bound} s after it "
                    f"began ({self.observed()}); D8 admits a blocked producer once the consumers have drained "
                    f"what they can"
                )
            else:
                self.fail(f"{who}'s put_blocks_until_below({sample_id!r}) raised {type(exc).__name__}: {exc}")
            return False
        finally:
            self.doing.pop(who, None)
        elapsed = time.monotonic() - started
        with self.lock:
            self.steps += 1
            self.puts += 1
            self.slowest = max(self.slowest, elapsed)
            self.work += ref.estimated_bytes
            self.max_work = max(self.max_work, self.work)
            work = self.work
        if elapsed > self.bound:
            self.fail(
                f"{who}'s put_blocks_until_below({sample_id!r}) returned after {elapsed:.2f} s, past the bound of "
                f"{self.bound} s (it did not give up when abort_when() turned true)"
            )
            return False
        if self.work_bound is not None and work >= self.work_bound:
            self.fail(
                f"admitting {sample_id!r} ({ref.estimated_bytes} bytes) brought the admitted work (pending + "
                f"leased) to at least {work} bytes, not below high + largest sample = {self.work_bound} bytes "
                f"({self.observed()})"
            )
            return False
        self.sample_residency()
        return True

    def drain_one(self, who: str, rng: random.Random | None = None) -> bool | None:
        """One ``acquire``, then ``fail`` (sometimes, with ``rng``) or ``ack``: True when a
        lease was acked, False when failed, None when nothing came."""
        self.doing[who] = "acquire()"
        try:
            lease = self.q.acquire(poll_interval=POLL)
        finally:
            self.doing.pop(who, None)
        self.step()
        if lease is None:
            return None
        sample_id = lease.ref.sample_id
        if rng is not None and rng.random() < FAIL_SHARE:
            self.doing[who] = f"fail(lease of {sample_id!r})"
            try:
                answer = self.q.fail(lease)
            finally:
                self.doing.pop(who, None)
            self.step()
            if answer is not True:
                self.fail(f"{who}'s fail of its live lease on {sample_id!r} returned {answer!r}, not True")
            return False
        with self.lock:
            self.work -= lease.ref.estimated_bytes  # before the ack: the count stays a lower bound
        self.doing[who] = f"ack(lease of {sample_id!r})"
        try:
            answer = self.q.ack(lease)
        finally:
            self.doing.pop(who, None)
        self.step()
        if answer is not True:
            self.fail(f"{who}'s ack of its live lease on {sample_id!r} returned {answer!r}, not True")
            return False
        with self.lock:
            self.acked += 1
        return True

    # -- threads ------------------------------------------------------------------------

    def spawn(self, who: str, body: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            try:
                body()
            except Exception as exc:  # noqa: BLE001 - any crash of a backend call fails the check
                self.fail(f"{who} raised {type(exc).__name__}: {exc} (in {self.doing.get(who, 'its calls')})")

        thread = threading.Thread(target=run, name=f"refqueue-producers-{self.name}-{who}", daemon=True)
        self.threads[thread] = who
        thread.start()
        return thread

    def join(self, threads: Sequence[threading.Thread], within: float) -> None:
        """Join ``threads``, all within ``within`` seconds; a thread still running is a hang."""
        deadline = time.monotonic() + within
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                who = self.threads[thread]
                self.fail(
                    f"{who} hung: still in {self.doing.get(who, 'its calls')} {within:.1f} s after it was awaited "
                    f"({self.observed()}); no thread may be left hanging"
                )
                return

    def finish(self) -> None:
        """Wind down whatever still runs (on a failure) and let go of the stores."""
        self.stop.set()
        deadline = time.monotonic() + self.bound
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self.session.close()
