"""Real multi-threaded histories: recorded from backends, checked against the
model, and the ``threads`` phase of ``refqueue certify`` built on them."""

import dataclasses
import json
import re
import subprocess
import sys
import threading

import pytest

from conformance.mutants._base import BaseQueue, factory
from refqueue.cli import main
from refqueue.conformance.certify import PROFILES, Profile, certify
from refqueue.conformance.contract import backend_of
from refqueue.conformance.history import CALLS, History, RecordingHung, plan_programs, record
from refqueue.conformance import threads as threads_phase
from refqueue.conformance.linearizability import ILLEGAL, check

pytestmark = pytest.mark.torch

INPROCESS = "refqueue.conformance.backends:inprocess"
RACE = "conformance.mutants.acquire_race:make"
# a race only the threads phase sees (acquire_race also trips the producers
# phase's stress run, which runs before it)
SNAPSHOT = "conformance.mutants.reclaim_snapshot:make"


def test_a_recording_holds_every_kind_of_call_with_stamps_from_one_counter():
    h = record(INPROCESS, seed=3, threads=4, operations=400)
    assert len(h) == 401  # 100 calls per thread, and the controller's close
    assert h.threads == 4 and h.backend == INPROCESS and h.seed == 3
    others = [record(INPROCESS, seed=seed, operations=400) for seed in (4, 5)]
    assert {e.call for r in [h, *others] for e in r.events} == set(CALLS)
    stamps = [s for e in h.events for s in (e.invoke, e.respond)]
    assert len(set(stamps)) == len(stamps) and all(e.invoke < e.respond for e in h.events)
    assert [e.invoke for e in h.events] == sorted(e.invoke for e in h.events)
    closes = [e for e in h.events if e.call == "close"]
    assert len(closes) == 1 and closes[0].thread == 0
    assert all(e.thread == 0 for e in h.events if e.call == "tick")
    assert History.from_json(h.to_json()) == h


def test_a_recording_is_saved_and_checked_again(tmp_path):
    h = record(INPROCESS, seed=4, operations=200)
    again = History.load(h.save(tmp_path / "h.json"))
    assert again == h
    assert check(again).ok


@pytest.mark.parametrize("seed", range(6))
def test_the_in_process_queue_is_linearizable_on_recorded_histories(seed):
    h = record(INPROCESS, seed=seed, operations=400)
    v = check(h)
    assert v.ok, v.describe()


@pytest.mark.parametrize("mutant", ["acquire_race", "reclaim_snapshot"])
def test_a_race_is_caught_on_recorded_histories(mutant):
    # Each race shows in about 99 of 100 histories; one in ten is all this asserts
    # (the recording stops at the first illegal one: deciding one costs seconds).
    verdicts = []
    for seed in range(10):
        verdicts.append(check(record(f"conformance.mutants.{mutant}:make", seed=seed, operations=400)))
        if verdicts[-1].result == ILLEGAL:
            break
    assert verdicts[-1].result == ILLEGAL, [v.result for v in verdicts]


# The phases before threads cut short (the threads phase as the ci profile runs it).
TINY_BEFORE_THREADS = Profile(
    "ci", examples=5, steps_per_example=10, walks=5, walk_length=5, hypothesis_profile="default", wake_trials=1
)


def test_certify_rejects_a_reclaim_race_in_the_threads_phase_only(tmp_path, capsys, monkeypatch):
    # --no-fail-fast: each phase whole, in order, so every phase before threads
    # is seen to pass it (the default short pass reaches threads before walks).
    monkeypatch.setitem(PROFILES, "ci", TINY_BEFORE_THREADS)
    rc = main(["certify", SNAPSHOT, "--report", str(tmp_path), "--no-progress", "--no-fail-fast"])
    out = capsys.readouterr().out
    assert rc == 1, out
    data = json.loads((tmp_path / "conformance_mutants_reclaim_snapshot_make.json").read_text())
    assert list(data["phases"]) == ["construction", "calls", "faults", "walks", "producers", "blocking", "threads"]
    failure = data["failure"]
    assert failure["phase"] == "threads"
    assert failure["message"].startswith("history ") and " is not linearizable: after the longest" in failure["message"]
    assert data["phases"]["threads"]["verdicts"]["illegal"] == 1
    saved = History.load(failure["history_file"])
    assert check(saved).result == ILLEGAL
    assert "  threads       " in out and "failure       threads: caught after" in out
    assert "def test_counterexample():" in out and "BACKEND, seed=seed, threads=4, operations=400" in out
    assert f"BACKEND = load_backend({SNAPSHOT!r})" in out and "PROGRAMS = {" in out


