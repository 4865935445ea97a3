"""Each fairness condition of FairSpec is needed: with any one of them left
out, TLC finds a liveness property violated (and with all of them, none).
Run on a scratch copy of spec/ with MCLiveness cut down to two samples."""

import shutil

import pytest

from refqueue.spec_check.tlc import run_tlc

FAIRNESS = {
    "idle consumers acquire": r"/\ \A c \in Consumers : WF_vars(Acquire(c))",
    "leases are given back": r"/\ \A c \in Consumers : WF_vars(Ack(c) \/ Fail(c) \/ Crash(c))",
    "reclaim runs": r"/\ WF_vars(ReclaimExpired)",
    "time advances": r"/\ WF_vars(Tick)",
    "the producer retries": r"/\ WF_vars(\E s \in SampleSet : TryPut(s))",
}


def _check_liveness(spec_dir, tmp_path, drop: str | None):
    spec = tmp_path / "spec"
    shutil.copytree(spec_dir, spec)
    tla = spec / "SampleRefQueue.tla"
    text = tla.read_text()
    if drop is not None:
        line = f"    {FAIRNESS[drop]}\n"
        assert text.count(line) == 1, drop
        tla.write_text(text.replace(line, ""))
    module = spec / "MCLiveness.tla"
    module.write_text(module.read_text().replace('<<"s0", "s1", "s2">>', '<<"s0", "s1">>'))
    return run_tlc(spec, "MCLiveness.tla", "MCLiveness.cfg", tmp_path / "work", workers=2, timeout=600)


@pytest.mark.tlc
def test_with_all_fairness_the_properties_hold(spec_dir, tmp_path):
    run = _check_liveness(spec_dir, tmp_path, None)
    assert run.outcome == "ok", run.output[-3000:]


@pytest.mark.tlc
@pytest.mark.parametrize("drop", sorted(FAIRNESS))
def test_without_one_fairness_condition_liveness_fails(spec_dir, tmp_path, drop):
    run = _check_liveness(spec_dir, tmp_path, drop)
    assert run.outcome == "violation", run.output[-3000:]
    assert run.violated == "temporal properties"  # MCLiveness checks two liveness properties
    assert run.trace[0] == "State 1: <Initial predicate>"
