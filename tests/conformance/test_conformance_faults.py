"""The faults phase's own logic, on small fake backends (``fault_backends``:
an in-process queue served over a socket with fake fault hooks): the correct
one passes every check, each broken one is caught by the check made for its
rule, with the check's history in the message; a backend without faults
gets the phase listed as not run.  Certification evidence for a real
deployment is ``refqueue certify refqueue.backends.redis:make --phase faults``."""

import dataclasses
import json
import re

import pytest

from refqueue.conformance import fault_crashes, linearizability
from refqueue.conformance.certify import PROFILES, certify
from refqueue.conformance.faults import CHECKS, check_faults
from refqueue.conformance.history import History

pytestmark = pytest.mark.torch

FAKE = "fault_backends:make"


def test_the_correct_fake_passes_every_check():
    report = check_faults(FAKE, seed=3)
    assert report.ok, report.failure
    assert list(report.checks) == list(CHECKS) and report.not_run == {}
    assert report.steps > 0


@pytest.mark.parametrize(
    ("fake", "check", "says"),
    [
        ("make_forgets_puts", "lost-reply-put", "A: put('s0') again (a retry) raised DuplicateSample (kind 'duplicate')"),
        ("make_never_collects", "lost-reply-ack", "after reclaim_expired() with the clock past intent_timeout (5 s), A and the store disagree with the model: the store holds 36 bytes in 2 samples"),
        ("make_lease_state_live", "lost-reply-ack", "A: lease_state(L0) is 'live'; the model says 'acked'"),
        ("make_loss_unnoticed", "restart-lossy", "A: pending_count() after a lossy restart returned 0; the loss went unnoticed"),
        ("make_same_epoch_after_loss", "restart-lossy", "a client opened after a lossy restart has the old epoch"),
        ("make_durable_loses", "restart-durable", "after a durable restart, A: pending_count() raised StateLost"),
    ],
)  # fmt: skip
def test_each_broken_rule_is_caught_by_its_check_with_the_history(fake, check, says):
    report = check_faults(f"fault_backends:{fake}")
    assert report.failed_check == check, report.failure
    assert report.failure.startswith(f"faults phase, check {check}: ")
    assert says in report.failure, report.failure
    assert "the check's history (calls, answers and faults, in order):" in report.failure
    assert "    1. A: a fresh queue made by the factory" in report.failure
    assert "fault: " in report.failure  # the fault is an operation of the history, shown with the calls


def test_a_reclaimer_that_dies_at_its_first_lost_reply_is_caught(monkeypatch):
    monkeypatch.setattr(fault_crashes, "RECOVER_WITHIN", 1.0)
    report = check_faults("fault_backends:make_dying_reclaimer", checks=("reclaimer-survives-lost-reply",))
    assert report.failed_check == "reclaimer-survives-lost-reply"
    assert "A's background reclaimer taking back the expired lease (round 2) did not happen within 1.0 s" in report.failure
    assert "fault: the reply to A's next state-changing call will be lost (A's reclaimer makes it)" in report.failure


@pytest.mark.parametrize(
    ("fake", "says"),
    [
        ("make", "fault: the queue's server restarts, durably (the hook takes no down_for: down as long as its restart)"),
        ("make_restart_down_for", "fault: the queue's server restarts, durably, down for 0.5 s"),
    ],
)  # fmt: skip
def test_the_restart_history_says_how_long_the_server_was_down(monkeypatch, fake, says):
    # A restart hook written before down_for is called without it, one that
    # takes it is asked for RESTART_DOWN_FOR; the history says which.  The
    # check is stopped right after the restart, so that its history shows.
    import fault_backends

    asked = fault_backends._DownForHooks.asked
    asked.clear()
    assert fault_crashes.RESTART_DOWN_FOR == 0.5

    def stop_here(run, when, survived):
        raise run.fail("stopped by the test after the restart")

    monkeypatch.setattr(fault_crashes, "_reclaimed_by_b", stop_here)
    report = check_faults(f"fault_backends:{fake}", checks=("reclaimer-survives-restart",))
    assert report.failed_check == "reclaimer-survives-restart"
    assert "stopped by the test after the restart" in report.failure
    assert says in report.failure, report.failure
    assert asked == ([0.5] if fake == "make_restart_down_for" else [])


def test_a_restart_hook_that_takes_down_for_passes_the_restart_checks():
    import fault_backends

    fault_backends._DownForHooks.asked.clear()
    report = check_faults("fault_backends:make_restart_down_for",
                          checks=("restart-durable", "restart-lossy", "reclaimer-survives-restart"))
    assert report.ok, report.failure
    # in CHECKS order: only the reclaimer's check asks for an outage; the
    # others call the hook without the keyword (its default, 0: as fast as it goes)
    assert fault_backends._DownForHooks.asked == [0.0, 0.5, 0.0]


