"""Walks on the explorer's world graph: coverage, the exhaustive cover, shortened failures."""

import pytest

from refqueue.conformance import load_backend
from refqueue.conformance.walks import Coverage, cover, random_walks, world_graph
from refqueue.model.world import make_world

pytestmark = pytest.mark.torch

SMALL = make_world(samples=2, consumers=1, horizon=2)


def test_the_world_graph_is_indexed_breadth_first():
    wg = world_graph(SMALL)
    assert wg.depth[0] == 0 and wg.parent[0] == -1
    for node in (1, len(wg.graph.nodes) // 2, len(wg.graph.nodes) - 1):
        path = wg.path_to(node)
        assert len(path) == wg.depth[node]
        assert wg.edges[path[0]][0] == 0 and wg.edges[path[-1]][3] == node
        assert all(wg.edges[a][3] == wg.edges[b][0] for a, b in zip(path, path[1:]))


def test_the_cover_takes_every_transition_of_a_small_world():
    wg = world_graph(SMALL)
    coverage = Coverage.of(wg)
    result = cover(load_backend("conformance.mutants._base:make"), coverage=coverage, wg=wg)
    assert result.failure is None
    assert coverage.edges == set(range(len(wg.edges)))
    assert coverage.nodes == set(range(len(wg.graph.nodes)))
    assert coverage.to_dict()["actions_never_tried"] == []
    assert result.steps >= len(wg.edges)
    assert result.walks == result.replays + 1


def test_random_walks_are_seeded():
    wg = world_graph(SMALL)
    backend = load_backend("conformance.mutants._base:make")
    runs = [random_walks(backend, walks=20, length=10, seed=7, wg=wg).steps for _ in range(2)]
    assert runs[0] == runs[1] > 20


def test_a_walk_failure_is_shortened():
    wg = world_graph(SMALL)
    result = random_walks(load_backend("conformance.mutants.reclaim_strict:make"), walks=200, length=30, seed=0, wg=wg)
    failure = result.failure
    assert failure is not None
    # store, put, acquire, tick to the deadline, reclaim: nothing shorter shows the bug
    assert [step.op for step in failure.trace] == ["store_put", "try_put", "acquire", "tick", "reclaim"]
    assert str(failure.error) == "step 5, q.reclaim_expired(): returned 0; the model says 1"
    assert result.steps_to_failure >= len(failure.trace)


def test_the_cover_stops_at_the_first_divergence():
    wg = world_graph(SMALL)
    result = cover(load_backend("conformance.mutants.ack_keeps_data:make"), wg=wg)
    assert result.failure is not None
    assert [step.op for step in result.failure.trace][-1] == "ack"


def test_random_walks_validate_their_counts():
    with pytest.raises(ValueError, match=r"^random_walks\(walks=-1\): walks must be an int >= 0$"):
        random_walks(load_backend("conformance.mutants._base:make"), walks=-1, length=3, seed=0)
