"""Decisions D1–D7 of DESIGN.md on the production queue, one thread at a time
(the threaded halves of D3, D4 and D6 are in ``test_queue_threads.py``)."""

from __future__ import annotations

import copy
import re

import pytest
from bytes_store import BytesStore

from refqueue.errors import DuplicateSample, PutAborted, QueueClosed, ReplayedSample, StoreClosed
from refqueue.queue import DeadLetter, Lease, SampleRefQueue, VisibilityTimeout
from refqueue._deadlines import SLACK


def exact(message: str) -> str:
    return "^" + re.escape(message) + "$"


def observed(q: SampleRefQueue, store: BytesStore) -> tuple:
    return (q.pending_count(), q.outstanding_count(), q.is_closed, q.is_drained, q.is_paused,
            q.dead_letters(), store.health(), tuple(store.scrubs))


# -- D1: stale calls change nothing and say so; identity is (epoch, lease_id) ----


def test_d1_stale_calls_after_reclaim_return_false_and_change_nothing(make_queue, stored, store, clock):
    q = make_queue()
    q.put(stored("a"))
    old = q.acquire_nowait()
    clock.advance(10.0)
    assert q.reclaim_expired() == 1
    new = q.acquire_nowait()
    assert new.redelivery_count == 1 and new != old
    before = observed(q, store)
    assert q.ack(old) is False
    assert q.fail(old) is False
    assert q.extend(old, 5.0) is False
    assert q.dead_letter(old, "poison") is False
    assert observed(q, store) == before
    assert q.ack(new) is True
    assert q.ack(new) is False  # an acked lease is stale too


@pytest.mark.parametrize("twin", [copy.copy, copy.deepcopy, lambda lease: Lease.from_json(lease.to_json())])
def test_d1_a_copied_or_rebuilt_lease_acks(make_queue, stored, store, twin):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    assert q.ack(twin(lease)) is True
    assert q.ack(lease) is False
    assert store.health().resident_bytes == 0


@pytest.mark.parametrize("twin", [copy.copy, lambda lease: Lease.from_json(lease.to_json())])
def test_d1_a_copied_lease_fails_and_extends(make_queue, stored, clock, twin):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    assert q.extend(twin(lease), 50.0) is True
    clock.advance(49.0)
    assert q.reclaim_expired() == 0
    assert q.fail(twin(lease)) is True
    assert q.pending_count() == 1 and q.acquire_nowait().redelivery_count == 1


def test_d1_a_hand_made_lease_never_takes_a_pending_sample(make_queue, stored, store):
    q = make_queue()
    q.put(stored("a"))
    forged = Lease(stored("b"), 0.0, VisibilityTimeout(), 0, 10**6, q.epoch)  # an id never minted
    forged_a = Lease(q.acquire_nowait().ref, 0.0, VisibilityTimeout(), 0, 10**6, q.epoch)
    q.put(stored("c"))
    assert q.ack(forged) is False and q.fail(forged_a) is False
    assert q.pending_count() == 1 and q.outstanding_count() == 1
    # an id no queue mints (ids count up from 1) is rejected outright
    with pytest.raises(ValueError, match=r"^ack got a lease with lease_id=0, which no queue mints"):
        q.ack(Lease(stored("d"), 0.0, VisibilityTimeout(), 0, 0, q.epoch))
    assert q.pending_count() == 1 and q.outstanding_count() == 1


# -- D2: data leaves the store when the live ack commits, never otherwise ----------


def test_d2_fail_reclaim_and_stale_calls_never_scrub(make_queue, stored, store, clock):
    q = make_queue()
    q.put(stored("a", 8))
    lease = q.acquire_nowait()
    assert q.fail(lease) is True
    lease = q.acquire_nowait()
    clock.advance(10.0)
    assert q.reclaim_expired() == 1
    assert q.ack(lease) is False
    assert store.scrubs == [] and store.health().resident_bytes == 8
    assert q.ack(q.acquire_nowait()) is True
    assert store.scrubs == ["a"] and store.health().resident_bytes == 0


def test_d2_a_live_ack_scrubs_before_it_returns_and_holders_keep_their_data(make_queue, stored, store):
    q = make_queue()
    q.put(stored("a", 3))
    lease = q.acquire_nowait()
    tensors, handle = store.get(lease.ref)
    assert q.ack(lease) is True
    assert store.scrubs == ["a"] and store.health() .sample_count == 0
    assert tensors["aux_hidden_states"] == b"xxx"  # the holder's data outlives the scrub
    store.release(handle)  # a late release is harmless
    assert store.health().resident_bytes == 0


