"""The backends in ``examples/`` (written for docs/CERTIFYING.md) are certified
as the page says: ``refqueue certify examples.sqlite_backend:make`` from the
repository root passes the ci profile."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from refqueue.conformance.certify import PHASES, certify

pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[1]
TARGET = "examples.sqlite_backend:make"


@pytest.fixture(autouse=True)
def _repository_root_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))


def test_the_sqlite_example_passes_construction_producers_and_blocking():
    cert = certify(TARGET, phases=("construction", "producers", "blocking"))
    assert cert.passed, cert.counterexample
    assert cert.phases["construction"]["configurations"] == 21  # dead_letter_limit declared: its six
    assert cert.phases["blocking"]["not_run"] == {}


@pytest.mark.slow  # about 35 s: the whole ci profile
def test_the_sqlite_example_is_certified_from_the_repository_root(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "refqueue.cli", "certify", TARGET, "--report", str(tmp_path), "--no-progress"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith(f"refqueue certify: PASS  {TARGET}  (profile ci, seed 0, kit ")
    data = json.loads((tmp_path / "examples_sqlite_backend_make.json").read_text())
    assert data["verdict"] == "pass"
    assert list(data["phases"]) == list(PHASES)  # every phase, in the kit's order
    # everything docs/API.md specifies, nothing left out; no fault hooks (an
    # in-process example: nothing to crash or restart), which the certificate says
    assert all(v for k, v in data["capabilities"].items() if k != "faults")
    assert data["capabilities"].get("faults") in (None, False)


def test_the_sqlite_example_refuses_a_reason_sqlite_cannot_store_before_it_changes_anything():
    # a lone surrogate made its INSERT INTO dead raise after the sample was deleted (the kit found it)
    from refqueue.conformance.calls import check_calls

    report = check_calls(TARGET, checks=("dead-letter-reason", "dead-letter-reasons-kept"))
    assert report.ok, report.failure


def test_the_sqlite_example_keeps_the_error_that_stopped_its_reclaimer():
    # its reclaimer thread died with the error and stop_reclaimer() returned as if all were well (the kit found it)
    from refqueue.conformance.calls import check_calls

    report = check_calls(TARGET, checks=("reclaimer-error-kept",))
    assert report.ok, report.failure
