from refqueue.model.explorer import explore, work_lost
from refqueue.model.world import make_world


def test_default_bounds_have_no_violation():
    result = explore(make_world(samples=3, consumers=2, max_deliveries=2))
    assert result.verdict == "ok", result.violations
    assert result.distinct_states > 1000
    assert result.transitions > result.distinct_states


def test_anchor_consumer_loop_violates_terminal_none_means_drained():
    world = make_world(samples=2, consumers=2, max_deliveries=2, anchor_consumer=True)
    result = explore(world, stop_on_violation=False, goals={"WorkLost": work_lost})
    assert result.verdict == "violation"
    assert "TerminalNoneMeansDrained" in result.violations
    trace = result.goals["WorkLost"]
    assert trace[-1].node.consumers and all(c.stopped for c in trace[-1].node.consumers)
