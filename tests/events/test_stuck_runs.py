"""Issue 22's stuck pipelines, rebuilt with real threads (``stuck_runs``): the
live gauges show the stall while it happens, ``diagnose`` names it, from the
live metrics and from the recorded log alike, and a healthy run gets no
diagnosis."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from events_helpers import ROOT  # noqa: E402,F401  (sys.path)
from stuck_runs import UNIT, VT, run_a, run_b, run_healthy  # noqa: E402

from refqueue import diagnose  # noqa: E402
from refqueue.events import read_jsonl  # noqa: E402
from refqueue.metrics import Metrics  # noqa: E402


def names(conditions):
    return [c.name for c in conditions]


def test_run_a_blocked_producers_and_a_held_lease_show_while_it_happens(tmp_path):
    run = run_a(tmp_path / "run_a.jsonl")
    try:
        blocked, t5, t10, t15 = (run.steps[k] for k in ("blocked", "t5", "t10", "t15"))
        # two producers blocked now, parking their two samples
        for m in (blocked, t5, t10, t15):
            assert m["producers_blocked"] == 2 and m["parked_bytes"] == 2 * UNIT
            assert m["reclaimer_running"] is True and m["paused"] is True
        # blocked time counts the waits still in progress: 2 producers x the clock's advance
        assert [m["producer_blocked_seconds"] for m in (blocked, t5, t10, t15)] == [0.0, 10.0, 20.0, 30.0]
        # the oldest open lease ages with the clock: s0's (dead consumer) until reclaimed at t=10, then s1's
        assert [m["oldest_open_lease_age_seconds"] for m in (blocked, t5, t10, t15)] == [0.0, 5.0, 10.0, 15.0]
        assert t10["reclaims"] == 1 and t10["outstanding"] == 1 and t10["pending"] == 3
        # the reclaimer is on: nothing stays past its deadline; the held lease is older than the timeout
        assert [m["leases_past_deadline"] for m in (t5, t10, t15)] == [0, 0, 0]
        assert [m["leases_older_than_timeout"] for m in (t5, t10, t15)] == [0, 1, 1]
        assert t15["resident_bytes"] == 6 * UNIT and t15["unaccounted_bytes"] == 0
        assert diagnose(blocked) == [] and diagnose(t5) == []
        [condition] = diagnose(t15, previous=t10)
        assert condition.name == "consumers_hold_old_leases"
        assert condition.title == ("producers blocked on backpressure while consumers hold 1 lease older than "
                                   "the timeout")
        assert condition.evidence["oldest_open_lease_age_seconds"] == 15.0
        assert condition.evidence["producer_blocked_seconds"] == 30.0
        assert "2 producer(s) blocked" in condition.detail and f"{VT:.3g} s visibility timeout" in condition.detail
    finally:
        run.finish()
    snapshot = Metrics.from_records(read_jsonl([run.log_path])).snapshot()
    assert snapshot["producer_blocked_seconds"] == 30.0  # both waits ended at close (t=15)
    assert snapshot["leases_past_deadline"] == 0


def test_run_a_log_diagnosed_while_stuck(tmp_path):
    """The log read while the pipeline is stuck (before anyone unblocks it):
    the open waits and the held lease, at the log's last record."""
    run = run_a(tmp_path / "run_a.jsonl")
    try:
        run._log.sinks[1].flush()
        snapshot = Metrics.from_records(read_jsonl([run.log_path])).snapshot()
    finally:
        run.finish()
    assert snapshot["producers_blocked"] == 2 and snapshot["parked_bytes"] == 2 * UNIT
    assert snapshot["producer_blocked_seconds"] == 30.0  # both waits in progress, to the last record (t=15)
    assert snapshot["oldest_open_lease_age_seconds"] == 15.0 and snapshot["leases_older_than_timeout"] == 1
    assert names(diagnose(snapshot)) == ["consumers_hold_old_leases"]


def test_run_b_leases_past_their_deadline_and_no_reclaimer(tmp_path):
    run = run_b(tmp_path / "run_b.jsonl")
    try:
        t0, t30 = run.steps["t0"], run.steps["t30"]
        assert t0["leases_past_deadline"] == 0 and diagnose(t0) == []
        assert t30["reclaimer_running"] is False
        assert t30["leases_past_deadline"] == 2 and t30["most_overdue_lease_seconds"] == 30.0 - VT
        assert t30["oldest_open_lease_age_seconds"] == 30.0 and t30["outstanding"] == 2
        [condition] = diagnose(t30)
        assert condition.name == "no_reclaimer"
        assert condition.title == "leases past their deadline and no reclaimer running"
        assert condition.detail.startswith("2 outstanding lease(s) past their deadline, the most overdue by 22 s "
                                           "(visibility timeout 8 s); this queue has no reclaimer running.")
        run._log.sinks[1].flush()
        snapshot = Metrics.from_records(read_jsonl([run.log_path])).snapshot()
    finally:
        run.finish()
    # from the log: the overdue leases are the evidence that no reclaim ran after their deadline
    assert snapshot["reclaimer_running"] is None and snapshot["last_reclaim_call"] is None
    assert snapshot["leases_past_deadline"] == 2 and snapshot["most_overdue_lease_seconds"] == 22.0
    [condition] = diagnose(snapshot)
    assert condition.name == "no_reclaimer" and "the log records no reclaim_expired call at all" in condition.detail


def test_a_healthy_run_gets_no_diagnosis(tmp_path):
    run = run_healthy(tmp_path / "healthy.jsonl")
    run.finish()
    end = run.steps["end"]
    assert end["acks_live"] == 40 and end["pending"] == 0 and end["outstanding"] == 0
    assert end["producers_blocked"] == 0 and end["leases_past_deadline"] == 0
    assert diagnose(end) == []
    assert diagnose(Metrics.from_records(read_jsonl([run.log_path])).snapshot()) == []


def _report(run):
    from refqueue.report import render_html

    run._log.sinks[1].flush()
    return render_html(read_jsonl([run.log_path]), title=run.log_path.name)


def test_the_report_of_each_stuck_run_opens_with_its_diagnosis(tmp_path):
    for build, expected in ((run_a, "producers blocked on backpressure while consumers hold 1 lease older than "
                                    "the timeout"),
                            (run_b, "leases past their deadline and no reclaimer running")):
        run = build(tmp_path / f"{build.__name__}.jsonl")
        try:
            page = _report(run)
        finally:
            run.finish()
        body = page.split("<body>", 1)[1]
        assert body.index('id="diagnosis"') < body.index("<svg")  # the first thing after the title
        diagnosis = body.split('id="diagnosis"', 1)[1].split("</section>", 1)[0]
        assert diagnosis.count('class="condition"') == 1 and f"<b>{expected}</b>" in diagnosis
        assert "resident MB" in page and 'text-anchor="end">high 2.88 MB</text>' in page


def test_the_residency_line_reaches_the_end_of_the_log(tmp_path):
    run = run_a(tmp_path / "run_a.jsonl")  # the last store record at t=0, the log runs to t=15
    try:
        page = _report(run)
    finally:
        run.finish()
    residency = page.split('id="residency"', 1)[1].split("</svg>", 1)[0]
    points = residency.split('points="', 1)[1].split('"', 1)[0].split()
    from refqueue.report import PAD_R, W

    assert float(points[-1].split(",")[0]) == W - PAD_R  # the last reading drawn to the log's end (t=15)
