"""The ``faults`` phase: lost replies, crashed clients, server restarts and
several processes, for a backend that declares them.

The other phases run one process that never crashes and a server that never
restarts.  A deployment over two systems (a queue server and a shared store)
meets ordinary faults: a reply lost on the network after the call committed,
a client killed between its commit and its scrub, a server restarted with or
without its state.  A backend that declares ``Capabilities(faults=True)``
gives the kit ``FaultHooks`` (``refqueue.conformance.contract``, the
factory's ``faults`` attribute) that make those happen on demand; this phase
runs each check below on a fresh queue, comparing every answer with the
model (``refqueue.model.actions`` in a deployment: ``two_step_ack``, an ack
or dead-letter commits with a *scrub intent* and the data leaves the store
when the intent is collected).  Every other backend (the in-process queue
among them) gets the phase listed as not run, with why.

``lost-reply-put``, ``-put-step``, ``-acquire``, ``-ack``, ``-fail``, ``-extend``, ``-dead-letter``, ``-reclaim``, ``-close``
    the call made once with its reply lost: it must raise an error of kind
    ``"unavailable"``, its effect committed; the clients' counts, flags and
    dead letters, ``lease_state`` (where the backend has it) and a retry of
    the call must be the model's: a retried ack, fail or dead-letter answers
    False and changes nothing, a retried put never enqueues the sample again
    (not even after it was acked, nor with two such puts uncertain at
    once), a lost acquire's lease is outstanding and reclaimed after its
    timeout; a lost reclaim also with ``max_deliveries=1`` (it dead-letters).  The store may hold the data of a sample
    whose completion lost its reply until ``reclaim_expired`` runs with the
    clock past ``intent_timeout``; then it must hold nothing of it.
``crash-mid-ack``
    a client killed right after its ack (dead-letter, fail at the cap)
    commits: another client sees it completed and collects its data within
    the bound.
``reclaimer-collects-intents``, ``reclaimer-survives-lost-reply``, ``reclaimer-survives-refusals``, ``reclaimer-survives-restart``
    the background reclaimer collects a dead client's intent, keeps working
    after its own reply was lost, after its server refused writes for a while
    (the optional hook ``refuse_writes``) and after its server restarted under
    it.
``restart-durable``, ``restart-lossy``
    a durable restart changes nothing a client sees; a lossy one is detected
    by every call of the old clients (the reads a backend adds, such as
    ``metrics()``, included), no lease of the old epoch is accepted by a new
    client and no lease identity is reused.
``restart-rewound``
    (with the optional hooks ``checkpoint``/``rewind``) a server back with an
    older state, its last writes lost, is detected by every call of a client
    that saw the newer state.
``processes-linearizable``
    histories recorded from the kit's process and two spawned children, each
    with its own client over a shared store (``refqueue.conformance.processes``),
    are linearizable (``refqueue.conformance.linearizability``): the profile's
    ``process_histories`` of them (ci 5, deep 20), seeds ``seed * 1000 + k``,
    because one history of 200 calls misses a race often.  A history the
    checker cannot decide within its budget is recorded again from the same
    seed, up to ``UNDECIDED_TRIES`` recordings (the certificate counts them:
    ``undecided_recorded_again``); undecided in all of them, the check fails.

Faults are operations of a check's history: a failure prints the history of
the check (calls, answers, faults and the passage of time, in order) next to
what the model says.  Every check is deterministic but the last, which is
seeded (the seed of the run); a failure's replay runs the failing check
again with that seed (and as many histories), and for the last the history
the checker rejected is saved beside the certificate.

Imports: ``fault_replies`` and ``fault_crashes`` (the checks), ``fault_run``
(a check's clients, model and history), ``processes``, ``linearizability``,
``probe`` (the verdicts), ``render``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from typing import Any

from refqueue.conformance import fault_crashes as crashes
from refqueue.conformance import fault_replies as replies
from refqueue.conformance.contract import Backend, load_backend
from refqueue.conformance.phase import (
    Check, ChecksReport, Context, PhaseBase, PhaseResult, checks_counts, checks_doc, checks_result, select_checks,
)  # fmt: skip
from refqueue.conformance.probe import Failed, NotRun
from refqueue.conformance.render import replay_module

__all__ = ["CHECKS", "NAMED_CHECKS", "PHASE", "PROCESS_CHILDREN", "PROCESS_HISTORIES", "PROCESS_OPERATIONS", "check_faults"]

PROCESS_CHILDREN = 2  # spawned children of the multi-process history (the kit's process makes the third)
PROCESS_OPERATIONS = 200  # calls of each multi-process history, all threads together
# Multi-process histories of a check_faults call unless told (a certification takes its profile's
# process_histories: ci 5, deep 20).  One history of 200 calls caught a client answering reads from a
# cache in 8 of 20 seeds (1.9 s each); five independent ones miss it with probability about 0.6^5 = 8 %.
PROCESS_HISTORIES = 5
_CLOCK = ("injected_clock",)  # the check moves the queue's clock (past a deadline or intent_timeout)


class HistoryRejected(Failed):
    """The multi-process history is not linearizable (or could not be decided); ``history`` is its JSON."""

    def __init__(self, message: str, history: str | None) -> None:
        super().__init__(message)
        self.history = history


def _processes(backend: Backend, seed: int, histories: int = PROCESS_HISTORIES) -> tuple[int, dict[str, Any]]:
    """``histories`` multi-process histories (seeds ``seed * 1000 + k``), each
    linearizable; the calls made and the check's numbers for the certificate."""
    from refqueue.conformance import linearizability
    from refqueue.conformance.history import History, RecordingHung
    from refqueue.conformance.linearizability import OK, UNDECIDED_TRIES, UNKNOWN, until_decided
    from refqueue.conformance.processes import Children, record_processes

    if backend.make_store is not None:
        raise NotRun("the backend brings its own store (make_store); the processes share a SharedDirFeatureStore")
    calls = again = 0

    def judge(history: History) -> linearizability.Verdict:
        nonlocal calls
        calls += len(history)  # every recording's calls count, the undecided ones' too
        return linearizability.check(history, max_steps=1_000_000, timeout=None)

    with Children() as pool:  # the children of one history serve the next
        for k in range(histories):
            history_seed = seed * 1000 + k
            record = functools.partial(
                record_processes, backend, seed=history_seed, children=PROCESS_CHILDREN, operations=PROCESS_OPERATIONS,
                pool=pool,
            )
            try:
                history, verdict, tried_again = until_decided(record, judge)
            except RecordingHung as exc:
                raise Failed(f"history {k + 1} of {histories} (seed {history_seed}): {exc}") from exc
            except RuntimeError as exc:
                raise Failed(f"a child process could not take part: {exc}") from exc
            again += tried_again
            if verdict.result != OK:
                what = (
                    f"could not be decided in {UNDECIDED_TRIES} recordings (an undecided history is not a pass)"
                    if verdict.result == UNKNOWN else "is not linearizable"
                )  # fmt: skip
                raise HistoryRejected(
                    f"history {k + 1} of {histories}, of {history.threads} threads in {PROCESS_CHILDREN + 1} processes "
                    f"(seed {history_seed}, {len(history)} calls), {what}:\n{verdict.describe()}",
                    history.to_json(),
                )
    return calls, {"histories": histories, **({"undecided_recorded_again": again} if again else {})}


