"""Every printed reproduction fails when run alone: for each mutant, the
pytest module the certificate prints (``cert.counterexample``) is written to a
temporary folder and run there, in a fresh interpreter, with only the
repository root on ``PYTHONPATH`` (so ``conformance.mutants`` imports).  All
of them run in one pytest subprocess; each must fail, none may error or pass.
"""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.mutants import MUTANTS
from refqueue.conformance.certify import certify

pytestmark = [pytest.mark.torch, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(3600)
def test_every_printed_reproduction_fails_alone(tmp_path):
    files = {}
    for mutant in MUTANTS:
        cert = certify(f"conformance.mutants.{mutant}:make", profile="ci")
        assert not cert.passed, f"the ci profile did not catch {mutant}"
        path = tmp_path / f"test_repro_{mutant}.py"
        path.write_text(cert.counterexample)
        files[mutant] = path.name
    report = tmp_path / "junit.xml"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", f"--junitxml={report}", *files.values()],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])},
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert run.returncode == 1, run.stdout[-3000:]
    outcome = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1]
        if case.find("failure") is not None:
            outcome[module] = "failed"
        elif case.find("error") is not None:
            outcome[module] = "error"
        elif case.find("skipped") is not None:
            outcome[module] = "skipped"
        else:
            outcome[module] = "passed"
    wrong = {m: outcome.get(Path(f).stem, "not run") for m, f in files.items() if outcome.get(Path(f).stem) != "failed"}
    assert not wrong, f"printed reproductions that did not fail alone: {wrong}\n{run.stdout[-3000:]}"
