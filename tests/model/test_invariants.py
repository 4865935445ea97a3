"""Each invariant holds on good states and flags a hand-broken one."""

import pytest

from refqueue import model as M
from refqueue.model import actions as A
from refqueue.model import invariants as I
from refqueue.model.world import Consumer

C = M.make_config(visibility_timeout=5, max_deliveries=2, store_high_watermark_bytes=8, store_low_watermark_bytes=4,
                  capacity_bytes=16)


def good():
    """a: leased (held by consumer 0), b: pending, c: acked; 12 bytes resident."""
    s = M.initial_state()
    for sid in ("a", "b", "c"):
        s = A.store_put(C, s, sid, 4).state
        s = A.put(C, s, sid).state
    s, lease_a = A.acquire(C, s).state, A.acquire(C, s).value
    s2 = A.fail(C, s, lease_a).state  # a pending again with one redelivery
    s2, b = A.acquire(C, s2).state, A.acquire(C, s2).value  # b leased
    s2, c = A.acquire(C, s2).state, A.acquire(C, s2).value  # c leased
    s2 = A.ack(C, s2, c).state
    s2, a = A.acquire(C, s2).state, A.acquire(C, s2).value  # a leased, redelivery 1
    consumers = (Consumer(a, True, False), Consumer(b, False, False))
    return s2, consumers


def rec(state, sid):
    return A.find(state, sid), A.rec_of(state, sid)


def with_rec(state, sid, **changes):
    i, r = rec(state, sid)
    return state._replace(recs=state.recs[:i] + (r._replace(**changes),) + state.recs[i + 1:])


def test_good_state_satisfies_every_invariant():
    s, consumers = good()
    assert I.violated(C, s, consumers) == []


BROKEN = {
    "TypeOK": lambda s, cs: (with_rec(s, "a", status="misplaced"), cs),
    "PendingAndLeasedDisjoint": lambda s, cs: (s._replace(pending=s.pending + ("a",)), cs),
    "AtMostOneLiveLeasePerSample": lambda s, cs: (s, (cs[0], Consumer(cs[0].lease, False, False))),
    "NoScrubBeforeAck": lambda s, cs: (
        with_rec(s, "a", resident=False)._replace(resident_bytes=s.resident_bytes - 4, resident_count=s.resident_count - 1),
        cs,
    ),
    "NothingResidentAfterAck": lambda s, cs: (
        with_rec(s, "c", resident=True)._replace(resident_bytes=s.resident_bytes + 4, resident_count=s.resident_count + 1),
        cs,
    ),
    "ResidencyMatchesContents": lambda s, cs: (s._replace(resident_bytes=s.resident_bytes - 1), cs),
    "ResidencyWithinCapacity": lambda s, cs: (
        with_rec(s, "c", status=M.STORED, resident=True, deliveries=0, redeliveries=0)._replace(
            resident_bytes=20, resident_count=s.resident_count + 1
        ),
        cs,
    ),
    "RedeliveryCountsDeliveries": lambda s, cs: (with_rec(s, "a", deliveries=1), cs),
    "TerminalNoneMeansDrained": lambda s, cs: (s._replace(closed=True), (cs[0], Consumer(None, False, True))),
    "DeadlineWithinVisibility": lambda s, cs: (with_rec(s, "a", deadline=s.now + 6), cs),
    # an intent on live work (a is leased), and one of the in-process queue (C records none)
    "IntentsHoldCompletedData": lambda s, cs: (s._replace(intents=("a",)), cs),
}
# NoOldEpochLeaseLive asks the queue's own is_live, which never calls a lease
# of an old epoch live: test_no_old_epoch_lease_live_flags_a_queue_that_accepts_one


