"""The ``blocking`` phase: what users of a queue feel, with real threads and
bounded waits (D4, D6, D8's wakeups, the background reclaimer).

The walks, the lockstep machine and the threads phase drive a backend one
call at a time with short poll intervals, so a backend that never wakes a
waiting consumer, runs its callbacks under its lock, or ignores backpressure
when no ``abort_when`` is given passes them all.  Each check of this phase
runs on a fresh queue of the backend (its watermarks, where it needs them,
passed as the queue's overrides: ``high = 2b``, ``low = b``, one unit
``b = UNIT_BYTES`` bytes, so a backend's own store works too):

``acquire-woken-by-put`` / ``-by-fail`` / ``-by-reclaim`` / ``-by-close``
    a consumer blocks in ``acquire(poll_interval=30)``; it must still be
    waiting after a settle window (nothing to take: an early return is a
    failure of its own), then ``put`` of a ref (``fail`` of a live lease;
    ``reclaim_expired`` after the injected clock passed the lease's
    deadline; ``close`` of the empty queue) must wake it within the bound,
    measured from the waking call's return to ``acquire``'s return, with
    the ref (the ref again, redelivered; ``None``: drained, D3).
``acquire-times-out``
    ``acquire(poll_interval=4 * bound)`` on the empty open queue returns
    ``None`` after its interval, neither before (a consumer that polls in a
    loop would spin) nor more than the bound after it (an interval rounded
    up to whole seconds, or ignored).
``acquire-woken-by-drain``
    the queue is closed with one lease outstanding, so two consumers blocked
    in ``acquire(poll_interval=30)`` must wait (the lease may come back); the
    ``ack`` that drains the queue must wake both within the bound, with the
    terminal ``None``; then the same on a fresh queue with ``dead_letter``
    (where the backend has it).
``acquire-each-woken-by-puts``
    two consumers block in ``acquire(poll_interval=30)``; two ``put`` calls
    back to back must wake both within the bound of the second's return, one
    ref each (a put that wakes a consumer only when pending was empty leaves
    the second asleep).
``acquire-all-woken-by-close``
    three consumers block in ``acquire(poll_interval=30)`` on the empty
    queue; ``close()`` must wake every one within the bound, each with
    ``None``.
``put-pauses-and-resumes``
    a consumer holds a lease on a ``2b`` sample and a ``b`` sample is
    stored: ``put_blocks_until_below(ref, poll_interval=30)`` *without*
    ``abort_when`` must pause (``on_pause`` once) and block; the ack that
    brings residency to ``low`` must wake it within the bound, resumed
    (``on_resume`` once) and enqueued.
``put-all-woken-by-resume``
    ``high = 4b``, ``low = 2b``; with a ``3b`` orphan and a ``b`` ref pending,
    two producers block in ``put_blocks_until_below(poll_interval=30)``
    without ``abort_when`` (paused); the orphan is scrubbed through the store
    (the queue hears nothing); a third producer's one-step put then resumes
    (effective ``4b - 2b parked - b = b``), and the resume must wake both
    blocked producers within the bound: both admitted, ``pause, resume``.
``put-woken-by-dead-letter``
    as ``put-pauses-and-resumes``, with ``dead_letter`` of the lease instead
    of ``ack``: a dead-letter frees the sample's bytes and wakes the producer.
``put-woken-by-close``
    the same blocked producer and a second one blocked beside it both raise
    ``QueueClosed`` within the bound of ``close()``, their refs not enqueued.
``put-abort-when``
    the same producer, with ``abort_when`` and a poll interval of half the
    bound, keeps waiting while ``abort_when()`` is false and raises
    ``PutAborted`` within the bound once it turns true; the ref is not
    enqueued (and ``parked_bytes`` is 0, where the backend has it).
``put-inf-no-lost-wakeup``
    a producer in ``put_blocks_until_below(ref, poll_interval=math.inf,
    abort_when=...)`` takes a step that pauses (with work a consumer can
    free); its ``abort_when``, consulted after that step and before the wait
    (docs/API.md), makes the waking call happen in another thread and waits
    for it to return, then answers False: so the call lands, every time,
    between the step and the wait.  For each of ``ack``, ``dead_letter``
    (where declared), a resume (another producer's one-step put after an
    orphan was scrubbed) and ``close`` on a fresh queue, the producer must
    step again: admitted (``QueueClosed`` for close) within ``GIVE_UP``
    bounds.  A producer that took its wait's snapshot after the call waits
    for ever, its interval infinite.
``callbacks-outside-locks``
    inside ``on_pause`` and ``on_resume`` a second thread calls
    ``pending_count()``, ``outstanding_count()``, ``is_paused`` and
    ``store.health()``; it must finish (a join with a timeout of
    ``stall`` seconds): a callback run under a queue or store lock stalls it.
``callbacks-in-order``
    ``on_resume`` is held open (it waits for the kit) while a second
    producer's one-step put pauses the queue again: ``on_pause`` must not be
    called until ``on_resume`` has returned (callbacks are called one at a
    time, in the order of the changes they report), and it must be called
    then: the calls are ``pause, resume, pause``.  The second producer may
    return before its ``on_pause`` is called (the thread inside
    ``on_resume`` calls it next) or wait for it; the kit waits up to
    ``GIVE_UP`` bounds for it to do either.
``callback-errors-propagate``
    an exception raised by ``on_pause`` (``on_resume``) reaches the caller of
    the ``put_blocks_until_below`` that delivered it, and the transition it
    reports committed: ``is_paused`` is True (False, and the ref enqueued).
``reclaimer-reclaims``
    with the clock past a lease's deadline, ``start_reclaimer(interval)``
    takes the lease back with nobody calling ``reclaim_expired``: a consumer
    blocked in ``acquire`` gets the ref again within ``RECLAIM_WITHIN``
    intervals (or, if the backend did not wake it, it is pending then).
``reclaimer-stops``
    after ``stop_reclaimer()`` returned, the clock passes the next lease's
    deadline and nothing is reclaimed for ``STOPPED_FOR`` intervals: a wait
    for something that must *not* happen, bounded in the reclaimer's own
    interval as its unit; then ``reclaim_expired()`` by hand takes that
    lease back (so the lease really was due).

A check whose capability the backend declares absent (``injected_clock`` for
the reclaim checks, ``reclaimer``, ``abort_when``) is listed as not run, with
the reason; it never passes.

Every wait is bounded: a thread is joined, or an ``Event`` waited on, with a
timeout; a call still running after ``GIVE_UP`` times the bound is reported
with the check, the call and how long it had waited (its daemon thread is
left behind).  A wakeup that came, but later than the bound, is measured
again on a fresh queue, up to ``ATTEMPTS`` times in all, so that one
preempted thread on a loaded machine fails nothing; every attempt's latency
is in the report.  A backend that waits out its poll interval is late every
time.

The checks are ``NAMED_CHECKS``, run in that order by ``check_blocking``:
``refqueue.conformance.blocking_consumers`` holds those of consumers and of
the reclaimer, ``refqueue.conformance.blocking_producers`` those of
producers and callbacks, both on ``refqueue.conformance.wakeups`` (the
threads, the bounded waits and the measured wakeups).  A failure's replay
runs the failing check again.
"""


