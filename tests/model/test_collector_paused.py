"""The cyclic collector is paused around the explorer's and the trace
checker's long pure computations, and handed back as the caller had it: on
stays on, off stays off, an error on the way out included."""

from __future__ import annotations

import gc

import pytest

from refqueue._collector import collector_paused
from refqueue.model.explorer import build_graph, explore
from refqueue.model.world import make_world


@pytest.fixture
def collector():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_off_inside_and_as_it_was_after(collector, enabled):
    (gc.enable if enabled else gc.disable)()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled() is enabled


@pytest.mark.parametrize("enabled", [True, False])
def test_an_error_inside_hands_the_collector_back_as_it_was(collector, enabled):
    (gc.enable if enabled else gc.disable)()
    with pytest.raises(KeyError), collector_paused():
        raise KeyError("inside")
    assert gc.isenabled() is enabled


@pytest.mark.parametrize("enabled", [True, False])
def test_explore_and_build_graph_run_with_it_paused_and_hand_it_back(collector, enabled):
    (gc.enable if enabled else gc.disable)()
    world = make_world(samples=1, consumers=1)
    seen_inside = []

    def goal(world, node):  # called on each node the search visits
        seen_inside.append(gc.isenabled())
        return False

    explore(world, goals={"never": goal}, stop_on_violation=False)
    assert seen_inside and not any(seen_inside)
    assert gc.isenabled() is enabled
    build_graph(world)
    assert gc.isenabled() is enabled


@pytest.mark.parametrize("enabled", [True, False])
def test_trace_check_reads_its_records_with_it_paused_and_hands_it_back(collector, enabled):
    from refqueue.trace_check import BadTrace
    from refqueue.trace_check.check import check_records

    (gc.enable if enabled else gc.disable)()
    seen_inside = []

    def records():  # read by check_records, inside its pause
        seen_inside.append(gc.isenabled())
        yield from ()

    result = check_records(records())
    assert seen_inside == [False] and result.events == 0
    assert gc.isenabled() is enabled
    with pytest.raises(BadTrace):  # a record that cannot be replayed at all
        check_records([{"event": "no such event", "seq": "x"}])
    assert gc.isenabled() is enabled