@pytest.mark.parametrize("name", sorted(set(I.STATE_INVARIANTS) - {"NoOldEpochLeaseLive"}))
def test_each_state_invariant_flags_a_hand_broken_state(name):
    s, consumers = good()
    broken_s, broken_c = BROKEN[name](s, consumers)
    assert not I.STATE_INVARIANTS[name](C, broken_s, broken_c)
    assert name in I.violated(C, broken_s, broken_c)


def test_negative_residency_is_flagged():
    s = M.initial_state()._replace(resident_bytes=-4)
    assert not I.ResidencyMatchesContents(C, s)


def test_delivered_past_max_is_flagged():
    s, consumers = good()
    dead = with_rec(s, "b", status=M.DEAD, deliveries=3, deadline=None, resident=False)
    assert not I.RedeliveryCountsDeliveries(C, dead)


def test_invariants_cover_design_names():
    assert set(I.STATE_INVARIANTS) | set(I.TRANSITION_INVARIANTS) | set(I.WORLD_INVARIANTS) | set(
        I.WORLD_TRANSITION_INVARIANTS
    ) == {
        "TypeOK", "PendingAndLeasedDisjoint", "AtMostOneLiveLeasePerSample", "NoScrubBeforeAck",
        "NothingResidentAfterAck", "ResidencyMatchesContents", "ResidencyWithinCapacity",
        "RedeliveryCountsDeliveries", "TerminalNoneMeansDrained", "StaleOpsChangeNothing", "PauseOnlyAtHigh",
        "ResumeOnlyAtLow", "NoFlapping", "CompletionIsAbsorbing", "LeaseLiveUntilDeadline", "BackpressureBound",
        "NoStuckProducer", "DeadlineWithinVisibility", "PendingIsFifo", "ParkedRefsArePut",
        "IntentsHoldCompletedData", "NoOldEpochLeaseLive", "StaleLeaseNeverLiveAgain", "LeaseLastsItsTimeout",
        "DeadLettersListed", "PauseFollowsHysteresis", "BlockedPutIsParked",
    }
    assert set(I.WITNESSES) == {"RePutDelivered"}


# -- transition properties -------------------------------------------------------


def test_stale_ops_change_nothing_flags_a_stale_op_that_changed_state():
    s, _ = good()
    changed = s._replace(now=s.now + 1)
    assert I.StaleOpsChangeNothing(C, s, s, "Ack", 0, False)
    assert I.StaleOpsChangeNothing(C, s, changed, "Ack", 0, True)
    assert not I.StaleOpsChangeNothing(C, s, changed, "Ack", 0, False)
    assert not I.StaleOpsChangeNothing(C, s, changed, "Fail", 0, False)


def test_pause_only_at_high_flags_an_early_pause():
    low = M.initial_state()._replace(resident_bytes=7)
    assert not I.PauseOnlyAtHigh(C, low, low._replace(paused=True), "TryPut", "x", None)
    at = low._replace(resident_bytes=8)
    assert I.PauseOnlyAtHigh(C, at, at._replace(paused=True), "TryPut", "x", None)


def test_resume_only_at_low_flags_an_early_resume():
    paused = M.initial_state()._replace(paused=True, resident_bytes=5)
    assert not I.ResumeOnlyAtLow(C, paused, paused._replace(paused=False), "TryPut", "x", None)
    at = paused._replace(resident_bytes=4)
    assert I.ResumeOnlyAtLow(C, at, at._replace(paused=False), "TryPut", "x", None)


def test_no_flapping_flags_an_empty_band():
    flat = M.make_config(visibility_timeout=5, store_high_watermark_bytes=5, store_low_watermark_bytes=4)
    flat = flat._replace(low=5)  # what an unvalidated low == high would do
    paused = M.initial_state()._replace(paused=True, resident_bytes=5)
    assert I.ResumeOnlyAtLow(flat, paused, paused._replace(paused=False), "TryPut", "x", None)
    assert not I.NoFlapping(flat, paused, paused._replace(paused=False), "TryPut", "x", None)
    assert I.NoFlapping(C, paused._replace(resident_bytes=4), paused._replace(paused=False, resident_bytes=4), "TryPut", "x", None)