from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from refqueue.conformance import blocking_consumers as consumers
from refqueue.conformance import blocking_producers as producers
from refqueue.conformance.contract import Backend, load_backend
from refqueue.conformance.phase import (
    Check, ChecksReport, Context, PhaseBase, PhaseResult, checks_counts, checks_doc, checks_result, select_checks,
)  # fmt: skip
from refqueue.conformance.render import replay_module
from refqueue.conformance.samples import sample_tensors
from refqueue.conformance.wakeups import ATTEMPTS, Attempt, Failed, Late

__all__ = ["ATTEMPTS", "CHECKS", "DEFAULT_BOUND", "NAMED_CHECKS", "PHASE", "BlockingReport", "Wakeup", "check_blocking"]

DEFAULT_BOUND = 0.05  # seconds from a waking call's return to the woken call's return
BlockingReport = ChecksReport
# The checks that drive the pause and the resume with one-step puts (abort_when=lambda: True)
# need abort_when; the reclaim checks need the injected clock to pass a deadline.
_STEPS = ("abort_when",)
_RECLAIMER = ("reclaimer", "injected_clock")


@dataclass(frozen=True)
class Wakeup(Check):
    """A check that measures a wakeup against the bound (measured again, up to
    ``ATTEMPTS`` times, when it came late); its run returns the latency."""


