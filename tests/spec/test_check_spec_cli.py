"""``refqueue check-spec``: arguments, exit status, table, traces, mismatches,
the simulation after the configs."""

import json
import re
import shutil

import pytest

from refqueue.cli import main
from refqueue.spec_check import command, tlc
from refqueue.spec_check.tlc import TlcRun


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
        "refqueue check-spec: unknown config ['MCNope']; manifest.json lists ['MCAckLiveness', 'MCAgreement', "
        "'MCAgreementParked', 'MCAgreementWide', 'MCAnchorConsumer', 'MCAnchorLiveness', 'MCCapacity', "
        "'MCDeployment', "
        "'MCDeploymentLeases', 'MCDeploymentLiveness', 'MCFlapping', 'MCLiveness', 'MCOldBackpressure', "
        "'MCOldBackpressureLiveness', 'MCOldBackpressurePuts', 'MCRePut', 'MCReleaseScrubs', 'MCSymmetry', "
        "'MCTimeLiveness']\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mutants", "--config", "MCRePut"], "--config applies to the configs, not to the mutants; with --mutants "
         "name the mutants to run after it (names from spec/mutants.json), or drop --mutants"),
        (["--agreement", "--deep", "--mutants", "m"], "--agreement, --deep applies to the configs, not to the mutants"),
        (["--mutants-without-graphs"], "--mutants-without-graphs applies only with --mutants; add --mutants or drop it"),
        (["--no-simulate", "--simulate-seconds", "5"], "--no-simulate contradicts --simulate-seconds and --deep; "
         "give one of them"),
    ],
)
def test_options_that_would_be_ignored_together_exit_2_before_tlc_runs(spec_dir, capsys, monkeypatch, argv, message):
    # (--mutants --config X ran every mutant, the config silently ignored)
    monkeypatch.setattr(tlc, "run_tlc", lambda *a, **k: pytest.fail("TLC ran"))
    assert main(["check-spec", "--spec-dir", str(spec_dir), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"refqueue check-spec: {message}") and captured.out == ""


def test_the_simulation_config_is_not_a_manifest_config(spec_dir, capsys):
    # MCSimulate runs after the configs (--simulate-seconds), never as one
    assert main(["check-spec", "--spec-dir", str(spec_dir), "--config", "MCSimulate"]) == 2
    assert capsys.readouterr().err.startswith("refqueue check-spec: unknown config ['MCSimulate']; ")


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
        (["--simulate-seconds", "0"], "argument --simulate-seconds: '0' is not a finite number > 0; pass seconds > 0"),
        (["--simulate-seconds", "inf"], "argument --simulate-seconds: 'inf' is not a finite number > 0; pass seconds > 0"),
    ],
)
def test_bad_arguments_are_rejected(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check-spec", *argv])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"refqueue check-spec: error: {message}"


@pytest.mark.tlc
def test_counterexamples_print_the_table_and_the_traces(spec_dir, capsys):
    configs = ["MCFlapping", "MCAnchorConsumer", "MCOldBackpressure"]
    assert main(["check-spec", "--spec-dir", str(spec_dir), "--config", *configs]) == 0
    out = capsys.readouterr().out
    assert "[1/3] MCFlapping (counterexample, 1 worker(s)): running TLC" in out
    table = out[out.index("\nconfig ") + 1 :].splitlines()
    assert table[0].split() == ["config", "mode", "expected", "TLC", "found", "distinct", "generated", "depth", "trace", "seconds", "check"]
    assert table[1].split()[:8] == ["MCFlapping", "counterexample", "NoFlapping", "NoFlapping", "26", "39", "5", "5"]
    assert table[1].split()[-1] == "ok"
    assert table[2].split()[:4] == ["MCAnchorConsumer", "counterexample", "TerminalNoneMeansDrained", "TerminalNoneMeansDrained"]
    assert table[3].split()[:8] == ["MCOldBackpressure", "counterexample", "NoStuckProducer", "NoStuckProducer", "16", "22", "4", "4"]
    assert [row.split()[-1] for row in table[1:4]] == ["ok", "ok", "ok"]
    assert "MCFlapping: TLC found NoFlapping violated; the trace it printed (5 states):\n    State 1: <Initial predicate>" in out
    assert "MCAnchorConsumer: TLC found TerminalNoneMeansDrained violated; the trace it printed (6 states):" in out
    assert "    State 6: <Stop line" in out
    # D8's deadlock: both producers store, and the first put step parks (and pauses) with nothing enqueued
    trace = out[out.index("MCOldBackpressure: TLC found NoStuckProducer violated; the trace it printed (4 states):") :]
    assert re.findall(r"^    (State \d+: <?\w+)", trace, flags=re.MULTILINE) == [
        "State 1: <Initial", "State 2: <StorePut", "State 3: <StorePut", "State 4: <TryPutPause",
    ]
    assert "simulat" not in out  # --config without --simulate-seconds: no simulation
    assert out.rstrip().endswith("check-spec: all 3 config(s) as manifest.json says")


@pytest.mark.tlc
def test_a_manifest_that_disagrees_with_tlc_exits_1(spec_dir, tmp_path, capsys):
    for path in spec_dir.iterdir():
        shutil.copy(path, tmp_path / path.name)
    data = json.loads((spec_dir / "manifest.json").read_text())
    (flapping,) = [c for c in data["configs"] if c["name"] == "MCFlapping"]
    flapping["distinct_states"] = 27
    flapping["expected"] = "PauseOnlyAtHigh"
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    assert main(["check-spec", "--spec-dir", str(tmp_path), "--config", "MCFlapping", "--simulate-seconds", "3"]) == 1
    out = capsys.readouterr().out
    assert (
        "MISMATCH MCFlapping (MCFlapping.cfg):\n"
        "    expected TLC to find PauseOnlyAtHigh violated, it found NoFlapping violated\n"
        "    distinct states: manifest 27, TLC 26\n"
        "check-spec: 1 of 1 config(s) did not come out as manifest.json says\n"
    ) in out
    assert "simulat" not in out  # a mismatch ends the run before the simulation
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in spec_dir.iterdir())  # TLC wrote nothing there


