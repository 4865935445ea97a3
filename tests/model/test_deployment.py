"""The deployment over two systems in the model (D9): two-step completions
with scrub intents, lost replies and their retries, lossy restarts with a new
epoch and the operator's recovery."""

import pytest

from refqueue import model as M
from refqueue.model import actions as A
from refqueue.model import invariants as I
from refqueue.model.world import Consumer, Node, initial_node, make_world, successors

TWO_STEP = M.make_config(visibility_timeout=2, max_deliveries=1, two_step_ack=True)
IN_PROCESS = M.make_config(visibility_timeout=2, max_deliveries=1)


def leased(cfg, sid="a", nbytes=3):
    """``sid`` stored, put and acquired: (state, lease)."""
    s = A.store_put(cfg, M.initial_state(), sid, nbytes).state
    s = A.put(cfg, s, sid).state
    out = A.acquire(cfg, s)
    return out.state, out.value


def holds(cfg, state, consumers=()):
    assert I.violated(cfg, state, consumers) == []


# -- two-step completions ----------------------------------------------------------


def test_a_two_step_ack_commits_with_an_intent_and_the_scrub_comes_later():
    s, lease = leased(TWO_STEP)
    acked = A.ack(TWO_STEP, s, lease)
    assert acked.value is True
    r = A.rec_of(acked.state, "a")
    assert (r.status, r.resident, acked.state.intents, acked.state.resident_bytes) == (M.ACKED, True, ("a",), 3)
    holds(TWO_STEP, acked.state)
    # the re-put of the same id waits until the old data is gone
    assert A.store_put(TWO_STEP, acked.state, "a", 3).error.kind == "duplicate"
    scrubbed = A.scrub_intent(TWO_STEP, acked.state, "a")
    assert scrubbed.value is True
    assert (A.rec_of(scrubbed.state, "a").resident, scrubbed.state.intents, scrubbed.state.resident_bytes) == (False, (), 0)
    holds(TWO_STEP, scrubbed.state)
    # once: a second scrub (a collector after the client) finds nothing to do
    again = A.scrub_intent(TWO_STEP, scrubbed.state, "a")
    assert again.value is False and again.state is scrubbed.state
    assert A.store_put(TWO_STEP, scrubbed.state, "a", 3).error is None


def test_the_in_process_ack_scrubs_in_the_same_step():
    s, lease = leased(IN_PROCESS)
    acked = A.ack(IN_PROCESS, s, lease).state
    assert (A.rec_of(acked, "a").resident, acked.intents, acked.resident_bytes) == (False, (), 0)
    assert A.scrub_intent(IN_PROCESS, acked, "a").value is False


@pytest.mark.parametrize("how", ["fail", "reclaim"])
def test_dead_lettering_in_a_deployment_records_an_intent(how):
    s, lease = leased(TWO_STEP)  # max_deliveries=1: the first give-back dead-letters
    if how == "fail":
        s = A.fail(TWO_STEP, s, lease).state
    else:
        s = A.reclaim_expired(TWO_STEP, A.tick(TWO_STEP, s, 2).state).state
    r = A.rec_of(s, "a")
    assert (r.status, r.resident, s.intents, s.dead) == (M.DEAD, True, ("a",), (("a", M.MAX_DELIVERIES_REASON),))
    holds(TWO_STEP, s)


def test_intent_and_residency_invariants_flag_what_the_two_steps_forbid():
    s, lease = leased(TWO_STEP)
    acked = A.ack(TWO_STEP, s, lease).state
    no_intent = acked._replace(intents=())
    assert "NothingResidentAfterAck" in I.violated(TWO_STEP, no_intent)
    gone = A.scrub_intent(TWO_STEP, acked, "a").state
    assert "IntentsHoldCompletedData" in I.violated(TWO_STEP, gone._replace(intents=("a",)))
    assert "IntentsHoldCompletedData" in I.violated(IN_PROCESS, acked)  # the in-process queue records none


def test_completion_stays_absorbing_while_only_its_data_leaves():
    s, lease = leased(TWO_STEP)
    acked = A.ack(TWO_STEP, s, lease).state
    scrubbed = A.scrub_intent(TWO_STEP, acked, "a").state
    assert I.CompletionIsAbsorbing(TWO_STEP, acked, scrubbed, "ScrubIntent", "a", True)
    lost = A.restart_lossy(TWO_STEP, acked).state
    assert I.CompletionIsAbsorbing(TWO_STEP, acked, lost, "RestartLossy", None, None)
    revived = A._with_rec(acked, 0, A.rec_of(acked, "a")._replace(status=M.PENDING))
    assert not I.CompletionIsAbsorbing(TWO_STEP, acked, revived, "Recover", "a", True)


