"""The certification of the in-process queue (``refqueue.queue``) by the
conformance kit, one test per phase of ``refqueue certify``'s ci profile."""

import pytest

from refqueue.conformance.blocking import CHECKS as BLOCKING_CHECKS
from refqueue.conformance.certify import PHASES, certify
from refqueue.conformance.cli import DEFAULT_BACKEND

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("phase", PHASES)
def test_inprocess_queue_conforms(phase):
    cert = certify(DEFAULT_BACKEND, profile="ci", phases=(phase,))
    assert cert.passed, cert.counterexample
    if phase == "construction":
        assert cert.phases["construction"]["configurations"] == 15
    elif phase == "walks":
        assert cert.coverage["world_graph"]["actions_never_tried"] == []
        assert cert.coverage["situations"]["never_reached"] == []
    elif phase == "calls":
        assert cert.phases["calls"]["not_run"] == {} and len(cert.phases["calls"]["checks"]) == 9
    elif phase == "lockstep":
        assert cert.coverage["lockstep"]["never_made"] == []
    elif phase == "threads":
        assert cert.phases["threads"]["verdicts"] == {"ok": 20, "illegal": 0, "unknown": 0}
    elif phase == "producers":
        producers = cert.phases["producers"]
        assert list(producers["checks"]) == ["deadlock", "orphan", "stress"]
        assert producers["max_work_bytes"] < producers["work_bound_bytes"]
        assert producers["seconds"] < 3
    else:
        blocking = cert.phases["blocking"]
        assert list(blocking["checks"]) == list(BLOCKING_CHECKS) and blocking["not_run"] == {}
        assert blocking["slowest_wake_s"] <= blocking["bound_s"] == 0.05
        assert blocking["seconds"] < 5


@pytest.mark.slow
@pytest.mark.timeout(3600)  # four kit worlds, 1,574,898 transitions (issue 14)
def test_inprocess_queue_takes_every_transition_of_the_world_graph():
    cert = certify(DEFAULT_BACKEND, exhaustive=True, phases=("walks",))
    assert cert.passed, cert.counterexample
    graph = cert.coverage["world_graph"]
    assert graph["transitions"] == graph["transitions_total"] == 1_574_898
    assert graph["nodes"] == graph["nodes_total"] == 247_434
