"""``python -m conformance.mutants``, the runner that certifies every mutant and
legal variant: ``--legal-only``, ``--only`` and ``--phase`` pick what runs (a
whole run takes about 40 minutes), the table and the JSON say what was found,
the exit status whether every mutant was rejected and every variant certified."""

import json

import pytest

from conformance.mutants.__main__ import main

VARIANT = "conformance.legal.random_order:make"


def test_legal_only_certifies_the_variants_named_and_no_mutant(tmp_path, capsys):
    assert main(["--legal-only", "--only", VARIANT, "drain_torn", "--phase", "construction", "calls",
                 "--report", str(tmp_path)]) == 0  # fmt: skip
    out, err = capsys.readouterr()
    saved = json.loads((tmp_path / "mutants.json").read_text())
    assert saved["mutants"] == [] and [v["variant"] for v in saved["legal"]] == [VARIANT]
    assert saved["legal"][0]["certified"] and list(saved["legal"][0]["phases"]) == ["construction", "calls"]
    assert "# Mutants" not in out and "# Legal variants (profile ci, seed 0, phases construction, calls only)" in out
    assert f"[1/1] {VARIANT}: certified" in err
    assert (tmp_path / "mutants.md").read_text().rstrip() == out.rstrip()  # what it printed, saved


def test_a_mutant_is_rejected_in_the_phase_that_catches_it(tmp_path, capsys):
    assert main(["--only", "drain_torn", "--phase", "calls", "--report", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    [row] = json.loads((tmp_path / "mutants.json").read_text())["mutants"]
    assert row["caught"] and row["phase"] == "calls" and "drain-concurrent" in row["divergence"]
    assert "[1/1] drain_torn: rejected in calls" in err and "# Legal variants" not in out


def test_a_mutant_left_uncaught_by_the_phases_run_fails_the_run(tmp_path, capsys):
    # construction does not catch drain_torn: the run says so and exits 1
    assert main(["--only", "drain_torn", "--phase", "construction", "--report", str(tmp_path)]) == 1
    assert "drain_torn: NOT REJECTED" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--only", "no_such_mutant"], "--only: unknown ['no_such_mutant']"),
        (["--seed", "-1"], "argument --seed: '-1' is below 0"),
        (["--phase", "nope"], "argument --phase: invalid choice: 'nope'"),
    ],
)
def test_bad_arguments_exit_2_before_anything_runs(tmp_path, capsys, argv, says):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--report", str(tmp_path / "r")])
    assert exit_info.value.code == 2
    assert says in capsys.readouterr().err and not (tmp_path / "r").exists()
