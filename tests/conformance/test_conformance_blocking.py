"""The blocking phase: wakeups, backpressure, callbacks and the reclaimer, with
real threads and bounded waits."""

import dataclasses
import json
import threading

import pytest

from conformance.mutants import CAUGHT_BY, NAMED_CHECK, REPEATS
from conformance.mutants._base import BaseQueue, _Entry, factory
from conformance.wakeup_report import RANDOMISED, assert_reports_each_wakeups_distribution_and_the_escape
from refqueue.cli import main
from refqueue.conformance import Capabilities, backend_of
from refqueue.conformance.blocking import ATTEMPTS, CHECKS, DEFAULT_TRIALS, NAMED_CHECKS, check_blocking
from refqueue.conformance.certify import PROFILES, certify
from refqueue.conformance.timing import SPAN, Offsets, distribution, escape, escape_per_call

pytestmark = pytest.mark.torch

BASE = "conformance.mutants._base:make"


# (the base's whole blocking phase: conformance/test_mutants.py and the certificate's test below;
# the in-process queue's in the default run: conformance/test_inprocess.py, so this one is slow)
@pytest.mark.slow
@pytest.mark.parametrize("target", ["refqueue.conformance.backends:inprocess"])
def test_a_correct_backend_passes_every_check_within_the_bound(target):
    report = check_blocking(target)
    assert report.ok, report.failure
    assert list(report.checks) == list(CHECKS) and report.not_run == {}
    for name, check in report.checks.items():
        assert check["what"], (name, check)
        for latency in check.get("latencies_s", ()):
            assert latency <= report.bound, (name, check)
    # One measure per trial: each trial on time at its first attempt.
    assert len(report.checks["acquire-woken-by-put"]["latencies_s"]) == DEFAULT_TRIALS
    assert report.checks["acquire-woken-by-put"]["runs"] == DEFAULT_TRIALS
    assert report.checks["reclaimer-stops"]["waited_s"] == 0.1  # 10 intervals of 0.01 s


# Each blind spot is rejected by its named check (NAMED_CHECK), saying what it says.  In the
# default run conformance/test_mutants.py shows it for every mutant it certifies there (the
# certification's fail-fast short pass runs this same phase, each check once, and must stop
# at the same check with the same words); here, straight through check_blocking, only the
# mutants that file leaves to the slow run (its REPEATS) are in the default run.
@pytest.mark.parametrize(
    ("mutant", "check", "says"),
    [
        pytest.param(m, check, says, marks=() if m in REPEATS else pytest.mark.slow, id=m)
        for m, (check, says) in NAMED_CHECK.items()
        if CAUGHT_BY[m] == "blocking"
    ],
)
def test_each_blind_spot_is_caught_by_its_named_check(mutant, check, says):
    # One trial of each check (the timing model's trials are tested below): not caught earlier.
    report = check_blocking(f"conformance.mutants.{mutant}:make", trials=1)
    assert report.failed_check == check, report.failure
    assert report.failure.startswith(f"blocking phase, check {check}: ")
    assert says in report.failure
    assert list(report.checks)[-1] == check  # the failing check is listed, with its time


class _LateWake(BaseQueue):
    """A put wakes a waiting consumer, 0.2 s late (a backend that polls, say)."""

    def _put_nowait(self, call, ref):
        self._validate_put(call, ref)
        self._entries[ref.sample_id] = _Entry(ref)
        self._pending.append(ref.sample_id)

        def notify():
            with self._lock:
                self._ready.notify()

        threading.Timer(0.2, notify).start()


def test_a_late_wakeup_is_measured_again_and_fails_with_each_latency():
    report = check_blocking(backend_of(factory(_LateWake)), checks=("acquire-woken-by-put",))
    assert report.failed_check == "acquire-woken-by-put"
    latencies = report.checks["acquire-woken-by-put"]["latencies_s"]
    assert len(latencies) == ATTEMPTS and all(0.15 < t < 1.0 for t in latencies), latencies
    assert report.failure.startswith("blocking phase, check acquire-woken-by-put: trial 1 of 6: acquire(poll_interval")
    assert f"s after put('w0') returned, past the bound of 0.05 s (in each of {ATTEMPTS} attempts at the same offset)" in report.failure
    assert check_blocking(backend_of(factory(_LateWake)), bound=0.5, checks=("acquire-woken-by-put",)).ok


def _one_trial(monkeypatch):
    """The ci profile with one trial of each randomised check: for the tests of what a
    certification reports, not of how often it measures (the test of the trials below)."""
    monkeypatch.setitem(PROFILES, "ci", dataclasses.replace(PROFILES["ci"], wake_trials=1))


