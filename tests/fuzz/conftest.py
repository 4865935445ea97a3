"""The fuzz suite's example counts, printed at the end of every run.

Each ``@given`` test's count is read from Hypothesis's own statistics (which
its pytest plugin collects for every test, with or without
``--hypothesis-show-statistics``): the test cases it ran in the explicit,
reuse and generate phases (passing, failing, invalid).  The count rides on
the call report's ``user_properties``, which pytest-xdist sends from each
worker to the controller, so ``pytest -n 2 tests/fuzz`` prints the section
too; the section itself is printed by ``tests/conftest.py``'s
``pytest_terminal_summary`` (this folder's conftest is not loaded by xdist's
controller when pytest runs from ``testpaths``).  A ``@given`` test whose statistics cannot be read is listed as
``unknown``, never silently dropped.
"""

from __future__ import annotations

import re

import pytest

_KEY = "fuzz_examples"
# "- during generate phase (0.12 seconds):" ... "- 100 passing, 0 failing, and 3 invalid test cases"
_PHASE = re.compile(r"during (\w+) phase.*?(\d+) passing, (\d+) failing, and (\d+) invalid", re.S)


def examples_from(statistics: str) -> int | None:
    """Test cases run before shrinking, from Hypothesis's statistics text; None if unreadable."""
    phases = _PHASE.findall(statistics)
    if not phases:
        return None
    return sum(int(p) + int(f) + int(i) for phase, p, f, i in phases if phase != "shrink")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not hasattr(getattr(item, "obj", None), "hypothesis"):
        return
    statistics = getattr(item, "hypothesis_statistics", None)
    count = examples_from(statistics) if statistics else None
    report.user_properties.append((_KEY, -1 if count is None else count))
