"""Walks on the explorer's world graph: coverage, the exhaustive cover, shortened failures."""

import pytest

from refqueue.conformance import load_backend
from refqueue.conformance.walks import Coverage, cover, drivable, random_walks, world_graph
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


def test_the_cover_drives_orphans_copies_and_re_puts():
    # ProducerCrash, CollectOrphan (store.scrub of the orphan), AckCopy/FailCopy and a
    # re-put of 'a' after it completed: every transition, on the base and on the in-process queue.
    world = make_world(
        samples=("a", "b", "a"), consumers=1, horizon=1, producer_crash=True, retain_copies=True, max_deliveries=1
    )
    wg = world_graph(world)
    assert {"ProducerCrash", "CollectOrphan", "AckCopy", "FailCopy"} <= {edge[1] for edge in wg.edges}
    for target in ("conformance.mutants._base:make", "refqueue.conformance.backends:inprocess"):
        coverage = Coverage.of(wg)
        result = cover(load_backend(target), coverage=coverage, wg=wg)
        assert result.failure is None, (target, result.failure and result.failure.message)
        assert coverage.to_dict()["actions_never_tried"] == []


def test_several_producers_are_driven_only_without_watermarks():
    # Without watermarks nothing is ever parked: the kit can drive two producers.
    wg = world_graph(make_world(samples=2, consumers=1, horizon=1, producers=2, high=None, low=None))
    assert {edge[2] for edge in wg.edges if edge[1] == "StorePut"} == {0, 1}
    result = cover(load_backend("conformance.mutants._base:make"), wg=wg)
    assert result.failure is None
    # With watermarks the other producers' parked bytes change decisions (D8): refused.
    world = make_world(samples=2, consumers=1, horizon=1, producers=2)
    with pytest.raises(ValueError, match=r"^the world has 2 producers and watermarks: a blocked producer's parked"):
        drivable(world)
    with pytest.raises(ValueError, match=r"2 producers and watermarks"):
        random_walks(load_backend("conformance.mutants._base:make"), walks=1, length=1, seed=0, wg=world_graph(world))


def test_worlds_the_kit_cannot_drive_are_refused():
    with pytest.raises(ValueError, match=r"^the world uses the anchor's consumer stop rule"):
        drivable(make_world(samples=1, consumers=1, anchor_consumer=True))
    with pytest.raises(ValueError, match=r"^the world stores 'a' with 1 and with 2 units"):
        drivable(make_world(samples=("a", "a"), sample_bytes=(1, 2), consumers=1))


def test_the_default_world_has_one_producer_and_no_parked_bytes_in_the_kit():
    # One producer: the only parked ref is the stepping one's own, so the graph's
    # parked set never changes a decision, and the kit's state matches ignoring it.
    wg = world_graph(make_world(samples=3, consumers=1, horizon=1))
    assert wg.world.producers == 1
    parked = {n for n, node in enumerate(wg.graph.nodes) if node.state.parked}
    assert parked
    coverage = Coverage.of(wg)
    result = random_walks(
        load_backend("conformance.mutants._base:make"), walks=60, length=20, seed=1, wg=wg, coverage=coverage
    )
    assert result.failure is None
    assert coverage.nodes & parked  # the walks went through nodes with a parked ref


# The kit-world options: every new transition driven on real backends.
KIT_SMALL = make_world(
    samples=("a", "b", "a"), consumers=1, horizon=2, dedup_window=1, give_up=True, dead_letter=True,
    extend_by=(2,), reclaim_any_time=True,
)  # fmt: skip


# Covering the world with the mutants' base too repeats what the in-process queue's cover shows
# of the kit (the world's options driven, every action tried): slow.
@pytest.mark.parametrize(
    "target",
    [
        "refqueue.conformance.backends:inprocess",
        pytest.param("conformance.mutants._base:make", marks=pytest.mark.slow),
    ],
)
def test_the_cover_drives_the_kit_world_options(target):
    wg = world_graph(KIT_SMALL)
    actions = {edge[1] for edge in wg.edges}
    assert {"DeadLetter", "Extend", "CollectOrphan"} <= actions
    assert {edge[2] for edge in wg.edges if edge[1] == "Extend" and isinstance(edge[2], tuple)} == {(0, 2)}
    refused = {edge[4].kind for edge in wg.edges if edge[1] == "TryPut" and hasattr(edge[4], "kind")}
    assert refused == {"closed", "replay"}
    assert any(edge[1] == "ReclaimExpired" and edge[0] == edge[3] and edge[4] == 0 for edge in wg.edges)
    coverage = Coverage.of(wg)
    result = cover(load_backend(target), coverage=coverage, wg=wg)
    assert result.failure is None, (target, result.failure and result.failure.message)
    assert coverage.to_dict()["actions_never_tried"] == []


@pytest.mark.parametrize(
    "mutant, widen",
    [
        ("extend_from_deadline", dict(extend_by=(2,))),  # extends by another amount than the timeout
        ("dedup_forever", dict(samples=("s0", "s1", "s0"), dedup_window=1, give_up=True)),  # a re-put past the window
        ("ring_wrap", dict(samples=3, high=3, low=1)),  # three samples live at once
    ],
)
def test_a_mutant_passing_every_transition_of_a_small_world_fails_the_widened_one(mutant, widen):
    backend = load_backend(f"conformance.mutants.{mutant}:make")
    bounds = dict(samples=2, consumers=1, horizon=1, max_deliveries=1)
    assert cover(backend, wg=world_graph(make_world(**bounds))).failure is None
    assert cover(backend, wg=world_graph(make_world(**{**bounds, **widen}))).failure is not None


def test_capabilities_shrink_every_kit_world():
    from refqueue.conformance.contract import Capabilities
    from refqueue.conformance.walks import KIT_WORLDS, kit_world

    caps = Capabilities(dead_letter=False, dedup_window=False, extend=False)
    for name in KIT_WORLDS:
        wg, said = kit_world(name, caps)
        used = {wg.edges[e][1] for o in wg.out for e in o}
        assert not used & {"DeadLetter", "Extend"}
        assert wg.world.cfg.dedup_window == 0
        assert any("no dead_letter" in s for s in said)
    with pytest.raises(ValueError, match=r"^unknown kit world 'huge'"):
        kit_world("huge", caps)