def test_a_failing_history_is_shrunk_and_its_reproduction_runs_the_shrunk_programs():
    cert = certify(RACE, phases=("threads",))
    failure = cert.failure
    assert failure["phase"] == "threads" and failure["shrunk"] is True
    shrink = cert.phases["threads"]["shrink"]
    # the first history that failed (the race shows in about 99 of 100)
    before = shrink["operations_before"]
    assert shrink["threads_before"] == 4 and before > 400
    # two threads taking one sample is the race: no more is needed to show it
    assert shrink["operations_after"] <= 10 and shrink["threads_after"] == 2, shrink
    assert failure["trace_steps"] == shrink["operations_after"]
    assert re.match(
        rf"^history \d+ \(seed \d+\), shrunk from {before} operations of 4 threads to {shrink['operations_after']} "
        rf"operations of 2 threads \(\d+ recordings, [\d.]+ s\), is not linearizable: ",
        failure["message"],
    ), failure["message"]
    saved = History.from_json(cert.history)
    assert len(saved) == shrink["operations_after"] and check(saved).result == ILLEGAL
    programs = cert.counterexample.split("PROGRAMS = {", 1)[1].split("}", 1)[0]
    assert programs.count(": [") == 2
    namespace = {}
    exec(compile(cert.counterexample, "<counterexample>", "exec"), namespace)
    with pytest.raises(AssertionError, match="not linearizable"):
        namespace["test_counterexample"]()


def test_shrinking_stops_at_its_time_budget(monkeypatch):
    monkeypatch.setitem(PROFILES, "ci", dataclasses.replace(PROFILES["ci"], shrink_seconds=0.001))
    cert = certify(RACE, phases=("threads",))
    shrink = cert.phases["threads"]["shrink"]
    assert shrink["out_of_time"] is True
    assert shrink["recordings"] <= 1  # the budget is looked at before each recording
    if not cert.failure["shrunk"]:  # nothing smaller found in the time: said so, not called shortest
        assert "not shrunk" in cert.failure["message"] and cert.failure["trace_steps"] == 401
        assert "PROGRAMS" not in cert.counterexample


def test_a_shrunk_program_is_recorded_as_given():
    # no close: a close before the worker's put would make it refused, and the
    # recorder then has no lease to ack (the worker's calls depend on the race)
    programs = {0: ["tick", "pending_count", "tick"], 2: ["put", "acquire_nowait", "ack", "reclaim_expired"]}
    h = record(INPROCESS, seed=3, programs=programs)
    assert h.threads == 2 and len(h) == 7
    assert [e.call for e in h.events if e.thread == 0] == ["tick", "pending_count", "tick"]
    assert [e.call for e in h.events if e.thread == 2] == ["put", "acquire_nowait", "ack", "reclaim_expired"]
    assert check(h).ok
    # a rich seed: the worker writes the data itself, concurrently with the controller
    rich = record(INPROCESS, seed=1, programs=programs)
    assert [e.call for e in rich.events if e.thread == 2] == [
        "store_put", "put", "acquire_nowait", "ack", "reclaim_expired",
    ]  # fmt: skip
    assert rich.stored == {} and rich.sizes == {"t2-0": 1}
    assert check(rich).ok
    # the programs of a seed are what record(seed) runs: the same calls of the controller
    default = record(INPROCESS, seed=6, operations=200)
    again = record(INPROCESS, seed=6, programs=plan_programs(6, operations=200))
    assert [e.call for e in again.events if e.thread == 0] == [e.call for e in default.events if e.thread == 0]
    assert len(again) == len(default) == 201


def test_record_refuses_bad_programs():
    with pytest.raises(ValueError, match=r"^programs: thread 1's program \['tick'\] must be a list of call kinds from put, "):
        record(INPROCESS, programs={1: ["tick"]})
    with pytest.raises(ValueError, match=r"^programs: every thread's program is empty; give at least one call$"):
        record(INPROCESS, programs={0: [], 1: []})
    with pytest.raises(ValueError, match=r"^programs must be a non-empty mapping of thread number -> list of call kinds"):
        record(INPROCESS, programs={})
    with pytest.raises(ValueError, match=r"^programs: thread -1 must be an int >= 0 \(0 is the controller\)$"):
        record(INPROCESS, programs={-1: ["put"]})


