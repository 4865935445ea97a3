"""The torture checker refuses each kind of anomaly, shown on a hand-made
history (one per kind), and passes a clean one.  No server, no processes:
the histories are written as a run writes them and loaded back."""

from __future__ import annotations

import pytest

from refqueue.torture.checker import ANOMALY_KINDS, check
from refqueue.torture.report import excerpt, render_run
from torture_helpers import Story, clean_story

RULES = ["faults", "reads", "lease_identity", "acks", "completions", "residency", "reclaimers", "errors", "state_loss"]


def verdicts(history, persistence="always"):
    result = check(history, persistence=persistence)
    return result, {v.name: v for v in result.verdicts}


def test_a_clean_history_passes_every_rule(tmp_path):
    result, by_name = verdicts(clean_story(tmp_path).history())
    assert [v.name for v in result.verdicts] == RULES
    assert result.valid is True
    assert all(v.valid is True for v in result.verdicts), render_run(clean_story(tmp_path / "again").history(), result)
    assert by_name["acks"].checked == "2 acks answering True: none stale, at most one per sample"


# -- one hand-made history per anomaly kind: (story, persistence) ------------------------------------


def _checksum_mismatch(s: Story) -> None:
    s.put("p0.0", 70, "c", checksum="1111")
    s.lease("c0.0", 72, "c", 3)
    s.get("c0.0", 73, "c", 3, checksum="2222")
    s.ack("c0.0", 74, "c", 3)


def _read_failed(s: Story) -> None:
    s.put("p0.0", 70, "c")
    s.lease("c0.0", 72, "c", 3)
    s.get("c0.0", 73, "c", 3, error="RefMismatch")
    s.ack("c0.0", 74, "c", 3)


def _acked_without_data(s: Story) -> None:
    s.put("p0.0", 70, "c")
    s.lease("c0.0", 72, "c", 3)
    s.get("c0.0", 73, "c", 3, error="SampleMissing")
    s.ack("c0.0", 74, "c", 3, scrub=False)


def _lease_reused(s: Story) -> None:
    s.put("p0.0", 70, "c")
    s.lease("c0.0", 72, "c", 2)  # lease 2 went to b already
    s.get("c0.0", 73, "c", 2)
    s.ack("c0.0", 74, "c", 2)


def _stale_ack_accepted(s: Story) -> None:
    s.put("p0.0", 60, "c")
    s.lease("c0.0", 62, "c", 3)
    s.lease("c1.0", 70, "c", 4, redeliveries=1)  # reclaimed, redelivered
    s.get("c1.0", 71, "c", 4)
    s.ack("c0.0", 75, "c", 3)  # the old owner's ack: accepted


def _double_ack(s: Story) -> None:
    s.put("p0.0", 60, "c")
    s.lease("c0.0", 62, "c", 3)
    s.ack("c0.0", 63, "c", 3, error="RedisUnavailable")  # the reply is lost ...
    s.call("c0.0", 64, "lease_state", s.lease_args("c", 3), result="acked")  # ... it committed
    s.lease("c1.0", 70, "c", 4, redeliveries=1)
    s.ack("c1.0", 72, "c", 4)  # and it is acked again


def _sample_lost(s: Story) -> None:
    s.put("p0.0", 60, "c")  # committed, never delivered, and the queue says drained


def _double_completion(s: Story) -> None:
    s.put("p0.0", 60, "c")
    s.lease("c0.0", 62, "c", 3)
    s.ack("c0.0", 63, "c", 3)
    s.end_dead = ["c"]


def _resident_at_end(s: Story) -> None:
    s.put("p0.0", 60, "c")
    s.lease("c0.0", 62, "c", 3)
    s.ack("c0.0", 63, "c", 3, error="RedisUnavailable")
    s.call("c0.0", 64, "lease_state", s.lease_args("c", 3), result="acked")
    s.end_files = ["c"]


def _health_mismatch(s: Story) -> None:
    s.end_count = 1  # the directory is empty, the counters say 1


def _reclaimer_died(s: Story) -> None:
    s.call("c2.0", 50, "reclaimer_stopped", result={"error": "RedisUnavailable(...)"})
    s.call("c2.0", 60, "stop_reclaimer", error="RuntimeError", refqueue=False)


def _drain_stalled(s: Story) -> None:
    s.call("final", 95, "drain_stalled", {"pending": 0, "outstanding": 1, "still_s": 11.0})


def _unexpected_error(s: Story) -> None:
    s.put("p1.0", 60, "c", error="DataError", refqueue=False)
    s.exit("p1.0", 61, 1)


def _process_crashed(s: Story) -> None:
    s.put("p1.0", 60, "c", error="DuplicateSample")  # a first put answered duplicate: the producer gives up
    s.exit("p1.0", 61, 1)


def _loss_undetected(s: Story) -> None:
    s.fault(55, "restart", {"pid_before": 1, "pid_after": 2, "down_s": 0.2}, took_ms=200)
    s.put("p0.0", 298, "x")
    s.lease("c0.0", 300, "x", 5)  # the clients go on as if nothing happened
    s.ack("c0.0", 301, "x", 5)