def test_d2_an_ack_the_store_cannot_scrub_is_rejected_with_nothing_changed(make_queue, stored, store):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    store.close()
    with pytest.raises(StoreClosed):
        q.ack(lease)
    assert q.outstanding_count() == 1
    assert q.fail(lease) is True  # still the live lease
    assert q.pending_count() == 1


def test_d2_dead_lettering_scrubs(make_queue, stored, store):
    q = make_queue()
    q.put(stored("a", 5))
    lease = q.acquire_nowait()
    assert q.dead_letter(lease, "poison") is True
    assert store.scrubs == ["a"] and store.health().resident_bytes == 0
    assert q.dead_letters() == [DeadLetter(lease.ref, "poison", 1)]


# -- D3: a terminal None only when closed and drained ----------------------------------


@pytest.mark.timeout(60)
def test_d3_acquire_on_a_drained_queue_returns_none_at_once(make_queue):
    q = make_queue()
    q.close()
    assert q.is_drained
    assert q.acquire(poll_interval=3600) is None  # waiting the interval would time the test out


def test_d3_closed_with_work_outstanding_is_not_drained(make_queue, stored, clock):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    q.close()
    assert q.is_closed and not q.is_drained
    assert q.acquire(poll_interval=0.001) is None  # transient: the lease may come back
    clock.advance(10.0)
    assert q.reclaim_expired() == 1  # the anchor's consumer would have stopped and lost this
    again = q.acquire_nowait()
    assert again.ref == lease.ref and again.redelivery_count == 1
    assert not q.is_drained
    assert q.ack(again) is True
    assert q.is_drained and q.acquire_nowait() is None


def test_d3_close_is_idempotent_and_refuses_puts(make_queue, stored):
    q = make_queue()
    q.put(stored("a"))
    q.close()
    q.close()
    with pytest.raises(QueueClosed, match=exact("put('b') after close(); the queue takes no more refs")):
        q.put(stored("b"))
    with pytest.raises(QueueClosed, match=exact(
        "put_blocks_until_below('b') after close(); the queue takes no more refs"
    )):
        q.put_blocks_until_below(q.store.ref_of("b"))
    assert q.acquire_nowait().ref.sample_id == "a"  # what was pending still drains


# -- D4: hysteresis, on the effective pair, callbacks once per transition -----------


def one_step(q, ref):
    """One step of put_blocks_until_below: True if enqueued, False if paused."""
    try:
        q.put_blocks_until_below(ref, abort_when=lambda: True)
    except PutAborted:
        return False
    return True


def test_d4_hysteresis_pauses_at_high_and_resumes_only_at_low(store, stored, clock):
    # D8: a step judges the effective residency, the store's less the stepping ref's own bytes
    events = []
    q = SampleRefQueue(store, None, 10, 4, lambda h: events.append(("pause", h.resident_bytes)),
                       lambda h: events.append(("resume", h.resident_bytes)), clock=clock)
    assert one_step(q, stored("a", 6)) and not q.is_paused  # effective 0
    assert one_step(q, stored("c", 6)) and not q.is_paused  # effective 6 < 10
    assert not one_step(q, stored("b", 4))  # effective 12 >= high: pause, work pending: wait
    assert q.is_paused and events == [("pause", 16)]
    assert not one_step(q, store.ref_of("b"))  # still 12: stays paused, no event
    q.ack(q.acquire_nowait())  # effective 6: inside the band, still paused
    assert not one_step(q, store.ref_of("b"))
    assert events == [("pause", 16)]
    q.ack(q.acquire_nowait())  # effective 0 <= low
    assert one_step(q, store.ref_of("b"))
    assert not q.is_paused and events == [("pause", 16), ("resume", 4)]
    assert q.pending_count() == 1


def test_d4_the_band_keeps_the_current_state(store, stored):
    events = []
    q = SampleRefQueue(store, None, 10, 4, lambda h: events.append("pause"), lambda h: events.append("resume"))
    q.put(stored("w", 6))
    stored("big", 12)  # stored, never enqueued (an orphan)
    assert not one_step(q, stored("x", 1))  # effective 18 >= 10: pause
    store.scrub(store.ref_of("big"))  # effective 6: in the band, stays paused
    assert not one_step(q, store.ref_of("x"))
    q.ack(q.acquire_nowait())  # effective 0: resume
    assert one_step(q, store.ref_of("x"))
    stored("mid", 6)  # effective 7: in the band, not paused -> stays unpaused
    assert one_step(q, stored("y", 0))
    assert events == ["pause", "resume"]


