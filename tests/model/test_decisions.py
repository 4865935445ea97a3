"""Each design decision D1–D7 of DESIGN.md, on the reference model."""

import pytest

from refqueue import model as M
from refqueue.model import actions as A


def cfg(**kw):
    kw.setdefault("visibility_timeout", 10)
    return M.make_config(**kw)


def ok(outcome):
    assert outcome.error is None, outcome.error
    return outcome.state, outcome.value


def stored_and_put(c, s, *ids, nbytes=4):
    for sid in ids:
        s, _ = ok(A.store_put(c, s, sid, nbytes))
        s, _ = ok(A.put(c, s, sid))
    return s


def leased(c, s, sid="a"):
    s = stored_and_put(c, s, sid)
    return ok(A.acquire(c, s))


# -- D1: stale ops change nothing and say so; identity is the delivery ---------


def test_d1_stale_ack_after_reclaim_returns_false_and_changes_nothing():
    c = cfg()
    s, old = leased(c, M.initial_state())
    s, _ = ok(A.tick(c, s, 10))
    s, n = ok(A.reclaim_expired(c, s))
    assert n == 1
    s, new = ok(A.acquire(c, s))
    assert new.redelivery_count == 1 and new != old
    for action in (A.ack, A.fail):
        out = A.ack(c, s, old) if action is A.ack else A.fail(c, s, old)
        assert out.value is False and out.state is s
    out = A.extend(c, s, old, 5)
    assert out.value is False and out.state is s
    out = A.dead_letter(c, s, old, "poison")
    assert out.value is False and out.state is s
    s, acked = ok(A.ack(c, s, new))
    assert acked is True
    assert A.ack(c, s, new).value is False  # an ack of an acked lease is stale too


def test_d1_a_copy_of_the_lease_acks():
    c = cfg()
    s, lease = leased(c, M.initial_state())
    copy = M.ModelLease(*tuple(lease))
    assert copy is not lease
    s, value = ok(A.ack(c, s, copy))
    assert value is True


def test_d1_foreign_lease_is_rejected_with_state_unchanged():
    c = cfg(epoch="q1")
    s, lease = leased(c, M.initial_state())
    foreign = lease._replace(epoch="q2")
    out = A.ack(c, s, foreign)
    assert out.state is s
    assert out.error == M.Rejection(
        "foreign",
        "ack got a lease of queue epoch 'q2', but this queue's epoch is 'q1'; hand a lease back to the queue that issued it",
    )


@pytest.mark.parametrize("bad", [None, "L1", ("q1", "s0", 1, 0)])
@pytest.mark.parametrize("field", [None, "epoch", "sample_id"])
def test_d1_a_lease_that_is_not_one_is_invalid_for_the_calls_and_a_type_error_for_the_reads(field, bad):
    # a ModelLease whose epoch or sample id is a list cannot even be looked up:
    # it is refused like a lease of another type, never an unhashable TypeError
    c = cfg(epoch="q1")
    s, lease = leased(c, M.initial_state())
    bad = bad if field is None else lease._replace(**{field: [1]})
    for call in ("ack", "fail", "extend", "dead_letter"):
        args = {"extend": (1.0,), "dead_letter": ("poison",)}.get(call, ())
        out = getattr(A, call)(c, s, bad, *args)
        assert out.state is s and out.error is not None and out.error.kind == "invalid", (call, out)
        assert f"{call} needs a lease, got {bad!r}" in out.error.message
    for read in ("is_live", "lease_state", "lease_deadline"):
        with pytest.raises(TypeError, match=f"{read} needs a ModelLease"):
            getattr(A, read)(s, bad)


# -- D2: data leaves the store only when the live ack commits ------------------


