"""Shared test configuration: Hypothesis profiles.

``CI=true`` makes Hypothesis load its own derandomized ``ci`` profile; ``deep``
is for long randomized runs (``pytest --hypothesis-profile=deep``).
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "deep",
    max_examples=2000,
    stateful_step_count=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# The fuzz suite's example counts (tests/fuzz/conftest.py attaches each
# @given test's count to its report; xdist sends reports to the controller,
# which loads this conftest but not the fuzz folder's): printed at the end.
FUZZ_EXAMPLES = "fuzz_examples"


def pytest_terminal_summary(terminalreporter):
    if hasattr(terminalreporter.config, "workerinput"):
        return  # an xdist worker: the controller prints
    rows = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for key, value in getattr(report, "user_properties", ()):
                if key == FUZZ_EXAMPLES:
                    rows.append((report.nodeid, value, report.outcome))
    if not rows:
        return
    terminalreporter.section("fuzz examples (Hypothesis test cases per test)")
    for nodeid, count, outcome in sorted(rows):
        shown = "unknown" if count < 0 else f"{count:>6,}"
        terminalreporter.write_line(f"{shown}  {nodeid}  [{outcome}]")
    known = [count for _, count, _ in rows if count >= 0]
    terminalreporter.write_line(f"{sum(known):>6,}  total over {len(rows)} fuzz tests")