@pytest.mark.tlc
def test_a_tlc_run_past_the_timeout_is_unknown_not_a_pass(spec_dir, capsys):
    assert main(["check-spec", "--spec-dir", str(spec_dir), "--config", "MCLiveness", "--timeout", "0.5"]) == 1
    out = capsys.readouterr().out
    assert (
        "MISMATCH MCLiveness (MCLiveness.cfg):\n"
        "    no verdict: TLC ran past the timeout of 0.5 s and was stopped; raise --timeout (unknown is not a pass)\n"
    ) in out


def test_agreement_alone_selects_every_config_with_an_agreement_entry(spec_dir, manifest, capsys, monkeypatch):
    ran = []

    def check_config(spec_dir, entry, **kw):
        ran.append(entry.name)
        run = TlcRun("ok", distinct_states=entry.distinct_states, total_states=entry.total_states, depth=entry.depth,
                     coverage={action: (1, 1) for action in ("TryPutPause", "TryPutResume", "TryPutPark", "AckStale")})
        return command.ConfigReport(entry, run, [], None)

    monkeypatch.setattr(command, "check_config", check_config)  # no TLC: only which configs run is tested
    monkeypatch.setattr(command, "find_java", lambda: "java")
    monkeypatch.setattr(command, "find_jar", lambda: spec_dir / "tla2tools.jar")
    assert main(["check-spec", "--spec-dir", str(spec_dir), "--agreement"]) == 0
    assert ran == [e.name for e in manifest.values() if e.agreement is not None] == [
        "MCAgreement", "MCAgreementWide", "MCCapacity", "MCAgreementParked", "MCDeployment", "MCDeploymentLeases",
    ]
    out = capsys.readouterr().out
    assert re.findall(r"^\[(\d/\d)\] (\w+) \(safety, 2 worker\(s\)\): running TLC$", out, flags=re.MULTILINE) == [
        ("1/6", "MCAgreement"), ("2/6", "MCAgreementWide"), ("3/6", "MCCapacity"), ("4/6", "MCAgreementParked"),
        ("5/6", "MCDeployment"), ("6/6", "MCDeploymentLeases"),
    ]
    assert "simulat" not in out  # --agreement without --simulate-seconds: no simulation