def test_d2_only_a_live_ack_or_dead_letter_scrubs():
    c = cfg()
    s, lease = leased(c, M.initial_state())
    assert s.resident_bytes == 4
    s, _ = ok(A.release(c, s, "a"))
    s, _ = ok(A.fail(c, s, lease))
    assert s.resident_bytes == 4 and A.rec_of(s, "a").resident
    s, lease = ok(A.acquire(c, s))
    s, _ = ok(A.tick(c, s, 10))
    s, _ = ok(A.reclaim_expired(c, s))
    assert s.resident_bytes == 4
    s, lease = ok(A.acquire(c, s))
    s, _ = ok(A.ack(c, s, lease))
    assert s.resident_bytes == 0 and s.resident_count == 0
    assert A.get(c, s, "a").error.kind == "missing"


def test_d2_dead_letter_scrubs_and_lists_the_reason():
    c = cfg()
    s, lease = leased(c, M.initial_state())
    s, value = ok(A.dead_letter(c, s, lease, "bad schema"))
    assert value is True
    assert s.dead == (("a", "bad schema"),)
    assert s.resident_bytes == 0 and A.rec_of(s, "a").status == M.DEAD


# -- D3: a terminal None only when closed and drained --------------------------


def test_d3_closed_with_leases_outstanding_is_not_drained():
    c = cfg()
    s, lease = leased(c, M.initial_state())
    s, _ = ok(A.close(c, s))
    assert s.closed and not A.is_drained(s)
    s, none = ok(A.acquire(c, s))
    assert none is None and not A.is_drained(s)  # transient: the lease may come back
    s, _ = ok(A.tick(c, s, 10))
    s, _ = ok(A.reclaim_expired(c, s))
    s, again = ok(A.acquire(c, s))
    assert again.sample_id == "a"
    s, _ = ok(A.ack(c, s, again))
    assert A.is_drained(s)


def test_d3_close_keeps_pending_and_rejects_puts():
    c = cfg()
    s = stored_and_put(c, M.initial_state(), "a", "b")
    s, _ = ok(A.close(c, s))
    assert A.pending_count(s) == 2
    out = A.put(c, s, "c")
    assert out.state is s and out.error == M.Rejection("closed", "put('c') after close(); the queue takes no more refs")
    assert A.close(c, s).state is s  # idempotent


# -- D4: hysteresis on the effective pair ----------------------------------------


def test_d4_hysteresis_pauses_at_high_and_resumes_at_low_only():
    c = cfg(high_watermark_bytes=8, low_watermark_bytes=4, capacity_bytes=100)
    s = M.initial_state()
    s, _ = ok(A.store_put(c, s, "a", 4))
    s, r = ok(A.try_put(c, s, "a"))
    assert r == A.TryPutResult(True, ())
    s, _ = ok(A.store_put(c, s, "b", 4))
    s, r = ok(A.try_put(c, s, "b"))  # 8 >= high: pause, not enqueued
    assert r == A.TryPutResult(False, ("pause",)) and s.paused
    s2, r = ok(A.try_put(c, s, "b"))  # still above low: blocked, no new event
    assert r == A.TryPutResult(False, ()) and s2 is s
    s, lease = ok(A.acquire(c, s))
    s, _ = ok(A.ack(c, s, lease))  # resident 4 <= low
    s, r = ok(A.try_put(c, s, "b"))
    assert r == A.TryPutResult(True, ("resume",)) and not s.paused
    assert A.pending_count(s) == 1


def test_d4_in_the_band_the_flag_is_kept():
    c = cfg(high_watermark_bytes=8, low_watermark_bytes=2, capacity_bytes=100)
    s = M.initial_state()
    s, _ = ok(A.store_put(c, s, "a", 5))
    s, r = ok(A.try_put(c, s, "a"))  # 5 in the band, not paused: enqueued
    assert r.enqueued and not s.paused


