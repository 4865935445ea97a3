"""The explorer judges every property once per distinct value of what it reads
(tables per model state and consumer, ``reads``, ``holds_on_states``,
``reads_consumers``).  Those are only ways of not doing work twice: this file
checks them against a plain breadth-first search that walks
``world.successors`` and judges every property on every node and on every
step that changes the model's state, with nothing cached.

Both must agree exactly, on worlds that turn on each option of the closed
world and on the model with a mutant's mistake in it: the same counts, the
same violated properties, each with the same (first, shortest) trace.  And
``build_graph``, which walks the same tables, must give the plain search's
nodes and edges, in its order."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import pytest

from refqueue.model import invariants as I
from refqueue.model.explorer import build_graph, explore
from refqueue.model.world import initial_node, make_world, successors
from refqueue.spec_check import mutants as M

_BY_PRODUCER = {"TryPut", "TryPutLost"}
_BY_HOLDER = {"Ack", "Fail", "Extend", "DeadLetter", "AckLost", "FailLost"}
_CONSUMER_ACTIONS = {"Acquire", "AcquireLost", "Stop", "Get", "Release", "Crash", "AckCopy", "FailCopy"}


def _what(node, action, arg):
    """What a step of the model is judged by (the explorer's rule, written out)."""
    if action in _BY_PRODUCER:
        return node.producers[arg]
    if action in _BY_HOLDER:
        return node.consumers[arg[0] if isinstance(arg, tuple) else arg].lease
    if action in _CONSUMER_ACTIONS:
        return None
    return arg


def plain_search(world):
    """(distinct nodes, transitions, {property: trace labels}) by brute force."""
    cfg = world.cfg
    root = initial_node(world)
    seen = {root: 0}
    nodes, parent = [root], [(-1, "Init")]
    violations: dict[str, list[str]] = {}

    def labels(k):
        out = []
        while k >= 0:
            out.append(parent[k][1])
            k = parent[k][0]
        return out[::-1]

    def judge_node(k):
        node = nodes[k]
        for name, pred in I.STATE_INVARIANTS.items():
            if name not in violations and not pred(cfg, node.state, node.consumers):
                violations[name] = labels(k)
        for name, pred in I.WORLD_INVARIANTS.items():
            if name not in violations and not pred(world, node):
                violations[name] = labels(k)

    judge_node(0)
    frontier = deque([0])
    transitions = 0
    while frontier and not violations:
        k = frontier.popleft()
        node = nodes[k]
        for action, arg, child, value in successors(world, node):
            transitions += 1
            label = action if arg is None else f"{action}({arg})"
            if child.state != node.state:
                what = _what(node, action, arg)
                for name, pred in I.TRANSITION_INVARIANTS.items():
                    if name not in violations and not pred(cfg, node.state, child.state, action, what, value):
                        violations[name] = labels(k) + [label]
                for name, pred in I.WORLD_TRANSITION_INVARIANTS.items():
                    if name not in violations and not pred(world, node, child, action, arg, value):
                        violations[name] = labels(k) + [label]
            if child not in seen:
                seen[child] = len(nodes)
                nodes.append(child)
                parent.append((k, label))
                judge_node(len(nodes) - 1)
                frontier.append(len(nodes) - 1)
    return len(nodes), transitions, violations


def _agree(world):
    fast = explore(world)
    count, transitions, violations = plain_search(world)
    assert {n: [s.label() for s in t] for n, t in fast.violations.items()} == violations
    if not violations:  # (a violation stops each search after the node it was found on)
        assert (fast.distinct_states, fast.transitions) == (count, transitions)
    return fast


WORLDS = {  # (each a few thousand nodes: the plain search is slow)
    "agreement, smaller": dict(samples=2, consumers=2, horizon=1),
    "kit options": dict(samples=1, consumers=2, horizon=2, dead_letter=True, extend_by=(1, 2), visibility_timeout=2,
                        reclaim_any_time=True, give_up=True, dedup_window=1),
    "copies and crashes": dict(samples=1, consumers=2, horizon=2, retain_copies=True, producer_crash=True),
    "deployment": dict(samples=1, consumers=1, horizon=2, two_step_ack=True, lost_replies=True, max_restarts=1),
    "three consumers, two producers": dict(samples=2, consumers=3, producers=2, horizon=1, max_deliveries=1),
    "re-put": dict(samples=("s0", "s0"), consumers=1, horizon=2),
}


@pytest.mark.parametrize("name", sorted(WORLDS))
def test_the_explorer_agrees_with_a_plain_search_on_each_world_option(name):
    result = _agree(make_world(**WORLDS[name]))
    assert result.verdict == "ok" and result.transitions > result.distinct_states > 50


BY_NAME = {m.name: m for m in M.load_mutants(Path(__file__).resolve().parents[2] / "spec")[0]}

# Mutants whose kill needs each kind of judgement: a state invariant, one read
# per consumer, a step of the model, a world step judged per consumer, one
# settled by the states alone, a world node property.
KILLS = [
    "fail-not-counted", "requeue-at-head", "no-backpressure", "is-live-ignores-epoch", "loss-not-detected",
    "extend-any-outstanding-lease", "scrub-keeps-intent", "stop-without-drained", "ack-records-no-intent",
]


@pytest.mark.parametrize("name", KILLS)
def test_the_explorer_finds_what_a_plain_search_finds_in_a_mutant(name):
    mutant = BY_NAME[name]
    world = make_world(**mutant.python.world)
    with M.patched(name, mutant.python.extra):
        result = _agree(world)
    assert result.verdict == "violation" and mutant.python.expected in result.violations


def plain_graph(world):
    """Every node and edge, breadth-first over ``successors`` with nothing cached."""
    root = initial_node(world)
    index, nodes, edges = {root: 0}, [root], []
    frontier = deque([0])
    while frontier:
        k = frontier.popleft()
        for action, arg, child, value in successors(world, nodes[k]):
            if child not in index:
                index[child] = len(nodes)
                nodes.append(child)
                frontier.append(index[child])
            edges.append((k, action, arg, index[child], value))
    return nodes, edges


@pytest.mark.parametrize("name", sorted(WORLDS))
def test_build_graph_gives_the_plain_search_s_nodes_and_edges_in_its_order(name):
    world = make_world(**WORLDS[name])
    graph = build_graph(world)
    nodes, edges = plain_graph(world)
    assert graph.nodes == nodes and graph.edges == edges
    assert all(graph.index[node] == i for i, node in enumerate(nodes))


def test_build_graph_walks_a_mutant_s_world_as_patched():
    mutant = BY_NAME["stop-without-drained"]
    world = make_world(samples=1, consumers=2, horizon=1)  # (small: a consumer may stop while another holds a lease)
    with M.patched(mutant.name, mutant.python.extra):
        patched = build_graph(world)
        assert (patched.nodes, patched.edges) == plain_graph(world)
    assert len(build_graph(world).edges) < len(patched.edges)  # the patch adds Stop steps
