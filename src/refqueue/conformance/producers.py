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
producer has returned.  The phase needs ``abort_when`` (it bounds every
wait); a backend without it gets the phase listed as not run.  A failure's
replay runs the failing check again (same seed and bound, new threads).

Imports: ``producer_threads`` (the threads and bookkeeping of a check),
``session`` (its queue and store), ``samples``, ``render``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from refqueue.conformance.contract import Backend, load_backend
from refqueue.conformance.phase import (
    Check, ChecksReport, Context, PhaseBase, PhaseResult, checks_counts, checks_doc, checks_result, select_checks,
)  # fmt: skip
from refqueue.conformance.producer_threads import GRACE, ThreadedCheck
from refqueue.conformance.render import replay_module
from refqueue.conformance.samples import UNIT_BYTES

__all__ = ["CHECKS", "DEFAULT_BOUND", "DEFAULT_SAMPLES", "NAMED_CHECKS", "PHASE", "ProducersReport", "check_producers"]

ProducersReport = ChecksReport
DEFAULT_BOUND = 1.0  # seconds a blocked producer may wait once the consumers drained what they can
DEFAULT_SAMPLES = 6  # samples each stress producer puts
_PRODUCERS = 3  # stress producers that put (the crashing one comes on top)
_CONSUMERS = 2
# Runs of the failing check in a printed replay: a race the stress check found
# (the conformance mutant acquire_race) showed in 11 of 12 fresh interpreters
# run once, so one run is not a reproduction; five miss it about once in 10^5.
REPLAY_RUNS = 5


# -- the checks ---------------------------------------------------------------------------


def _session(backend: Backend, high: int, low: int, sizes: dict[str, int]) -> Any:
    from refqueue.conformance.session import Session

    config = {
        "visibility_timeout": 3600.0,  # no lease expires during a check (the injected clock never moves)
        "high_watermark_bytes": high * UNIT_BYTES,
        "low_watermark_bytes": low * UNIT_BYTES,
    }
    return Session(backend, config, sizes=sizes, store={})


def _deadlock(backend: Backend, bound: float, seed: int, samples: int) -> tuple[ThreadedCheck, dict[str, Any]]:
    ids = ("dl0", "dl1")
    check = ThreadedCheck("deadlock", _session(backend, 2, 1, {i: 1 for i in ids}), bound)
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
    check.join(threads, 2 * bound + GRACE)
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


def _orphan(backend: Backend, bound: float, seed: int, samples: int) -> tuple[ThreadedCheck, dict[str, Any]]:
    sizes = {"or-orphan": 2, "or0": 1, "or1": 1}
    check = ThreadedCheck("orphan", _session(backend, 2, 1, sizes), bound)
    orphans: list[Any] = []

    def crasher() -> None:
        orphans.append(check.store_put("crashing producer", "or-orphan"))  # ... and dies before its put

    check.join([check.spawn("crashing producer", crasher)], bound + GRACE)
    # Nothing pending or leased: the producer is admitted although the orphan holds the store at high.
    if not check.failed:
        check.join([check.spawn("producer 0", lambda: _store_and_put(check, "producer 0", "or0"))], bound + GRACE)
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
        check.join([second, drainer], 2 * bound + GRACE)
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


def _store_and_put(check: ThreadedCheck, who: str, sample_id: str) -> None:
    check.blocking_put(who, check.store_put(who, sample_id))


def _stress(backend: Backend, bound: float, seed: int, samples: int) -> tuple[ThreadedCheck, dict[str, Any]]:
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
    check = ThreadedCheck(
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
    check.join(producers, samples * bound + GRACE)
    producers_done.set()
    if not check.failed:
        check.join(consumers, 2 * bound + GRACE)
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


# Each check runs as run(backend, bound, seed, samples) -> (its ThreadedCheck, what it reports).
NAMED_CHECKS: tuple[Check, ...] = (
    Check("deadlock", "two producers blocked at high with no consumer are both admitted (the pre-D8 deadlock)", _deadlock),
    Check("orphan", "an orphan holding the store at high never blocks a producer of an empty queue", _orphan),
    Check("stress", "producers, a crashing one and consumers: every put admitted in time, work below high + largest", _stress),
)
CHECKS = tuple(c.name for c in NAMED_CHECKS)
_BY_NAME = {c.name: c for c in NAMED_CHECKS}

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
) -> ChecksReport:
    """Run ``checks`` (a subset of ``CHECKS``, in that order) on fresh queues of
    ``backend``; stop at the first failure.  See the module docstring."""
    if isinstance(backend, str):
        backend = load_backend(backend)
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not 0 < bound < 3600:
        raise ValueError(f"bound must be a number of seconds in (0, 3600), got {bound!r}")
    if isinstance(samples, bool) or not isinstance(samples, int) or not 2 <= samples <= 20:
        raise ValueError(f"samples must be an int from 2 to 20 (per stress producer), got {samples!r}")
    chosen = select_checks(CHECKS, checks)
    report = ChecksReport(bound=float(bound))
    started = time.perf_counter()
    report.skipped = _unfit_store(backend)
    if report.skipped is not None:
        return report
    for name in CHECKS:
        if name not in chosen:
            continue
        began = time.perf_counter()
        try:
            check, detail = _BY_NAME[name].run(backend, float(bound), seed, samples)
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