def test_d4_the_plain_put_ignores_and_keeps_the_pause_flag(store, stored):
    q = SampleRefQueue(store, None, 10, 4)
    q.put(stored("w", 1))
    stored("big", 20)
    assert not one_step(q, stored("a", 1)) and q.is_paused
    q.put(store.ref_of("a"))  # a plain put never looks at backpressure
    assert q.is_paused and q.pending_count() == 2


def test_d4_mixed_pair_uses_queue_high_and_store_low(stored):
    store = BytesStore(high_watermark_bytes=100, low_watermark_bytes=3)
    events = []
    q = SampleRefQueue(store, high_watermark_bytes=8, on_pause=lambda h: events.append(h.high_watermark_hit))

    def put(sample_id, nbytes):
        return store.put(sample_id, {"aux_hidden_states": b"x" * nbytes, "input_ids": b"", "attention_mask": b"",
                                     "loss_mask": b""})

    q.put(put("w", 8))
    assert not one_step(q, put("a", 1))  # effective 8 >= queue high 8, though the store's own flag says no
    assert events == [False]


def test_d4_abort_message_names_the_residency_and_the_band(store, stored):
    q = SampleRefQueue(store, None, 10, 4)
    q.put(stored("w", 1))
    stored("big", 11)
    ref = stored("a", 1)
    with pytest.raises(PutAborted, match=exact(
        "put_blocks_until_below('a'): abort_when() returned True while the producer is paused (the store "
        "holds 13 bytes, 12 of them not held by blocked producers; paused at >= 10, resumes at <= 4); the "
        "ref was not enqueued"
    )):
        q.put_blocks_until_below(ref, abort_when=lambda: True)
    assert q.pending_count() == 1 and PutAborted.KIND == "aborted"


def test_d8_an_empty_queue_admits_while_the_pause_stands(store, stored):
    events = []
    q = SampleRefQueue(store, None, 10, 4, lambda h: events.append("pause"), lambda h: events.append("resume"))
    stored("big", 12)  # an orphan nobody will ever enqueue
    assert one_step(q, stored("a", 1))  # effective 12 >= 10: pause; but nothing is pending or leased
    assert q.is_paused and events == ["pause"] and q.pending_count() == 1


def test_d4_without_watermarks_never_pauses(make_queue, stored):
    q = make_queue()
    assert one_step(q, stored("a", 10**6)) and not q.is_paused


def test_d4_callbacks_may_call_back_into_the_queue(store, stored):
    seen = []

    def on_pause(health):
        seen.append(("pause", q.pending_count(), q.is_paused))
        lease = q.acquire_nowait()
        q.ack(lease)  # frees the big sample
        seen.append(one_step(q, store.ref_of("b")))  # a nested step: resumes and enqueues

    def on_resume(health):
        seen.append(("resume", health.resident_bytes, q.is_paused))

    q = SampleRefQueue(store, None, 10, 4, on_pause, on_resume)
    q.put(stored("big", 12))
    with pytest.raises(PutAborted):
        q.put_blocks_until_below(stored("b", 1), abort_when=lambda: True)
    # the nested step's resume is delivered after on_pause returns, in order
    assert seen == [("pause", 1, True), True, ("resume", 1, False)]
    assert q.pending_count() == 1


def test_d4_a_failing_callback_propagates_after_the_transition(store, stored):
    def on_pause(health):
        raise RuntimeError("dashboard down")

    q = SampleRefQueue(store, None, 10, 4, on_pause)
    stored("big", 12)
    with pytest.raises(RuntimeError, match=r"^dashboard down$"):
        q.put_blocks_until_below(stored("a", 1), abort_when=lambda: True)
    assert q.is_paused  # the transition committed


# -- D5: dedup window -------------------------------------------------------------------


def test_d5_a_completed_id_may_be_put_again_by_default(make_queue, stored):
    q = make_queue()
    ref = stored("a")
    q.put(ref)
    lease = q.acquire_nowait()
    q.fail(lease)
    q.ack(q.acquire_nowait())
    q.put(stored("a"))
    again = q.acquire_nowait()
    assert again.redelivery_count == 0 and again.lease_id not in (lease.lease_id,)


