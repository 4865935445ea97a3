"""``-j``: the walks on worker processes (``refqueue.conformance.parallel``) cover
what a serial run covers; ``--fail-fast``: a short pass of every phase before
the whole runs (``certify.order``, ``Certificate.runs``)."""

import dataclasses
import json

import pytest

from refqueue.cli import main
from refqueue.conformance import backend_of
from refqueue.conformance.certify import certify, order
from refqueue.conformance.contract import load_backend
from refqueue.conformance.parallel import Workers, spec_of
from refqueue.conformance.phases import PHASES, phase
from refqueue.conformance.profiles import PROFILES
from refqueue.conformance.walker import cover, random_walks
from refqueue.conformance.worlds import Coverage, world_graph
from refqueue.model.world import make_world

pytestmark = pytest.mark.torch

INPROCESS = "refqueue.conformance.backends:inprocess"
SMALL = {"samples": 2, "consumers": 1, "horizon": 2}  # 1,369 nodes, 4,728 transitions


def _drive(target, tasks):
    spec, why = spec_of(load_backend(target), None)
    assert spec is not None, why
    workers = Workers(spec, 2)
    try:
        return workers.drive(tasks, ["small"])["small"]
    finally:
        workers.close()


def _task(kind, target, **more):
    return {"kind": kind, "world": "small", "keywords": SMALL, "target": target, "found_by": "found here", **more}


def test_a_cover_split_between_two_workers_covers_exactly_what_a_serial_cover_does():
    wg = world_graph(make_world(**SMALL))
    serial = Coverage.of(wg)
    result = cover(load_backend(INPROCESS), coverage=serial, wg=wg)
    assert result.failure is None and len(serial.edges) == serial.edges_total == 4728

    outcome = _drive(INPROCESS, [_task("cover", INPROCESS, share=[k, 2]) for k in range(2)])
    assert outcome.error is None and outcome.failure is None
    assert outcome.coverage.to_dict() == serial.to_dict()  # transitions, nodes, actions, totals
    assert outcome.coverage.edges == serial.edges and outcome.coverage.nodes == serial.nodes
    assert outcome.coverage.situations == serial.situations
    assert outcome.result.steps >= len(serial.edges) and outcome.result.walks >= 2


def test_the_shares_of_a_cover_partition_its_transitions():
    backend = load_backend(INPROCESS)
    wg = world_graph(make_world(**SMALL))
    own = []
    for k in range(3):
        coverage = Coverage.of(wg)
        cover(backend, coverage=coverage, wg=wg, share=(k, 3))
        own.append({e for v, out in enumerate(wg.out) for j, e in enumerate(out) if (v + j) % 3 == k})
        assert own[k] <= coverage.edges  # each share takes every transition of its own
    assert set().union(*own) == {e for out in wg.out for e in out} and sum(map(len, own)) == len(wg.edges)


def test_random_walks_on_a_worker_are_the_walks_of_a_serial_run():
    wg = world_graph(make_world(**SMALL))
    serial = Coverage.of(wg)
    result = random_walks(load_backend(INPROCESS), walks=20, length=30, seed=7, coverage=serial, wg=wg)
    outcome = _drive(INPROCESS, [_task("walks", INPROCESS, walks=20, length=30, seed=7)])
    assert outcome.error is None
    assert (outcome.result.steps, outcome.result.walks) == (result.steps, result.walks)
    assert outcome.coverage.edges == serial.edges and outcome.coverage.situations == serial.situations


def test_a_divergence_found_by_a_worker_comes_back_with_its_replay():
    target = "conformance.mutants.pending_lifo:make"
    outcome = _drive(target, [_task("cover", target, share=[k, 2]) for k in range(2)])
    assert outcome.error is None and outcome.failure is not None
    assert outcome.failure["trace_steps"] >= 1 and outcome.result.steps_to_failure >= 1
    assert f"BACKEND = load_backend({target!r})" in outcome.failure["replay"]
    assert "found here" in outcome.failure["replay"]


def test_a_backend_that_cannot_be_loaded_by_name_is_walked_serially_and_says_why():
    def make(store, clock, **config):  # pragma: no cover - never called
        raise AssertionError

    spec, why = spec_of(backend_of(make), None)
    assert spec is None and "cannot be loaded by name" in why
    spec, why = spec_of(load_backend(INPROCESS), {"retries": 3})
    assert why is None and (spec["target"], spec["options"]) == (INPROCESS, {"retries": 3})
    assert spec == json.loads(json.dumps(spec))  # what a worker is sent: JSON, no object of the backend


