"""Failing runs printed as pytest functions, and the delta-debugging shrinker."""

import math

import pytest

from refqueue.conformance import load_backend
from refqueue.conformance.harness import Failure, Harness, ModelConfig
from refqueue.conformance.render import call_text, render_construction, render_test
from refqueue.conformance.samples import LOCKSTEP_SIZES
from refqueue.conformance.shrink import shrink
from refqueue.errors import PutAborted

BASE = "conformance.mutants._base:make"


def run_source(source, name):
    namespace = {"__name__": name}
    exec(compile(source, f"<{name}>", "exec"), namespace)  # noqa: S102 - the kit's own printed test
    namespace["test_counterexample"]()


@pytest.mark.torch
def test_a_rendered_trace_replays_every_call_and_its_answer():
    config = ModelConfig(visibility_timeout=2.0, high=4, low=1, max_deliveries=2)
    h = Harness(load_backend(BASE), config, sizes=LOCKSTEP_SIZES)
    ref = h.store_put("s3")
    h.try_put(ref)
    lease = h.acquire()
    h.extend(lease, math.inf)
    twin = h.copy(lease, "deepcopy")
    handle = h.get(twin)
    h.tick(2.0)
    h.reclaim()
    h.release(handle)
    h.put_wrong(ref, "uri")
    h.dead_letter(h.acquire(), "poison")
    h.put(ref)
    h.close()
    source = render_test(h.trace, target=BASE, config=config, sizes=LOCKSTEP_SIZES, store=None, reason="x")
    assert "q.extend(lease1, math.inf)" in source
    assert "lease2 = copy.deepcopy(lease1)" in source
    assert "with s.rejects('invalid'):" in source
    assert source.count("s.expect(") == len(h.trace)
    run_source(source, "replay_on_base")  # the model's answers hold on the backend they came from
    with pytest.raises(AssertionError):  # and not on one that reclaims a tick late
        run_source(source.replace(BASE, "conformance.mutants.reclaim_strict:make"), "replay_on_mutant")


@pytest.mark.torch
def test_a_rendered_trace_replays_a_d8_pause_an_orphan_and_its_collection():
    # s3 (3 units) and s1 (2 units) resident, high 4: s1's one-step put sees 5 - 2 = 3 < 4
    # and is enqueued; s5's sees 7 - 2 = 5 >= 4 and pauses, with work pending: PutAborted.
    config = ModelConfig(visibility_timeout=2.0, high=4, low=1)
    h = Harness(load_backend(BASE), config, sizes=LOCKSTEP_SIZES)
    orphan = h.store_put("s3")
    h.producer_crash(orphan)
    ref = h.store_put("s1")
    h.try_put(ref)
    blocked = h.store_put("s5")
    h.try_put(blocked)
    assert h.trace[-1].expect.kind == "aborted" and h.state.paused and h.state.parked == ()
    h.collect(orphan)
    source = render_test(h.trace, target=BASE, config=config, sizes=LOCKSTEP_SIZES, store=None, reason="x")
    assert "# a producer dies before putting ref1; its data stays in the store (an orphan)" in source
    assert "assert store.scrub(ref1) is True  # the orphan's owner collects it" in source
    assert "with s.rejects('aborted'):" in source
    run_source(source, "d8_replay_on_base")
    run_source(source.replace(BASE, "refqueue.conformance.backends:inprocess"), "d8_replay_on_inprocess")
    with pytest.raises(PutAborted):  # the pre-D8 rule pauses at s1 already (5 >= 4)
        run_source(source.replace(BASE, "conformance.mutants.old_backpressure:make"), "d8_replay_on_old")


def test_call_text_names_each_call():
    from refqueue.conformance.harness import Step

    def text(op, *args):
        return call_text(Step(op, args, None, None, ()))

    assert text("try_put", "ref1") == "q.put_blocks_until_below(ref1, abort_when=lambda: True)"
    assert text("put_wrong", "ref1", "type") == "q.put(ref1.sample_id)"
    assert text("acquire_wait", math.nan) == "q.acquire(poll_interval=math.nan)"
    assert text("lease_wrong", "dead_letter") == "q.dead_letter('lease', 'poison')"
    assert text("copy", "lease1", "json") == "type(lease1).from_json(lease1.to_json())"
    with pytest.raises(ValueError, match=r"^call_text: unknown operation 'nope'$"):
        text("nope")


@pytest.mark.torch
def test_a_construction_counterexample_expects_the_model_s_verdict():
    source = render_construction(
        target=BASE, what="zero", config=ModelConfig(visibility_timeout=0.0), store={}, model_error="bad", reason="r"
    )
    assert "with pytest.raises((TypeError, ValueError)):" in source
    run_source(source, "construction_on_base")


def test_shrink_finds_a_one_minimal_failing_run():
    def replay(items):
        if "a" in items and "b" in items:
            return Failure([None] * len(items), ModelConfig(), {}, {}, AssertionError("x"))
        return None

    items = list("xxaxxxxbxx")
    best = shrink(items, replay, replay(items))
    assert len(best.trace) == 2


def test_shrink_keeps_the_original_when_nothing_smaller_fails():
    original = Failure([None] * 3, ModelConfig(), {}, {}, AssertionError("x"))
    assert shrink(["a", "b", "c"], lambda items: None, original) is original
