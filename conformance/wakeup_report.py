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


def assert_late_wakeups_were_measured_again(cert) -> None:
    """A passing blocking phase may list wakeups later than its bound (a
    preempted thread on a loaded machine): each is an attempt the kit measured
    again, so a check's late latencies are its attempts beyond one per trial,
    and a check with none late woke every call within the bound."""
    phase = cert.phases["blocking"]
    bound = phase["bound_s"]
    measured_again = 0
    for name, latencies in phase["latencies_s"].items():  # one per attempt
        again = len(latencies) - phase["trials"].get(name, 1)
        # (latencies are rounded to 0.1 ms: one of exactly the bound may be either)
        assert sum(t > bound for t in latencies) <= again <= sum(t >= bound for t in latencies), (name, latencies)
        if again == 0 and phase["wake_latency_s"].get(name, {}).get("n"):
            assert phase["wake_latency_s"][name]["max"] <= bound, (name, phase["wake_latency_s"][name])
        measured_again += again
    if measured_again == 0:
        assert phase["slowest_wake_s"] <= bound


def assert_reports_each_wakeups_distribution_and_the_escape(cert) -> None:
    """Each randomised wakeup's distribution, the timing model's seed, span,
    waking calls and escape probabilities, in the certificate's JSON, its
    markdown and what ``refqueue certify`` prints."""
    phase = cert.phases["blocking"]
    assert_late_wakeups_were_measured_again(cert)
    assert set(RANDOMISED) <= set(phase["wake_latency_s"])
    for name in RANDOMISED:
        dist = phase["wake_latency_s"][name]
        assert dist["n"] >= DEFAULT_TRIALS and dist["p50"] <= dist["p99"] <= dist["max"], (name, dist)
        assert phase["trials"][name] == DEFAULT_TRIALS
    timing = phase["timing"]
    assert timing["seed"] == cert.seed and timing["offset_span_s"] == 0.2 and timing["trials_per_check"] == DEFAULT_TRIALS
    assert timing["waking_calls"] == {"acquire": 13 * DEFAULT_TRIALS, "put_blocks_until_below": 5 * DEFAULT_TRIALS}
    assert timing["escape"]["acquire"]["0.06 s"] == pytest.approx(0.85**78, rel=1e-2)
    assert timing["escape_per_call"] == {"0.06 s": 0.85, "0.1 s": 0.5, "0.2 s": 0.25}
    markdown = cert.to_markdown()
    assert "## Wakeups (blocking, bound 0.05 s)" in markdown
    wakeups = phase["wake_latency_s"]["acquire-woken-by-put"]["n"]  # 6, and one more per attempt measured again
    assert f"| acquire-woken-by-put | 6 | {wakeups} |" in markdown
    assert "escapes all 78 waking calls with probability at most P = 0.06 s: 3.12e-06" in markdown
    out = summary(cert, {})  # what refqueue certify prints
    assert "acquire-woken-by-put       " in out and f" 6 trials, {wakeups} wakeups: p50 " in out and ", max " in out
    assert "acquire polling every P, never woken, escapes its 78 waking calls: P 0.06 s: 3.12e-06" in out