def test_a_dead_lettered_id_put_again_is_not_a_violation():
    c = M.make_config(visibility_timeout=5, max_deliveries=1)
    s = A.store_put(c, M.initial_state(), "a", 4).state
    s = A.put(c, s, "a").state
    out = A.acquire(c, s)
    s = A.fail(c, out.state, out.value).state  # dead at the first failure
    assert s.dead == (("a", M.MAX_DELIVERIES_REASON),)
    s = A.store_put(c, s, "a", 4).state
    s = A.put(c, s, "a").state
    out = A.acquire(c, s)
    assert I.violated(c, out.state) == []
    s = A.dead_letter(c, out.state, out.value, "poison").state
    assert I.violated(c, s) == []


def test_pause_and_resume_judge_the_effective_residency():
    """D8: the bytes of refs parked in blocking puts, the stepping ref's own
    included, do not count against the watermarks."""
    s = M.initial_state()._replace(resident_bytes=10, parked=(("p", 3),))
    s = A.store_put(C, s._replace(resident_bytes=6), "x", 4).state  # resident 10: 3 parked, 4 own
    assert I.effective_residency(s, "x") == 3
    # pausing at an effective 3 (< high 8) is early, however high the store's residency
    assert not I.PauseOnlyAtHigh(C, s, s._replace(paused=True), "TryPut", "x", None)
    paused = s._replace(paused=True)
    assert I.ResumeOnlyAtLow(C, paused, s, "TryPut", "x", None)


def test_completion_is_absorbing_flags_an_acked_sample_moving_on():
    s, _ = good()
    assert I.CompletionIsAbsorbing(C, s, s, "Tick", None, None)
    revived = with_rec(s, "c", status=M.PENDING, resident=True)
    assert not I.CompletionIsAbsorbing(C, s, revived, "Fail", 0, True)
    stored_again = A.store_put(C, s, "c", 4).state  # a new incarnation starts with a store put (D5)
    assert I.CompletionIsAbsorbing(C, s, stored_again, "StorePut", 0, None)


def test_lease_live_until_deadline_flags_an_early_take_back():
    s, consumers = good()  # a and b leased at now 0 with deadline 5, held by consumers 0 and 1
    lease_a, lease_b = consumers[0].lease, consumers[1].lease
    assert A.is_live(s, lease_a) and A.is_live(s, lease_b)
    early = A._requeue(C, s, A.find(s, "b"))
    assert not I.LeaseLiveUntilDeadline(C, s, early, "ReclaimExpired", None, 1)
    assert I.LeaseLiveUntilDeadline(C, s, early, "Fail", lease_b, True)  # its holder may give it back
    assert not I.LeaseLiveUntilDeadline(C, s, early, "Fail", lease_a, True)  # a's holder may not end b's lease
    stale_b = lease_b._replace(redelivery_count=5)
    assert not I.LeaseLiveUntilDeadline(C, s, early, "Extend", stale_b, True)  # nor a stale copy of b's
    both = A._requeue(C, early, A.find(early, "a"))
    assert not I.LeaseLiveUntilDeadline(C, s, both, "Fail", lease_b, True)  # one holder, one lease


def test_pending_is_fifo_flags_a_requeue_at_the_head():
    s, _ = good()
    s = A.store_put(C, s, "d", 4).state
    s = A.put(C, s, "d").state  # pending: d
    i = A.find(s, "b")
    r = s.recs[i]
    head = s._replace(pending=("b",) + s.pending, recs=s.recs[:i] + (r._replace(status=M.PENDING, deadline=None),) + s.recs[i + 1:])
    assert not I.PendingIsFifo(C, s, head, "Fail", "b", True)
    leased = A.acquire(C, s)
    assert I.PendingIsFifo(C, s, leased.state, "Acquire", 0, None)
    requeued = A.fail(C, leased.state, leased.value).state  # the model's own fail appends at the tail
    assert I.PendingIsFifo(C, leased.state, requeued, "Fail", "a", True)
    assert I.PendingIsFifo(C._replace(fifo=False), s, head, "Fail", "b", True)  # any order: judged elsewhere