def test_jobs_is_checked():
    with pytest.raises(ValueError, match="jobs must be an int >= 1"):
        certify(INPROCESS, jobs=0)
    with pytest.raises(ValueError, match="jobs must be an int >= 1"):
        certify(INPROCESS, jobs=True)


def test_the_command_line_offers_jobs_and_fail_fast(capsys):
    with pytest.raises(SystemExit):
        main(["certify", "--help"])
    out = capsys.readouterr().out
    assert "-j N, --jobs N" in out and "--fail-fast, --no-fail-fast" in out
    with pytest.raises(SystemExit) as exited:
        main(["certify", "-j", "0"])
    assert exited.value.code == 2


# -- --fail-fast ---------------------------------------------------------------------------


def _names(runs):
    return [(each.name, "short" if short else "whole") for each, short in runs]


def test_the_short_pass_runs_every_phase_before_any_whole_run():
    every = [phase(name) for name in PHASES]
    runs = _names(order(every, True))
    short = [name for name, kind in runs if kind == "short"]
    whole = [name for name, kind in runs if kind == "whole"]
    assert sorted(short) == sorted(PHASES)  # every phase once in the short pass ...
    assert runs == [(n, "short") for n in short] + [(n, "whole") for n in whole]  # ... before any whole run
    assert short[-1] == "walks"  # its graphs are built meanwhile (slow_start)
    assert whole == [n for n in PHASES if phase(n).sized]  # the sized ones again, whole, in order
    assert {"walks", "producers", "blocking", "threads", "lockstep", "calls"} <= set(whole)
    assert "construction" not in whole and "faults" not in whole
    assert _names(order(every, False)) == [(n, "whole") for n in PHASES]


def test_a_blocking_bug_is_found_in_the_short_pass_before_any_walk_or_whole_run():
    cert = certify("conformance.mutants.put_no_wake:make", fail_fast=True)
    runs = [(r["phase"], r["pass"], r["verdict"]) for r in cert.runs]
    assert runs == [
        ("construction", "short", "pass"), ("calls", "short", "pass"), ("faults", "short", "skipped"),
        ("producers", "short", "pass"), ("blocking", "short", "fail"),
    ]  # fmt: skip
    assert cert.failure["phase"] == "blocking" and cert.failure["short_pass"] is True
    assert cert.phases["blocking"]["short_pass"] is True
    calls = cert.phases["calls"]  # its short run's entry: the whole run never came
    assert calls["short_pass"] is True and "deadline-soak" not in calls["checks"]  # the long checks left out


def test_without_fail_fast_each_phase_runs_once_whole_in_order():
    cert = certify("conformance.mutants.put_no_wake:make", phases=("calls", "producers", "blocking"))
    runs = [(r["phase"], r["pass"], r["verdict"]) for r in cert.runs]
    assert runs == [("calls", "whole", "pass"), ("producers", "whole", "pass"), ("blocking", "whole", "fail")]
    assert "deadline-soak" in cert.phases["calls"]["checks"] and "short_pass" not in cert.failure


def test_a_passing_run_keeps_the_whole_runs_entries_and_lists_both_passes():
    tiny = dataclasses.replace(PROFILES["ci"], examples=4, steps_per_example=10, histories=1, history_ops=40)
    phases = ("construction", "calls", "producers", "lockstep")
    cert = certify(INPROCESS, profile=tiny, phases=phases, fail_fast=True)
    assert cert.passed, cert.failure
    assert [(r["phase"], r["pass"]) for r in cert.runs] == [
        ("construction", "short"), ("calls", "short"), ("producers", "short"), ("lockstep", "short"),
        ("calls", "whole"), ("producers", "whole"), ("lockstep", "whole"),
    ]  # fmt: skip
    assert "deadline-soak" in cert.phases["calls"]["checks"]  # the whole run's entry, not the short one's
    assert cert.phases["lockstep"]["examples"] == 4 and not any("short_pass" in p for p in cert.phases.values())
    assert list(cert.phases) == list(phases)
    assert [n["check"] for n in cert.not_checked].count("faults phase") <= 1
