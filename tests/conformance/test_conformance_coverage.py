"""Interesting situations: the kit worlds hold them, the predicates name them,
and the in-process queue reaches every one under the ci profile."""

import time

import pytest

from refqueue.conformance.certify import certify
from refqueue.conformance.contract import Capabilities
from refqueue.conformance.coverage import SITUATIONS, Reach, situations_of
from refqueue.conformance.walks import KIT_WORLDS, kit_world
from refqueue.model.world import make_world

pytestmark = pytest.mark.torch


def test_the_default_world_is_unchanged_by_the_kit_options():
    assert make_world() == make_world(dedup_window=0, give_up=False, dead_letter=False, extend_by=(), reclaim_any_time=False)


def test_every_situation_is_held_by_some_kit_world():
    # each situation is looked for until some transition holds it (the worlds'
    # 1.6 million transitions judged by every situation took 14 s)
    missing = list(SITUATIONS)
    for name in sorted(KIT_WORLDS, key=lambda n: len(kit_world(n, Capabilities())[0].edges)):
        wg, _ = kit_world(name, Capabilities())
        nodes = wg.graph.nodes
        for src, action, arg, dst, value in wg.edges:
            src_node, dst_node = nodes[src], nodes[dst]
            held = [s for s in missing if s.holds(wg.world, src_node, action, arg, dst_node, value)]
            if held:
                # what the kit's coverage reads of a transition names them too
                assert {s.name for s in held} <= set(situations_of(wg.world, src_node, action, arg, dst_node, value))
                missing = [s for s in missing if s not in held]
                if not missing:
                    return
    assert not missing, f"no transition of a kit world holds {[s.name for s in missing]}"


@pytest.mark.parametrize("name", ["reput", "timing"])
def test_the_model_s_invariants_hold_in_the_kit_worlds(name):
    from refqueue.model.explorer import explore

    result = explore(make_world(**KIT_WORLDS[name]))
    assert result.verdict == "ok", list(result.violations)


def test_the_agreement_world_alone_never_holds_three_live_samples():
    wg, _ = kit_world("agreement", Capabilities())
    nodes = wg.graph.nodes
    assert max(sum(r.status in ("pending", "leased") for r in n.state.recs) for n in nodes) < 3


def test_situations_a_backend_cannot_reach_do_not_count():
    reach = Reach(Capabilities(dead_letter=False, dedup_window=False).to_dict())
    out = reach.to_dict()["out_of_reach"]
    assert out["replay_refused"] == "needs dedup_window" and out["dead_letter"] == "needs dead_letter"
    assert reach.counts() == (0, len(SITUATIONS) - 3)


# The same certification as conformance/test_inprocess.py::test_inprocess_queue_conforms[walks]
# (the in-process queue's walks phase, ci profile, seed 0), which makes these assertions in the
# default run: slow, so that the default run walks the kit worlds with it once.
@pytest.mark.slow
def test_the_inprocess_queue_reaches_every_situation_under_ci():
    started = time.perf_counter()
    cert = certify("refqueue.conformance.backends:inprocess", profile="ci", phases=("walks",))
    assert cert.passed, cert.counterexample
    situations = cert.coverage["situations"]
    assert situations["never_reached"] == [] and situations["reached_count"] == len(SITUATIONS)
    assert set(cert.coverage["world_graph"]["worlds"]) == set(KIT_WORLDS)
    assert "## Interesting situations reached" in cert.to_markdown()
    print(f"walks phase of the in-process queue: {time.perf_counter() - started:.1f} s")
