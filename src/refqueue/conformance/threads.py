"""The ``threads`` phase: real multi-threaded histories, each checked for
linearizability against the model.

The profile's histories (``refqueue.conformance.history.record``: one
controller that moves time, reclaims and closes, workers that put, acquire,
ack, fail, extend, dead-letter, hand back stale leases and read; two in
three *rich*, with watermarks, store puts, blocking-put steps, ``health()``
reads and callbacks) are recorded on fresh queues of the backend and checked
by ``refqueue.conformance.linearizability.check``.  History k of a run with
seed S is recorded with seed ``1000 * S + k``.  A history the checker cannot
decide within its budget (``unknown``) says nothing either way (a thread
preempted inside one call overlaps it with hundreds of others, and the
search grows with that): its seed is recorded again, up to
``UNDECIDED_TRIES`` recordings, and the first one decided counts in its
place (the certificate counts them: ``undecided_recorded_again``).  A seed
undecided in every recording fails the certification like an ``illegal``
history: the certificate claims the histories were checked, and an
undecided one was not; the failure says which it was.  An illegal history is
shrunk (``refqueue.conformance.shrink.shrink_threads``: whole threads, then
calls, each candidate recorded again) for at most the profile's
``shrink_seconds``; the failure carries the (shrunk) history, and its replay
records the programs and the phase's seeds again (a thread schedule cannot
be replayed call by call).  A backend whose own store (``make_store``) cannot
hold what a plain history writes before its threads start is not recorded:
the phase answers "could not certify", saying how large a store it needs.

Imports: ``history``, ``linearizability``, ``shrink``, ``render``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from typing import Any

from refqueue.conformance.contract import Backend
from refqueue.conformance.history import History, RecordingHung, plan_programs, record, rich_history
from refqueue.conformance.linearizability import ILLEGAL, OK, UNDECIDED_TRIES, Verdict, check, until_decided
from refqueue.conformance.phase import Context, PhaseBase, PhaseResult, timed, unfit
from refqueue.conformance.progress import Progress
from refqueue.conformance.render import replay_module
from refqueue.conformance.samples import UNIT_BYTES
from refqueue.conformance.shrink import shrink_threads

__all__ = ["PHASE", "UNDECIDED_TRIES"]  # UNDECIDED_TRIES: refqueue.conformance.linearizability's


def _too_small(backend: Backend, seeds: list[int], shape: dict[str, int]) -> str | None:
    """Why the backend's own store cannot hold what the phase's plain histories
    write before their threads start (one unit per put of the history: the
    model of this phase has no store capacity), or None.  The kit's store has
    no caps here."""
    if backend.make_store is None:
        return None
    plain = [s for s in seeds if not rich_history(s)]
    if not plain:
        return None
    needed = max(sum(kind in ("put", "put_blocks") for p in plan_programs(s, **shape).values() for kind in p) for s in plain)
    store = backend.make_store()
    try:
        capacity, samples = store.capacity_bytes, getattr(store, "max_samples", None)
    finally:
        store.close()
    short = []
    if capacity is not None and capacity < needed * UNIT_BYTES:
        short.append(f"capacity_bytes={capacity}, needs at least {needed * UNIT_BYTES}")
    if samples is not None and samples < needed:
        short.append(f"max_samples={samples}, needs at least {needed}")
    if not short:
        return None
    return (
        f"the store the backend's make_store() returns is too small for the threads phase: its histories write up to "
        f"{needed} samples of {UNIT_BYTES} bytes before their threads start ({'; '.join(short)}); give make_store() a "
        f"store at least that large for the certification, or leave make_store out to run on the kit's store"
    )


def _run(context: Context) -> PhaseResult:
    backend, profile, seed, bar = context.backend, context.profile, context.seed, context.progress
    bar.start("threads", profile.histories)
    seeds = [seed * 1000 + k for k in range(profile.histories)]
    shape = {"threads": profile.history_threads, "operations": profile.history_ops}
    started = time.perf_counter()
    small = _too_small(backend, seeds, shape)
    if small is not None:
        return unfit(context, "threads", small, time.perf_counter() - started)
    verdicts = {"ok": 0, "illegal": 0, "unknown": 0}
    operations = 0
    recording = checking = 0.0
    most_steps = 0
    undecided = 0  # recordings the checker could not decide, each recorded again
    failed = None

    def record_one(history_seed: int) -> History:
        nonlocal recording
        started = time.perf_counter()
        try:
            return record(backend, seed=history_seed, **shape)
        finally:
            recording += time.perf_counter() - started

    def judge(history: History) -> Verdict:
        nonlocal checking, operations, most_steps
        started = time.perf_counter()
        verdict = check(history, max_steps=profile.history_steps, timeout=None)
        checking += time.perf_counter() - started
        operations += len(history)
        most_steps = max(most_steps, verdict.steps)
        return verdict

    for k, history_seed in enumerate(seeds):
        try:
            history, verdict, again = until_decided(functools.partial(record_one, history_seed), judge)
        except RecordingHung as exc:
            failed = (k, history_seed, None, f"history {k + 1} (seed {history_seed}): {exc}", str(exc))
            break
        undecided += again
        verdicts[verdict.result] += 1
        bar.update(k + 1, f"histories · {operations:,} operations")
        if verdict.result != OK:
            failed = (k, history_seed, verdict, _threads_message(k, history_seed, verdict), verdict.describe())
            break
    result = PhaseResult(timed(
        operations,
        recording + checking,
        histories=sum(verdicts.values()),
        threads=profile.history_threads,
        verdicts=verdicts,
        record_seconds=round(recording, 2),
        check_seconds=round(checking, 2),
        most_model_steps=most_steps,
        undecided_recorded_again=undecided,
    ))
    if failed is None:
        return result
    k, history_seed, verdict, message, detail = failed
    result.failure = {
        "phase": "threads",
        "message": message,
        "steps_to_failure": context.steps_before + operations,
        "phase_steps_to_failure": operations,
        "trace_steps": len(verdict.history) if verdict is not None else 0,
        "shrunk": False,
        "verdict": detail,
    }
    shrunk = None
    if verdict is not None and verdict.result == ILLEGAL and profile.shrink_seconds > 0:
        # Only an illegal history is shrunk: a hang costs a whole hang_after per
        # try, and an undecided one says nothing a smaller one would.
        shrunk = _shrink_history(backend, history_seed, shape, profile, verdict, bar)
        result.counts["shrink"] = {
            "operations_before": shrunk.operations_before,
            "threads_before": shrunk.threads_before,
            "operations_after": shrunk.operations,
            "threads_after": shrunk.threads,
            "recordings": shrunk.recordings,
            "seconds": round(shrunk.seconds, 2),
            "out_of_time": shrunk.out_of_time,
        }
        if shrunk.shrunk:
            verdict = shrunk.verdict
            detail = verdict.describe()
            message = _threads_message(k, history_seed, verdict, shrunk)
            result.failure.update(
                message=message,
                trace_steps=len(verdict.history),
                shrunk=True,
                verdict=detail,
                operations_before=shrunk.operations_before,
                threads_before=shrunk.threads_before,
                threads_after=shrunk.threads,
            )
        else:
            shrunk = None
    if verdict is not None:
        result.history = verdict.history.to_json()
    # The replay records the failing seed first, then the phase's other seeds.
    order = [history_seed] + [s for s in seeds if s != history_seed]
    programs = None if shrunk is None else (history_seed, shrunk.programs)
    result.replay = _render(context, order, shape, message, detail, programs)
    return result


def _shrink_history(backend: Backend, history_seed: int, shape: dict[str, int], profile: Any, verdict: Any, bar: Progress) -> Any:
    """Shrink the failing history of ``history_seed`` (``shrink.shrink_threads``)."""
    bar.start("threads: shrinking", int(profile.shrink_seconds))

    def attempt(programs: dict[int, list[str]]) -> tuple[Any, Any] | None:
        try:
            history = record(backend, seed=history_seed, programs=programs, hang_after=_SHRINK_HANG_AFTER)
        except RecordingHung:
            return None  # a smaller program that hangs is not the failure being shrunk
        found = check(history, max_steps=profile.history_steps, timeout=None)
        return (history, found) if found.result == ILLEGAL else None

    return shrink_threads(
        plan_programs(history_seed, **shape),
        attempt,
        verdict.history,
        verdict,
        reruns=profile.shrink_reruns,
        seconds=profile.shrink_seconds,
    )


_SHRINK_HANG_AFTER = 10.0  # seconds a recording made while shrinking may take


def _threads_message(k: int, history_seed: int, verdict: Any, shrunk: Any = None) -> str:
    if verdict.result == "unknown":
        return (
            f"history {k + 1} (seed {history_seed}, {verdict.operations} operations) could not be decided in "
            f"{UNDECIDED_TRIES} recordings: {verdict.reason}; an undecided history is not a pass"
        )
    blocker = verdict.history.events[verdict.blocker]
    if shrunk is None:
        what = f"history {k + 1} (seed {history_seed}, {verdict.operations} operations, not shrunk)"
    else:
        what = (
            f"history {k + 1} (seed {history_seed}), shrunk from {shrunk.operations_before} operations of "
            f"{shrunk.threads_before} threads to {verdict.operations} operations of {verdict.history.threads} "
            f"threads ({shrunk.recordings} recordings, {shrunk.seconds:.1f} s"
            f"{', stopped at the time budget' if shrunk.out_of_time else ''}),"
        )
    return (
        f"{what} is not linearizable: after the longest linearizable prefix ({len(verdict.order)} operations) "
        f"no order places {blocker.text(verdict.history.epoch)}; the model says: {verdict.model_says}"
    )


def _render(
    context: Context,
    seeds: list[int],
    shape: dict[str, int],
    message: str,
    detail: str,
    programs: tuple[int, dict[int, list[str]]] | None = None,
) -> str:
    """A pytest module that records the failing histories again and checks each.

    A thread schedule cannot be replayed call by call, so the test re-runs the
    recording: the shrunk programs first (``profile.shrink_reruns`` times, a
    few more), then the phase's seeds (the failing seed first).  On a backend
    with the race it fails again; on a correct one every history is
    linearizable.
    """
    profile = context.profile
    doc = [
        f"Counterexample: {context.target} diverges from the reference model.",
        "",
        *message.splitlines(),
        "",
        context.found_by("threads"),
        "A thread schedule cannot be replayed call by call: this test records the histories again",
        "(new threads) and checks each: "
        + ("first the shrunk per-thread programs below, then the phase's seeds." if programs else "the phase's seeds."),
        "The history that failed is saved beside the certificate (<backend>.history.json); check it again",
        "with refqueue.conformance.linearizability.check.",
        "",
        *detail.splitlines(),
    ]
    constants: list[str] = []
    body: list[str] = []
    if programs is not None:
        seed, shrunk = programs
        constants += ["# The shrunk programs: thread -> the kinds of call it makes (thread 0 is the controller).", "PROGRAMS = {"]
        constants += [f"    {t}: {p!r}," for t, p in sorted(shrunk.items())]
        constants += ["}", ""]
        body += [
            f"for _ in range({max(profile.shrink_reruns, 1) * 3}):",
            f"    history = record(BACKEND, seed={seed!r}, programs=PROGRAMS)",
            f"    verdict = check(history, max_steps={profile.history_steps}, timeout=None)",
            "    assert verdict.ok, verdict.describe()",
        ]
    body += [
        f"for seed in {seeds!r}:",
        "    history = record(",
        f"        BACKEND, seed=seed, threads={shape['threads']}, operations={shape['operations']}",
        "    )",
        f"    verdict = check(history, max_steps={profile.history_steps}, timeout=None)",
        "    assert verdict.ok, verdict.describe()",
    ]
    imports = [
        "from refqueue.conformance.contract import load_backend",
        "from refqueue.conformance.history import record",
        "from refqueue.conformance.linearizability import check",
    ]
    return replay_module(doc, imports, body, target=context.target, constants=constants)


class ThreadsPhase(PhaseBase):
    name = "threads"

    def run(self, context: Context) -> PhaseResult:
        return _run(context)

    def summary(self, name: str, entry: Mapping[str, Any]) -> list[str]:
        v = entry["verdicts"]
        histories = f"{entry['histories']:,} histor{'y' if entry['histories'] == 1 else 'ies'}"
        return [
            f"  {name:<13} {histories} of {entry['threads']} threads, {entry['steps']:,} operations, "
            f"{entry['seconds']} s; linearizable: {v['ok']} ok, {v['illegal']} illegal, {v['unknown']} unknown"
            + (f" ({entry['undecided_recorded_again']} undecided recorded again)" if entry.get("undecided_recorded_again") else "")
        ]


PHASE = ThreadsPhase()
