"""Dogfood: the conformance kit's threads and producers phases certify the
in-process queue while it records events, checked online by a raising
Monitor and afterwards by trace-check."""

from __future__ import annotations

import pytest
import recording_backend

from refqueue.conformance.certify import certify
from refqueue.trace_check import check_records

pytestmark = [pytest.mark.torch, pytest.mark.timeout(600)]


@pytest.mark.parametrize("phase", ["threads", "producers"])
def test_conformance_phase_histories_are_allowed_by_the_model(phase):
    recording_backend.LOGS.clear()
    cert = certify("recording_backend:make", profile="ci", phases=(phase,))
    assert cert.passed, cert.counterexample
    assert recording_backend.LOGS
    checked, kinds = 0, set()
    for ring, monitor in recording_backend.LOGS:
        monitor.check()
        records = ring.records()
        result = check_records(records)
        assert result.ok, result.violation.render()  # type: ignore[union-attr]
        checked += result.events
        kinds.update(r["ev"] for r in records)
    if phase == "threads":  # 20 histories: every kind of lease step, dead letters, pauses
        assert checked > 2_000
        assert {"acquire", "ack", "fail", "extend", "reclaim", "dead_letter", "try_put", "pause"} <= kinds
    else:  # blocked producers park and are admitted
        assert {"park", "unpark", "pause", "resume"} <= kinds
