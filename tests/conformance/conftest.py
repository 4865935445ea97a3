"""The kit's own tests certify the backends in ``conformance/mutants`` (at the
repository root, not an installed package): put the root on ``sys.path``."""

import dataclasses
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _repository_root_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))


@pytest.fixture
def undecided_first(monkeypatch):
    """``plant(module, times)``: the linearizability checker that ``module`` calls by
    ``module.check`` answers ``unknown`` for its first ``times`` calls (as for a history
    whose search outgrows the budget), then decides as it would; ``plant`` returns the
    list of histories it was given, in order."""

    def plant(module, times):
        real = module.check
        calls = []

        def check_(history, **budget):
            calls.append(history)
            verdict = real(history, **budget)
            if len(calls) <= times:
                return dataclasses.replace(verdict, result="unknown", reason="the step budget ran out (planted)")
            return verdict

        monkeypatch.setattr(module, "check", check_)
        return calls

    return plant