# -- lost replies ----------------------------------------------------------------------


def test_a_retried_ack_after_a_lost_reply_is_stale():
    s, lease = leased(TWO_STEP)
    committed = A.ack(TWO_STEP, s, lease).state  # the reply was lost
    assert A.lease_state(committed, lease) == "acked"
    retry = A.ack(TWO_STEP, committed, lease)
    assert retry.value is False and retry.state is committed
    assert A.fail(TWO_STEP, committed, lease).value is False
    assert A.lease_state(s, lease) == "live"


def test_a_retried_put_changes_nothing_whatever_became_of_the_sample():
    s = A.store_put(TWO_STEP, M.initial_state(), "a", 1).state
    assert A.put_retry(TWO_STEP, s, "a").error.kind == "invalid"  # nothing was put yet
    put = A.put(TWO_STEP, s, "a").state  # the reply was lost
    for state in (put, A.acquire(TWO_STEP, put).state):
        out = A.put_retry(TWO_STEP, state, "a")
        assert out.value is True and out.state is state
    s2, lease = leased(TWO_STEP, nbytes=1)
    done = A.scrub_intent(TWO_STEP, A.ack(TWO_STEP, s2, lease).state, "a").state
    out = A.put_retry(TWO_STEP, done, "a")
    assert out.state is done  # not enqueued again: its data is gone


def test_the_world_offers_lost_replies_and_retries():
    world = make_world(samples=1, consumers=1, two_step_ack=True, lost_replies=True)
    node = initial_node(world)
    node = next(t.node for t in successors(world, node) if t.action == "StorePut")
    lost_put = next(t for t in successors(world, node) if t.action == "TryPutLost")
    assert lost_put.node.producers == ("s0",) and lost_put.node.state.pending == ("s0",)
    retry = [t for t in successors(world, lost_put.node) if t.arg == 0 and t.action in ("PutRetry", "TryPut")]
    assert [(t.action, t.node.producers, t.node.state) for t in retry] == [("PutRetry", (None,), lost_put.node.state)]
    lost_acquire = next(t for t in successors(world, lost_put.node) if t.action == "AcquireLost")
    assert lost_acquire.node.consumers == node.consumers  # nobody holds the lease
    assert A.rec_of(lost_acquire.node.state, "s0").status == M.LEASED


def test_a_producer_retrying_an_id_keeps_its_re_put_waiting():
    world = make_world(producers=2, samples=("s0", "s0"), consumers=1, two_step_ack=True, lost_replies=True)
    s = A.store_put(world.cfg, M.initial_state(), "s0", 1).state
    s = A.put(world.cfg, s, "s0").state
    s, lease = A.acquire(world.cfg, s).state, A.acquire(world.cfg, s).value
    s = A.scrub_intent(world.cfg, A.ack(world.cfg, s, lease).state, "s0").state
    node = Node(s, (Consumer(None, False, False),), ("s0", None), 1)  # p0 still retrying its put of s0
    moves = {(t.action, t.arg) for t in successors(world, node)}
    assert ("PutRetry", 0) in moves and ("StorePut", 1) not in moves
    after = next(t.node for t in successors(world, node) if t.action == "PutRetry")
    assert ("StorePut", 1) in {(t.action, t.arg) for t in successors(world, after)}


# -- lossy restarts ----------------------------------------------------------------------


def test_a_lossy_restart_moves_to_a_new_epoch_and_forgets_what_was_in_flight():
    cfg = M.make_config(visibility_timeout=2, max_deliveries=2, two_step_ack=True)
    s, lease_a = leased(cfg, "a", 1)
    s = A.store_put(cfg, s, "b", 1).state
    s = A.put(cfg, s, "b").state
    restarted = A.restart_lossy(cfg, s).state
    assert restarted.epoch == 1 and restarted.pending == () and restarted.intents == ()
    for sid in ("a", "b"):
        assert A.rec_of(restarted, sid) == M.Rec(M.LOST, 0, 0, 0, None, True, 1)
    assert restarted.resident_bytes == 2  # the store is another system
    holds(cfg, restarted)
    # the old lease is stale, not foreign: its calls answer False and change nothing
    for call in (A.ack, A.fail):
        out = call(cfg, restarted, lease_a)
        assert (out.error, out.value, out.state) == (None, False, restarted)
    assert A.extend(cfg, restarted, lease_a, 1).value is False
    assert A.lease_state(restarted, lease_a) == "gone"
    # a lease of another queue is still foreign
    other = lease_a._replace(epoch="elsewhere")
    assert A.ack(cfg, restarted, other).error.kind == "foreign"
    assert A.ack(cfg, s, lease_a._replace(epoch=M.lease_epoch(cfg, 1))).error.kind == "foreign"  # not yet issued
    # the operator re-puts what was forgotten; the new lease carries the new epoch
    recovered = A.recover(cfg, restarted, "a").state
    assert A.rec_of(recovered, "a") == M.Rec(M.PENDING, 1, 0, 0, None, True, 1)
    out = A.acquire(cfg, recovered)
    assert out.value == M.ModelLease("model#1", "a", 1, 0) and out.value != lease_a
    assert not A.is_live(out.state, lease_a) and A.is_live(out.state, out.value)
    before = Node(recovered, (Consumer(lease_a, False, False),))
    after = Node(out.state, (Consumer(lease_a, False, False),))
    assert I.StaleLeaseNeverLiveAgain(None, before, after, "Acquire", 1, out.value)
    assert I.NoOldEpochLeaseLive(cfg, out.state, after.consumers)