@pytest.mark.tlc
@pytest.mark.slow
def test_agreement_fails_on_a_perturbed_model(spec_dir, capsys, fail_without_redelivery):
    assert main(["check-spec", "--spec-dir", str(spec_dir), "--agreement", "--config", "MCCapacity"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"    agreement: spec and model DISAGREE: TLC 45197 states / \d+ transitions, Python \d+ states", out)
    assert (
        "MISMATCH MCCapacity (MCCapacity.cfg):\n"
        "    agreement: first difference after 3 steps (shortest Python trace: Init -> StorePut(0) -> TryPut(0) "
        "-> Acquire(0))\n"
        "      at: now=0 closed=False paused=False pending=[] resident_bytes=1 "
        "s0:leased/inc1/del1/redel0/deadline=2/resident c0:s0#1.0 p0:- p1:- produced=1\n"
        "      only Python: FailLive(0): pending [] -> ['s0'], s0.status 'leased' -> 'pending', s0.deadline 2 -> None, "
        "c0 s0#1.0 -> - kept=s0#1.0\n"
        "      only TLC:    FailLive: pending [] -> ['s0'], s0.status 'leased' -> 'pending', s0.redeliveries 0 -> 1, "
        "s0.deadline 2 -> None, c0 s0#1.0 -> - kept=s0#1.0\n"
        "check-spec: 1 of 1 config(s) did not come out as manifest.json says\n"
    ) in out


# -- the simulation of MCSimulate ---------------------------------------------------


@pytest.mark.tlc
def test_a_simulation_without_a_violation_exits_0_and_says_how_many_states(spec_dir, capsys):
    assert main(["check-spec", "--spec-dir", str(spec_dir), "--simulate-seconds", "3", "--config", "MCFlapping"]) == 0
    out = capsys.readouterr().out
    assert "check-spec: all 1 config(s) as manifest.json says\nsimulate: MCSimulate with TLC -simulate for 3 s\n" in out
    (line,) = [x for x in out.splitlines() if x.startswith("simulation ")]
    m = re.fullmatch(
        r"simulation MCSimulate for 3 s: no violation in ([\d,]+) states \(random behaviours up to depth 200, "
        r"seed 1; bounded evidence, not a proof\)",
        line,
    )
    assert m is not None, line
    assert int(m.group(1).replace(",", "")) > 0


@pytest.mark.tlc
@pytest.mark.parametrize(
    "bound, walked",
    [
        ("QueueBytes < 0", False),  # violated by the initial state
        ("QueueBytes < 2", True),  # violated once two bytes are enqueued: TLC prints the behaviour
    ],
)
def test_a_simulation_that_finds_a_violation_exits_1_and_names_it(spec_dir, tmp_path, capsys, bound, walked):
    spec = tmp_path / "spec"
    spec.mkdir()
    for path in spec_dir.iterdir():
        if path.is_file():
            shutil.copy(path, spec / path.name)
    tla = spec / "SampleRefQueue.tla"
    text = tla.read_text()
    assert text.count("\nBackpressureBound == epoch = 0 => QueueBytes < High + Largest\n") == 1
    tla.write_text(
        text.replace("\nBackpressureBound == epoch = 0 => QueueBytes < High + Largest\n", f"\nBackpressureBound == {bound}\n")
    )
    # The simulation runs only once the selected configs came out as recorded,
    # so the config run first must not check the broken invariant.
    cfg = spec / "MCFlapping.cfg"
    assert cfg.read_text().count("    BackpressureBound\n") == 1
    cfg.write_text(cfg.read_text().replace("    BackpressureBound\n", ""))
    assert "    BackpressureBound\n" in (spec / "MCSimulate.cfg").read_text()

    assert main(["check-spec", "--spec-dir", str(spec), "--simulate-seconds", "3", "--config", "MCFlapping"]) == 1
    out = capsys.readouterr().out
    assert "check-spec: all 1 config(s) as manifest.json says\n" in out
    assert re.search(r"^simulation MCSimulate for 3 s: BackpressureBound violated after [\d,]+ states \(seed 1\)$",
                     out, flags=re.MULTILINE)
    m = re.search(r"^MCSimulate: the behaviour TLC printed \((\d+) states\):$", out, flags=re.MULTILINE)
    assert m is not None
    if walked:
        assert int(m.group(1)) >= 2
        assert out[m.end():].startswith("\n    State 1: <Initial predicate>")
