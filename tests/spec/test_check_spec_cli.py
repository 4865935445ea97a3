"""``refqueue check-spec``: arguments, exit status, table, traces, mismatches."""

import json
import shutil

import pytest

from refqueue.cli import main
from refqueue.spec_check import tlc


def test_missing_manifest_exits_2(tmp_path, capsys):
    assert main(["check-spec", "--spec-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"refqueue check-spec: {tmp_path / 'manifest.json'} does not exist; pass --spec-dir with the directory "
        f"holding SampleRefQueue.tla and manifest.json (the repository's spec/)\n"
    )


def test_unknown_config_exits_2(spec_dir, capsys):
    assert main(["check-spec", "--spec-dir", str(spec_dir), "--config", "MCNope"]) == 2
    assert capsys.readouterr().err == (
        "refqueue check-spec: unknown config ['MCNope']; manifest.json lists ['MCAgreement', 'MCAnchorConsumer', "
        "'MCAnchorLiveness', 'MCFlapping', 'MCLiveness', 'MCReleaseScrubs', 'MCSymmetry']\n"
    )


def test_agreement_with_a_config_that_has_none_exits_2(spec_dir, capsys):
    assert main(["check-spec", "--spec-dir", str(spec_dir), "--agreement", "--config", "MCFlapping"]) == 2
    assert capsys.readouterr().err == (
        "refqueue check-spec: --agreement with --config ['MCFlapping']: those configs have no agreement entry\n"
    )


def test_missing_java_exits_2_naming_the_package(spec_dir, capsys, monkeypatch):
    monkeypatch.setattr(tlc.shutil, "which", lambda name: None)
    assert main(["check-spec", "--spec-dir", str(spec_dir)]) == 2
    assert capsys.readouterr().err == (
        "refqueue check-spec: java was not found on PATH; TLC needs a Java runtime (11 or newer): install one with "
        "`apt-get install default-jre-headless` or put java on PATH\n"
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--workers", "0"], "argument --workers: 0 is < 1; pass a number of TLC worker threads >= 1"),
        (["--workers", "two"], "argument --workers: 'two' is not an int; pass a number of TLC worker threads >= 1"),
        (["--timeout", "-1"], "argument --timeout: '-1' is not a finite number > 0; pass seconds > 0"),
    ],
)
def test_bad_arguments_are_rejected(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check-spec", *argv])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"refqueue check-spec: error: {message}"


@pytest.mark.tlc
def test_counterexamples_print_the_table_and_the_traces(spec_dir, capsys):
    assert main(["check-spec", "--spec-dir", str(spec_dir), "--config", "MCFlapping", "MCAnchorConsumer"]) == 0
    out = capsys.readouterr().out
    assert "[1/2] MCFlapping (counterexample, 1 worker(s)): running TLC" in out
    table = out[out.index("\nconfig ") + 1 :].splitlines()
    assert table[0].split() == ["config", "mode", "expected", "TLC", "found", "distinct", "generated", "depth", "trace", "seconds", "check"]
    assert table[1].split()[:8] == ["MCFlapping", "counterexample", "NoFlapping", "NoFlapping", "5", "5", "3", "3"]
    assert table[1].split()[-1] == "ok"
    assert table[2].split()[:4] == ["MCAnchorConsumer", "counterexample", "TerminalNoneMeansDrained", "TerminalNoneMeansDrained"]
    assert "MCFlapping: TLC found NoFlapping violated; the trace it printed (3 states):\n    State 1: <Initial predicate>" in out
    assert "MCAnchorConsumer: TLC found TerminalNoneMeansDrained violated; the trace it printed (6 states):" in out
    assert "    State 6: <Stop line" in out
    assert out.rstrip().endswith("check-spec: all 2 config(s) as manifest.json says")


@pytest.mark.tlc
def test_a_manifest_that_disagrees_with_tlc_exits_1(spec_dir, tmp_path, capsys):
    for path in spec_dir.iterdir():
        shutil.copy(path, tmp_path / path.name)
    data = json.loads((spec_dir / "manifest.json").read_text())
    (flapping,) = [c for c in data["configs"] if c["name"] == "MCFlapping"]
    flapping["distinct_states"] = 6
    flapping["expected"] = "PauseOnlyAtHigh"
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    assert main(["check-spec", "--spec-dir", str(tmp_path), "--config", "MCFlapping"]) == 1
    out = capsys.readouterr().out
    assert (
        "MISMATCH MCFlapping (MCFlapping.cfg):\n"
        "    expected TLC to find PauseOnlyAtHigh violated, it found NoFlapping violated\n"
        "    distinct states: manifest 6, TLC 5\n"
        "check-spec: 1 of 1 config(s) did not come out as manifest.json says\n"
    ) in out
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in spec_dir.iterdir())  # TLC wrote nothing there


@pytest.mark.tlc
def test_a_tlc_run_past_the_timeout_is_unknown_not_a_pass(spec_dir, capsys):
    assert main(["check-spec", "--spec-dir", str(spec_dir), "--config", "MCLiveness", "--timeout", "0.5"]) == 1
    out = capsys.readouterr().out
    assert (
        "MISMATCH MCLiveness (MCLiveness.cfg):\n"
        "    no verdict: TLC ran past the timeout of 0.5 s and was stopped; raise --timeout (unknown is not a pass)\n"
    ) in out


@pytest.mark.tlc
@pytest.mark.slow
def test_agreement_fails_on_a_perturbed_model(spec_dir, capsys, fail_without_redelivery):
    assert main(["check-spec", "--spec-dir", str(spec_dir), "--agreement"]) == 1
    out = capsys.readouterr().out
    assert "    agreement: spec and model DISAGREE: TLC 26308 states / 141515 transitions, Python 48778 states" in out
    assert (
        "MISMATCH MCAgreement (MCAgreement.cfg):\n"
        "    agreement: first difference after 3 steps (shortest Python trace: Init -> StorePut(s0) -> TryPut(s0) "
        "-> Acquire(0))\n"
        "      at: now=0 closed=False paused=False pending=[] resident_bytes=1 "
        "s0:leased/inc1/del1/redel0/deadline=1/resident c0:s0#1.0 c1:-\n"
        "      only Python: Fail(0): pending [] -> ['s0'], s0.status 'leased' -> 'pending', s0.deadline 1 -> None, "
        "c0 s0#1.0 -> -\n"
    ) in out