NAMED_CHECKS: tuple[Check, ...] = (
    Check("lost-reply-put", "a put whose reply was lost committed; a retry, even after the ack, enqueues nothing",
          replies.lost_put),
    Check("lost-reply-put-step", "a put_blocks_until_below step whose reply was lost committed; a retry enqueues "
          "nothing", replies.lost_put_step),
    Check("lost-reply-acquire", "an acquire whose reply was lost leaves its lease outstanding, reclaimed after its "
          "timeout", replies.lost_acquire, _CLOCK),
    Check("lost-reply-ack", "an ack whose reply was lost committed: lease_state 'acked', a retry answers False, the "
          "data collected past intent_timeout", replies.lost_ack, _CLOCK),
    Check("lost-reply-fail", "a fail whose reply was lost committed: lease_state 'pending', a retry answers False",
          replies.lost_fail),
    Check("lost-reply-extend", "an extend whose reply was lost committed: the lease outlives its first deadline",
          replies.lost_extend, ("extend", *_CLOCK)),
    Check("lost-reply-dead-letter", "a dead_letter whose reply was lost committed once: a retry answers False, the "
          "data collected past intent_timeout", replies.lost_dead_letter, ("dead_letter", *_CLOCK)),
    Check("lost-reply-reclaim", "a reclaim_expired whose reply was lost committed: the lease is pending, a retry "
          "takes nothing back", replies.lost_reclaim, _CLOCK),
    Check("lost-reply-close", "a close whose reply was lost committed: puts are refused, a retry is harmless",
          replies.lost_close),
    Check("crash-mid-ack", "a client killed right after its ack (dead_letter, fail at the cap) commits: another client "
          "collects its data past intent_timeout", crashes.crash_mid_ack, _CLOCK),
    Check("reclaimer-collects-intents", "another client's background reclaimer collects a dead client's scrub intent "
          f"within {crashes.RECOVER_WITHIN:g} s", crashes.reclaimer_collects_intents, ("reclaimer", *_CLOCK)),
    Check("reclaimer-survives-lost-reply", "a background reclaimer whose reply was lost keeps reclaiming (within "
          f"{crashes.RECOVER_WITHIN:g} s)", crashes.reclaimer_survives_lost_reply, ("reclaimer", *_CLOCK)),
    Check("restart-durable", "a durable restart changes nothing a client sees; leases from before still ack",
          crashes.restart_durable),
    Check("reclaimer-survives-restart", "a background reclaimer running while its server restarts (durably, down "
          f"{crashes.RESTART_DOWN_FOR:g} s) reclaims afterwards (within {crashes.RECOVER_WITHIN:g} s)", crashes.reclaimer_survives_restart, ("reclaimer", *_CLOCK)),
    Check("reclaimer-survives-refusals", "a background reclaimer whose server refuses writes for a while (full, "
          f"read-only) reclaims once it takes them again (within {crashes.RECOVER_WITHIN:g} s)",
          crashes.reclaimer_survives_refusals, ("reclaimer", *_CLOCK)),
    Check("restart-lossy", "a lossy restart is detected by every call of the old clients; no stale lease accepted, no "
          "lease identity reused", crashes.restart_lossy),
    Check("restart-rewound", "a server back with an older state (its last writes lost) is detected by every call of a "
          "client that saw the newer one", crashes.restart_rewound),
    Check("processes-linearizable", f"histories of clients in {PROCESS_CHILDREN + 1} processes over a shared store "
          "are linearizable", _processes, takes=("histories",)),
)  # fmt: skip
CHECKS = tuple(c.name for c in NAMED_CHECKS)
_BY_NAME = {c.name: c for c in NAMED_CHECKS}


