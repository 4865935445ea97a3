"""The kit's own tests certify the backends in ``conformance/mutants`` (at the
repository root, not an installed package): put the root on ``sys.path``."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _repository_root_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
