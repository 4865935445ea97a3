"""The certification of the in-process queue (``refqueue.queue``) by the
conformance kit, one test per phase of ``refqueue certify``'s ci profile."""

import pytest

from conformance.wakeup_report import assert_reports_each_wakeups_distribution_and_the_escape
from refqueue.conformance.blocking import CHECKS as BLOCKING_CHECKS
from refqueue.conformance.certify import PHASES, certify
from refqueue.conformance.cli import DEFAULT_BACKEND
from refqueue.conformance.contract import load_backend
from refqueue.conformance.coverage import SITUATIONS
from refqueue.conformance.walks import KIT_WORLDS, Coverage, cover, kit_world

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("phase", PHASES)
def test_inprocess_queue_conforms(phase):
    cert = certify(DEFAULT_BACKEND, profile="ci", phases=(phase,))
    assert cert.passed, cert.counterexample
    if phase == "construction":
        assert cert.phases["construction"]["configurations"] == 21  # with dead_letter_limit declared
    elif phase == "walks":
        assert cert.coverage["world_graph"]["actions_never_tried"] == []
        assert set(cert.coverage["world_graph"]["worlds"]) == set(KIT_WORLDS)
        # every interesting situation reached (tests/conformance/test_conformance_coverage.py
        # says what they are; its test of this same certification is slow)
        situations = cert.coverage["situations"]
        assert situations["never_reached"] == [] and situations["reached_count"] == len(SITUATIONS)
        assert "## Interesting situations reached" in cert.to_markdown()
    elif phase == "calls":
        # one client: the in-process queue's factory opens no other client of a queue
        assert cert.phases["calls"]["not_run"] == dict.fromkeys(
            ("dedup-across-clients", "leases-across-clients"),
            "one client: the factory has no open_client (or the run passed clients=1)",
        )
        from refqueue.conformance.calls import CHECKS

        assert len(cert.phases["calls"]["checks"]) == len(CHECKS) - 2  # every check but the two across clients
    elif phase == "lockstep":
        assert cert.coverage["lockstep"]["never_made"] == []
    elif phase == "threads":
        assert cert.phases["threads"]["verdicts"] == {"ok": 20, "illegal": 0, "unknown": 0}
    elif phase == "producers":
        producers = cert.phases["producers"]
        assert list(producers["checks"]) == ["deadlock", "orphan", "stress"]
        assert producers["max_work_bytes"] < producers["work_bound_bytes"]
    elif phase == "faults":
        # the in-process queue has no server to lose or restart: it is said, not passed
        assert cert.phases["faults"]["skipped"].startswith("faults=False declared"), cert.phases["faults"]
    else:
        blocking = cert.phases["blocking"]
        assert list(blocking["checks"]) == list(BLOCKING_CHECKS) and blocking["not_run"] == {}
        assert blocking["bound_s"] == 0.05  # (the slowest wakeup within it unless one was measured again: below)
        # (the same on the base backend with seed 5: tests/conformance/test_conformance_blocking.py, slow)
        assert_reports_each_wakeups_distribution_and_the_escape(cert)


# Every transition of each kit world (issue 14), one test per world so that
# the workers share them; ``refqueue certify --exhaustive`` runs all four in
# one certificate.  The sizes are the worlds' own, recorded as the manifest
# records TLC's: a change that shrinks a world fails here.
WORLD_SIZES = {  # world: (nodes, transitions)
    "agreement": (133_944, 850_536),
    "wide": (65_515, 411_630),
    "reput": (20_015, 69_242),
    "timing": (27_960, 243_490),
}


def test_the_recorded_sizes_name_every_kit_world():
    assert sorted(WORLD_SIZES) == sorted(KIT_WORLDS)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("world", list(WORLD_SIZES))
def test_inprocess_queue_takes_every_transition_of_each_kit_world(world):
    backend = load_backend(DEFAULT_BACKEND)
    wg, _ = kit_world(world, backend.capabilities)
    coverage = Coverage.of(wg)
    result = cover(backend, coverage=coverage, wg=wg)
    assert result.failure is None, result.failure
    taken = coverage.to_dict()
    assert (taken["nodes"], taken["transitions"]) == (taken["nodes_total"], taken["transitions_total"]) == WORLD_SIZES[world]
