"""``diagnose(metrics)``: what is wrong with a queue, by name, with the evidence (issue 22).

Reads one metrics dict (``SampleRefQueue.metrics()``, live; a
``Metrics`` snapshot folded from a recorded log, as ``refqueue report`` and
``refqueue top`` do; or ``RedisSampleRefQueue.metrics()``) and, optionally,
an earlier one of the same queue (``previous``: what changed between the
two).  Returns the conditions that hold, most urgent first; an empty list
means none of them does (a healthy queue).  Each is a ``Condition``:
``name`` (a stable identifier), ``title`` (the sentence a person reads),
``detail`` (the numbers behind it, in words, and what to do) and
``evidence`` (the metrics it was decided from).

The rules (a key a metrics dict lacks, or holds as None, decides nothing):

``no_reclaimer``
    "leases past their deadline and no reclaimer running": an outstanding
    lease's deadline passed and ``reclaimer_running`` is not True.  Only a
    reclaim takes such a lease back, so its sample waits for ever.  From a
    recorded log (``reclaimer_running`` None) the overdue lease itself is the
    evidence: any ``reclaim_expired`` call after its deadline would have
    taken it back, so none was made (``last_reclaim_call`` says when the last
    one was).
``reclaimer_failing``
    "the reclaimer is failing": it stopped on an error, or its last calls
    raised (``reclaimer_consecutive_errors`` > 0; Redis: a lost server).
``consumers_hold_old_leases``
    "producers blocked on backpressure while consumers hold N leases older
    than the timeout": producers are parked now and N outstanding leases are
    older than the visibility timeout (kept alive by ``extend`` without an
    ack, or overdue): the data they hold keeps the store above the watermark.
``orphan_residency``
    "residency held by orphans": the producer side is paused (or producers
    are blocked), and without the resident bytes that no live sample and no
    parked ref accounts for (``unaccounted_bytes``) the residency would be
    at or below the low watermark: those bytes alone keep the pause.
``producer_bottleneck``
    "consumers idle on an empty queue: producer-side bottleneck": the queue
    is open, nothing is pending, no producer is blocked, and consumers are
    waiting in ``acquire`` now (live) or, from a log, consumers waited on an
    empty queue for at least half the log's span (thread-seconds) and longer
    than producers were blocked.
``trainer_waits_on_loader``
    "the trainer is waiting on the loader": a ``FeatureDataLoader``'s
    ``next()`` has been waiting at least one visibility timeout now
    (``loader_longest_wait_seconds``, from the loader's ``loader_wait`` /
    ``loader_batch`` records; 10 s when the timeout is not known).  The
    detail says whether samples are pending (the loader itself is held up:
    store gets, retries) or the queue is empty (the producers are behind).
``dead_letters_growing``
    "dead letters growing": with ``previous``, more samples were
    dead-lettered than at ``previous``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from refqueue._checks import describe

__all__ = ["Condition", "diagnose", "CONDITIONS"]

# name -> title (the title of consumers_hold_old_leases names its count)
CONDITIONS: dict[str, str] = {
    "no_reclaimer": "leases past their deadline and no reclaimer running",
    "reclaimer_failing": "the reclaimer is failing",
    "consumers_hold_old_leases": "producers blocked on backpressure while consumers hold {leases} older than "
                                 "the timeout",
    "orphan_residency": "residency held by orphans",
    "producer_bottleneck": "consumers idle on an empty queue: producer-side bottleneck",
    "trainer_waits_on_loader": "the trainer is waiting on the loader",
    "dead_letters_growing": "dead letters growing",
}


@dataclass(frozen=True)
class Condition:
    """One thing that is wrong: ``name`` (a key of ``CONDITIONS``), ``title``,
    ``detail`` (the evidence in words, and the fix) and ``evidence``."""

    name: str
    title: str
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.title}: {self.detail}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "detail": self.detail, "evidence": dict(self.evidence)}


def _checked(arg: str, m: object) -> Mapping[str, Any]:
    if not isinstance(m, Mapping):
        raise TypeError(
            f"diagnose({arg}) needs the dict queue.metrics() returns (or a Metrics snapshot), got "
            f"{describe(m)}; pass queue.metrics()"
        )
    for key, value in m.items():
        if key in _NUMBERS and value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or value != value
        ):
            raise TypeError(
                f"diagnose({arg}): {arg}[{key!r}] is {describe(value)}, not a number; pass the dict "
                f"queue.metrics() returned, unaltered"
            )
        if key in _FLAGS and value is not None and not isinstance(value, bool):
            raise TypeError(
                f"diagnose({arg}): {arg}[{key!r}] is {describe(value)}, not True, False or None; pass the "
                f"dict queue.metrics() returned, unaltered"
            )
    return m


_NUMBERS = frozenset({
    "pending", "outstanding", "dead_letters", "producers_blocked", "parked_bytes", "producer_blocked_seconds",
    "consumers_waiting", "oldest_open_lease_age_seconds", "leases_past_deadline", "most_overdue_lease_seconds",
    "leases_older_than_timeout", "visibility_timeout_seconds", "reclaimer_consecutive_errors", "resident_bytes",
    "high_watermark_bytes", "low_watermark_bytes", "effective_resident_bytes", "live_bytes", "unaccounted_bytes",
    "consumer_empty_wait_seconds", "seconds", "clock", "last_reclaim_call", "loader_waiting",
    "loader_longest_wait_seconds", "loader_wait_seconds", "loader_batches", "loader_retries",
})
_FLAGS = frozenset({"paused", "closed", "reclaimer_running"})


_LOADER_WAIT_DEFAULT = 10.0  # seconds: trainer_waits_on_loader's limit when the visibility timeout is not known


def _pick(m: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: m[k] for k in keys if m.get(k) is not None}


def _s(seconds: float) -> str:
    return f"{seconds:.3g} s"


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:.3g} MB"


def diagnose(metrics: Mapping[str, Any], previous: Mapping[str, Any] | None = None) -> list[Condition]:
    """The conditions that hold for ``metrics`` (most urgent first); ``[]`` when none does.
    ``previous``: an earlier metrics dict of the same queue, for what grew since."""
    m = _checked("metrics", metrics)
    prev = None if previous is None else _checked("previous", previous)
    found: list[Condition] = []
    get = m.get

    overdue = get("leases_past_deadline") or 0
    running = get("reclaimer_running")
    if overdue > 0 and running is not True:
        vt = get("visibility_timeout_seconds")
        late = get("most_overdue_lease_seconds") or 0.0
        if running is None:
            last = get("last_reclaim_call")
            who = ("the log records no reclaim_expired call at all" if last is None else
                   f"the log's last reclaim_expired call was at t={last:.6g}, before that deadline")
        else:
            who = "this queue has no reclaimer running"
        found.append(Condition(
            "no_reclaimer", CONDITIONS["no_reclaimer"],
            f"{overdue} outstanding lease(s) past their deadline, the most overdue by {_s(late)}"
            + ("" if vt is None else f" (visibility timeout {_s(vt)})") + f"; {who}. Only a reclaim takes such a "
            f"lease back: call start_reclaimer() (or reclaim_expired() periodically)",
            _pick(m, "leases_past_deadline", "most_overdue_lease_seconds", "visibility_timeout_seconds",
                  "reclaimer_running", "last_reclaim_call", "outstanding", "oldest_open_lease_age_seconds"),
        ))

    errors = get("reclaimer_consecutive_errors") or 0
    last_error = get("reclaimer_last_error")
    if errors > 0 or (running is False and last_error):
        found.append(Condition(
            "reclaimer_failing", CONDITIONS["reclaimer_failing"],
            (f"its last {errors} call(s) raised" if errors else "it stopped") + f"; last error: {last_error}. "
            f"Fix the cause (the server, the store); stop_reclaimer() reports what stopped it",
            _pick(m, "reclaimer_running", "reclaimer_consecutive_errors", "reclaimer_errors", "reclaimer_last_error"),
        ))

    blocked = get("producers_blocked") or 0
    older = get("leases_older_than_timeout") or 0
    if blocked > 0 and older > 0:
        vt = get("visibility_timeout_seconds")
        found.append(Condition(
            "consumers_hold_old_leases", CONDITIONS["consumers_hold_old_leases"].format(leases=f"{older} lease{'' if older == 1 else 's'}"),
            f"{blocked} producer(s) blocked, parking {_mb(get('parked_bytes') or 0)}, "
            f"{_s(get('producer_blocked_seconds') or 0.0)} blocked in all; {older} of {get('outstanding')} "
            f"outstanding lease(s) held longer than the {_s(vt or 0.0)} visibility timeout, the oldest for "
            f"{_s(get('oldest_open_lease_age_seconds') or 0.0)}, while {get('pending')} sample(s) wait. The "
            f"consumers holding them neither ack nor fail (a hung step that keeps extending?): their data keeps "
            f"the store at {_mb(get('resident_bytes') or 0)} against a high watermark of "
            f"{_mb(get('high_watermark_bytes') or 0)}",
            _pick(m, "producers_blocked", "parked_bytes", "producer_blocked_seconds", "leases_older_than_timeout",
                  "oldest_open_lease_age_seconds", "visibility_timeout_seconds", "outstanding", "pending",
                  "resident_bytes", "high_watermark_bytes"),
        ))

    unaccounted = get("unaccounted_bytes")
    effective = get("effective_resident_bytes")
    low = get("low_watermark_bytes")
    if (unaccounted and effective is not None and low is not None and (get("paused") or blocked > 0)
            and effective - unaccounted <= low):
        found.append(Condition(
            "orphan_residency", CONDITIONS["orphan_residency"],
            f"{_mb(unaccounted)} of the {_mb(get('resident_bytes') or 0)} resident belong to no pending or "
            f"leased sample and no blocked producer (live samples hold {_mb(get('live_bytes') or 0)}); without "
            f"them the residency the hysteresis judges ({_mb(effective)}) would be at or below the low watermark "
            f"({_mb(low)}). Data of puts that never completed: release it from the store (gc(), scrub)",
            _pick(m, "unaccounted_bytes", "resident_bytes", "effective_resident_bytes", "live_bytes", "parked_bytes",
                  "low_watermark_bytes", "high_watermark_bytes", "paused", "producers_blocked"),
        ))

    if not get("closed") and (get("pending") or 0) == 0 and blocked == 0:
        waiting = get("consumers_waiting")
        idle = get("consumer_empty_wait_seconds")
        span = get("seconds")
        if waiting is not None:
            fires = waiting > 0 and (idle is None or idle >= (get("producer_blocked_seconds") or 0.0))
        else:
            fires = (idle is not None and span is not None and span > 0 and idle >= 0.5 * span
                     and idle > (get("producer_blocked_seconds") or 0.0))
        if fires:
            found.append(Condition(
                "producer_bottleneck", CONDITIONS["producer_bottleneck"],
                ("" if waiting is None else f"{waiting} consumer(s) waiting in acquire now on an empty queue; ")
                + ("" if idle is None else f"consumers waited {_s(idle)} on an empty queue in all"
                   + ("" if not span else f" over {_s(span)}") + "; ")
                + "no producer is blocked: the producers do not fill the queue fast enough",
                _pick(m, "consumers_waiting", "consumer_empty_wait_seconds", "producer_blocked_seconds", "pending",
                      "seconds"),
            ))

    loader_wait = get("loader_longest_wait_seconds")
    if (get("loader_waiting") or 0) > 0 and loader_wait is not None:
        limit = get("visibility_timeout_seconds") or _LOADER_WAIT_DEFAULT
        if loader_wait >= limit:
            pending = get("pending")
            retries = get("loader_retries") or 0
            if pending:
                why = (f"{pending} sample(s) are pending, so the loader itself is held up (its store gets, "
                       f"{retries} retried call(s) so far): look at the store and the loader's device copies")
            else:
                why = "nothing is pending: the producers are behind (see producer_bottleneck)"
            found.append(Condition(
                "trainer_waits_on_loader", CONDITIONS["trainer_waits_on_loader"],
                f"{get('loader_waiting')} loader next() call(s) waiting now, the longest for {_s(loader_wait)} "
                f"(at least {_s(limit)}); {why}",
                _pick(m, "loader_waiting", "loader_longest_wait_seconds", "loader_wait_seconds", "loader_batches",
                      "loader_retries", "pending", "consumers_waiting", "visibility_timeout_seconds"),
            ))

    if prev is not None:
        now_dead, was_dead = get("dead_letters"), prev.get("dead_letters")
        if now_dead is not None and was_dead is not None and now_dead > was_dead:
            t1, t0 = get("clock"), prev.get("clock")
            over = f" in {_s(t1 - t0)}" if t1 is not None and t0 is not None and math.isfinite(t1 - t0) else ""
            found.append(Condition(
                "dead_letters_growing", CONDITIONS["dead_letters_growing"],
                f"{now_dead - was_dead} sample(s) dead-lettered{over} ({was_dead} -> {now_dead}); see "
                f"dead_letters() for their reasons",
                {"dead_letters": now_dead, "previous_dead_letters": was_dead,
                 **({"clock": t1, "previous_clock": t0} if t1 is not None and t0 is not None else {})},
            ))
    return found