def test_checks_a_backend_declares_it_cannot_take_are_not_run_and_say_why(monkeypatch):
    _one_trial(monkeypatch)
    make = factory(BaseQueue)
    make.capabilities = Capabilities(reclaimer=False)
    cert = certify(backend_of(make, "base-without-reclaimer"), phases=("blocking",))
    assert cert.passed, cert.failure
    phase = cert.phases["blocking"]
    assert phase["not_run"] == {
        "reclaimer-reclaims": "the backend does not declare reclaimer",
        "reclaimer-after-close": "the backend does not declare reclaimer",
        "reclaimer-stops": "the backend does not declare reclaimer",
        "reclaimer-default-interval": "the backend does not declare reclaimer",
    }
    assert not set(phase["not_run"]) & set(phase["checks"])  # never passed
    assert {n["check"] for n in cert.not_checked} >= {f"blocking: {name}" for name in phase["not_run"]}


def test_without_an_injected_clock_the_reclaim_checks_are_not_run():
    make = factory(BaseQueue)
    make.capabilities = Capabilities(injected_clock=False)
    # the checks that need the clock, and one that does not (it runs)
    needs_clock = [c.name for c in NAMED_CHECKS if "injected_clock" in c.needs]
    report = check_blocking(backend_of(make, "base-own-clock"), checks=("acquire-woken-by-put", *needs_clock))
    assert report.ok, report.failure
    assert list(report.checks) == ["acquire-woken-by-put"]
    assert set(report.not_run) == {
        "acquire-woken-by-reclaim", "acquire-each-woken-by-reclaim", "acquire-woken-at-the-cap", "reclaimer-reclaims",
        "reclaimer-after-close", "reclaimer-stops", "reclaimer-default-interval",
    }