def test_backpressure_bound_and_no_stuck_producer_read_the_world():
    from refqueue.model.world import Node, make_world

    world = make_world(producers=2, samples=2, sample_bytes=1, high=2, low=1)
    s = M.initial_state()
    s = A.store_put(world.cfg, s, "s0", 1).state
    s = A.store_put(world.cfg, s, "s1", 1).state
    s = s._replace(paused=True, parked=(("s0", 1), ("s1", 1)))
    node = Node(s, (Consumer(None, False, False),), ("s0", "s1"), 2)
    assert I.NoStuckProducer(world, node)  # D8 admits on an empty queue
    assert I.BackpressureBound(world, node)
    full = s._replace(pending=("s0", "s1"), recs=tuple(r._replace(status=M.PENDING, incarnation=1) for r in s.recs))
    assert I.BackpressureBound(world, Node(full, node.consumers, (None, None), 2))  # 2 < high 2 + largest 1
    over = world._replace(sizes=(1, 1))._replace(cfg=world.cfg._replace(high=1))
    assert not I.BackpressureBound(over, Node(full, node.consumers, (None, None), 2))


def test_pause_follows_hysteresis_flags_a_pause_that_does_not_happen():
    at = M.initial_state()._replace(resident_bytes=8)  # the measure at high (8): the step must pause
    assert not I.PauseFollowsHysteresis(C, at, at, "TryPut", "x", None)
    assert I.PauseFollowsHysteresis(C, at, at._replace(paused=True), "TryPut", "x", None)
    band = M.initial_state()._replace(paused=True, resident_bytes=5)  # inside the band, paused: stays paused
    assert not I.PauseFollowsHysteresis(C, band, band._replace(paused=False), "TryPutLost", "x", None)
    assert I.PauseFollowsHysteresis(C, band, band, "TryPut", "x", None)
    assert I.PauseFollowsHysteresis(C, at, at, "Acquire", 0, None)  # only put steps decide
    parked = at._replace(parked=(("y", 4),))  # D8: another producer's parked ref does not count
    assert I.PauseFollowsHysteresis(C, parked, parked, "TryPut", "x", None)
    assert not I.PauseFollowsHysteresis(C, parked, parked._replace(paused=True), "TryPut", "x", None)


def test_dead_letters_listed_flags_a_dead_letter_missing_from_the_list():
    s, consumers = good()
    lease_a = consumers[0].lease  # a: delivered twice (max_deliveries 2), so its next fail dead-letters it
    out = A.fail(C, s, lease_a)
    assert A.rec_of(out.state, "a").status == M.DEAD and out.state.dead == (("a", M.MAX_DELIVERIES_REASON),)
    assert I.DeadLettersListed(C, s, out.state, "Fail", lease_a, True)
    assert not I.DeadLettersListed(C, s, out.state._replace(dead=()), "Fail", lease_a, True)  # missing
    twice = out.state._replace(dead=out.state.dead * 2)
    assert not I.DeadLettersListed(C, s, twice, "Fail", lease_a, True)  # listed twice
    wrong = out.state._replace(dead=(("b", M.MAX_DELIVERIES_REASON),))
    assert not I.DeadLettersListed(C, s, wrong, "Fail", lease_a, True)  # the wrong sample
    reason = out.state._replace(dead=(("a", "poison"),))
    assert not I.DeadLettersListed(C, s, reason, "Fail", lease_a, True)  # a fail's reason is max_deliveries
    poison = A.dead_letter(C, s, consumers[1].lease, "poison")
    assert I.DeadLettersListed(C, s, poison.state, "DeadLetter", consumers[1].lease, True)
    assert not I.DeadLettersListed(C, s, s._replace(dead=(("b", "poison"),)), "Ack", None, True)  # listed, not dead


