"""spec/manifest.json: loading, validation, comparison with a TLC run (no TLC)."""

import json
import re
import shutil
from pathlib import Path

import pytest

from refqueue.spec_check.manifest import ConfigEntry, ManifestError, load_manifest, mismatches
from refqueue.spec_check.tlc import TlcRun


def test_the_manifest_lists_every_mode(manifest):
    modes = {e.mode for e in manifest.values()}
    assert modes == {"safety", "liveness", "counterexample", "witness"}
    assert {e.name: e.witness["goal"] for e in manifest.values() if e.mode == "witness"} == {"MCRePut": "RePutDelivered"}
    assert {e.expected for e in manifest.values() if e.mode == "counterexample"} >= {
        "TerminalNoneMeansDrained",
        "NoScrubBeforeAck",
        "NoFlapping",
        "EverySampleEventuallyAckedOrDead",
        "NoStuckProducer",  # D8: the rule before it deadlocks
        "PausedProducerEventuallyResumes",
    }
    assert [e.name for e in manifest.values() if e.agreement is not None] == [
        "MCAgreement", "MCAgreementWide", "MCCapacity", "MCAgreementParked", "MCDeployment", "MCDeploymentLeases",
    ]
    assert all(e.mode == "safety" for e in manifest.values() if e.agreement is not None)


def _write(tmp_path: Path, spec_dir: Path, configs: list[dict]) -> Path:
    for name in ("MCFlapping.tla", "MCFlapping.cfg"):
        shutil.copy(spec_dir / name, tmp_path / name)
    (tmp_path / "manifest.json").write_text(json.dumps({"configs": configs}))
    return tmp_path


GOOD = {
    "name": "MCFlapping",
    "module": "MCFlapping.tla",
    "config": "MCFlapping.cfg",
    "mode": "counterexample",
    "expected": "NoFlapping",
    "workers": 1,
    "distinct_states": 5,
    "total_states": 5,
    "depth": 3,
    "trace_states": 3,
}


def test_a_valid_entry_loads(tmp_path, spec_dir):
    (entry,) = load_manifest(_write(tmp_path, spec_dir, [GOOD]))
    assert entry == ConfigEntry(
        "MCFlapping", "MCFlapping.tla", "MCFlapping.cfg", "counterexample", "NoFlapping", 5, 5, 3, 3, 1
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"distinct_states": 0},
            "manifest.json configs[0] (MCFlapping): distinct_states must be a positive int, got 0; "
            "record what TLC reports",
        ),
        (
            {"mode": "fast"},
            "manifest.json configs[0] (MCFlapping): mode must be one of ['safety', 'liveness', 'counterexample', "
            "'witness'], got 'fast'",
        ),
        (
            {"workers": 2},
            'manifest.json configs[0] (MCFlapping): a counterexample config must set "workers": 1, got 2; '
            "with more workers the counts at the violation depend on thread timing",
        ),
        (
            {"expected": "ok"},
            "manifest.json configs[0] (MCFlapping): a counterexample config expects a violated property, "
            "not 'ok'; name it",
        ),
        (
            {"mode": "safety", "workers": None},
            "manifest.json configs[0] (MCFlapping): a safety config expects 'ok', got 'NoFlapping'; "
            "use mode 'counterexample' for a config that must fail",
        ),
        (
            {"config": "MCMissing.cfg"},
            "manifest.json configs[0] (MCFlapping): config 'MCMissing.cfg' does not exist in {dir}; "
            "add it or fix the name",
        ),
        (
            {"distinct": 5},
            "manifest.json configs[0] has unknown keys ['distinct']; the known keys are ['agreement', 'config', "
            "'depth', 'distinct_states', 'expected', 'mode', 'module', 'name', 'note', 'total_states', "
            "'trace_states', 'witness', 'workers']",
        ),
    ],
)
def test_invalid_entries_are_rejected_with_the_fix(tmp_path, spec_dir, change, message):
    raw = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    _write(tmp_path, spec_dir, [raw])
    with pytest.raises(ManifestError, match="^" + re.escape(message.format(dir=tmp_path)) + "$"):
        load_manifest(tmp_path)


def test_duplicate_names_are_rejected(tmp_path, spec_dir):
    _write(tmp_path, spec_dir, [GOOD, GOOD])
    with pytest.raises(ManifestError, match=r"lists \['MCFlapping'\] more than once; give every config one entry$"):
        load_manifest(tmp_path)


def test_missing_manifest_says_where_to_point(tmp_path):
    with pytest.raises(ManifestError, match=r"^.*manifest\.json does not exist; pass --spec-dir with the directory"):
        load_manifest(tmp_path)


ENTRY = ConfigEntry("M", "M.tla", "M.cfg", "counterexample", "NoFlapping", 5, 5, 3, 3, 1)


def _run(**kw) -> TlcRun:
    base = dict(outcome="violation", violated="NoFlapping", distinct_states=5, total_states=5, depth=3,
                trace=["State 1: <Initial predicate>", "State 2: <A>", "State 3: <B>"])
    base.update(kw)
    return TlcRun(**base)


def test_a_run_as_recorded_has_no_mismatch():
    assert mismatches(ENTRY, _run()) == []


def test_every_difference_is_reported():
    run = _run(violated="PauseOnlyAtHigh", distinct_states=6, depth=4, trace=["State 1: <Initial predicate>"])
    assert mismatches(ENTRY, run) == [
        "expected TLC to find NoFlapping violated, it found PauseOnlyAtHigh violated",
        "distinct states: manifest 5, TLC 6",
        "depth: manifest 3, TLC 4",
        "trace length: manifest 3 states, TLC printed 1",
    ]


def test_a_counterexample_that_does_not_fail_is_a_mismatch():
    assert mismatches(ENTRY, _run(outcome="ok", violated=None, trace=[]))[0] == (
        "expected TLC to find NoFlapping violated, it found no violation"
    )


def test_unknown_is_never_a_pass():
    entry = ConfigEntry("M", "M.tla", "M.cfg", "safety", "ok", 5, 5, 3)
    run = TlcRun("unknown", error="TLC ran past the timeout of 1 s and was stopped; raise --timeout")
    assert mismatches(entry, run) == [
        "no verdict: TLC ran past the timeout of 1 s and was stopped; raise --timeout (unknown is not a pass)"
    ]
