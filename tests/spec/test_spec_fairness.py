"""Each fairness condition of FairSpec is needed: with any one of them left
out (or the strong fairness weakened to weak), TLC finds a liveness property
violated, and with all of them none is.

Run on scratch copies of spec/: MCLiveness cut down to two samples of 3 and 1
bytes (3 = High, so a producer still parks behind the larger one),
MCAckLiveness as it is (a fault budget, where crashing runs out) and
MCDeploymentLiveness as it is (two-step acks, lost replies, a lossy restart).  Each case
checks only the property it must violate, so TLC names it."""

import re
import shutil

import pytest

from refqueue.spec_check.tlc import SHORT_RUN_JVM_ARGS, cfg_properties, run_tlc

# FairSpec's conjuncts after Spec, as the spec writes them.
FAIRNESS = {
    "idle consumers acquire": r"/\ \A c \in Consumers : WF_vars(Acquire(c))",
    "leases are given back": r"/\ \A c \in Consumers : SF_vars(Ack(c) \/ Fail(c))",
    "data is released": r"/\ \A c \in Consumers : WF_vars(Release(c))",
    "drained consumers stop": r"/\ \A c \in Consumers : WF_vars(Stop(c))",
    "reclaim runs": r"/\ WF_vars(ReclaimExpired)",
    "time advances": r"/\ WF_vars(Tick)",
    "blocked producers keep stepping": r"/\ \A p \in Producers : WF_vars(TryPut(p))",
    "intents are scrubbed": r"/\ TwoStepAck => \A s \in SampleSet : WF_vars(ScrubIntent(s))",
    "lost queues are recovered": r"/\ MaxRestarts > 0 => \A s \in SampleSet : WF_vars(Recover(s))",
}

LIVENESS = "MCLiveness"  # cut down, see _copy
ACK_LIVENESS = "MCAckLiveness"
DEPLOYMENT_LIVENESS = "MCDeploymentLiveness"  # two-step acks, lost replies, a lossy restart

# name -> (the conjunct's replacement: None drops it, the config, the property TLC must find violated)
CASES = {
    "idle consumers acquire": (None, LIVENESS, "EverySampleEventuallyAckedOrDead"),
    "leases are given back": (None, LIVENESS, "EverySampleEventuallyAckedOrDead"),
    # Nothing is assumed of Crash: a consumer holding data for ever is never
    # made to crash, so without this it never acks (shown under a fault budget).
    "data is released": (None, ACK_LIVENESS, "EverySampleEventuallyAckedOrDead"),
    "drained consumers stop": (None, LIVENESS, "EveryConsumerEventuallyStops"),
    "reclaim runs": (None, LIVENESS, "EverySampleEventuallyAckedOrDead"),
    "time advances": (None, LIVENESS, "EverySampleEventuallyAckedOrDead"),
    "blocked producers keep stepping": (None, LIVENESS, "PausedProducerEventuallyResumes"),
    # The collector (the reclaimer loop's collection of intents): without it
    # an acked sample's data may stay on disk for ever.
    "intents are scrubbed": (None, DEPLOYMENT_LIVENESS, "CompletedDataEventuallyScrubbed"),
    # The operator's recovery after a detected loss: without it a sample the
    # queue forgot is never completed.
    "lost queues are recovered": (None, DEPLOYMENT_LIVENESS, "EverySampleEventuallyAckedOrDead"),
    # Weak fairness is not enough under a fault budget: Ack is enabled only
    # between a Release and the next Get, so a consumer that gets and
    # releases forever never acks.
    "leases are given back (strong, not weak)": (
        r"/\ \A c \in Consumers : WF_vars(Ack(c) \/ Fail(c))", ACK_LIVENESS, "EverySampleEventuallyAcked",
    ),
}
CONJUNCT = {name: FAIRNESS[name.split(" (")[0]] for name in CASES}


def _fair_spec(text: str) -> list[str]:
    body = text.split("\nFairSpec ==\n", 1)[1].split("\n=", 1)[0]
    return [line.strip() for line in body.splitlines() if line.strip().startswith("/\\")]


