"""The pytest plugin reports every check of the kit as its own test, and a
check that was not run as SKIPPED with why, never as PASSED.  Run with
pytester in a subprocess on a smaller ci profile (the phases are the real
ones, with fewer runs of each)."""

import re
from pathlib import Path

import pytest

from refqueue.conformance import blocking, faults, producers

pytest_plugins = ("pytester",)
pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[2]

# pytest runs in a fresh interpreter (two in-process runs of the threaded
# phases in one interpreter crashed it); this conftest makes its ci profile
# smaller and the repository's conformance package importable.
CONFTEST = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from refqueue.conformance.certify import PROFILES, Profile

PROFILES["ci"] = Profile(
    "ci", examples=5, steps_per_example=10, walks=5, walk_length=5, hypothesis_profile="default",
    histories=2, history_ops=40, producer_samples=2, wake_trials=1,
)
"""


def outcomes(result):
    """test name -> PASSED/FAILED/SKIPPED, and each skip's reason, from ``-v -rs`` output."""
    out = result.stdout.str()
    status = dict(
        (m.group(1), m.group(2)) for m in re.finditer(r"(refqueue-conformance\[[^\]]+\]) (PASSED|FAILED|SKIPPED)", out)
    )
    return status, out


def run(pytester, target):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    return pytester.runpytest_subprocess(
        "-v", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist", f"--refqueue-backend={target}", timeout=300
    )


def test_seed_api_reports_each_check_it_cannot_take_as_skipped(pytester):
    result = run(pytester, "conformance.legal.seed_api:make")
    status, out = outcomes(result)
    assert result.ret == 0, out
    # one test per named check of the split phases
    for check in blocking.CHECKS:
        assert f"refqueue-conformance[blocking:{check}]" in status, out
    for check in producers.CHECKS:
        # the producers phase bounds every wait by abort_when, which seed_api does not declare
        assert status[f"refqueue-conformance[producers:{check}]"] == "SKIPPED"
    for check in (
        "put-abort-when", "callbacks-outside-locks", "callbacks-in-order", "callback-errors-propagate", "callbacks-after-an-error"
    ):
        assert status[f"refqueue-conformance[blocking:{check}]"] == "SKIPPED"
        assert re.search(rf"SKIPPED \[1\] .*blocking: {check} not run: the backend does not declare abort_when", out)
    assert status["refqueue-conformance[blocking:acquire-woken-by-put]"] == "PASSED"
    assert status["refqueue-conformance[walks]"] == "PASSED"  # on the reduced world, not skipped
    # every capability it lacks is a skipped check of its own, with why
    for name in ("extend", "max_deliveries", "dedup_window", "dead_letter", "acquire_nowait", "lease_json"):
        assert status[f"refqueue-conformance[not-checked:{name}]"] == "SKIPPED", out
        assert re.search(rf"SKIPPED \[1\] .*not checked: .*\({name}=False declared\)", out), name
    passed = [n for n, s in status.items() if s == "PASSED"]
    skipped = [n for n, s in status.items() if s == "SKIPPED"]
    result.assert_outcomes(passed=len(passed) + 1, skipped=len(skipped))  # + test_nothing
    assert not any("not-checked" in n or "producers" in n for n in passed)


def test_a_failing_check_fails_alone_and_the_checks_after_it_are_skipped(pytester):
    result = run(pytester, "conformance.mutants.fail_no_wake:make")
    status, out = outcomes(result)
    failing = "refqueue-conformance[blocking:acquire-woken-by-fail]"
    assert status[failing] == "FAILED", out
    assert status["refqueue-conformance[blocking:acquire-woken-by-put]"] == "PASSED"
    later = blocking.CHECKS[blocking.CHECKS.index("acquire-woken-by-fail") + 1 :]
    for check in later:
        assert status[f"refqueue-conformance[blocking:{check}]"] == "SKIPPED"
    assert "the phase stopped at its failing check acquire-woken-by-fail" in out
    assert [n for n, s in status.items() if s == "FAILED"] == [failing]
    assert "Replay it with this test:" in out
    # the backend declares no faults: each check of that phase is skipped, with why
    for check in faults.CHECKS:
        assert status[f"refqueue-conformance[faults:{check}]"] == "SKIPPED", out
    result.assert_outcomes(
        failed=1, passed=sum(s == "PASSED" for s in status.values()) + 1, skipped=len(later) + len(faults.CHECKS)
    )
