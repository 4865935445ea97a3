"""The README's example runs as written."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs():
    pytest.importorskip("torch")
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1, "the README has one python example"
    exec(compile(blocks[0], str(README), "exec"), {"__name__": "readme_example"})


def test_readme_names_both_commands():
    text = README.read_text()
    for marker in ("main-command", "test-command"):
        block = re.search(rf"<!-- {marker} -->\n```\n(.+?)\n```\n<!-- /{marker} -->", text, flags=re.S)
        assert block is not None, marker
        script = block.group(1).split()[-1]
        assert (README.parent / script).is_file(), script