def test_the_certificate_names_each_check_its_time_and_the_bound(tmp_path, capsys, monkeypatch):
    _one_trial(monkeypatch)
    rc = main(["certify", BASE, "--report", str(tmp_path), "--no-progress", "--wake-bound", "0.1", "--phase", "blocking"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "  blocking      29 checks, slowest wakeup " in out and "(bound 0.1 s)" in out
    for name in CHECKS:
        assert f"                {name:<26} " in out
    (report,) = tmp_path.glob("*.json")  # the certificate the run wrote
    phase = json.loads(report.read_text())["phases"]["blocking"]
    assert phase["bound_s"] == 0.1 and list(phase["checks"]) == list(CHECKS)
    assert set(phase["check_seconds"]) == set(CHECKS) and phase["steps"] > 0


def test_a_blocking_failure_replays_as_a_test(tmp_path):
    cert = certify("conformance.mutants.put_no_wake:make", phases=("blocking",))
    assert cert.failure["phase"] == "blocking" and cert.failure["check"] == "acquire-woken-by-put"
    assert "BACKEND = load_backend('conformance.mutants.put_no_wake:make')" in cert.counterexample
    namespace = {}
    exec(compile(cert.counterexample, "replay", "exec"), namespace)
    with pytest.raises(AssertionError, match="check acquire-woken-by-put"):
        namespace["test_counterexample"]()


def test_arguments_are_checked():
    with pytest.raises(ValueError, match=r"^bound must be a number of seconds in \(0, 3600\), got 0$"):
        check_blocking(BASE, bound=0)
    with pytest.raises(ValueError, match=r"^checks must be a non-empty subset of "):
        check_blocking(BASE, checks=("nap",))
    with pytest.raises(ValueError, match=r"^wake_bound must be a number of seconds in \(0, 3600\), got -1$"):
        certify(BASE, wake_bound=-1)


def test_the_cli_refuses_a_bad_wake_bound(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["certify", "--wake-bound", "0"])
    assert exit_info.value.code == 2
    assert "argument --wake-bound: 0.0 is not in (0, 3600)" in capsys.readouterr().err


# -- the timing model: waking calls at random offsets ---------------------------------------

ACQUIRE_WAKEUPS = [name for name in RANDOMISED if name.startswith("acquire-")]


@pytest.mark.parametrize("period_ms", [60, 100, 200])
def test_an_acquire_that_polls_past_the_bound_is_rejected(period_ms):
    # With the waking call a fixed 50 ms after the waiter blocked, the 60 ms poll was
    # always woken about 10 ms after it: every check passed (issue 20).
    report = check_blocking(f"conformance.mutants.acquire_polls_{period_ms}ms:make")
    assert report.failed_check in ACQUIRE_WAKEUPS, report.failure
    assert "past the bound of 0.05 s (in each of 3 attempts at the same offset)" in report.failure, report.failure
    late = report.checks[report.failed_check]["latencies_s"][-ATTEMPTS:]
    assert all(0.05 < t < period_ms / 1000 + 0.05 for t in late), late


def test_an_acquire_that_polls_within_the_bound_is_legal():
    report = check_blocking("conformance.legal.poll_10ms:make", checks=tuple(ACQUIRE_WAKEUPS))
    assert report.ok, report.failure
    for name in ACQUIRE_WAKEUPS:
        assert report.checks[name]["trials"] == DEFAULT_TRIALS
        assert report.checks[name]["wake_latency_s"]["max"] <= 0.05


def test_offsets_are_drawn_from_the_seed_and_span_the_range():
    def draw(seed, check="acquire-woken-by-put", trial=0):
        offsets = Offsets(seed, check, trial, 0.2)
        return [offsets.next() for _ in range(200)]

    assert draw(7) == draw(7)  # a re-measurement and a replay draw the same ones
    assert draw(7) != draw(8) and draw(7) != draw(7, trial=1) and draw(7) != draw(7, check="put-woken-by-close")
    values = draw(3)
    assert all(0 <= u <= 0.2 for u in values)
    assert min(values) < 0.02 and max(values) > 0.18  # across the whole span, not one phase


def test_the_escape_probability_is_the_poll_windows_share_of_the_span():
    # B/P when the span holds whole periods; one B-window per period plus the remainder's share otherwise.
    assert escape_per_call(0.1, 0.05, 0.2) == pytest.approx(0.5)
    assert escape_per_call(0.05 * 4 / 3, 0.05, 0.2) == pytest.approx(0.75)
    assert escape_per_call(0.06, 0.05, 0.2) == pytest.approx((3 * 0.05 + 0.02) / 0.2)
    assert escape_per_call(0.2, 0.05, 0.2) == pytest.approx(0.25)
    assert escape_per_call(5.0, 0.05, 0.2) == pytest.approx(0.25)  # one window at most, phase unknown
    assert escape_per_call(0.01, 0.05, 0.2) == 1.0  # within the bound: legal, never caught
    assert escape(0.06, 0.05, 0.2, 48) == pytest.approx(0.85**48) and escape(0.06, 0.05, 0.2, 48) < 1e-3
    with pytest.raises(ValueError, match=r"^period must be a finite number of seconds > 0, got 0$"):
        escape_per_call(0, 0.05, 0.2)
    with pytest.raises(ValueError, match=r"^calls must be an int >= 0, got -1$"):
        escape(0.06, 0.05, 0.2, -1)


def test_the_escape_probability_matches_a_simulated_poller():
    # The geometry, checked by brute force: a poller whose looks are at phase + k*P
    # answers a waking call returning at t within B iff the next look is within B.
    import math
    import random

    rng = random.Random(1)
    bound, span = 0.05, SPAN * 0.05
    for period in (0.06, 0.07, 0.1, 0.15, 0.2, 0.35):
        worst = 0.0
        for phase in [k * period / 20 for k in range(20)]:
            hits = 0
            for _ in range(4000):
                t = rng.uniform(0, span)
                next_look = phase + math.ceil((t - phase) / period) * period
                hits += next_look - t <= bound
            worst = max(worst, hits / 4000)
        assert worst <= escape_per_call(period, bound, span) + 0.03, (period, worst)
        assert worst >= escape_per_call(period, bound, span) - 0.06, (period, worst)


# (the same assertions on the in-process queue's certificate, in the default run:
# conformance/test_inprocess.py; here the base's whole blocking phase again, with a seed of its own)
@pytest.mark.slow
def test_the_certificate_reports_each_wakeups_distribution_and_the_escape():
    cert = certify(BASE, phases=("blocking",), seed=5)
    assert cert.passed, cert.failure
    assert cert.seed == 5 and cert.phases["blocking"]["timing"]["seed"] == 5
    assert_reports_each_wakeups_distribution_and_the_escape(cert)


def test_a_polling_failure_replays_with_its_seed_and_offsets():
    cert = certify("conformance.mutants.acquire_polls_200ms:make", phases=("blocking",), seed=3)
    assert not cert.passed and cert.failure["check"] in ACQUIRE_WAKEUPS
    assert f"checks=({cert.failure['check']!r},), seed=3, trials=6)" in cert.counterexample
    namespace = {}
    exec(compile(cert.counterexample, "replay", "exec"), namespace)
    with pytest.raises(AssertionError, match=f"check {cert.failure['check']}: trial "):
        namespace["test_counterexample"]()


def test_seed_and_trials_are_checked():
    with pytest.raises(ValueError, match=r"^seed must be an int \(the offsets of the waking calls are drawn from it\), got 1.5$"):
        check_blocking(BASE, seed=1.5)
    with pytest.raises(ValueError, match=r"^trials must be an int in \[1, 1000\] \(how many times each randomised check runs\), got 0$"):
        check_blocking(BASE, trials=0)


def test_latency_distribution_uses_nearest_rank():
    assert distribution([]) == {"n": 0}
    assert distribution([0.3, 0.1, 0.2]) == {"n": 3, "p50": 0.2, "p99": 0.3, "max": 0.3}
    values = [k / 1000 for k in range(1, 201)]
    assert distribution(values) == {"n": 200, "p50": 0.1, "p99": 0.198, "max": 0.2}
