"""D8 on the reference model: backpressure that cannot deadlock.

The three deadlocks of the rule before D8 (two producers each holding a stored
sample; one sample larger than the low watermark; an orphan), each shown on
the model's actions and by the explorer over a world with several producers;
and the rule before D8, patched in, caught by the explorer as NoStuckProducer.
"""

import pytest

from refqueue import model as M
from refqueue.model import actions as A
from refqueue.model.explorer import explore
from refqueue.model.world import make_world

B = 4  # bytes per sample
CFG = M.make_config(visibility_timeout=5, store_high_watermark_bytes=2 * B, store_low_watermark_bytes=B,
                    capacity_bytes=16 * B)


def stored(state, *sids, nbytes=B):
    for sid in sids:
        state = A.store_put(CFG, state, sid, nbytes).state
    return state


def test_two_producers_each_holding_a_stored_sample_are_admitted():
    s = stored(M.initial_state(), "a", "b")  # resident 2b = high, nothing enqueued
    first = A.try_put(CFG, s, "a", B)
    assert first.value.enqueued and first.value.events == ()  # effective residency is b: below high
    second = A.try_put(CFG, first.state, "b", B)
    assert second.value.enqueued
    assert second.state.pending == ("a", "b") and second.state.parked == ()


def test_parked_producers_bytes_do_not_hold_the_pause():
    s = stored(M.initial_state(), "q1", "q2")
    s = A.put(CFG, s, "q1").state
    s = A.put(CFG, s, "q2").state  # 2b of work
    s = stored(s, "a", "b")
    out = A.try_put(CFG, s, "a", B)  # effective 2b (b's bytes are not parked yet): pause
    assert out.value == A.TryPutResult(False, ("pause",))
    assert out.state.parked == (("a", B),) and out.state.paused
    out = A.try_put(CFG, out.state, "b", B)  # effective = 4b - b parked - b own = 2b: still paused
    assert not out.value.enqueued and out.state.parked == (("a", B), ("b", B))
    lease = A.acquire(CFG, out.state)
    s = A.ack(CFG, lease.state, lease.value).state  # effective = 3b - 2b = b <= low
    out = A.try_put(CFG, s, "a", B)
    assert out.value == A.TryPutResult(True, ("resume",))
    assert out.state.parked == (("b", B),)


def test_a_sample_larger_than_low_is_admitted_once_the_queue_is_empty():
    s = stored(M.initial_state(), "q")
    s = A.put(CFG, s, "q").state
    s = stored(s, "big", nbytes=3 * B)  # larger than low, and high
    s = s._replace(paused=True)
    out = A.try_put(CFG, s, "big", 3 * B)  # effective b (q): <= low, resume
    assert out.value == A.TryPutResult(True, ("resume",))


def test_an_orphan_cannot_hold_a_producer_forever():
    s = stored(M.initial_state(), "orphan", nbytes=3 * B)  # its producer died before putting it
    s = stored(s, "q")
    s = A.put(CFG, s, "q").state
    s = stored(s, "a")
    out = A.try_put(CFG, s, "a", B)  # effective 4b >= high: pause, work pending: wait
    assert out.value == A.TryPutResult(False, ("pause",))
    lease = A.acquire(CFG, out.state)
    s = A.ack(CFG, lease.state, lease.value).state  # the queue holds no work now
    out = A.try_put(CFG, s, "a", B)
    assert out.value == A.TryPutResult(True, ())  # admitted; the pause stands (3b orphan > low)
    assert out.state.paused and out.state.pending == ("a",)
    dropped = A.drop(CFG, out.state, "orphan")  # whoever owns it scrubs it
    assert dropped.error is None and A.rec_of(dropped.state, "orphan").status == M.DROPPED
    assert dropped.state.resident_bytes == B


def test_put_step_never_leaves_the_ref_parked_and_abort_put_unparks():
    s = stored(M.initial_state(), "q1", "q2")
    s = A.put(CFG, s, "q1").state
    s = A.put(CFG, s, "q2").state
    s = stored(s, "a")
    out = A.put_step(CFG, s, "a", B)
    assert out.value == A.TryPutResult(False, ("pause",)) and out.state.parked == ()
    parked = A.try_put(CFG, s, "a", B).state
    assert A.abort_put(CFG, parked, "a").state.parked == ()
    assert A.abort_put(CFG, s, "a").state is s  # nothing parked: nothing changes


def test_rejections_come_before_parking():
    s = stored(M.initial_state(), "a")
    s = A.put(CFG, s, "a").state
    out = A.try_put(CFG, s, "a", B)
    assert out.error.kind == "duplicate" and out.state is s
    assert A.try_put(CFG, s, "b", -1).error.kind == "invalid"
    closed = A.close(CFG, s).state
    assert A.try_put(CFG, closed, "c", B).error.kind == "closed"


def test_drop_only_takes_an_orphan():
    s = stored(M.initial_state(), "a")
    parked = s._replace(parked=(("a", B),))
    assert A.drop(CFG, parked, "a").error.kind == "invalid"
    pending = A.put(CFG, s, "a").state
    assert A.drop(CFG, pending, "a").error.kind == "invalid"
    again = A.store_put(CFG, A.drop(CFG, s, "a").state, "a", B)
    assert again.error is None and A.rec_of(again.state, "a").status == M.STORED


@pytest.mark.parametrize(
    "bounds",
    [
        dict(producers=2, samples=3, consumers=1, sample_bytes=1, high=2, low=1),
        dict(producers=2, samples=3, consumers=1, sample_bytes=(2, 1, 2), high=3, low=1),
        dict(producers=2, samples=3, consumers=1, sample_bytes=(1, 2, 1), high=2, low=1, producer_crash=True),
        dict(producers=3, samples=3, consumers=1, sample_bytes=1, high=2, low=1),
    ],
    ids=["two-producers", "larger-than-low", "orphans", "three-producers"],
)
def test_the_explorer_finds_no_deadlock(bounds):
    result = explore(make_world(horizon=1, **bounds))
    assert result.verdict == "ok", result.violations


def _old_rule(cfg, state, sample_id, nbytes=0):
    """try_put as before D8: the whole residency, no admission on an empty queue."""
    bad = A._check_put(cfg, state, sample_id, "put_blocks_until_below")
    if bad is not None:
        return bad
    paused, events = state.paused, ()
    if paused and state.resident_bytes <= cfg.low:
        paused, events = False, ("resume",)
    elif not paused and state.resident_bytes >= cfg.high:
        paused, events = True, ("pause",)
    parked = tuple(sorted({*state.parked, (sample_id, nbytes)}))
    if paused:
        return A.Outcome(state._replace(paused=True, parked=parked), A.TryPutResult(False, events), None)
    state = state._replace(paused=False, parked=tuple(p for p in state.parked if p[0] != sample_id))
    return A.Outcome(A.put(cfg, state, sample_id).state, A.TryPutResult(True, events), None)


def test_the_rule_before_d8_deadlocks_two_producers(monkeypatch):
    monkeypatch.setattr(A, "try_put", _old_rule)
    result = explore(make_world(producers=2, samples=2, consumers=1, sample_bytes=1, high=2, low=1))
    assert result.verdict == "violation"
    trace = result.violations["NoStuckProducer"]
    assert [s.label() for s in trace] == ["Init", "StorePut(0)", "StorePut(1)", "TryPut(0)"]
    last = trace[-1].node.state
    assert last.pending == () and last.paused and last.resident_bytes == 2
