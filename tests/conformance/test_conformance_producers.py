"""The producers phase: several producers blocked at once, with real threads (D8)."""

import threading
import time

import pytest

from conformance.mutants._base import BaseQueue, factory
from refqueue.conformance import backend_of
from refqueue.conformance.certify import certify
from refqueue.conformance.producers import CHECKS, REPLAY_RUNS, check_producers

pytestmark = pytest.mark.torch

BASE = "conformance.mutants._base:make"
OLD = "conformance.mutants.old_backpressure:make"


@pytest.mark.parametrize("target", [BASE, "refqueue.conformance.backends:inprocess"])
def test_a_d8_backend_passes_every_check(target):
    report = check_producers(target, seed=3)
    assert report.ok, report.failure
    assert list(report.checks) == list(CHECKS)
    deadlock, stress = report.checks["deadlock"], report.checks["stress"]
    assert deadlock["blocking_puts"] == 2  # both producers admitted, with no consumer
    assert stress["blocking_puts"] == 18
    assert stress["max_work_bytes"] < stress["work_bound_bytes"]
    assert stress["max_resident_bytes"] <= stress["resident_bound_bytes"]
    assert stress["pauses"] >= 1  # the producers really were held back
    assert max(c["slowest_put_s"] for c in report.checks.values()) < report.bound


def test_the_pre_d8_rule_deadlocks_two_producers_and_is_named():
    started = time.monotonic()
    report = check_producers(OLD, bound=0.3)
    assert time.monotonic() - started < 3
    assert not report.ok and report.failed_check == "deadlock"
    assert report.failure.startswith("producers phase, check deadlock: producer ")
    assert "was still blocked 0.3 s after it began (pending 0, outstanding 0, paused True" in report.failure


def test_an_orphan_on_an_empty_queue_must_not_block_a_producer():
    report = check_producers(OLD, bound=0.3, checks=("orphan",))
    assert report.failed_check == "orphan"
    assert "producer 0's put_blocks_until_below('or0') was still blocked 0.3 s" in report.failure


class _AlwaysAdmits(BaseQueue):
    """Enqueues whatever the hysteresis says, so the admitted work is unbounded; and
    hands nothing out before all 18 refs of the stress check were admitted, so the
    consumers cannot hide it by draining fast."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._admitted = 0
        self._all_admitted = threading.Event()

    def _admits(self, paused):
        return True

    def put_blocks_until_below(self, ref, poll_interval=0.05, abort_when=None):
        super().put_blocks_until_below(ref, poll_interval, abort_when)
        with self._lock:
            self._admitted += 1
            if self._admitted == 18:
                self._all_admitted.set()

    def acquire(self, poll_interval=0.05):
        if not self._all_admitted.wait(poll_interval):
            return None
        return super().acquire(poll_interval)


def test_admitted_work_past_high_plus_largest_is_caught():
    report = check_producers(backend_of(factory(_AlwaysAdmits)), checks=("stress",))
    assert report.failed_check == "stress"
    assert "brought the admitted work (pending + leased) to at least" in report.failure
    assert "not below high + largest sample = 234 bytes" in report.failure


_release = threading.Event()


class _Hangs(BaseQueue):
    """A blocking put that ignores abort_when and waits for the test to let it go."""

    def put_blocks_until_below(self, ref, poll_interval=0.05, abort_when=None):
        _release.wait(30)
        super().put_blocks_until_below(ref, poll_interval, abort_when)


class _HangsHoldingTheLock(BaseQueue):
    """A blocking put that waits for the test to let it go with the queue's lock held:
    every other call of the queue hangs too."""

    def put_blocks_until_below(self, ref, poll_interval=0.05, abort_when=None):
        with self._lock:
            _release.wait(30)
        super().put_blocks_until_below(ref, poll_interval, abort_when)


@pytest.mark.parametrize("hangs", [_Hangs, _HangsHoldingTheLock])
def test_a_hung_producer_is_a_failure_naming_the_check_and_the_call(hangs):
    _release.clear()
    started = time.monotonic()
    try:
        report = check_producers(backend_of(factory(hangs)), bound=0.2, checks=("deadlock",))
    finally:
        _release.set()
    assert time.monotonic() - started < 5  # the kit itself never hangs
    assert report.failed_check == "deadlock"
    assert report.failure.startswith("producers phase, check deadlock: producer ")
    assert " hung: still in put_blocks_until_below('dl" in report.failure
    assert "no thread may be left hanging" in report.failure


def test_check_producers_validates_its_arguments():
    with pytest.raises(ValueError, match=r"^bound must be a number of seconds in \(0, 3600\), got 0$"):
        check_producers(BASE, bound=0)
    with pytest.raises(ValueError, match=r"^samples must be an int from 2 to 20 \(per stress producer\), got 1$"):
        check_producers(BASE, samples=1)
    with pytest.raises(ValueError, match=r"^checks must be a non-empty subset of \('deadlock', 'orphan', 'stress'\)"):
        check_producers(BASE, checks=("nope",))


def test_the_phase_is_in_the_certificate_and_its_replay_fails_only_on_the_mutant(tmp_path):
    cert = certify(BASE, phases=("producers",))
    assert cert.passed, cert.failure
    phase = cert.phases["producers"]
    assert list(phase["checks"]) == list(CHECKS) and phase["bound_s"] == 1.0
    assert phase["steps"] > 0
    assert "| producers |" in cert.to_markdown()

    cert = certify(OLD, phases=("producers",), producer_bound=0.3)
    assert not cert.passed and cert.failure["phase"] == "producers" and cert.failure["check"] == "deadlock"
    namespace = {"__name__": "replay"}
    exec(compile(cert.counterexample, "<replay>", "exec"), namespace)  # noqa: S102 - the kit's own printed test
    with pytest.raises(AssertionError, match="run 1 of 5: .*check deadlock"):
        namespace["test_counterexample"]()
    namespace = {"__name__": "replay_on_base"}
    exec(compile(cert.counterexample.replace(repr(OLD), repr(BASE)), "<replay>", "exec"), namespace)  # noqa: S102
    runs = []
    check = namespace["check_producers"]
    namespace["check_producers"] = lambda *a, **k: runs.append(1) or check(*a, **k)
    namespace["test_counterexample"]()
    assert len(runs) == REPLAY_RUNS == 5  # a race need not show in one run: the replay runs the check five times