class ProducersPhase(PhaseBase):
    name = "producers"
    needs = ("abort_when",)
    split = True
    checks = CHECKS

    def skipped(self, lacking: Sequence[str]) -> str:
        return "every wait of the phase is bounded by abort_when, not declared"

    def not_checked(self, lacking: Sequence[str]) -> dict[str, str]:
        return {"check": "producers phase", "why": "every wait of the phase is bounded by abort_when, which is not declared"}

    def run(self, context: Context) -> PhaseResult:
        profile = context.profile
        context.progress.start("producers", len(CHECKS))
        report = check_producers(
            context.backend, seed=context.seed, bound=profile.producer_bound, samples=profile.producer_samples
        )
        context.progress.update(len(report.checks), "checks")
        if report.skipped is not None:
            return PhaseResult({"steps": 0, "skipped": report.skipped})
        checks = report.checks
        stress = checks.get("stress", {})
        counts = checks_counts(
            report,
            bounded=True,
            blocking_puts=sum(c["blocking_puts"] for c in checks.values()),
            slowest_put_s=max((c["slowest_put_s"] for c in checks.values()), default=0.0),
            max_work_bytes=stress.get("max_work_bytes"),
            work_bound_bytes=stress.get("work_bound_bytes"),
            max_resident_bytes=stress.get("max_resident_bytes"),
            resident_bound_bytes=stress.get("resident_bound_bytes"),
        )
        return checks_result(context, "producers", report, counts, _render)

    def summary(self, name: str, entry: Mapping[str, Any]) -> list[str]:
        lines = [
            f"  {name:<13} {len(entry['checks'])} checks ({', '.join(entry['checks'])}), {entry['blocking_puts']:,} "
            f"blocking puts, slowest {entry['slowest_put_s']} s (bound {entry['bound_s']} s), {entry['steps']:,} calls, "
            f"{entry['seconds']} s"
        ]
        if entry.get("work_bound_bytes"):
            lines.append(
                f"  {'':<13} admitted work at most {entry['max_work_bytes']:,} bytes (bound: below "
                f"{entry['work_bound_bytes']:,}), residency at most {entry['max_resident_bytes']:,} bytes (bound "
                f"{entry['resident_bound_bytes']:,})"
            )
        return lines


def _render(context: Context, report: ChecksReport) -> str:
    """A pytest module that runs the failing check of the producers phase again.

    Threads cannot be replayed call by call: the test runs the check again
    with the same seed and bound, ``REPLAY_RUNS`` times; on the backend that
    failed it fails again (a race in one of them).
    """
    notes = [
        "Threads cannot be replayed call by call: this test runs the failing check again (same seed and",
        f"bound, new threads), {REPLAY_RUNS} times (a race need not show in every run); every wait in it is bounded.",
    ]
    return replay_module(
        checks_doc(context, "producers", report, "diverges from the reference model.", notes),
        ["from refqueue.conformance.producers import check_producers"],
        [
            f"for run in range({REPLAY_RUNS}):",
            "    report = check_producers(",
            f"        {context.target!r}, seed={context.seed!r}, bound={report.bound!r}, "
            f"samples={context.profile.producer_samples!r},",
            f"        checks=({report.failed_check!r},),",
            "    )",
            f"    assert report.ok, f\"run {{run + 1}} of {REPLAY_RUNS}: {{report.failure}}\"",
        ],
    )


PHASE = ProducersPhase()