def test_a_restart_forgets_intents_and_recovery_delivers_again():
    s, lease = leased(TWO_STEP, nbytes=1)
    acked = A.ack(TWO_STEP, s, lease).state
    restarted = A.restart_lossy(TWO_STEP, acked).state
    assert A.rec_of(restarted, "a").status == M.LOST and restarted.intents == ()
    holds(TWO_STEP, restarted)  # the data is kept for the recovery
    assert A.recover(TWO_STEP, restarted, "a").state.pending == ("a",)


def test_recover_takes_only_lost_samples_and_not_after_close():
    s, _ = leased(TWO_STEP)
    assert A.recover(TWO_STEP, s, "a").error.kind == "invalid"
    restarted = A.restart_lossy(TWO_STEP, s).state
    assert A.recover(TWO_STEP, A.close(TWO_STEP, restarted).state, "a").error.kind == "closed"


def test_stale_lease_never_live_again_flags_a_revived_lease():
    s, lease = leased(IN_PROCESS)
    stale = A.fail(IN_PROCESS, s, lease).state  # max_deliveries=1: dead
    revived = A._with_rec(s, 0, A.rec_of(s, "a"))  # the same delivery live again
    before, after = Node(stale, (Consumer(lease, False, False),)), Node(revived, (Consumer(lease, False, False),))
    assert not I.StaleLeaseNeverLiveAgain(None, before, after, "Recover", "a", True)


def test_no_old_epoch_lease_live_flags_a_queue_that_accepts_one(monkeypatch):
    s, lease = leased(IN_PROCESS)
    restarted = A.restart_lossy(IN_PROCESS, s).state
    recovered = A.acquire(IN_PROCESS, A.recover(IN_PROCESS, restarted, "a").state).state
    consumers = (Consumer(lease, False, False),)
    assert I.NoOldEpochLeaseLive(IN_PROCESS, recovered, consumers)
    monkeypatch.setattr(
        A, "is_live", lambda state, l: A.rec_of(state, l.sample_id).status == M.LEASED
        and (A.rec_of(state, l.sample_id).incarnation, A.rec_of(state, l.sample_id).redeliveries)
        == (l.incarnation, l.redelivery_count),
    )
    assert not I.NoOldEpochLeaseLive(IN_PROCESS, recovered, consumers)


# -- arguments ------------------------------------------------------------------------------


def test_deployment_options_are_validated():
    with pytest.raises(ValueError, match=r"epoch must not contain '#'"):
        M.make_config(epoch="q#1")
    with pytest.raises(TypeError, match="two_step_ack must be a bool"):
        M.make_config(two_step_ack=1)
    with pytest.raises(ValueError, match="lost_replies must be a bool"):
        make_world(lost_replies="yes")
    with pytest.raises(ValueError, match="max_restarts must be an int >= 0"):
        make_world(max_restarts=-1)
    assert A.scrub_intent(TWO_STEP, M.initial_state(), "").error.kind == "invalid"


def test_the_deployment_world_reaches_a_consumer_killed_between_commit_and_scrub():
    # a client killed after its commit, before its own scrub: the intent stays
    # for anyone to collect (the world's ScrubIntent), as after a lost reply
    from refqueue.model.explorer import build_graph

    world = make_world(samples=1, consumers=1, horizon=1, two_step_ack=True, lost_replies=True)
    graph = build_graph(world)
    crashed = [
        graph.nodes[dst] for src, action, _, dst, _ in graph.edges
        if action == "Crash" and graph.nodes[src].state.intents
        and graph.nodes[src].consumers[0].lease.sample_id in graph.nodes[src].state.intents
    ]
    assert crashed  # AckLost, then the consumer dies holding the acked lease
    assert all(n.consumers[0].lease is None and n.state.intents == ("s0",) for n in crashed)
    assert all(any(t.action == "ScrubIntent" for t in successors(world, n)) for n in crashed)