def _loss_misreported(s: Story) -> None:
    s.call("c0.0", 70, "acquire", error="QueueStateLost")


CASES = {
    "checksum_mismatch": (_checksum_mismatch, "always"),
    "read_failed": (_read_failed, "always"),
    "acked_without_data": (_acked_without_data, "always"),
    "lease_reused": (_lease_reused, "always"),
    "stale_ack_accepted": (_stale_ack_accepted, "always"),
    "double_ack": (_double_ack, "always"),
    "sample_lost": (_sample_lost, "always"),
    "double_completion": (_double_completion, "always"),
    "resident_at_end": (_resident_at_end, "always"),
    "health_mismatch": (_health_mismatch, "always"),
    "reclaimer_died": (_reclaimer_died, "always"),
    "drain_stalled": (_drain_stalled, "always"),
    "unexpected_error": (_unexpected_error, "always"),
    "process_crashed": (_process_crashed, "always"),
    "loss_undetected": (_loss_undetected, "none"),
    "loss_misreported": (_loss_misreported, "always"),
}


def _story(directory, extra) -> Story:
    """The clean story's calls, then ``extra``'s, then the end of the run."""
    s = Story(directory)
    s.end_files, s.end_dead, s.end_count = [], [], None
    s.put("p0.0", 10, "a")
    s.put("p0.0", 20, "b")
    s.lease("c0.0", 30, "a", 1)
    s.get("c0.0", 31, "a", 1)
    s.ack("c0.0", 32, "a", 1)
    s.lease("c1.0", 40, "b", 2)
    s.get("c1.0", 41, "b", 2)
    s.ack("c1.0", 42, "b", 2)
    extra(s)
    s.end(400, s.end_files, dead=s.end_dead, sample_count=s.end_count)
    return s


def test_every_anomaly_kind_has_a_case():
    assert sorted(CASES) == sorted(ANOMALY_KINDS)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_the_checker_refuses(kind, tmp_path):
    build, persistence = CASES[kind]
    history = _story(tmp_path, build).history()
    result = check(history, persistence=persistence)
    assert result.valid is False
    assert [a.kind for a in result.anomalies] == [kind], "\n".join(render_run(history, result))
    anomaly = result.anomalies[0]
    shown = excerpt(history, anomaly)
    assert [line for line in shown if line.startswith(">")], "the excerpt shows the evidence"
    assert all(f"#{i:<6}" in "\n".join(shown) for i in anomaly.ops)


def test_a_stale_ack_is_shown_next_to_the_fault_that_explains_it(tmp_path):
    def story(s: Story) -> None:
        s.put("p0.0", 60, "c")
        s.lease("c0.0", 65, "c", 3)
        s.fault(66, "pause", {"paused_s": 4.0}, took_ms=4000, target="server", seconds=4.0)
        s.lease("c1.0", 4070, "c", 4, redeliveries=1)  # reclaimed during the pause
        s.ack("c0.0", 4075, "c", 3)

    history = _story(tmp_path, story).history()
    result = check(history, persistence="always")
    assert [a.kind for a in result.anomalies] == ["stale_ack_accepted"]
    assert result.anomalies[0].message == (
        "c0.0's ack of c lease 3 answered True at +4.075s, but lease 4 of it had been issued to c1.0 at +4.070s, "
        "after lease 3")
    lines = excerpt(history, result.anomalies[0])
    marks = [(line[0], line[2:].split()[2]) for line in lines]
    assert marks == [(" ", "p0.0"), (" ", "p0.0"), (">", "c0.0"), ("!", "nemesis"), (">", "c1.0"), (">", "c0.0"),
                     (" ", "c0.0")]  # store.put, put, the two leases, the pause between them, the ack, its scrub
    assert "pause(target=server seconds=4.0) -> {'paused_s': 4.0}" in lines[3]


def test_an_ack_that_never_answered_may_have_completed_its_sample(tmp_path):
    def story(s: Story) -> None:
        s.put("p0.0", 60, "c")
        s.lease("c0.0", 62, "c", 3)
        s.call("c0.0", 63, "ack", s.lease_args("c", 3), unknown=True)  # killed in it
        s.exit("c0.0", 70, -9)

    result, by_name = verdicts(_story(tmp_path, story).history())
    assert result.valid is True
    assert by_name["completions"].checked == (
        "3 committed puts: each acked exactly once or dead-lettered (0); 1 completed by an ack whose answer never came")


def test_data_left_by_a_producer_killed_before_its_queue_put_is_a_note_not_an_anomaly(tmp_path):
    def story(s: Story) -> None:
        s.call("p1.0", 60, "store.put", {"sample": "z", "checksum": "c0ffee"}, result={"bytes": 100})
        s.call("p1.0", 62, "put", {"sample": "z", "attempt": 0}, unknown=True)
        s.exit("p1.0", 63, -9)
        s.end_files = ["z"]

    result, by_name = verdicts(_story(tmp_path, story).history())
    assert result.valid is True
    assert by_name["residency"].notes == [
        "1 sample file(s) of producers killed between their store put and their queue put (no queue ever held them): z"]


