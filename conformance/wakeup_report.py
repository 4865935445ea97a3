"""What a passing blocking phase's certificate says of its randomised
wakeups (the timing model), asserted by the tests that read one: the
in-process queue's certificate (conformance/test_inprocess.py) and the base
backend's with a seed of its own (tests/conformance/test_conformance_blocking.py).
"""

from __future__ import annotations

import pytest

from refqueue.conformance.blocking import DEFAULT_TRIALS, NAMED_CHECKS, Wakeup
from refqueue.conformance.cli import summary

# The blocking checks that measure a wakeup at random offsets.
RANDOMISED = [c.name for c in NAMED_CHECKS if isinstance(c, Wakeup) and c.randomised]


def assert_reports_each_wakeups_distribution_and_the_escape(cert) -> None:
    """Each randomised wakeup's distribution, the timing model's seed, span,
    waking calls and escape probabilities, in the certificate's JSON, its
    markdown and what ``refqueue certify`` prints."""
    phase = cert.phases["blocking"]
    assert set(RANDOMISED) <= set(phase["wake_latency_s"])
    for name in RANDOMISED:
        dist = phase["wake_latency_s"][name]
        assert dist["n"] >= DEFAULT_TRIALS and dist["p50"] <= dist["p99"] <= dist["max"] <= 0.05, (name, dist)
        assert phase["trials"][name] == DEFAULT_TRIALS
    timing = phase["timing"]
    assert timing["seed"] == cert.seed and timing["offset_span_s"] == 0.2 and timing["trials_per_check"] == DEFAULT_TRIALS
    assert timing["waking_calls"] == {"acquire": 8 * DEFAULT_TRIALS, "put_blocks_until_below": 4 * DEFAULT_TRIALS}
    assert timing["escape"]["acquire"]["0.06 s"] == pytest.approx(0.85**48, rel=1e-2)
    assert timing["escape_per_call"] == {"0.06 s": 0.85, "0.1 s": 0.5, "0.2 s": 0.25}
    markdown = cert.to_markdown()
    assert "## Wakeups (blocking, bound 0.05 s)" in markdown
    assert "| acquire-woken-by-put | 6 | 6 |" in markdown
    assert "escapes all 48 waking calls with probability at most P = 0.06 s: 0.000409" in markdown
    out = summary(cert, {})  # what refqueue certify prints
    assert "acquire-woken-by-put       " in out and " 6 trials, 6 wakeups: p50 " in out and ", max " in out
    assert "acquire polling every P, never woken, escapes its 48 waking calls: P 0.06 s: 0.000409" in out
