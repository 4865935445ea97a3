"""Type checkers see refqueue's types through its top-level names.

A user script imports from ``refqueue`` (as the README does) and mypy runs on
it in a subprocess, from a temporary folder so that the repository's own mypy
settings do not apply: refqueue is found as an installed package, which mypy
only reads when it ships ``py.typed``.  Without ``py.typed`` (or with the
top-level names typed ``Any``, as a lazy ``__getattr__`` alone makes them) the
four planted errors below pass clean; the same script with them fixed must
pass ``--strict`` with no error at all.
"""

from __future__ import annotations

import ast
import os
import pathlib
import re
import subprocess
import sys

import pytest

import refqueue

pytest.importorskip("mypy", reason="mypy is in the dev extra: pip install -e '.[dev]'")

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = pathlib.Path(refqueue.__file__).resolve().parent

# Each planted error: the line's text and the mypy error code it must draw.
PLANTED = [
    ('timeout = VisibilityTimeout("60")', "arg-type"),
    ("    return ref.sample_id", "return-value"),
    ('    queue.ack("lease-1")', "arg-type"),
    ("    clock.advance_by(1.0)", "attr-defined"),
]

USER_SCRIPT = '''\
from refqueue import ManualClock, SampleRef, SampleRefQueue, VisibilityTimeout

timeout = VisibilityTimeout("60")


def first_number(ref: SampleRef) -> int:
    return ref.sample_id


def finish(queue: SampleRefQueue) -> None:
    queue.ack("lease-1")


def tick(clock: ManualClock) -> float:
    clock.advance_by(1.0)
    return clock.now()
'''

FIXED = {
    'timeout = VisibilityTimeout("60")': "timeout = VisibilityTimeout(60.0)",
    "    return ref.sample_id": "    return ref.num_tokens",
    '    queue.ack("lease-1")': "    lease = queue.acquire_nowait()\n    if lease is not None:\n        queue.ack(lease)",
    "    clock.advance_by(1.0)": "    clock.advance(1.0)",
}


def _mypy(script: pathlib.Path, cache: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYPY")}
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-color-output", "--show-error-codes",
         "--cache-dir", str(cache), script.name],
        cwd=script.parent, capture_output=True, text=True, timeout=600, env=env,
    )


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """One cache for every mypy run of this module (in one worker): most of a cold
    run is torch's 4,000 modules, which each run reads the same way; mypy checks
    each cached module's source hash and options, so the cache changes no verdict."""
    return tmp_path_factory.mktemp("mypy-cache")


def test_package_ships_py_typed() -> None:
    assert (PACKAGE / "py.typed").is_file(), f"{PACKAGE / 'py.typed'} is missing: type checkers skip the package"


def test_all_exports_and_type_checking_imports_agree() -> None:
    """``__all__``, the lazy table and the imports type checkers read name the same things."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    checked: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module, ast.dump(stmt)
                for alias in stmt.names:
                    assert alias.asname == alias.name, f"{alias.name} is not re-exported as itself"
                    checked[alias.name] = stmt.module
    assert checked == refqueue._EXPORTS
    assert sorted(refqueue.__all__) == sorted(refqueue._EXPORTS)
    for name in refqueue.__all__:
        assert getattr(refqueue, name) is not None


def test_mypy_reports_each_planted_error_in_a_top_level_import(tmp_path: pathlib.Path, mypy_cache: pathlib.Path) -> None:
    script = tmp_path / "user_script.py"
    script.write_text(USER_SCRIPT, encoding="utf-8")
    lines = USER_SCRIPT.splitlines()
    result = _mypy(script, mypy_cache)
    reported = re.findall(r"^user_script\.py:(\d+): error: .*\[([\w-]+)\]$", result.stdout, flags=re.M)
    want = [(str(lines.index(text) + 1), code) for text, code in PLANTED]
    assert sorted(reported) == sorted(want), result.stdout + result.stderr
    assert result.returncode == 1, result.stdout + result.stderr


def test_the_same_script_fixed_passes_strict(tmp_path: pathlib.Path, mypy_cache: pathlib.Path) -> None:
    text = USER_SCRIPT
    for wrong, right in FIXED.items():
        assert wrong in text
        text = text.replace(wrong, right)
    script = tmp_path / "user_script.py"
    script.write_text(text, encoding="utf-8")
    result = _mypy(script, mypy_cache)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found in 1 source file" in result.stdout


def test_readme_example_passes_strict(tmp_path: pathlib.Path, mypy_cache: pathlib.Path) -> None:
    pytest.importorskip("torch", reason="the README's example uses torch; mypy reads its types")
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    script = tmp_path / "readme_example.py"
    script.write_text(block, encoding="utf-8")
    result = _mypy(script, mypy_cache)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found in 1 source file" in result.stdout


def test_the_package_passes_its_mypy_config(mypy_cache: pathlib.Path) -> None:
    """``mypy`` from the repository root: --strict on src/refqueue, less the
    modules pyproject.toml's override lists (see the comment there)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYPY")}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-color-output", "--cache-dir", str(mypy_cache)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^Success: no issues found in \d+ source files$", result.stdout, flags=re.M), result.stdout
