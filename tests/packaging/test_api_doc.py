"""docs/API.md names every top-level name of refqueue and lists every field
of each public dataclass, in declaration order, in a ``class`` block."""

from __future__ import annotations

import dataclasses
import pathlib
import re

import pytest

import refqueue

API = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "API.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", API, flags=re.S)
DATACLASSES = [n for n in refqueue.__all__ if dataclasses.is_dataclass(getattr(refqueue, n))]


def _documented_fields(name: str) -> list[str]:
    """The ``field: type`` lines of ``class name:`` in API.md's python blocks."""
    for block in BLOCKS:
        lines = [re.sub(r"^ {2}(?= )", "", line) for line in block.splitlines()]  # a block nested in a list item
        for i, line in enumerate(lines):
            if re.fullmatch(rf"\s*class {name}(\(.*\))?:\s*", line):
                indent = len(line) - len(line.lstrip())
                fields = []
                for body in lines[i + 1:]:
                    if not body.strip() or len(body) - len(body.lstrip()) <= indent:
                        break
                    found = re.match(r"\s*(\w+): ", body)
                    if found:
                        fields.append(found.group(1))
                return fields
    pytest.fail(f"docs/API.md has no ```python block with `class {name}:`")


def test_every_top_level_name_is_on_the_page() -> None:
    missing = [name for name in refqueue.__all__ if f"`{name}" not in API]
    assert missing == [], f"docs/API.md does not mention {missing}"


def test_there_are_dataclasses_to_check() -> None:
    assert {"SampleRef", "FeatureSpec", "Lease", "StoreHandle", "StoreHealth"} <= set(DATACLASSES)


@pytest.mark.parametrize("name", DATACLASSES)
def test_every_field_of_each_public_dataclass_is_listed(name: str) -> None:
    declared = [f.name for f in dataclasses.fields(getattr(refqueue, name))]
    documented = [f for f in _documented_fields(name) if f in declared]
    assert documented == declared, f"docs/API.md's class {name} lists {documented}, the class has {declared}"
