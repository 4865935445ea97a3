"""Coverage as a check (refqueue.spec_check.coverage): TLC's action coverage
is read, an action no config fires and a property whose antecedent never
happens in a config that lists it are refused, and a real TLC run reports
coverage."""

from pathlib import Path

import pytest

from refqueue.spec_check.coverage import NEVER_FIRES, check_coverage, config_problems
from refqueue.spec_check.tlc import TlcRun, parse_output, run_tlc

OUTPUT = """\
Model checking completed. No error has been found.
10 states generated, 5 distinct states found, 0 states left on queue.
The depth of the complete state graph search is 3.
<Init line 291, col 1 to line 291, col 4 of module SampleRefQueue>: 1:1
<Acquire line 466, col 1 to line 466, col 10 of module SampleRefQueue>: 2:4
  |line 467, col 5 to line 473, col 64 of module SampleRefQueue: 4
<TryPutPause line 808, col 1 to line 808, col 14 of module SampleRefQueue>: 0:0
<TypeOK line 861, col 1 to line 861, col 6 of module SampleRefQueue>
<Acquire line 466, col 1 to line 466, col 10 of module SampleRefQueue>: 3:7
"""


def _run(**coverage):
    return TlcRun("ok", coverage=dict(coverage))


def test_the_last_coverage_report_of_each_action_is_read():
    run = parse_output(OUTPUT)
    assert run.outcome == "ok" and run.distinct_states == 5
    assert run.coverage == {"Init": (1, 1), "Acquire": (3, 7), "TryPutPause": (0, 0)}


def test_an_action_that_fires_in_no_config_is_refused(spec_dir):
    report = check_coverage(spec_dir, [
        ("MCDeployment", "MCDeployment.cfg", _run(Acquire=(1, 2), Extend=(0, 0), TryPutPause=(1, 1), TryPutResume=(1, 1),
                                                   AckStale=(0, 1), ReclaimExpired=(1, 1), ScrubIntent=(1, 1))),
        ("MCDeploymentLeases", "MCDeploymentLeases.cfg", _run(Acquire=(0, 3), Extend=(0, 0), TryPutPause=(1, 1),
                                                               TryPutResume=(1, 1), AckStale=(0, 1),
                                                               ReclaimExpired=(1, 1), ScrubIntent=(1, 1))),
    ])
    assert report.fired_in["Acquire"] == ["MCDeployment", "MCDeploymentLeases"]
    assert report.fired_in["Extend"] == []
    assert report.problems == [
        "Extend fires in no config: the spec's Extend is never exercised; add or widen a config that reaches it"
    ]


def test_an_action_that_must_never_fire_is_refused_when_it_does(spec_dir):
    assert set(NEVER_FIRES) == {"AckCopyLive", "FailCopyLive"}
    report = check_coverage(spec_dir, [("MCDeployment", "MCDeployment.cfg", _run(
        AckCopyLive=(1, 1), FailCopyLive=(0, 0), TryPutPause=(1, 1), TryPutResume=(1, 1), AckStale=(0, 1),
        ReclaimExpired=(1, 1), ScrubIntent=(1, 1)))])
    assert [p.split(",")[0] for p in report.problems] == ["AckCopyLive fired in ['MCDeployment']"]


def test_a_property_whose_antecedent_never_happens_is_vacuous(spec_dir):
    never_pauses = _run(TryPutEnqueue=(3, 3), TryPutResume=(0, 0), TryPutPause=(0, 0), TryPutPark=(0, 0),
                        AckStale=(0, 1), ReclaimExpired=(1, 1))
    problems = config_problems(spec_dir, "MCAgreement", "MCAgreement.cfg", never_pauses)
    names = [p.split(" is vacuous")[0] for p in problems]
    assert names == ["MCAgreement: BackpressureBound", "MCAgreement: NoStuckProducer", "MCAgreement: PauseOnlyAtHigh",
                     "MCAgreement: ResumeOnlyAtLow", "MCAgreement: NoFlapping", "MCAgreement: PauseFollowsHysteresis",
                     "MCAgreement: BlockedPutIsParked"]
    assert problems[2] == (
        "MCAgreement: PauseOnlyAtHigh is vacuous there: a pause never happens (none of ['TryPutPause', "
        "'TryPutPauseEnqueue'] fires); widen the config's bounds or drop the property from MCAgreement.cfg"
    )


def test_a_run_without_coverage_is_a_problem_not_a_pass(spec_dir):
    report = check_coverage(spec_dir, [("MCDeployment", "MCDeployment.cfg", TlcRun("ok"))])
    assert report.problems == ["MCDeployment: TLC printed no coverage (was it run with -coverage?)"]


@pytest.mark.tlc
def test_tlc_reports_the_coverage_of_a_real_config(spec_dir, tmp_path: Path):
    run = run_tlc(spec_dir, "MCDeployment.tla", "MCDeployment.cfg", tmp_path, workers=1, timeout=300,
                  tlc_args=("-coverage", "600"))
    assert run.outcome == "ok", run.error
    generated = {a: g for a, (_, g) in run.coverage.items()}
    assert generated["AckLive"] > 0 and generated["ScrubIntent"] > 0 and generated["RestartLossy"] > 0
    assert generated["AckCopyLive"] == 0 and generated["AckCopyStale"] == 0  # no retained copies in MCDeployment
    assert config_problems(spec_dir, "MCDeployment", "MCDeployment.cfg", run) == []