def test_lease_lasts_its_timeout_flags_a_short_lease():
    from refqueue.model.world import Node, make_world

    world = make_world(samples=1, consumers=1, visibility_timeout=2, horizon=2, extend_by=(3,))
    s = A.store_put(world.cfg, M.initial_state(), "s0", 1).state
    s = A.put(world.cfg, s, "s0").state
    idle = (Consumer(None, False, False),)
    before = Node(s, idle, (None,), 1)
    out = A.acquire(world.cfg, s)
    held = (Consumer(out.value, False, False),)
    after = Node(out.state, held, (None,), 1)
    assert A.rec_of(out.state, "s0").deadline == 2
    assert I.LeaseLastsItsTimeout(world, before, after, "Acquire", 0, out.value)
    short = Node(with_rec(out.state, "s0", deadline=1), held, (None,), 1)
    assert not I.LeaseLastsItsTimeout(world, before, short, "Acquire", 0, out.value)
    later = A.tick(world.cfg, out.state, 1).state  # now 1, deadline 2
    extended = A.extend(world.cfg, later, out.value, 3)
    assert I.LeaseLastsItsTimeout(world, Node(later, held, (None,), 1), Node(extended.state, held, (None,), 1),
                                  "Extend", (0, 3), True)
    assert not I.LeaseLastsItsTimeout(world, Node(later, held, (None,), 1), Node(extended.state, held, (None,), 1),
                                      "Extend", 0, True)  # the world's plain Extend is by the timeout (2), not 3
    aged = Node(with_rec(later, "s0", deadline=1), held, (None,), 1)
    assert I.LeaseLastsItsTimeout(world, Node(later, held, (None,), 1), aged, "Tick", None, None)  # time ages it
    assert not I.LeaseLastsItsTimeout(world, Node(later, held, (None,), 1), aged, "Get", 0, True)


def test_re_put_delivered_is_reached_by_the_explorer_and_only_after_a_completion():
    from refqueue.model.explorer import explore
    from refqueue.model.world import make_world

    result = explore(make_world(samples=("s0", "s0"), consumers=1), goals=I.WITNESSES, stop_on_violation=False)
    assert result.verdict == "ok"
    labels = [step.label() for step in result.goals["RePutDelivered"]]
    assert labels == ["Init", "StorePut(0)", "TryPut(0)", "Acquire(0)", "Ack(0)", "StorePut(0)", "TryPut(0)", "Acquire(0)"]
    once = explore(make_world(samples=("s0", "s1"), consumers=1), goals=I.WITNESSES, stop_on_violation=False)
    assert "RePutDelivered" not in once.goals and once.verdict == "ok"


def test_blocked_put_is_parked_flags_a_waiting_producer_left_out_of_parked():
    cfg = M.make_config(visibility_timeout=5, store_high_watermark_bytes=2, store_low_watermark_bytes=1)
    s = A.store_put(cfg, M.initial_state(), "a", 1).state
    s = A.put(cfg, s, "a").state  # work in the queue, so a paused put is not admitted
    s = A.store_put(cfg, s, "b", 1).state
    s = A.store_put(cfg, s, "c", 1).state
    out = A.try_put(cfg, s, "b", 1)
    assert not out.value.enqueued and ("b", 1) in out.state.parked
    assert I.BlockedPutIsParked(cfg, s, out.state, "TryPut", "b", out.value)
    unparked = out.state._replace(parked=())
    assert not I.BlockedPutIsParked(cfg, s, unparked, "TryPut", "b", out.value)
    admitted = A.try_put(cfg, M.initial_state(), "x", 0)
    assert I.BlockedPutIsParked(cfg, M.initial_state(), admitted.state, "TryPut", "x", admitted.value)