def test_certify_reports_the_threads_phase_of_a_conforming_backend(tmp_path, capsys, monkeypatch):
    # the single-threaded phases cut short; the threads phase as the ci profile runs it
    monkeypatch.setitem(PROFILES, "ci", TINY_BEFORE_THREADS)
    rc = main(["certify", "--report", str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0, out
    phase = json.loads((tmp_path / "refqueue_conformance_backends_inprocess.json").read_text())["phases"]["threads"]
    assert phase["histories"] == 20 and phase["threads"] == 4
    assert phase["verdicts"] == {"ok": 20, "illegal": 0, "unknown": 0}
    # 7 plain histories of 401 calls; 13 rich ones (seed % 3 != 0) with store puts and scrubs besides
    assert phase["steps"] > 20 * 401
    line = next(line for line in out.splitlines() if line.startswith("  threads"))
    assert line.startswith(f"  threads       20 histories of 4 threads, {phase['steps']:,} operations, ")
    assert line.endswith(" s; linearizable: 20 ok, 0 illegal, 0 unknown")


class Stuck(BaseQueue):
    """A queue whose reclaim waits for the test to let it go (a deadlock, as the recorder sees it)."""

    let_go = threading.Event()

    def reclaim_expired(self):
        self.let_go.wait()
        return super().reclaim_expired()


def test_a_thread_that_never_returns_is_reported_not_waited_for():
    backend = backend_of(factory(Stuck), "tests:stuck")
    before = sys.getswitchinterval()
    try:
        with pytest.raises(
            RecordingHung,
            match=r"^thread [0-3] of a 4-thread history \(seed 0\) of tests:stuck was still in reclaim_expired\(\) "
            r"0\.5 s after the start; the backend deadlocked or lost a wakeup$",
        ):
            record(backend, seed=0, hang_after=0.5)
        assert sys.getswitchinterval() == before  # restored
    finally:
        Stuck.let_go.set()


def test_record_refuses_bad_arguments():
    with pytest.raises(ValueError, match=r"^threads must be an int >= 2, got 1$"):
        record(INPROCESS, threads=1)
    with pytest.raises(ValueError, match=r"^operations must be an int >= 4, got 3$"):
        record(INPROCESS, operations=3)
    with pytest.raises(TypeError, match=r"^seed must be an int, got '1'$"):
        record(INPROCESS, seed="1")
    with pytest.raises(ValueError, match=r"^hang_after must be a finite number of seconds > 0, got 0$"):
        record(INPROCESS, hang_after=0)
    with pytest.raises(
        ValueError,
        match=r"^config \{'max_deliveries': 2\} must give visibility_timeout and may give only max_deliveries and "
        r"dedup_window$",
    ):
        record(INPROCESS, config={"max_deliveries": 2})


def test_the_history_modules_import_without_torch_or_hypothesis():
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "sys.modules['hypothesis'] = None\n"
        "import refqueue.conformance.history, refqueue.conformance.linearizability\n"
        "print('ok')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.stdout == "ok\n", run.stderr


def test_an_undecided_history_is_recorded_again_and_the_decided_one_counts(undecided_first):
    calls = undecided_first(threads_phase, 2)
    cert = certify(INPROCESS, profile="ci", phases=("threads",))
    assert cert.passed, cert.failure
    phase = cert.phases["threads"]
    assert phase["undecided_recorded_again"] == 2 and phase["histories"] == 20
    assert phase["verdicts"] == {"ok": 20, "illegal": 0, "unknown": 0}
    assert len(calls) == 22 and calls[0] is not calls[1]  # history 1 recorded three times
    from refqueue.conformance.threads import PHASE as THREADS

    (line,) = THREADS.summary("threads", phase)
    assert line.endswith(" s; linearizable: 20 ok, 0 illegal, 0 unknown (2 undecided recorded again)"), line


def test_a_seed_undecided_in_every_recording_fails_the_phase(undecided_first):
    calls = undecided_first(threads_phase, 3)
    cert = certify(INPROCESS, profile="ci", phases=("threads",))
    assert not cert.passed and cert.failure["phase"] == "threads"
    assert len(calls) == 3
    assert cert.failure["message"].startswith("history 1 (seed 0, ")
    assert "could not be decided in 3 recordings: the step budget ran out (planted); an undecided history is not a pass" in (
        cert.failure["message"]
    )
    assert cert.phases["threads"]["verdicts"] == {"ok": 0, "illegal": 0, "unknown": 1}