def test_after_a_detected_loss_the_state_rules_skip_and_the_others_still_hold(tmp_path):
    def story(s: Story) -> None:
        s.fault(55, "restart", {"pid_before": 1, "pid_after": 2, "down_s": 0.2}, took_ms=200)
        s.call("c0.0", 300, "acquire", error="QueueStateLost")
        s.exit("c0.0", 301, 3)
        s.put("p0.0", 302, "never", error="QueueStateLost")

    result, by_name = verdicts(_story(tmp_path, story).history(), "none")
    assert result.valid is True
    assert by_name["state_loss"].checked == "the loss was detected: c0.0's acquire raised QueueStateLost at +0.300s"
    assert by_name["completions"].skipped == "the queue's state was lost: the samples put before it are gone"
    assert by_name["residency"].valid is None and by_name["residency"].skipped


def test_a_loss_detected_after_a_restart_with_everysec_is_not_a_false_alarm(tmp_path):
    def story(s: Story) -> None:
        s.fault(55, "restart", {"pid_before": 1, "pid_after": 2, "down_s": 0.2}, took_ms=200)
        s.call("c0.0", 300, "acquire", error="QueueStateLost")  # the last acknowledged write did not survive

    result, by_name = verdicts(_story(tmp_path, story).history(), "everysec")
    assert result.valid is True
    assert by_name["state_loss"].checked == (
        "a restart with appendfsync everysec lost writes, and that was detected: c0.0's acquire raised "
        "QueueStateLost at +0.300s")
    _, always = verdicts(_story(tmp_path / "always", story).history(), "always")
    assert [a.kind for a in always["state_loss"].anomalies] == ["loss_misreported"]


def test_a_queue_that_never_drained_leaves_the_completions_unknown(tmp_path):
    s = clean_story(tmp_path)
    s.call("final", 200, "is_drained", result=False)  # the last word: not drained
    result, by_name = verdicts(s.history())
    assert by_name["completions"].valid is None
    assert by_name["completions"].notes == ["the queue never drained: whether every sample completes is unknown"]
    assert result.valid is None  # unknown is never a pass


# -- the faults asked for: each must take effect, else the run is unknown -------------------------


def test_a_fault_kind_asked_for_that_never_took_effect_makes_the_run_unknown(tmp_path):
    s = Story(tmp_path, faults=["kill", "restart", "drop"])
    s.put("p0.0", 10, "a")
    s.lease("c0.0", 30, "a", 1)
    s.get("c0.0", 31, "a", 1)
    s.fault(35, "kill", {"killed": None, "why": "c2 has no live process now"}, target="c2")
    s.fault(36, "drop", {"dropped": True, "client_port": 5, "sha": "ab"}, target="proxy")
    s.ack("c0.0", 40, "a", 1)
    s.call("c0.0", 60, "stop_reclaimer", result=None)
    s.end(100)
    result, by_name = verdicts(s.history())
    faults = by_name["faults"]
    assert faults.valid is None and not faults.skipped
    assert result.valid is None  # unknown is never a pass, though every other rule holds
    assert all(v.valid is True for v in result.verdicts if v.name != "faults")
    assert faults.checked == (
        "faults that took effect of those scheduled: kill 0 of 1, restart 0 of 0, drop 1 of 1; never took effect: "
        "kill (1 scheduled), restart (0 scheduled): the run shows nothing about surviving it; run longer "
        "(--duration) or with another --seed")
    assert "UNKNOWN" in "\n".join(render_run(s.history(), result))


def test_every_fault_kind_asked_for_that_took_effect_passes_and_says_how_often(tmp_path):
    s = Story(tmp_path, faults=["kill", "restart", "pause"])
    s.put("p0.0", 10, "a")
    s.fault(20, "kill", {"killed": "c1.0", "how": "anywhere", "pid": 7}, target="c1")
    s.fault(21, "kill", {"killed": None, "why": "c2 has no live process now"}, target="c2")
    s.fault(25, "restart", {"pid_before": 1, "pid_after": 2, "down_s": 0.2}, target="server")
    s.fault(28, "pause", {"paused_s": 3.1}, target="server")
    s.lease("c0.0", 30, "a", 1)
    s.get("c0.0", 31, "a", 1)
    s.ack("c0.0", 40, "a", 1)
    s.call("c0.0", 60, "stop_reclaimer", result=None)
    s.end(100)
    result, by_name = verdicts(s.history())
    assert by_name["faults"].valid is True
    assert by_name["faults"].checked == "faults that took effect of those scheduled: kill 1 of 2, restart 1 of 1, pause 1 of 1"


def test_a_start_record_without_the_faults_asked_for_skips_the_rule(tmp_path):
    s = Story(tmp_path)
    s.end(100)
    _, by_name = verdicts(s.history())
    assert by_name["faults"].valid is None
    assert by_name["faults"].skipped == "the run's start record does not list the faults asked for"
