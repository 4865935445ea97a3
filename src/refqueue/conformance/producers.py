"""The ``producers`` phase: several producers blocked in ``put_blocks_until_below``
at once, with real threads (D8: backpressure that cannot deadlock).

The walks and the lockstep machine drive a blocking put one step at a time
(``abort_when=lambda: True``), so they never see two producers *parked* at
once, and the threads phase runs without watermarks.  This phase does, on a
fresh queue of the backend per check, with its watermarks passed as the
queue's overrides (so a backend's own store works too) and sizes in the
kit's units (one unit is ``UNIT_BYTES`` real bytes):

``deadlock``  the two-producer deadlock of the pre-D8 rule, exactly:
              ``high = 2b``, ``low = b``; two producers each store one
              ``b``-byte sample (both stored before either puts) and then
              block in ``put_blocks_until_below``, with no consumer at all.
              Both must be admitted within the bound; a consumer then drains
              them and the store is empty.
``orphan``    a producer that died after ``store.put`` left a ``high``-byte
              orphan; a producer that blocks while the queue holds no work
              must be admitted (the pause stands); a second one blocks
              behind that work and must be admitted within the bound once a
              consumer drains it.
``stress``    three producers each put ``samples`` samples (store, then
              block), sizes including samples larger than ``low`` and one
              larger than ``high``, while a fourth producer "crashes" after
              ``store.put`` (its ref is never put: an orphan) and two
              consumers acquire, sometimes fail, and ack.  Every blocking put
              must return within the bound; the bytes of admitted work
              (pending + leased) must stay below ``high + largest`` sample;
              residency below ``high + (producers + 1) * largest`` plus the
              orphan; the consumers must ack every ref within the bound once
              the last producer returned; then, closed, the queue must be
              drained and the store must hold only the orphan.

Every wait is bounded: a producer's ``abort_when`` turns true once its call
has been blocked ``bound`` seconds (``PutAborted`` is then reported as the
failure it is), consumers poll with a short ``acquire`` interval, and every
thread is joined with a timeout; a thread still running after it is a hang,
reported with the check and the call it was in (its daemon thread is left
behind).  The bookkeeping of admitted work is a lower bound of the queue's
(a consumer subtracts a sample's bytes *before* its ack, a producer adds
them *after* its put returned), so a bound it exceeds was exceeded.  When
the backend has a ``parked_bytes`` property it must read 0 once every
producer has returned.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from refqueue.conformance.contract import Backend, load_backend, rejection_kind
from refqueue.conformance.samples import UNIT_BYTES

__all__ = ["CHECKS", "DEFAULT_BOUND", "DEFAULT_SAMPLES", "ProducersReport", "check_producers"]

CHECKS = ("deadlock", "orphan", "stress")
DEFAULT_BOUND = 1.0  # seconds a blocked producer may wait once the consumers drained what they can
DEFAULT_SAMPLES = 6  # samples each stress producer puts
_POLL = 0.005  # put_blocks_until_below's and acquire's poll interval
_PRODUCERS = 3  # stress producers that put (the crashing one comes on top)
_CONSUMERS = 2
_FAIL_SHARE = 0.15  # how often a stress consumer fails a lease instead of acking it
# What a join allows on top of the bounds its threads' calls have: a producer gives
# up by itself (abort_when) at its bound, so only a backend that ignores abort_when
# (or hangs elsewhere) runs into this; then the thread is reported hung.
_GRACE = 0.5


@dataclass
class ProducersReport:
    """What the phase found: per check what it checked and its numbers; the
    first failure (its check and message), or why the phase was skipped."""

    bound: float
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    steps: int = 0  # backend calls made (store puts, blocking puts, acquires, acks, fails)
    seconds: float = 0.0
    failure: str | None = None
    failed_check: str | None = None
    skipped: str | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


class _Check:
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
        waits more than ``_GRACE`` seconds on a backend that holds its lock forever."""
        q = self.q
        parts: list[str] = []

        def read_all() -> None:
            for name, read in (
                ("pending", q.pending_count),
                ("outstanding", q.outstanding_count),
                ("paused", lambda: q.is_paused),
                ("resident bytes", lambda: self.store.health().resident_bytes),
                ("parked_bytes", lambda: q.parked_bytes),
            ):
                try:
                    parts.append(f"{name} {read()}")
                except Exception:  # noqa: BLE001 - a missing property is not this check's concern
                    continue

        reader = threading.Thread(target=read_all, name=f"refqueue-producers-{self.name}-observer", daemon=True)
        reader.start()
        reader.join(_GRACE)
        if reader.is_alive():
            return ", ".join([*parts, f"the next read did not return within {_GRACE} s"])
        return ", ".join(parts)

    def ask(self, what: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
        """``fn()`` made by the checking thread, waited for at most ``bound + _GRACE``
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
        helper.join(self.bound + _GRACE)
        if not box:
            self.fail(f"{what} hung: it did not return within {self.bound + _GRACE} s; no call may hang")
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
                ref, poll_interval=_POLL, abort_when=lambda: self.stop.is_set() or time.monotonic() > give_up
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
            lease = self.q.acquire(poll_interval=_POLL)
        finally:
            self.doing.pop(who, None)
        self.step()
        if lease is None:
            return None
        sample_id = lease.ref.sample_id
        if rng is not None and rng.random() < _FAIL_SHARE:
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


# -- the checks ---------------------------------------------------------------------------


def _session(backend: Backend, high: int, low: int, sizes: dict[str, int]) -> Any:
    from refqueue.conformance.session import Session

    config = {
        "visibility_timeout": 3600.0,  # no lease expires during a check (the injected clock never moves)
        "high_watermark_bytes": high * UNIT_BYTES,
        "low_watermark_bytes": low * UNIT_BYTES,
    }
    return Session(backend, config, sizes=sizes, store={})


def _deadlock(backend: Backend, bound: float, seed: int, samples: int) -> tuple[_Check, dict[str, Any]]:
    ids = ("dl0", "dl1")
    check = _Check("deadlock", _session(backend, 2, 1, {i: 1 for i in ids}), bound)
    stored = threading.Barrier(len(ids))

    def producer(k: int) -> Callable[[], None]:
        who = f"producer {k}"

        def body() -> None:
            ref = check.store_put(who, ids[k])
            try:
                stored.wait(bound)  # both samples are in the store before either producer puts
            except threading.BrokenBarrierError:
                check.fail(f"{who}: the other producer's store.put did not finish within {bound} s")
                return
            check.blocking_put(who, ref)

        return body

    threads = [check.spawn(f"producer {k}", producer(k)) for k in range(len(ids))]
    check.join(threads, 2 * bound + _GRACE)
    if not check.failed:
        answered, pending = check.ask("pending_count()", check.q.pending_count)
        if answered and pending != 2:
            check.fail(f"both producers returned but pending_count() is {pending}, not 2: both must be admitted")
    if not check.failed:
        answered, value = check.ask(
            "a consumer's acquire and ack of both refs",
            lambda: ([check.drain_one("consumer") for _ in ids], check.store.health().resident_bytes),
        )
        drained, resident = value if answered else (None, None)
        if answered and (drained != [True, True] or resident != 0):
            check.fail(
                f"a consumer then acquired and acked {drained} and the store holds {resident} bytes; it should "
                f"ack both and leave the store empty"
            )
    return check, {
        "what": f"2 producers, high=2b, low=b (b={UNIT_BYTES} bytes), one b-byte sample each stored, then both "
        f"block, no consumer: both admitted within {bound} s",
    }


def _orphan(backend: Backend, bound: float, seed: int, samples: int) -> tuple[_Check, dict[str, Any]]:
    sizes = {"or-orphan": 2, "or0": 1, "or1": 1}
    check = _Check("orphan", _session(backend, 2, 1, sizes), bound)
    orphans: list[Any] = []

    def crasher() -> None:
        orphans.append(check.store_put("crashing producer", "or-orphan"))  # ... and dies before its put

    check.join([check.spawn("crashing producer", crasher)], bound + _GRACE)
    # Nothing pending or leased: the producer is admitted although the orphan holds the store at high.
    if not check.failed:
        check.join([check.spawn("producer 0", lambda: _store_and_put(check, "producer 0", "or0"))], bound + _GRACE)
    # Now or0 is work: the next producer blocks until a consumer drains it.
    if not check.failed:
        second = check.spawn("producer 1", lambda: _store_and_put(check, "producer 1", "or1"))

        def consumer() -> None:
            acked = 0
            give_up = time.monotonic() + 2 * bound
            while acked < 2 and not check.stop.is_set():
                if check.drain_one("consumer"):
                    acked += 1
                elif time.monotonic() > give_up:
                    check.fail(f"the consumer acked {acked} of 2 samples within {2 * bound} s ({check.observed()})")

        drainer = check.spawn("consumer", consumer)
        check.join([second, drainer], 2 * bound + _GRACE)
    if not check.failed:
        answered, resident = check.ask("store.health()", lambda: check.store.health().resident_bytes)
        if answered and resident != 2 * UNIT_BYTES:
            check.fail(
                f"after the consumer drained the queue the store holds {resident} bytes, not the orphan's "
                f"{2 * UNIT_BYTES}"
            )
    return check, {
        "what": f"a 2b-byte orphan (high=2b, low=b): a producer blocking on an empty queue is admitted, the "
        f"next one within {bound} s once a consumer drains",
    }


def _store_and_put(check: _Check, who: str, sample_id: str) -> None:
    check.blocking_put(who, check.store_put(who, sample_id))


def _stress(backend: Backend, bound: float, seed: int, samples: int) -> tuple[_Check, dict[str, Any]]:
    high, low, orphan_units = 6, 3, 3
    rng = random.Random(seed)
    plan: dict[str, int] = {}
    for p in range(_PRODUCERS):
        for i in range(samples):
            plan[f"p{p}-{i}"] = rng.choice((1, 1, 2, 2, 3, 4, 5))
        # Every first sample is larger than low, and all of them and the orphan are
        # stored before any producer steps: the first step pauses (its effective
        # residency is 3 x (low + 1) + orphan - its own >= high), and the others block
        # behind the work it leaves.
        plan[f"p{p}-0"] = low + 1
    plan["p1-1"] = high + 1  # larger than high
    largest = max(plan.values())
    sizes = {**plan, "st-orphan": orphan_units}
    check = _Check(
        "stress",
        _session(backend, high, low, sizes),
        bound,
        work_bound=(high + largest) * UNIT_BYTES,
        resident_bound=(high + (_PRODUCERS + 1) * largest + orphan_units) * UNIT_BYTES,
    )
    start = threading.Barrier(_PRODUCERS + 1 + _CONSUMERS)

    def started(who: str) -> bool:
        try:
            start.wait(bound)
        except threading.BrokenBarrierError:
            check.fail(f"{who}: the other threads did not start within {bound} s")
            return False
        return True

    def producer(p: int) -> Callable[[], None]:
        who = f"producer {p}"

        def body() -> None:
            ref = check.store_put(who, f"p{p}-0")
            if not started(who):
                return
            for i in range(samples):
                if i:
                    ref = check.store_put(who, f"p{p}-{i}")
                if check.stop.is_set() or not check.blocking_put(who, ref):
                    return

        return body

    def crasher() -> None:
        check.store_put("crashing producer", "st-orphan")  # ... and dies: its ref is never put
        started("crashing producer")

    producers_done = threading.Event()

    def consumer(c: int) -> Callable[[], None]:
        who = f"consumer {c}"
        mine = random.Random(seed * 7919 + c)

        def body() -> None:
            if not started(who):
                return
            give_up = None
            while not check.stop.is_set() and check.acked < len(plan):
                if check.drain_one(who, mine) is not None:
                    continue
                if producers_done.is_set():  # nothing came: what is left must drain within the bound
                    give_up = give_up or time.monotonic() + bound
                    if time.monotonic() > give_up:
                        check.fail(
                            f"{who}: {check.acked} of {len(plan)} refs acked {bound} s after the last producer "
                            f"returned ({check.observed()})"
                        )

        return body

    producers = [check.spawn(f"producer {p}", producer(p)) for p in range(_PRODUCERS)]
    producers.append(check.spawn("crashing producer", crasher))
    consumers = [check.spawn(f"consumer {c}", consumer(c)) for c in range(_CONSUMERS)]
    check.join(producers, samples * bound + _GRACE)
    producers_done.set()
    if not check.failed:
        check.join(consumers, 2 * bound + _GRACE)
    if not check.failed:
        # Every ref was admitted and acked: closed now, the queue is drained (D3) and
        # the store holds the orphan alone (D2: an ack scrubs).
        def close_and_read() -> tuple[bool, Any]:
            check.q.close()
            return check.q.is_drained, check.store.health()

        answered, value = check.ask("close(), then is_drained and store.health()", close_and_read)
        drained, health = value if answered else (None, None)
        orphan = orphan_units * UNIT_BYTES
        if answered and (not drained or health.resident_bytes != orphan or health.sample_count != 1):
            check.fail(
                f"every ref was acked and the queue closed: is_drained is {drained} and the store holds "
                f"{health.resident_bytes} bytes in {health.sample_count} samples; only the orphan ({orphan} bytes) "
                f"should be left, in a drained queue"
            )
    return check, {
        "what": f"{_PRODUCERS} producers x {samples} samples (sizes 1-{largest} units, high={high}, low={low}) and "
        f"a crashing producer's orphan, {_CONSUMERS} consumers acking and failing",
        "work_bound_bytes": check.work_bound,
        "resident_bound_bytes": check.resident_bound,
    }


_RUNNERS: dict[str, Callable[[Backend, float, int, int], tuple[_Check, dict[str, Any]]]] = {
    "deadlock": _deadlock,
    "orphan": _orphan,
    "stress": _stress,
}

# Bytes and samples the checks put in the store at most (for a backend's own store).
_NEEDS_UNITS = 64
_NEEDS_SAMPLES = 32


def _unfit_store(backend: Backend) -> str | None:
    """Why the backend's own store cannot hold what the checks write, if it cannot."""
    if backend.make_store is None:
        return None
    store = backend.make_store()
    try:
        capacity = store.capacity_bytes
        max_samples = getattr(store, "max_samples", None)
    finally:
        try:
            store.close()
        except Exception:  # noqa: BLE001
            pass
    if capacity is not None and capacity < _NEEDS_UNITS * UNIT_BYTES:
        return f"the backend's own store holds {capacity} bytes; the checks need {_NEEDS_UNITS * UNIT_BYTES}"
    if max_samples is not None and max_samples < _NEEDS_SAMPLES:
        return f"the backend's own store holds {max_samples} samples; the checks need {_NEEDS_SAMPLES}"
    return None


def check_producers(
    backend: Backend | str,
    *,
    seed: int = 0,
    bound: float = DEFAULT_BOUND,
    samples: int = DEFAULT_SAMPLES,
    checks: Sequence[str] = CHECKS,
) -> ProducersReport:
    """Run ``checks`` (a subset of ``CHECKS``, in that order) on fresh queues of
    ``backend``; stop at the first failure.  See the module docstring."""
    if isinstance(backend, str):
        backend = load_backend(backend)
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not 0 < bound < 3600:
        raise ValueError(f"bound must be a number of seconds in (0, 3600), got {bound!r}")
    if isinstance(samples, bool) or not isinstance(samples, int) or not 2 <= samples <= 20:
        raise ValueError(f"samples must be an int from 2 to 20 (per stress producer), got {samples!r}")
    unknown = [c for c in checks if c not in CHECKS]
    if unknown or not checks:
        raise ValueError(f"checks must be a non-empty subset of {CHECKS}, got {tuple(checks)!r}")
    report = ProducersReport(bound=float(bound))
    started = time.perf_counter()
    report.skipped = _unfit_store(backend)
    if report.skipped is not None:
        return report
    for name in CHECKS:
        if name not in checks:
            continue
        began = time.perf_counter()
        try:
            check, detail = _RUNNERS[name](backend, float(bound), seed, samples)
        except Exception as exc:  # noqa: BLE001 - e.g. the factory refused the check's watermarks
            report.failure = f"producers phase, check {name}: {type(exc).__name__}: {exc}"
            report.failed_check = name
            break
        if not check.failed and hasattr(type(check.q), "parked_bytes"):
            answered, parked = check.ask("parked_bytes", lambda: check.q.parked_bytes)
            if answered and parked != 0:
                check.fail(f"every producer returned, but parked_bytes is {parked!r}, not 0")
        check.finish()
        failures = list(check.failures)
        report.steps += check.steps
        report.checks[name] = {
            **detail,
            "blocking_puts": check.puts,
            "slowest_put_s": round(check.slowest, 3),
            "max_work_bytes": check.max_work,
            "max_resident_bytes": check.max_resident,
            "pauses": sum(1 for event, _ in check.session.events if event == "pause"),
            "resumes": sum(1 for event, _ in check.session.events if event == "resume"),
            "seconds": round(time.perf_counter() - began, 3),
        }
        if failures:
            report.failure = f"producers phase, check {name}: {failures[0]}"
            report.failed_check = name
            break
    report.seconds = time.perf_counter() - started
    return report