def test_a_client_that_answers_reads_from_a_cache_is_not_linearizable_across_processes():
    # Whether a stale cached read lands where no order explains it depends on how
    # the three processes' calls interleave: measured on an idle machine, one history
    # of 200 calls caught it in 8 of seeds 0-19 (1.9 s each, spawning its children),
    # and in 6 of 20 with two children serving all twenty (7.1 s), hence five histories a
    # check (PROCESS_HISTORIES). The loop stops at the first seed whose check catches it.
    for seed in range(10):
        report = check_faults("fault_backends:make_cached_reads", seed=seed, checks=("processes-linearizable",))
        if report.failed_check is not None:
            break
    assert report.failed_check == "processes-linearizable", "no check of 10 seeds (50 histories) caught the cached reads"
    said = re.search(r"history (\d) of 5, of 4 threads in 3 processes \(seed (\d+), ", report.failure)
    assert said is not None, report.failure
    assert int(said[2]) == seed * 1000 + int(said[1]) - 1  # the k-th history's seed
    assert "is not linearizable" in report.failure
    history = History.from_json(report.history)
    assert history.threads == 4 and len(history) > 0


def test_each_history_of_the_check_has_its_own_seed_and_counts_in_the_certificate():
    from refqueue.conformance.faults import FaultsPhase

    cert = certify(FAKE, phases=("faults",), seed=2)
    assert cert.passed, cert.failure
    phase = cert.phases["faults"]
    assert phase["process_histories"] == 5  # the ci profile's
    line = [x for x in FaultsPhase().summary("faults", phase) if "processes-linearizable" in x]
    assert line and line[0].endswith(" s (5 histories)"), line
    report = check_faults(FAKE, seed=2, checks=("processes-linearizable",), histories=2)
    assert report.ok and report.checks["processes-linearizable"]["histories"] == 2
    with pytest.raises(ValueError, match="histories must be >= 1, got 0"):
        check_faults(FAKE, histories=0)
    with pytest.raises(ValueError, match=r"seed must be >= 0 \(the histories' seeds are seed \* 1000 \+ k\), got -1"):
        check_faults(FAKE, seed=-1)
    for wrong in ("5", 2.0, True, None):
        with pytest.raises(TypeError, match=f"histories must be an int, got {re.escape(repr(wrong))}"):
            check_faults(FAKE, histories=wrong)


def test_a_backend_without_faults_gets_the_phase_listed_as_not_run():
    cert = certify("refqueue.conformance.backends:inprocess", phases=("faults",))
    assert cert.passed
    assert cert.phases["faults"] == {
        "steps": 0,
        "skipped": "faults=False declared: the backend gives the kit no fault hooks (see docs/CERTIFYING.md, the faults phase)",
    }
    assert {"check": "faults phase", "why": cert.phases["faults"]["skipped"]} in cert.not_checked
    with pytest.raises(ValueError, match=r"does not declare faults \(Capabilities\(faults=True\) and a factory attribute"):
        check_faults("refqueue.conformance.backends:inprocess")


def test_a_faults_failure_replays_as_a_test_and_the_certificate_names_the_check():
    cert = certify("fault_backends:make_never_collects", phases=("faults",), seed=5)
    assert cert.failure["phase"] == "faults" and cert.failure["check"] == "lost-reply-ack"
    assert "report = check_faults(BACKEND, seed=5, checks=('lost-reply-ack',))" in cert.counterexample
    namespace = {"__name__": "replay"}
    exec(compile(cert.counterexample, "<replay>", "exec"), namespace)  # noqa: S102 - the kit's own printed test
    with pytest.raises(AssertionError, match="check lost-reply-ack"):
        namespace["test_counterexample"]()
    entry = cert.phases["faults"]
    assert list(entry["checks"])[-1] == "lost-reply-ack" and entry["steps"] > 0
    assert json.loads(json.dumps(cert.to_dict()))["failure"]["check"] == "lost-reply-ack"


# Two multi-process histories where the count is the point, not the search (each
# recording spawns two interpreters: about 3 s); the ci profile's five are certified by
# test_each_history_of_the_check_has_its_own_seed_and_counts_in_the_certificate.
TWO_HISTORIES = dataclasses.replace(PROFILES["ci"], process_histories=2)


def test_an_undecided_multi_process_history_is_recorded_again_and_the_decided_one_counts(undecided_first):
    from refqueue.conformance.faults import FaultsPhase

    calls = undecided_first(linearizability, 2)
    cert = certify(FAKE, phases=("faults",), profile=TWO_HISTORIES)
    assert cert.passed, cert.failure
    assert len(calls) == 3 + 1 and calls[0] is not calls[2]  # history 1's seed recorded three times, then history 2
    phase = cert.phases["faults"]
    assert phase["undecided_recorded_again"] == 2
    assert phase["steps"] >= sum(len(h) for h in calls)  # every recording's calls are counted
    line = FaultsPhase().summary("faults", phase)[0]
    assert " s (2 undecided multi-process histories recorded again)" in line, line


def test_a_multi_process_history_undecided_in_every_recording_fails_the_check(undecided_first):
    calls = undecided_first(linearizability, 3)
    report = check_faults(FAKE, checks=("processes-linearizable",))
    assert len(calls) == 3
    assert report.failed_check == "processes-linearizable"
    assert "history 1 of 5, of 4 threads in 3 processes (seed 0, " in report.failure
    assert "could not be decided in 3 recordings (an undecided history is not a pass)" in report.failure
    assert History.from_json(report.history).threads == 4


def test_a_decided_multi_process_history_is_not_recorded_again(undecided_first):
    calls = undecided_first(linearizability, 0)
    report = check_faults(FAKE, checks=("processes-linearizable",), histories=2)
    assert report.ok, report.failure
    assert len(calls) == 2 and "undecided_recorded_again" not in report.checks["processes-linearizable"]
