"""The events figures of `refqueue bench queue` (a smoke test: the numbers are not judged)."""

from __future__ import annotations

from refqueue._bench_queue import clone_refs, events_cost, recorded_workload, trace_check_rate


def test_events_cost_and_trace_check_rate_are_measured():
    refs = clone_refs(1_200)
    cost = events_cost(refs, 100, 500, 1)
    assert cost["off"] > 0 and cost["on_ring"] > 0
    rate = trace_check_rate(refs, 1_000, 1, 100)
    assert rate["events"] > 2_000 and rate["check"] > 0 and rate["read_and_check"] > 0 and rate["check_cpu"] > 0


def test_the_recorded_workload_fails_reclaims_and_requeues():
    records = recorded_workload(clone_refs(200), 1_000, 100)
    evs = [r["ev"] for r in records]
    assert evs.count("fail") > 0 and any(r["ev"] == "reclaim" and r["samples"] for r in records)
    assert evs.count("acquire") == 1_000
