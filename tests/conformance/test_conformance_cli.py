"""``refqueue certify`` and ``pytest --refqueue-backend``: exit codes, reports, printed replays."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from refqueue.cli import main
from refqueue.conformance.certify import PROFILES, Profile, certify
from refqueue.conformance.cli import DEFAULT_BACKEND

ROOT = Path(__file__).resolve().parents[2]
TINY = Profile(
    "ci", examples=5, steps_per_example=10, walks=5, walk_length=5, hypothesis_profile="default",
    histories=2, history_ops=100, wake_trials=1,
)  # fmt: skip

pytestmark = pytest.mark.torch


def test_certify_passes_and_writes_the_certificate(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(PROFILES, "ci", TINY)
    rc = main(["certify", "conformance.mutants._base:make", "--report", str(tmp_path), "--seed", "3", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert out.startswith("refqueue certify: PASS  conformance.mutants._base:make  (profile ci, seed 3, kit ")
    data = json.loads((tmp_path / "conformance_mutants_base_make.json").read_text())
    assert data["verdict"] == "pass" and data["seed"] == 3 and data["failure"] is None
    assert data["partial"] is False and data["phases_not_requested"] == []  # every phase asked for
    assert data["examples"] >= 5 and data["steps"] > 0
    assert set(data["coverage"]["world_graph"]) >= {"transitions", "transitions_total", "actions_never_tried"}
    assert data["capabilities"]["fifo"] is True
    assert list(data["phases"]) == ["construction", "calls", "faults", "walks", "producers", "blocking", "threads", "lockstep"]
    assert "skipped" in data["phases"]["faults"]  # the base declares no faults
    assert list(data["phases"]["producers"]["checks"]) == ["deadlock", "orphan", "stress"]
    assert "  producers     3 checks (deadlock, orphan, stress), 22 blocking puts, slowest " in out
    assert "  blocking      29 checks, slowest wakeup " in out
    assert "                acquire-woken-by-put " in out
    assert "**Verdict: PASS**" in (tmp_path / "conformance_mutants_base_make.md").read_text()


def test_phase_runs_only_the_phases_asked_for_and_says_the_pass_is_partial(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(PROFILES, "ci", TINY)  # what runs is the point, not how long
    rc = main([
        "certify", "conformance.mutants._base:make", "--report", str(tmp_path), "--no-progress",
        "--phase", "blocking", "--phase", "calls",
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0, out
    assert out.startswith("refqueue certify: PASS (partial)  conformance.mutants._base:make  (profile ci")
    assert "  not run       phases construction, faults, walks, producers, threads, lockstep: not requested (--phase)" in out
    data = json.loads((tmp_path / "conformance_mutants_base_make.json").read_text())
    assert list(data["phases"]) == ["calls", "blocking"]  # in the kit's order, whatever the order asked
    assert data["partial"] is True
    assert data["phases_not_requested"] == ["construction", "faults", "walks", "producers", "threads", "lockstep"]
    assert "(partial: phases not requested: construction, faults, walks, producers, threads, lockstep)" in (
        tmp_path / "conformance_mutants_base_make.md"
    ).read_text()


def test_phase_catches_a_mutant_in_that_phase_alone(tmp_path, capsys):
    rc = main(["certify", "conformance.mutants.drain_no_wake:make", "--report", str(tmp_path), "--no-progress",
               "--phase", "blocking"])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 1, out
    assert out.startswith("refqueue certify: FAIL (partial)  conformance.mutants.drain_no_wake:make")
    assert "blocking phase, check acquire-woken-by-drain: " in out


def test_an_unknown_phase_exits_2_listing_the_phases(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["certify", "--phase", "speed"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --phase: invalid choice: 'speed'" in err and "'blocking'" in err


# test_certify_passes_and_writes_the_certificate makes these assertions on its certificate of
# the same whole run in the default run: slow, so that the default run certifies it once.
@pytest.mark.slow
def test_a_full_run_is_not_partial(tmp_path, monkeypatch):
    monkeypatch.setitem(PROFILES, "ci", TINY)
    cert = certify("conformance.mutants._base:make")
    assert cert.passed and cert.phases_not_requested == [] and cert.to_dict()["partial"] is False


def test_certify_fails_with_a_replay_that_fails_on_its_own(tmp_path, capsys):
    rc = main(["certify", "conformance.mutants.close_drops_pending:make", "--report", str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "refqueue certify: FAIL" in out and "def test_counterexample():" in out
    saved = tmp_path / "test_conformance_mutants_close_drops_pending_make.py"
    assert saved.read_text() in out
    replay = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(saved)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "1 failed" in replay.stdout


def test_certify_refuses_a_bad_target(capsys):
    assert main(["certify", "nocolon", "--no-progress"]) == 2
    assert capsys.readouterr().err == (
        "refqueue certify: backend target 'nocolon' is not of the form 'module:factory'; "
        "pass e.g. 'refqueue.conformance.backends:inprocess'\n"
    )


def test_certify_refuses_a_bad_producer_bound(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["certify", "--producer-bound", "0"])
    assert exit_info.value.code == 2
    assert "argument --producer-bound: 0.0 is not in (0, 3600); pass a number of seconds such as 1.0" in capsys.readouterr().err


def test_certify_refuses_a_bad_steps_count(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["certify", "--steps", "0"])
    assert exit_info.value.code == 2
    assert "argument --steps: 0 is below 1; pass a whole number >= 1" in capsys.readouterr().err


@pytest.mark.parametrize(("seed", "why"), [("-1", "'-1' is below 0; pass a whole number >= 0, e.g. 0"),
                                         ("x", "'x' is not an integer seed; pass a whole number >= 0, e.g. 0")])
def test_certify_refuses_a_bad_seed_before_any_phase_runs(capsys, tmp_path, seed, why):
    # (a negative seed once ran four phases, then failed in the walks as a bug of the kit)
    with pytest.raises(SystemExit) as exit_info:
        main(["certify", "--seed", seed, "--report", str(tmp_path / "r")])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert f"argument --seed: {why}" in captured.err and "Traceback" not in captured.err
    assert captured.out == "" and not (tmp_path / "r").exists()


def test_certify_validates_its_arguments():
    with pytest.raises(ValueError, match=r"^seed must be >= 0 \(the walks, histories and examples derive their seeds from it\), got -1$"):
        certify("conformance.mutants._base:make", seed=-1)
    with pytest.raises(TypeError, match=r"^seed must be an int, got 1.0$"):
        certify("conformance.mutants._base:make", seed=1.0)
    with pytest.raises(ValueError, match=r"^unknown profile 'fast'; use one of \['ci', 'deep'\]$"):
        certify("conformance.mutants._base:make", profile="fast")
    with pytest.raises(ValueError, match=r"^steps must be an int >= 1 \(rules per lockstep example\), got 0$"):
        certify("conformance.mutants._base:make", steps=0)
    with pytest.raises(ValueError, match=r"^phases must be a non-empty subset of \('construction', 'calls', 'faults', 'walks', 'producers', 'blocking', 'threads', 'lockstep'\), got \('x',\)$"):
        certify("conformance.mutants._base:make", phases=("x",))
    with pytest.raises(ValueError, match=r"^producer_bound must be a number of seconds in \(0, 3600\), got -1$"):
        certify("conformance.mutants._base:make", producer_bound=-1)
    # arguments of the wrong kind: named before anything runs (a list was taken
    # for fail_fast=True, and a profile that is not one raised AttributeError)
    for kwargs, why in [
        ({"profile": None}, r"^profile must be a profile's name \(\['ci', 'deep'\]\) or a Profile, got None$"),
        ({"fail_fast": [1]}, r"^fail_fast must be True or False, got \[1\]$"),
        ({"exhaustive": "yes"}, r"^exhaustive must be True or False, got 'yes'$"),
        ({"options": ["a=1"]}, r"^options must be a mapping of str keys"),
        ({"progress": print}, r"^progress must be a refqueue.conformance.progress.Progress or None"),
        ({"phases": "calls"}, r"^phases must be a tuple of phase names"),
    ]:
        with pytest.raises(TypeError, match=why):
            certify("conformance.mutants._base:make", **kwargs)
    with pytest.raises(TypeError, match=r"^backend must be a Backend or a 'module:factory' str, got 3"):
        certify(3)


# The plugin's run of the ci profile with one trial of each randomised blocking check
# (as the short pass makes them): every blocking check passes this mutant whatever
# the trials, which took 18 of the run's 28 s at the profile's six.
ONE_WAKE_TRIAL = """
import dataclasses
from refqueue.conformance.certify import PROFILES

