"""Every config of spec/manifest.json comes out of TLC as recorded: safety and
liveness configs hold with the recorded state counts, each counterexample
config is caught with its property named and a trace printed; an agreement
config's graph equals its world's."""

from pathlib import Path

import pytest

from refqueue.spec_check.command import check_config
from refqueue.spec_check.manifest import load_manifest

SPEC_DIR = Path(__file__).resolve().parents[2] / "spec"

# Every config is slow (10 s to 3 min each on two shared cores), and this is
# the check `refqueue check-spec` makes of each, which scripts/test.sh runs
# before the tests: run these with -m slow.
ENTRIES = [pytest.param(e, id=e.name, marks=[pytest.mark.tlc, pytest.mark.slow]) for e in load_manifest(SPEC_DIR)]


@pytest.mark.parametrize("entry", ENTRIES)
def test_config_comes_out_as_the_manifest_says(entry):
    report = check_config(SPEC_DIR, entry, workers=2, timeout=600)
    assert report.problems == [], report.run.output[-3000:]
    assert report.run.result == entry.expected
    if entry.mode in ("counterexample", "witness"):  # a witness is reached as an invariant's violation
        assert report.run.trace[0] == "State 1: <Initial predicate>"
        assert report.run.trace_states == entry.trace_states
    else:
        assert report.run.trace == []
    if entry.agreement is not None:
        agreement = report.agreement
        assert agreement is not None and agreement.ok, (agreement and agreement.message, agreement and agreement.details)
        assert agreement.tlc_states == agreement.python_states == entry.distinct_states
        assert agreement.tlc_transitions == agreement.python_transitions > 0
    else:
        assert report.agreement is None