def test_d5_live_ids_are_duplicates(make_queue, stored):
    q = make_queue()
    q.put(stored("a"))
    with pytest.raises(DuplicateSample, match=exact(
        "put('a'): that sample is already pending (already present in this queue); put it again only after its "
        "lease is acked or it is "
        "dead-lettered"
    )):
        q.put(q.store.ref_of("a"))
    q.acquire_nowait()
    with pytest.raises(DuplicateSample, match=exact(
        "put_blocks_until_below('a'): that sample is already leased (already present in this queue); put it "
        "again only after its lease is "
        "acked or it is dead-lettered"
    )):
        q.put_blocks_until_below(q.store.ref_of("a"))
    assert q.pending_count() == 0 and q.outstanding_count() == 1


def test_d5_the_dedup_window_rejects_recent_replays_and_slides(make_queue, stored):
    q = make_queue(dedup_window=2)
    for sid in ("a", "b"):
        q.put(stored(sid))
    q.ack(q.acquire_nowait())
    q.dead_letter(q.acquire_nowait(), "poison")  # dead letters complete too
    for sid in ("a", "b"):
        with pytest.raises(ReplayedSample, match=exact(
            f"put({sid!r}): that sample completed within the last 2 (dedup_window); a restarted producer is "
            f"replaying it, skip it"
        )):
            q.put(stored(sid))
    assert issubclass(ReplayedSample, DuplicateSample) and ReplayedSample.KIND == "replay"
    q.put(stored("c"))
    q.ack(q.acquire_nowait())  # c pushes a out of the window
    q.put(q.store.ref_of("a"))
    with pytest.raises(ReplayedSample):
        q.put(q.store.ref_of("b"))
    assert q.pending_count() == 1


# -- D7: extend, max_deliveries, dead letters ------------------------------------------


def test_d7_extend_moves_the_deadline(make_queue, stored, clock):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    assert lease.deadline == 10.0
    clock.advance(8.0)
    assert q.extend(lease) is True  # default: the visibility timeout, from now
    clock.advance(9.0)
    assert q.reclaim_expired() == 0
    clock.advance(1.0)
    assert q.reclaim_expired() == 1


def test_d7_an_expired_lease_not_yet_reclaimed_is_still_live(make_queue, stored, clock):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    clock.advance(100.0)
    assert q.extend(lease, 1.0) is True
    assert q.reclaim_expired() == 0
    clock.advance(1.0)
    assert q.reclaim_expired() == 1


def test_d7_max_deliveries_dead_letters_on_fail_and_on_reclaim(make_queue, stored, store, clock):
    q = make_queue(max_deliveries=2)
    q.put(stored("a", 3))
    q.put(stored("b", 5))
    assert q.fail(q.acquire_nowait()) is True  # a: 1 delivery, requeued
    lease_b = q.acquire_nowait()
    assert q.fail(lease_b) is True  # b: requeued
    a2 = q.acquire_nowait()
    assert a2.redelivery_count == 1
    assert q.fail(a2) is True  # a delivered twice: dead
    b2 = q.acquire_nowait()
    clock.advance(10.0)
    assert q.reclaim_expired() == 1  # b delivered twice, reclaimed: dead
    assert q.dead_letters() == [DeadLetter(a2.ref, "max_deliveries", 2), DeadLetter(b2.ref, "max_deliveries", 2)]
    assert store.scrubs == ["a", "b"] and store.health().resident_bytes == 0
    assert q.pending_count() == q.outstanding_count() == 0


# -- reclaim order and cost ---------------------------------------------------------------


def test_reclaim_goes_by_deadline_then_sample_id(make_queue, stored, clock):
    q = make_queue()
    for sid in ("c", "b", "a", "d"):
        q.put(stored(sid))
    leases = {lease.ref.sample_id: lease for lease in (q.acquire_nowait() for _ in range(4))}
    q.extend(leases["d"], 5.0)  # d expires first
    clock.advance(10.0)
    assert q.reclaim_expired() == 4
    assert [q.acquire_nowait().ref.sample_id for _ in range(4)] == ["d", "a", "b", "c"]


def test_the_deadline_heap_stays_bounded(make_queue, stored, clock):
    q = make_queue()
    refs = [stored(f"s{i}", 1) for i in range(8)]
    for _ in range(3 * SLACK):
        for ref in refs[:3]:
            q.put(ref)
        held = [q.acquire_nowait() for _ in range(3)]
        for lease in held:
            q.extend(lease, 20.0)
            q.ack(lease)
    assert len(q._deadlines) <= 2 * SLACK + 1
    q.put(refs[0])
    q.fail(q.acquire_nowait())
    clock.advance(100.0)
    assert q.reclaim_expired() == 0  # stale entries never reclaim a pending sample
