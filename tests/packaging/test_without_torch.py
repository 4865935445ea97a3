"""Without torch: one clear error naming the install command, never a bare
``ModuleNotFoundError``, a traceback, or a failure per conformance check.

Each check runs in a subprocess whose ``sitecustomize`` puts a meta-path
finder in front of every other that refuses ``torch`` and ``safetensors``,
as if they were not installed (child processes inherit it through
``PYTHONPATH``).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tomllib

import pytest

from refqueue._torch import GPU_EXTRA, INSTALL_HINT

ROOT = pathlib.Path(__file__).resolve().parents[2]

BLOCKER = '''\
import sys


class _NoTorch:
    """Refuse torch and safetensors, as if they were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "safetensors"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoTorch())
'''


@pytest.fixture
def no_torch(tmp_path: pathlib.Path) -> dict[str, str]:
    """An environment for a subprocess in which torch cannot be imported."""
    site = tmp_path / "no-torch-site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _run(args: list[str], env: dict[str, str], cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_hint_names_a_real_extra_that_installs_pinned_torch() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert GPU_EXTRA in extras, f"{INSTALL_HINT!r} names extra {GPU_EXTRA!r}, pyproject.toml has {sorted(extras)}"
    assert "torch==2.13.0" in extras[GPU_EXTRA]
    assert INSTALL_HINT == "pip install 'refqueue[gpu]'"


def test_the_blocker_blocks_torch(no_torch: dict[str, str], tmp_path: pathlib.Path) -> None:
    result = _run([sys.executable, "-c", "import torch"], no_torch, tmp_path)
    assert result.returncode == 1
    assert "No module named 'torch'" in result.stderr


def test_the_queue_imports_and_the_stores_name_the_extra(no_torch: dict[str, str], tmp_path: pathlib.Path) -> None:
    script = f'''
import refqueue
from refqueue import SampleRefQueue, SampleRef, VisibilityTimeout, diagnose  # no torch needed
try:
    refqueue.LocalFeatureStore()
except ModuleNotFoundError as exc:
    assert type(exc).__name__ == "TorchMissing", type(exc)
    assert exc.name == "torch", exc.name
    assert {INSTALL_HINT!r} in str(exc), str(exc)
    assert "LocalFeatureStore" in str(exc), str(exc)
    print("clear:", exc)
else:
    raise SystemExit("LocalFeatureStore() worked without torch")
'''
    result = _run([sys.executable, "-c", script], no_torch, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "clear:" in result.stdout


def test_compat_nemo_installs_and_dtypes_stay_names(no_torch: dict[str, str], tmp_path: pathlib.Path) -> None:
    script = (
        "import refqueue.compat.nemo\n"
        "from nemo_automodel.components.speculative.streaming.refs import FeatureSpec\n"
        "spec = FeatureSpec((2,), 'float32')\n"
        "assert spec.dtype == 'float32' and spec.dtype_name == 'float32', spec.dtype\n"
        "print('ok')\n"
    )
    result = _run([sys.executable, "-c", script], no_torch, tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr


def test_certify_exits_2_with_the_install_hint(no_torch: dict[str, str], tmp_path: pathlib.Path) -> None:
    result = _run([sys.executable, "-m", "refqueue.cli", "certify", "--report", str(tmp_path / "r")], no_torch, tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert INSTALL_HINT in result.stderr
    assert result.stderr.startswith("refqueue certify: ")
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "r").exists(), "no certificate (no verdict) is written without torch"


def test_the_plugin_reports_one_error(no_torch: dict[str, str], tmp_path: pathlib.Path) -> None:
    result = _run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
         "--refqueue-backend", "refqueue.conformance.backends:inprocess"],
        no_torch, tmp_path,
    )
    out = result.stdout + result.stderr
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, out
    errors = [line for line in out.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and INSTALL_HINT in errors[0], out
    assert "failed" not in out and "Traceback" not in out, out


def test_any_subcommand_that_imports_torch_bare_exits_2(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A subcommand whose run reaches a plain ``import torch`` (not behind
    require_torch) still ends in the hint and exit 2, not a traceback."""
    from refqueue import cli

    (tmp_path / "needs_torch_cmd.py").write_text(
        "def add_arguments(parser):\n    pass\n\n"
        "def run(args):\n    raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.COMMANDS, "needs-torch", ("needs_torch_cmd", "a stand-in that imports torch"))
    assert cli.main(["needs-torch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("refqueue needs-torch: refqueue needs-torch needs torch") and INSTALL_HINT in err, err

    (tmp_path / "needs_other_cmd.py").write_text(
        "def add_arguments(parser):\n    pass\n\n"
        "def run(args):\n    raise ModuleNotFoundError(\"No module named 'nope'\", name='nope')\n",
        encoding="utf-8",
    )
    monkeypatch.setitem(cli.COMMANDS, "needs-other", ("needs_other_cmd", "a stand-in missing another module"))
    with pytest.raises(ModuleNotFoundError, match="nope"):  # only torch and safetensors are translated
        cli.main(["needs-other"])
