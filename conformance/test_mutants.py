"""Every mutant in ``conformance/mutants`` is rejected by the ci profile of
the phase that catches it (``CAUGHT_BY``; run as ``--fail-fast`` runs it, its
short pass first), its printed counterexample fails on it (in a fresh
interpreter too: ``ALONE``) and passes on the correct base backend; the base
backend itself is certified.  Marked slow: the base's blocking and lockstep
phases under ci, the mutants whose rejection repeats another's
(``REPEATS``), the fresh-interpreter runs of the mutants
not in ``ALONE``, and each mutant through a whole ci certification, which
must stop in that same phase (the phases before it pass it whole: about 40
minutes for all of them on two cores)."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.mutants import ALSO_CAUGHT, CAUGHT_BY, MUTANTS, NAMED_CHECK, REPEATS
from refqueue.conformance import fault_crashes, rejection_kind
from refqueue.conformance.blocking import CHECKS as BLOCKING_CHECKS
from refqueue.conformance.calls import CHECKS as CALLS_CHECKS
from refqueue.conformance.certify import PHASES, certify

pytestmark = pytest.mark.torch

BASE = "conformance.mutants._base:make"
REPO = Path(__file__).resolve().parent.parent


def _load_test(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.test_counterexample


def test_there_are_at_least_twelve_mutants():
    assert len(MUTANTS) >= 12, MUTANTS


# The base's blocking and lockstep phases under the ci profile (36 s of the
# default run) are slow: every phase of the base is certified by
# tests/conformance/test_conformance_cli.py (a small profile, each phase run
# whole), and each mutant's counterexample passes on the base (below).
@pytest.mark.parametrize(
    "phase", [pytest.param(p, marks=pytest.mark.slow) if p in ("blocking", "lockstep") else p for p in PHASES]
)
def test_the_base_backend_conforms(phase):
    cert = certify(BASE, profile="ci", phases=(phase,))
    assert cert.passed, cert.counterexample


def test_every_mutant_names_the_phase_that_catches_it():
    assert sorted(CAUGHT_BY) == sorted(MUTANTS)
    assert set(CAUGHT_BY.values()) <= set(PHASES)


def _needs_redis(mutant):
    if mutant.startswith("redis_") and shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed; the Redis mutants run on a throwaway one (apt-get install redis-server)")


@pytest.mark.slow
@pytest.mark.parametrize("mutant", MUTANTS)
def test_a_whole_ci_certification_rejects_mutant_in_its_phase(mutant):
    _needs_redis(mutant)
    cert = certify(f"conformance.mutants.{mutant}:make", profile="ci")
    assert not cert.passed, f"the ci profile did not catch {mutant}"
    assert cert.failure["phase"] == CAUGHT_BY[mutant], cert.failure


def test_each_named_check_is_a_check_of_the_phase_that_catches_its_mutant():
    checks = {"blocking": BLOCKING_CHECKS, "calls": CALLS_CHECKS}
    for mutant, (check, says) in NAMED_CHECK.items():
        assert check in checks[CAUGHT_BY[mutant]] and says, mutant


def test_each_later_witness_names_a_later_phase_and_its_check():
    checks = {"blocking": BLOCKING_CHECKS, "calls": CALLS_CHECKS}
    for mutant, (phase, check, says) in ALSO_CAUGHT.items():
        assert PHASES.index(phase) > PHASES.index(CAUGHT_BY[mutant]), mutant
        assert (check is None) == (says is None) and (check is None or check in checks[phase]), mutant


# A later phase, certified alone (as --phase runs it), rejects each of its witnesses, at the named check.
@pytest.mark.parametrize("mutant", sorted(ALSO_CAUGHT))
def test_a_later_phase_alone_rejects_its_witness(mutant, monkeypatch):
    monkeypatch.setattr(fault_crashes, "RECOVER_WITHIN", RECOVER_WITHIN_S)
    phase, check, says = ALSO_CAUGHT[mutant]
    cert = certify(f"conformance.mutants.{mutant}:make", profile="ci", phases=(phase,), fail_fast=True)
    assert not cert.passed, f"the ci profile's {phase} phase alone did not catch {mutant}"
    assert cert.failure["phase"] == phase, cert.failure
    if check is not None:
        assert cert.failure["check"] == check and says in cert.failure["message"], cert.failure


def test_each_repeat_names_a_mutant_of_the_default_run_caught_by_the_same_phase():
    for mutant, kept in REPEATS.items():
        assert mutant in MUTANTS and kept in MUTANTS and kept not in REPEATS, (mutant, kept)
        assert CAUGHT_BY[mutant] == CAUGHT_BY[kept], (mutant, kept)


# The printed counterexample is also run alone, in a fresh interpreter (about 4 s each, a
# whole check again for a timed one): in the default run for the first mutant of each phase
# (one file per renderer shows the file needs nothing of the process that printed it), for
# every mutant under the slow mark.
ALONE = frozenset(
    next(m for m in MUTANTS if CAUGHT_BY[m] == phase and m not in REPEATS)
    for phase in sorted(set(CAUGHT_BY.values()))
)


def _cases():
    for m in MUTANTS:
        if m in REPEATS:
            yield pytest.param(m, True, marks=pytest.mark.slow, id=m)
        elif m in ALONE:
            yield pytest.param(m, True, id=m)
        else:
            yield pytest.param(m, False, id=m)
            yield pytest.param(m, True, marks=pytest.mark.slow, id=f"{m}-alone")


def test_every_phase_has_a_mutant_replayed_alone_in_the_default_run():
    assert {CAUGHT_BY[m] for m in ALONE} == set(CAUGHT_BY.values())
    assert not ALONE & set(REPEATS)


# The faults phase waits at most RECOVER_WITHIN (10 s) for a background reclaimer to act.
# A mutant whose reclaimer never recovers waits all of it, in the certification and again in
# the replay; a correct reclaimer (every 10 ms here) acted within 0.03 s on an idle machine and
# 0.12 s with five busy threads on two cores, so 2 s still tells one from the other.
RECOVER_WITHIN_S = 2.0


@pytest.mark.parametrize("mutant, alone", list(_cases()))
def test_ci_profile_rejects_mutant(mutant, alone, tmp_path, record_property, monkeypatch):
    _needs_redis(mutant)
    monkeypatch.setattr(fault_crashes, "RECOVER_WITHIN", RECOVER_WITHIN_S)
    target = f"conformance.mutants.{mutant}:make"
    phase = CAUGHT_BY[mutant]
    # --fail-fast: the phase's short pass first (each blocking check once, a few walks and
    # histories), then its whole run; most mutants fall to the short pass, in a fifth of the time
    cert = certify(target, profile="ci", phases=(phase,), fail_fast=True)
    assert not cert.passed, f"the ci profile's {phase} phase did not catch {mutant}"
    assert cert.failure["phase"] == phase, cert.failure
    if mutant in NAMED_CHECK:  # stopped at its named check, which says what went wrong
        check, says = NAMED_CHECK[mutant]
        assert cert.failure["check"] == check, cert.failure
        prefix = f"blocking phase, check {check}: " if phase == "blocking" else f"{check}: "
        assert cert.failure["message"].startswith(prefix), cert.failure
        assert says in cert.failure["message"], cert.failure
    record_property("steps_to_catch", cert.failure["steps_to_failure"])
    record_property("counterexample_steps", cert.failure["trace_steps"])

    on_mutant = tmp_path / f"test_{mutant}_counterexample.py"
    on_mutant.write_text(cert.counterexample)
    with pytest.raises(Exception) as failed:
        _load_test(on_mutant, f"counterexample_{mutant}")()
    # A divergence: an assertion of the replay fails, or the backend refuses (e.g.
    # PutAborted) a call the model accepts; never a broken replay.
    assert isinstance(failed.value, AssertionError) or rejection_kind(failed.value) is not None, failed.value

    # Run alone (a fresh interpreter, another directory): the printed file must fail.
    if alone:
        _fails_alone(mutant, on_mutant, cert)

    # The correct backend of the same kind passes the replay: the base, or the Redis
    # backend for a Redis mutant caught by the faults phase (the base has no faults)
    # or by a replay through a second client of the queue (the base opens none).
    two_clients = "s.client(" in cert.counterexample
    correct = "refqueue.backends.redis:make" if cert.failure["phase"] == "faults" or two_clients else BASE
    on_base = tmp_path / f"test_{mutant}_on_base.py"
    on_base.write_text(cert.counterexample.replace(repr(target), repr(correct)))
    _load_test(on_base, f"counterexample_{mutant}_on_base")()


def _fails_alone(mutant, on_mutant, cert):
    """The printed file, run by pytest in a fresh interpreter in its own directory, fails."""
    alone = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", on_mutant.name],
        cwd=on_mutant.parent,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert alone.returncode == 1, (
        f"the printed reproduction of {mutant} did not fail alone:\n{alone.stdout[-2000:]}\n"
        f"what the kit found in this process: {str(cert.failure.get('message', cert.failure))[:2000]}"
    )