NAMED_CHECKS: tuple[Check, ...] = (
    Wakeup(
        "acquire-woken-by-put",
        "a consumer blocked in acquire(poll_interval=30) is woken by put within the bound",
        consumers.woken_by_put,
    ),
    Wakeup(
        "acquire-woken-by-fail",
        "a consumer blocked in acquire(poll_interval=30) is woken by a live fail within the bound",
        consumers.woken_by_fail,
    ),
    Wakeup(
        "acquire-woken-by-reclaim",
        "a consumer blocked in acquire(poll_interval=30) is woken by reclaim_expired (clock past the deadline) within "
        "the bound",
        consumers.woken_by_reclaim,
        ("injected_clock",),
    ),
    Wakeup(
        "acquire-woken-by-close",
        "a consumer blocked in acquire(poll_interval=30) returns None within the bound of close() of the empty queue",
        consumers.woken_by_close,
    ),
    Wakeup(
        "acquire-times-out",
        "acquire(poll_interval=4 * bound) on the empty open queue returns None after its interval, within the bound",
        consumers.acquire_times_out,
    ),
    Wakeup(
        "acquire-woken-by-drain",
        "two consumers blocked in acquire(poll_interval=30) on a closed queue with a lease out return None within the "
        "bound of the ack (and, on a fresh queue, the dead_letter) that drains it",
        consumers.woken_by_drain,
    ),
    Wakeup(
        "acquire-each-woken-by-puts",
        "two consumers blocked in acquire(poll_interval=30) each take one of two back-to-back puts within the bound",
        consumers.each_woken_by_puts,
    ),
    Wakeup(
        "acquire-all-woken-by-close",
        "three consumers blocked in acquire(poll_interval=30) all return None within the bound of close() of the empty "
        "queue",
        consumers.all_woken_by_close,
    ),
    Wakeup(
        "put-pauses-and-resumes",
        "put_blocks_until_below without abort_when pauses at high and blocks; the ack that brings residency to low "
        "resumes and admits it within the bound",
        producers.pauses_and_resumes,
    ),
    Wakeup(
        "put-woken-by-dead-letter",
        "the dead_letter that brings residency to low resumes and admits a producer blocked in put_blocks_until_below "
        "within the bound",
        producers.put_woken_by_dead_letter,
        ("dead_letter",),
    ),
    Wakeup(
        "put-all-woken-by-resume",
        "a resume made by another producer's one-step put wakes both producers blocked in "
        "put_blocks_until_below(poll_interval=30) within the bound; both admitted",
        producers.all_woken_by_resume,
        _STEPS,  # the resuming put is one step
    ),
    Wakeup(
        "put-woken-by-close",
        "two producers blocked in put_blocks_until_below raise QueueClosed within the bound of close(); their refs are "
        "not enqueued",
        producers.put_woken_by_close,
    ),
    Wakeup(
        "put-abort-when",
        "a blocked producer waits while abort_when() is false and raises PutAborted within the bound once it is true; "
        "its ref is not enqueued",
        producers.abort_when,
        ("abort_when",),
    ),
    Check(
        "put-inf-no-lost-wakeup",
        "with poll_interval=math.inf, an ack, dead_letter, resume or close made after a producer's pausing step and "
        "before its wait (inside its abort_when) still wakes it: admitted, or QueueClosed",
        producers.lost_wakeup_in_window,
        ("abort_when",),
    ),
    Check(
        "callbacks-outside-locks",
        "inside on_pause and on_resume another thread's pending_count(), outstanding_count(), is_paused and "
        "store.health() return: no lock is held",
        producers.callbacks_outside_locks,
        _STEPS,
    ),
    Check(
        "callbacks-in-order",
        "with on_resume held open, another producer's pause does not call on_pause until on_resume returned; the calls "
        "are pause, resume, pause",
        producers.callbacks_in_order,
        _STEPS,
    ),
    Check(
        "callback-errors-propagate",
        "an exception of on_pause/on_resume reaches the caller of put_blocks_until_below; the transition committed",
        producers.callback_errors_propagate,
        _STEPS,
    ),
    Check(
        "reclaimer-reclaims",
        f"start_reclaimer({consumers.RECLAIMER_INTERVAL}) reclaims an expired lease within "
        f"{consumers.RECLAIM_WITHIN} intervals with nobody calling reclaim_expired",
        consumers.reclaimer_reclaims,
        _RECLAIMER,
    ),
    Check(
        "reclaimer-stops",
        f"after stop_reclaimer() nothing is reclaimed for {consumers.STOPPED_FOR} intervals (a bounded wait for what "
        f"must not happen), then reclaim_expired() by hand finds the lease due",
        consumers.reclaimer_stops,
        _RECLAIMER,
    ),
)
CHECKS = tuple(c.name for c in NAMED_CHECKS)


def _not_run(backend: Backend, check: Check) -> str | None:
    caps = backend.capabilities
    lacking = [c for c in check.needs if not getattr(caps, c, True)]
    if not lacking:
        return None
    return f"the backend does not declare {', '.join(lacking)}"