def test_d4_plain_put_ignores_backpressure():
    c = cfg(high_watermark_bytes=2, low_watermark_bytes=1, capacity_bytes=100)
    s = M.initial_state()
    s, _ = ok(A.store_put(c, s, "a", 50))
    s, _ = ok(A.put(c, s, "a"))
    assert not s.paused and A.pending_count(s) == 1


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(high_watermark_bytes=4, low_watermark_bytes=4),
         r"^effective low watermark 4 must be < effective high watermark 4 \(queue override or store default, mixed included\); lower low or raise high$"),
        (dict(high_watermark_bytes=4, store_high_watermark_bytes=10, store_low_watermark_bytes=6),
         r"^effective low watermark 6 must be < effective high watermark 4"),
        (dict(high_watermark_bytes=20, low_watermark_bytes=1, capacity_bytes=10),
         r"^effective high watermark 20 exceeds the store's capacity 10 bytes, so the producer could never pause; use high <= 10$"),
        (dict(high_watermark_bytes=20),
         r"^the effective watermark pair is half set \(high=20, low=None\); give both"),
    ],
)
def test_d4_watermark_pairs_that_cannot_work_are_rejected(kw, message):
    with pytest.raises(ValueError, match=message):
        M.make_config(**kw)


def test_d4_mixed_pair_that_works_is_accepted():
    c = M.make_config(low_watermark_bytes=2, store_high_watermark_bytes=10, store_low_watermark_bytes=6)
    assert (c.high, c.low) == (10, 2)


# -- D5: re-put after ack; opt-in dedup window ------------------------------------


def test_d5_reput_after_ack_is_a_new_incarnation():
    c = cfg()
    s, lease = leased(c, M.initial_state())
    s, _ = ok(A.ack(c, s, lease))
    s = stored_and_put(c, s, "a")
    s, again = ok(A.acquire(c, s))
    assert again.incarnation == 2 and again.redelivery_count == 0
    assert A.ack(c, s, lease).value is False  # the old incarnation's lease stays stale


def test_d5_duplicate_live_put_is_rejected():
    c = cfg()
    s = stored_and_put(c, M.initial_state(), "a")
    out = A.put(c, s, "a")
    assert out.state is s and out.error.kind == "duplicate"
    assert out.error.message == (
        "put('a'): that sample is already pending; put it again only after its lease is acked or it is dead-lettered"
    )


def test_d5_dedup_window_rejects_recent_replays_only():
    c = cfg(dedup_window=2)
    s = M.initial_state()
    for sid in ("a", "b", "c"):
        s, lease = leased(c, s, sid)
        s, _ = ok(A.ack(c, s, lease))
    assert s.completed == ("b", "c")
    s, _ = ok(A.store_put(c, s, "c", 4))
    out = A.put(c, s, "c")
    assert out.state is s and out.error == M.Rejection(
        "replay",
        "put('c'): that sample completed within the last 2 (dedup_window); a restarted producer is replaying it, skip it",
    )
    s, _ = ok(A.store_put(c, s, "a", 4))
    s, _ = ok(A.put(c, s, "a"))  # fell out of the window


# -- D6: health from counters only ----------------------------------------------------


def test_d6_health_is_the_counters_against_the_store_watermarks():
    c = cfg(store_high_watermark_bytes=8, store_low_watermark_bytes=4, capacity_bytes=16, high_watermark_bytes=12)
    s = stored_and_put(c, M.initial_state(), "a", "b")
    assert A.health(c, s) == A.Health(8, 16, 2, True, False)
    assert A.health(c, M.initial_state()) == A.Health(0, 16, 0, False, True)


# -- D7: extend, max_deliveries, dead letters ---------------------------------------------


def test_d7_extend_moves_a_live_deadline_even_past_expiry():
    c = cfg()
    s, lease = leased(c, M.initial_state())
    s, _ = ok(A.tick(c, s, 10))  # expired, not yet reclaimed: still live
    s, value = ok(A.extend(c, s, lease, 30))
    assert value is True and A.lease_deadline(s, lease) == 40
    s, n = ok(A.reclaim_expired(c, s))
    assert n == 0
    bad = A.extend(c, s, lease, 0)
    assert bad.state is s and bad.error == M.Rejection(
        "invalid", "extend needs a finite number of seconds > 0, got 0; pass a positive duration"
    )


