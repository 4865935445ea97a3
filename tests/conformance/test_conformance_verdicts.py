"""Every run ends in a verdict (issue 26): an exception of the backend that
escapes a phase is that phase's failure (exit 1), naming the check, the call
and the exception, with a replay that fails on its own and a certificate; a
backend the kit cannot judge as given is "could not certify" (exit 2); an
exception of the kit itself exits 2 asking for a report, never 1."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from refqueue.cli import main
from refqueue.conformance import calls
from refqueue.conformance.certify import certify
from refqueue.conformance.phase import Check

pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def _certify(tmp_path, capsys, target, *phases):
    argv = ["certify", target, "--report", str(tmp_path), "--no-progress"]
    for phase in phases:
        argv += ["--phase", phase]
    rc = main(argv)
    return rc, capsys.readouterr()


def _replay_fails_alone(path, says):
    """The saved replay, run by pytest in a fresh interpreter, fails and says ``says``."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE), os.environ.get("PYTHONPATH", "")])},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1 and "1 failed" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]
    assert says in run.stdout, run.stdout[-3000:]


def test_a_backend_without_a_reclaimer_fails_the_calls_phase_naming_the_call(tmp_path, capsys):
    rc, out = _certify(tmp_path, capsys, "conformance.mutants.reclaimer_missing:make", "calls")
    assert rc == 1, out.out + out.err
    assert out.err == ""
    assert out.out.startswith("refqueue certify: FAIL (partial)  conformance.mutants.reclaimer_missing:make")
    assert "  failure       calls, check reclaimer-twice: the backend raised after " in out.out
    said = (
        "reclaimer-twice: the backend raised AttributeError: 'ReclaimerMissing' object has no attribute "
        "'start_reclaimer' at the kit's call `qq.call(\"start_reclaimer()\", qq.q.start_reclaimer)` "
        "(refqueue/conformance/calls.py:"
    )
    assert said in out.out
    assert (
        "docs/CERTIFYING.md requires 'start_reclaimer' of the backend's ReclaimerMissing: implement it, or declare "
        "Capabilities(reclaimer=False) on the factory if it does not offer it"
    ) in out.out
    data = json.loads((tmp_path / "conformance_mutants_reclaimer_missing_make.json").read_text())
    assert data["verdict"] == "fail"
    assert data["failure"]["kind"] == "crash" and data["failure"]["check"] == "reclaimer-twice"
    assert data["failure"]["crash"]["exception"].startswith("AttributeError: 'ReclaimerMissing' object has no attribute")
    assert "**Verdict: FAIL**" in (tmp_path / "conformance_mutants_reclaimer_missing_make.md").read_text()
    _replay_fails_alone(tmp_path / "test_conformance_mutants_reclaimer_missing_make.py", "AttributeError")


def test_a_store_too_small_for_the_threads_phase_could_not_certify(tmp_path, capsys):
    rc, out = _certify(tmp_path, capsys, "stranger_backends:small_store", "threads")
    assert rc == 2, out.out + out.err
    assert out.out.startswith("refqueue certify: COULD NOT CERTIFY (partial)  stranger_backends:small_store")
    assert "  not judged    threads: the phase cannot judge this backend as given" in out.out
    assert (
        "threads phase: could not certify: the store the backend's make_store() returns is too small for the threads "
        "phase: its histories write up to 75 samples of 18 bytes before their threads start (capacity_bytes=108, "
        "needs at least 1350); give make_store() a store at least that large for the certification, or leave "
        "make_store out to run on the kit's store"
    ) in out.out
    data = json.loads((tmp_path / "stranger_backends_small_store.json").read_text())
    assert data["verdict"] == "could not certify" and data["failure"]["kind"] == "unfit"
    assert data["phases"]["threads"]["unfit"].startswith("the store the backend's make_store() returns is too small")
    _replay_fails_alone(tmp_path / "test_stranger_backends_small_store.py", "could not certify")


def test_a_store_that_refuses_mid_phase_fails_that_phase_naming_the_call(tmp_path, capsys):
    rc, out = _certify(tmp_path, capsys, "stranger_backends:hidden_cap", "threads")
    assert rc == 1, out.out + out.err
    assert out.out.startswith("refqueue certify: FAIL (partial)  stranger_backends:hidden_cap")
    assert "  threads       the backend raised, " in out.out
    assert (
        "threads phase: the backend raised StoreFull: LocalFeatureStore.put('t1-6') of 18 bytes would exceed the "
        "byte cap"
    ) in out.out
    assert "at the kit's call `ref = self.store.put(sample_id, tensors, num_tokens=units, **STORE_META)`" in out.out
    assert "the store the backend runs on (make_store) is too small for this phase, or the backend left data" in out.out
    data = json.loads((tmp_path / "stranger_backends_hidden_cap.json").read_text())
    assert data["verdict"] == "fail" and data["failure"]["kind"] == "crash"
    _replay_fails_alone(tmp_path / "test_stranger_backends_hidden_cap.py", "StoreFull")


def _kit_bug(monkeypatch):
    """A calls check that is the kit's own bug: a kit function called with the wrong arguments."""
    from refqueue.conformance import calls_leases

    broken = Check("acquire-poll-inf", "a check with a bug of the kit", calls_leases._field)
    monkeypatch.setitem(calls._BY_NAME, "acquire-poll-inf", broken)


def test_a_bug_of_the_kit_exits_2_asking_for_a_report_never_1(tmp_path, capsys, monkeypatch):
    _kit_bug(monkeypatch)
    rc, out = _certify(tmp_path, capsys, "conformance.mutants._base:make", "calls")
    assert rc == 2, out.out + out.err
    assert out.out == ""
    assert out.err.startswith(
        "refqueue certify: the conformance kit itself failed in the calls phase (TypeError: _field() missing 1 "
        "required positional argument: 'name'); this is a bug in the kit, not a verdict on the backend: please report "
        "it to the refqueue maintainers"
    )
    assert "Traceback (most recent call last):" in out.err
    assert not list(tmp_path.iterdir())  # no certificate: there is no verdict
    from refqueue.conformance.certify import KitBug

    with pytest.raises(KitBug, match=r"^the conformance kit itself failed in the calls phase \(TypeError"):
        certify("conformance.mutants._base:make", phases=("calls",))