def check_faults(
    backend: Backend | str, *, seed: int = 0, checks: Sequence[str] | None = None, histories: int = PROCESS_HISTORIES
) -> ChecksReport:
    """Run ``checks`` (default: all of ``CHECKS``, in that order) on ``backend``,
    which must declare ``faults``; stop at the first failure.  ``histories``:
    how many multi-process histories ``processes-linearizable`` records."""
    if isinstance(backend, str):
        backend = load_backend(backend)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0 (the histories' seeds are seed * 1000 + k), got {seed!r}")
    if isinstance(histories, bool) or not isinstance(histories, int):
        raise TypeError(f"histories must be an int, got {histories!r}; pass how many multi-process histories to record")
    if histories < 1:
        raise ValueError(f"histories must be >= 1, got {histories!r}; pass how many multi-process histories to record")
    if not backend.capabilities.faults or backend.faults is None:
        raise ValueError(
            f"{backend.target} does not declare faults (Capabilities(faults=True) and a factory attribute faults "
            f"holding its FaultHooks); the faults phase has nothing to run"
        )
    chosen = select_checks(CHECKS, checks)
    options = {"histories": histories}
    report = ChecksReport()
    caps = backend.capabilities.to_dict()
    started = time.perf_counter()
    for check in NAMED_CHECKS:
        if check.name not in chosen:
            continue
        missing = [c for c in check.needs if not caps[c]]
        if missing:
            report.not_run[check.name] = f"{', '.join(missing)}=False declared"
            continue
        began = time.perf_counter()
        failure = None
        extra: dict[str, Any] = {}
        try:
            done = check.run(backend, seed, **{option: options[option] for option in check.takes})
            steps, extra = done if isinstance(done, tuple) else (done, {})
            report.steps += steps
        except NotRun as exc:
            report.not_run[check.name] = str(exc)
            continue
        except HistoryRejected as exc:
            failure, report.history = str(exc), exc.history
        except Failed as exc:
            failure = str(exc)
        except Exception as exc:  # noqa: BLE001 - a hook or the factory that raised
            failure = f"{type(exc).__name__}: {exc}"
        report.checks[check.name] = {"what": check.what, "seconds": round(time.perf_counter() - began, 3), **extra}
        if failure is not None:
            report.failure = f"faults phase, check {check.name}: {failure}"
            report.failed_check = check.name
            break
    report.seconds = time.perf_counter() - started
    return report


class FaultsPhase(PhaseBase):
    name = "faults"
    needs = ("faults",)
    sized = False  # the same checks whatever the profile
    split = True
    checks = CHECKS

    def skipped(self, lacking: Sequence[str]) -> str:
        return "faults=False declared: the backend gives the kit no fault hooks (see docs/CERTIFYING.md, the faults phase)"

    def run(self, context: Context) -> PhaseResult:
        context.progress.start("faults", len(CHECKS))
        report = check_faults(context.backend, seed=context.seed, histories=context.profile.process_histories)
        context.progress.update(len(report.checks) + len(report.not_run), "checks", force=True)
        again = sum(c.get("undecided_recorded_again", 0) for c in report.checks.values())
        detail: dict[str, Any] = {"undecided_recorded_again": again} if again else {}
        if "processes-linearizable" in report.checks:
            detail["process_histories"] = report.checks["processes-linearizable"].get("histories", 0)
        counts = checks_counts(report, bounded=False, not_run=dict(report.not_run), **detail)
        result = checks_result(context, "faults", report, counts, _render)
        if result.failure is not None:
            result.history = report.history
        return result

    def summary(self, name: str, entry: Mapping[str, Any]) -> list[str]:
        not_run = f"; not run: {', '.join(entry['not_run'])}" if entry.get("not_run") else ""
        again = entry.get("undecided_recorded_again")
        again_text = f" ({again} undecided multi-process histor{'y' if again == 1 else 'ies'} recorded again)" if again else ""
        lines = [
            f"  {name:<13} {len(entry['checks'])} checks, {entry['steps']:,} calls, {entry['seconds']} s{again_text}{not_run}"
        ]
        for check, seconds in entry["check_seconds"].items():
            histories = entry.get("process_histories") if check == "processes-linearizable" else None
            lines.append(f"  {'':<13} {check:<30} {seconds} s" + (f" ({histories} histories)" if histories else ""))
        for check, why in entry.get("not_run", {}).items():
            lines.append(f"  {'':<13} {check:<30} not run: {why}")
        return lines


def _render(context: Context, report: ChecksReport) -> str:
    """A pytest module that runs the failing check of the faults phase again (same seed)."""
    notes = [
        "This test runs the failing check again on a fresh queue, with the same seed and the same faults at the",
        "same calls (the multi-process check records a new history from the same programs).",
    ]
    return replay_module(
        checks_doc(context, "faults", report, "does not survive faults as docs/API.md says.", notes),
        ["from refqueue.conformance.contract import load_backend", "from refqueue.conformance.faults import check_faults"],
        [
            f"report = check_faults(BACKEND, seed={context.seed!r}, checks=({report.failed_check!r},)"
            + (f", histories={context.profile.process_histories!r})" if report.failed_check == "processes-linearizable" else ")"),
            "assert report.ok, report.failure",
        ],
        target=context.target,
    )


PHASE = FaultsPhase()