def test_d7_max_deliveries_dead_letters_on_the_last_failure():
    c = cfg(max_deliveries=2)
    s, lease = leased(c, M.initial_state())
    s, _ = ok(A.fail(c, s, lease))
    s, lease = ok(A.acquire(c, s))
    assert lease.redelivery_count == 1
    s, value = ok(A.fail(c, s, lease))
    assert value is True
    assert s.dead == (("a", M.MAX_DELIVERIES_REASON),) and A.rec_of(s, "a").deliveries == 2
    assert s.resident_bytes == 0 and A.pending_count(s) == 0


def test_d7_reclaim_counts_toward_max_deliveries_and_orders_ties_by_id():
    c = cfg(max_deliveries=3)
    s = stored_and_put(c, M.initial_state(), "b", "a")
    s, lb = ok(A.acquire(c, s))
    s, la = ok(A.acquire(c, s))
    s, _ = ok(A.tick(c, s, 10))  # both deadlines are 10 <= now
    s, n = ok(A.reclaim_expired(c, s))
    assert n == 2 and s.pending == ("a", "b")
    assert A.rec_of(s, "a").redeliveries == 1


def test_reclaim_happens_at_the_deadline_not_after():
    c = cfg()
    s, lease = leased(c, M.initial_state())
    s, _ = ok(A.tick(c, s, 9.5))
    assert ok(A.reclaim_expired(c, s))[1] == 0
    s, _ = ok(A.tick(c, s, 0.5))
    assert ok(A.reclaim_expired(c, s))[1] == 1


def test_store_caps_reject_without_change():
    c = cfg(capacity_bytes=6, max_samples=2)
    s, _ = ok(A.store_put(c, M.initial_state(), "a", 4))
    out = A.store_put(c, s, "b", 4)
    assert out.state is s and out.error.kind == "capacity"
    s, _ = ok(A.store_put(c, s, "b", 2))
    out = A.store_put(c, s, "c", 0)
    assert out.error.message == "store_put('c') would hold 3 samples, over max_samples=2; ack samples or raise the cap"
    assert A.store_put(c, s, "a", 1).error.kind == "duplicate"


def test_any_order_backends_may_return_any_pending_ref():
    c = cfg(fifo=False)
    s = stored_and_put(c, M.initial_state(), "a", "b", "c")
    assert A.allowed_acquires(c, s) == ("a", "b", "c")
    s2, lease = ok(A.acquire(c, s, choose="c"))
    assert lease.sample_id == "c" and s2.pending == ("a", "b")
    fifo = cfg()
    assert A.allowed_acquires(fifo, s) == ("a",)
    assert A.acquire(fifo, s, choose="c").error.kind == "invalid"


@pytest.mark.parametrize(
    "kw, error, message",
    [
        (dict(visibility_timeout=0), ValueError, r"^visibility_timeout must be finite and > 0, got 0; pass a positive number of seconds$"),
        (dict(visibility_timeout=float("inf")), ValueError, r"^visibility_timeout must be finite and > 0, got inf"),
        (dict(visibility_timeout=True), TypeError, r"^visibility_timeout must be a number of seconds, got True \(bool\)$"),
        (dict(max_deliveries=0), ValueError, r"^max_deliveries must be >= 1, got 0; pass None for no limit or a count >= 1$"),
        (dict(max_deliveries=True), TypeError, r"^max_deliveries must be an int, got True \(bool\)"),
        (dict(dedup_window=-1), ValueError, r"^dedup_window must be >= 0, got -1; pass 0 to turn deduplication off$"),
    ],
)
def test_config_rejects_bad_values(kw, error, message):
    with pytest.raises(error, match=message):
        M.make_config(**kw)


def test_rejected_calls_return_the_same_state():
    c = cfg()
    s, lease = leased(c, M.initial_state())
    for out in (
        A.put(c, s, ""),
        A.tick(c, s, -1),
        A.tick(c, s, float("nan")),
        A.ack(c, s, "not a lease"),
        A.dead_letter(c, s, lease, ""),
        A.store_put(c, s, "z", -1),
    ):
        assert out.error is not None and out.error.kind == "invalid" and out.state is s
