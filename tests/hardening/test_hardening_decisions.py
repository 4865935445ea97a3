"""The model's decisions and the production queue's (issue 12, CrossHair part).

``scripts/crosshair.sh`` checks the contracts symbolically and compares the
decisions with ``crosshair diffbehavior``; these tests replay the same
claims on random inputs (fast, in every pytest run), and pin the one
difference CrossHair found: the production heap reclaimed every lease when
the clock read NaN (``nan > deadline`` is false, so every entry looked
due), where the model reclaims none (``deadline <= nan`` is false).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refqueue import _decisions as production
from refqueue.model import decisions as model
from refqueue.model.contracts import MENU, invariants_hold, replay

watermarks = st.one_of(
    st.just((None, None)),
    st.tuples(st.integers(1, 50), st.integers(0, 49)).filter(lambda p: p[1] < p[0]),
)
deadline = st.floats(allow_nan=True, allow_infinity=True, width=64)


@given(paused=st.booleans(), effective=st.integers(0, 60), marks=watermarks)
def test_the_pause_decision_is_the_models(paused, effective, marks):
    high, low = marks
    decided = model.next_paused(paused, effective, high, low)
    assert production.next_paused(paused, effective, high, low) is decided
    if high is None:
        assert decided is paused
    elif decided != paused:
        assert (effective >= high) if decided else (effective <= low)


@given(deadlines=st.dictionaries(st.text(max_size=3), deadline, max_size=8), now=deadline)
def test_the_reclaim_order_is_the_models(deadlines, now):
    order = model.reclaim_order(deadlines, now)
    assert production.reclaim_order(deadlines, now) == order
    assert set(order) == {s for s, d in deadlines.items() if d <= now}


@pytest.mark.parametrize("script", [[], [0, 1, 3, 4], [0, 2, 3, 9, 9, 8, 5], [0, 11, 1, 12, 3, 3, 10, 6, 4]])
def test_the_invariants_contract_holds_on_known_scripts(script):
    assert invariants_hold(script), replay(script)


@given(st.lists(st.integers(0, 4 * len(MENU) - 1), max_size=12))
def test_every_action_preserves_every_invariant_on_random_scripts(script):
    assert replay(script) == []


def test_the_contract_fails_when_a_step_breaks_an_invariant(monkeypatch):
    import refqueue.model.contracts as contracts

    monkeypatch.setattr(contracts, "violated", lambda cfg, state: ["NoScrubBeforeAck"])
    assert replay([3]) == ["NoScrubBeforeAck"] and not invariants_hold([3])
