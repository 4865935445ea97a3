"""Fixtures of the spec tests: the repository's spec directory, TLC's state
graph of an agreement config (dumped once per test process), and a
perturbed model."""

from __future__ import annotations

from pathlib import Path

import pytest

from refqueue.model import actions as A
from refqueue.model.state import PENDING
from refqueue.spec_check.manifest import ConfigEntry, load_manifest
from refqueue.spec_check.tlc import TlcRun, run_tlc

SPEC_DIR = Path(__file__).resolve().parents[2] / "spec"


@pytest.fixture(scope="session")
def spec_dir() -> Path:
    return SPEC_DIR


@pytest.fixture(scope="session")
def manifest() -> dict[str, ConfigEntry]:
    return {e.name: e for e in load_manifest(SPEC_DIR)}


# The agreement config whose TLC graph the agreement tests read: the smallest
# one with two producers, producer crashes, retained lease copies and a re-put,
# so every variable of the mapping varies.  The other agreement configs are
# compared by test_spec_configs (``check_config`` runs the same comparison).
DUMPED = "MCAgreementWide"


@pytest.fixture(scope="session")
def agreement_dump(tmp_path_factory: pytest.TempPathFactory, manifest: dict[str, ConfigEntry]) -> tuple[ConfigEntry, TlcRun, Path]:
    """TLC run on ``DUMPED`` with ``-dump dot,actionlabels``: (entry, run, dot file)."""
    entry = manifest[DUMPED]
    workdir = tmp_path_factory.mktemp("tlc-agreement")
    dump = workdir / "states.dot"
    run = run_tlc(SPEC_DIR, entry.module, entry.config, workdir, workers=2, dump=dump, timeout=600)
    assert run.outcome == "ok", run.output[-3000:]
    return entry, run, dump


@pytest.fixture
def fail_without_redelivery(monkeypatch: pytest.MonkeyPatch) -> None:
    """Perturb the model: its ``fail`` requeues without counting the redelivery."""
    real = A.fail

    def fail(cfg, state, lease):
        out = real(cfg, state, lease)
        if out.value is not True:
            return out
        i = A.find(out.state, lease.sample_id)
        rec = out.state.recs[i]
        if rec.status != PENDING:
            return out
        recs = out.state.recs[:i] + (rec._replace(redeliveries=rec.redeliveries - 1),) + out.state.recs[i + 1 :]
        return out._replace(state=out.state._replace(recs=recs))

    monkeypatch.setattr(A, "fail", fail)