def _copy(spec_dir, tmp_path, config: str):
    spec = tmp_path / "spec"
    shutil.copytree(spec_dir, spec)
    if config == LIVENESS:
        module = spec / "MCLiveness.tla"
        text = module.read_text()
        for old, new in [('<<"s0", "s1", "s2">>', '<<"s0", "s1">>'), ("<<2, 1, 2>>", "<<3, 1>>")]:
            assert text.count(old) == 1, old
            text = text.replace(old, new)
        module.write_text(text)
    return spec


def _only_property(spec, config: str, prop: str) -> None:
    cfg = spec / f"{config}.cfg"
    head, sep, _ = cfg.read_text().partition("\nPROPERTIES\n")
    assert sep and prop in cfg_properties(cfg), (config, prop)
    cfg.write_text(f"{head}\nPROPERTIES\n    {prop}\n")
    assert cfg_properties(cfg) == [prop]


# Every run here is short (a cut-down MCLiveness, the two small liveness configs, a counterexample
# found early): the first-tier compiler only, as check-spec gives its small configs (77 s -> 48 s for
# this file on two workers).
def _run(spec, tmp_path, config: str):
    return run_tlc(spec, f"{config}.tla", f"{config}.cfg", tmp_path / "work", workers=2, timeout=600,
                   jvm_args=SHORT_RUN_JVM_ARGS)


def test_the_cases_cover_every_fairness_condition_of_fair_spec(spec_dir):
    conjuncts = _fair_spec((spec_dir / "SampleRefQueue.tla").read_text())
    assert conjuncts[0] == r"/\ Spec"
    assert conjuncts[1:] == list(FAIRNESS.values())
    assert set(CONJUNCT.values()) == set(FAIRNESS.values())


# MCAckLiveness and MCDeploymentLiveness run here as the manifest has them, which
# `refqueue check-spec` (before pytest in scripts/test.sh) has just checked: slow.
@pytest.mark.tlc
@pytest.mark.parametrize(
    "config", [LIVENESS, pytest.param(ACK_LIVENESS, marks=pytest.mark.slow), pytest.param(DEPLOYMENT_LIVENESS, marks=pytest.mark.slow)]
)
def test_with_all_fairness_the_properties_hold(spec_dir, tmp_path, config):
    spec = _copy(spec_dir, tmp_path, config)
    # every property a case below finds violated holds here, on the same bounds
    assert {prop for _, c, prop in CASES.values() if c == config} <= set(cfg_properties(spec / f"{config}.cfg"))
    run = _run(spec, tmp_path, config)
    assert run.outcome == "ok", run.output[-3000:]


@pytest.mark.parametrize("config", [LIVENESS, ACK_LIVENESS, DEPLOYMENT_LIVENESS])
def test_each_case_checks_a_property_its_config_holds(spec_dir, tmp_path, config):
    # (the slow runs above check that each holds with every fairness condition)
    spec = _copy(spec_dir, tmp_path, config)
    assert {prop for _, c, prop in CASES.values() if c == config} <= set(cfg_properties(spec / f"{config}.cfg"))


@pytest.mark.tlc
@pytest.mark.parametrize("case", list(CASES))
def test_without_one_fairness_condition_liveness_fails(spec_dir, tmp_path, case):
    replacement, config, prop = CASES[case]
    spec = _copy(spec_dir, tmp_path, config)
    tla = spec / "SampleRefQueue.tla"
    text = tla.read_text()
    line = f"    {CONJUNCT[case]}\n"
    assert text.count(line) == 1, case
    tla.write_text(text.replace(line, "" if replacement is None else f"    {replacement}\n"))
    assert len(_fair_spec(tla.read_text())) == len(FAIRNESS) + (0 if replacement is None else 1)
    _only_property(spec, config, prop)
    run = _run(spec, tmp_path, config)
    assert run.outcome == "violation", run.output[-3000:]
    assert run.violated == prop
    assert run.trace[0] == "State 1: <Initial predicate>"
    # a behaviour that never satisfies the property: it ends in stuttering or loops back
    steps = [line for line in run.trace if re.match(r"^(State \d+:|Back to state \d+:)", line)]
    assert re.fullmatch(r"State \d+: Stuttering|Back to state \d+: <\w+ .*>", steps[-1]), steps[-1]