def check_blocking(
    backend: Backend | str,
    *,
    bound: float = DEFAULT_BOUND,
    checks: Sequence[str] = CHECKS,
) -> ChecksReport:
    """Run ``checks`` (a subset of ``CHECKS``, in that order) on fresh queues of
    ``backend``; stop at the first failure.  See the module docstring."""
    if isinstance(backend, str):
        backend = load_backend(backend)
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not 0 < bound < 3600:
        raise ValueError(f"bound must be a number of seconds in (0, 3600), got {bound!r}")
    chosen = select_checks(CHECKS, checks)
    report = ChecksReport(bound=float(bound))
    sample_tensors(1, 0)  # imports torch now, not inside the first check's time
    started = time.perf_counter()
    for check in NAMED_CHECKS:
        name = check.name
        if name not in chosen:
            continue
        reason = _not_run(backend, check)
        if reason is not None:
            report.not_run[name] = reason
            continue
        wakeup = isinstance(check, Wakeup)
        began = time.perf_counter()
        latencies: list[float] = []
        waited: float | None = None
        failure = None
        for _ in range(ATTEMPTS if wakeup else 1):
            attempt = Attempt(backend, name, float(bound))
            try:
                measured = check.run(attempt)
                if wakeup:
                    latencies.append(measured)
                else:
                    waited = measured
                failure = None
            except Late as late:
                latencies.append(late.latency)
                failure = str(late)
                continue  # measured again on a fresh queue
            except Failed as failed:
                failure = str(failed)
            except Exception as exc:  # noqa: BLE001 - e.g. the factory refused the check's watermarks
                failure = f"{type(exc).__name__}: {exc}"
            finally:
                report.steps += attempt.steps
                attempt.finish()
            break
        report.checks[name] = {"what": check.what, "seconds": round(time.perf_counter() - began, 3)}
        if wakeup:
            report.checks[name]["latencies_s"] = [round(t, 4) for t in latencies]
        elif waited is not None:
            report.checks[name]["waited_s"] = round(waited, 3)
        if failure is not None:
            report.failure = f"blocking phase, check {name}: {failure}"
            report.failed_check = name
            break
    report.seconds = time.perf_counter() - started
    return report


class BlockingPhase(PhaseBase):
    name = "blocking"
    split = True
    checks = CHECKS

    def run(self, context: Context) -> PhaseResult:
        bar = context.progress
        bar.start("blocking", len(CHECKS))
        report = check_blocking(context.backend, bound=context.profile.wake_bound)
        bar.update(len(report.checks) + len(report.not_run), "checks")
        checks = report.checks
        latencies = [t for c in checks.values() for t in c.get("latencies_s", ())]
        counts = checks_counts(
            report,
            bounded=True,
            latencies_s={name: c["latencies_s"] for name, c in checks.items() if "latencies_s" in c},
            slowest_wake_s=max(latencies, default=0.0),
            not_run=dict(report.not_run),
        )
        return checks_result(context, "blocking", report, counts, _render)

    def summary(self, name: str, entry: Mapping[str, Any]) -> list[str]:
        not_run = f"; not run: {', '.join(entry['not_run'])}" if entry.get("not_run") else ""
        lines = [
            f"  {name:<13} {len(entry['checks'])} checks, slowest wakeup {entry['slowest_wake_s']} s (bound "
            f"{entry['bound_s']} s), {entry['steps']:,} calls, {entry['seconds']} s{not_run}"
        ]
        for check, seconds in entry["check_seconds"].items():
            wakes = entry["latencies_s"].get(check)
            wake = f", woken after {' / '.join(str(t) for t in wakes)} s" if wakes else ""
            lines.append(f"  {'':<13} {check:<26} {seconds} s{wake}")
        for check, why in entry.get("not_run", {}).items():
            lines.append(f"  {'':<13} {check:<26} not run: {why}")
        return lines


def _render(context: Context, report: ChecksReport) -> str:
    """A pytest module that runs the failing check of the blocking phase again
    (threads cannot be replayed call by call; every wait in it is bounded)."""
    notes = [
        "Threads cannot be replayed call by call: this test runs the failing check again (same bound, new",
        "threads); every wait in it is bounded.",
    ]
    return replay_module(
        checks_doc(context, "blocking", report, "does not block and wake as docs/API.md says.", notes),
        ["from refqueue.conformance.blocking import check_blocking", "from refqueue.conformance.contract import load_backend"],
        [
            f"report = check_blocking(BACKEND, bound={report.bound!r}, checks=({report.failed_check!r},))",
            "assert report.ok, report.failure",
        ],
        target=context.target,
    )


PHASE = BlockingPhase()