PROFILES["ci"] = dataclasses.replace(PROFILES["ci"], wake_trials=1)
"""


def test_pytest_plugin_runs_the_phases_of_a_backend(tmp_path):
    (tmp_path / "conftest.py").write_text(ONE_WAKE_TRIAL)
    run = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "--refqueue-backend=conformance.mutants.close_drops_pending:make", str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    # construction, the 3 checks of producers and the 29 of blocking pass: close is not their concern
    # (the calls phase fails too: after `with queue:` exited, the pending ref is gone)
    assert "4 failed, 33 passed" in run.stdout
    assert "not-checked" not in run.stdout  # every capability declared: nothing left out
    assert "refqueue-conformance[walks]" in run.stdout and "refqueue-conformance[lockstep]" in run.stdout
    assert "Replay it with this test:" in run.stdout


def test_pytest_plugin_refuses_a_bad_target(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--refqueue-backend=nocolon", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 4
    assert "--refqueue-backend: backend target 'nocolon' is not of the form 'module:factory'" in run.stderr


def test_the_kit_imports_without_torch_or_hypothesis():
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "sys.modules['hypothesis'] = None\n"
        "import refqueue.conformance, refqueue.conformance.cli, refqueue.conformance.certify\n"
        "import refqueue.conformance.walks, refqueue.conformance.render, refqueue.conformance.backends\n"
        "print('ok')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.stdout == "ok\n", run.stderr


@pytest.mark.parametrize(
    ("option", "why"),
    [
        ("--refqueue-seed=-3", "argument --refqueue-seed: '-3' is below 0; pass a whole number >= 0, e.g. 0"),
        ("--refqueue-seed=x", "argument --refqueue-seed: 'x' is not an integer seed"),
        ("--refqueue-producer-bound=0", "argument --refqueue-producer-bound: 0.0 is not in (0, 3600)"),
        ("--refqueue-wake-bound=abc", "argument --refqueue-wake-bound: 'abc' is not a number of seconds"),
    ],
)
def test_pytest_plugin_refuses_a_bad_option_as_one_usage_error(tmp_path, option, why):
    # (checked as the command line checks it: not one error per check, after the run began)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"--refqueue-backend={DEFAULT_BACKEND}", option, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert run.returncode == 4, run.stdout + run.stderr
    assert why in run.stderr and "Traceback" not in run.stderr + run.stdout
