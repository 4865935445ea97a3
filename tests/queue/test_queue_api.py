"""The queue's surface: construction, argument checks (types and exact
messages), the lease records and their JSON form.  Every rejected call is
shown to change nothing."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re

import pytest
from bytes_store import BytesStore, make_ref

from refqueue.errors import ForeignLease
from refqueue.queue import DeadLetter, Lease, SampleRefQueue, VisibilityTimeout
from refqueue.store import FeatureStore


def exact(message: str) -> str:
    return "^" + re.escape(message) + "$"


# The tail of every message rejecting a poll interval (math.inf is allowed: no timeout).
POLL = "; pass a positive number of seconds, or math.inf to wait with no timeout"


def snapshot(q: SampleRefQueue, store: BytesStore) -> tuple:
    """Everything a caller can observe of a queue and its store."""
    return (
        q.pending_count(),
        q.outstanding_count(),
        q.is_closed,
        q.is_drained,
        q.is_paused,
        q.dead_letters(),
        store.health(),
        tuple(store.scrubs),
    )


# -- VisibilityTimeout, Lease, DeadLetter ------------------------------------------


def test_visibility_timeout_defaults_to_30_seconds_and_validates():
    assert VisibilityTimeout().seconds == 30.0
    assert VisibilityTimeout(0.01).seconds == 0.01
    with pytest.raises(ValueError, match=exact(
        "VisibilityTimeout.seconds must be > 0, got 0; pass a positive number of seconds, e.g. VisibilityTimeout(30.0)"
    )):
        VisibilityTimeout(0)
    with pytest.raises(ValueError, match=exact(
        "VisibilityTimeout.seconds must be finite, got inf; pass a positive number of seconds, e.g. VisibilityTimeout(30.0)"
    )):
        VisibilityTimeout(math.inf)
    with pytest.raises(TypeError, match=exact(
        "VisibilityTimeout.seconds must be a number of seconds, got True (bool); pass a positive number of "
        "seconds, e.g. VisibilityTimeout(30.0)"
    )):
        VisibilityTimeout(True)
    assert hash(VisibilityTimeout(2.0)) == hash(VisibilityTimeout(2.0))


def test_lease_identity_is_epoch_and_lease_id(make_queue, stored):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    for twin in (copy.copy(lease), copy.deepcopy(lease), Lease.from_json(lease.to_json())):
        assert twin == lease and hash(twin) == hash(lease) and twin is not lease
    assert {lease: 1}[Lease.from_json(lease.to_json())] == 1
    assert dataclasses.replace(lease, deadline=99.0) == lease  # the deadline is not identity
    assert dataclasses.replace(lease, lease_id=lease.lease_id + 1) != lease
    assert dataclasses.replace(lease, epoch="other") != lease


def test_lease_json_round_trip_is_exact(make_queue, stored):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    back = Lease.from_json(lease.to_json())
    assert back.to_dict() == lease.to_dict()
    assert (back.ref, back.deadline, back.visibility_timeout, back.redelivery_count, back.epoch) == (
        lease.ref, lease.deadline, lease.visibility_timeout, lease.redelivery_count, lease.epoch
    )
    data = json.loads(lease.to_json())
    assert sorted(data) == ["deadline", "epoch", "lease_id", "redelivery_count", "ref", "visibility_timeout"]


def test_lease_from_dict_names_missing_and_unknown_fields(make_queue, stored):
    q = make_queue()
    q.put(stored("a"))
    data = q.acquire_nowait().to_dict()
    del data["epoch"]
    data["colour"] = "red"
    with pytest.raises(ValueError, match=exact(
        "a Lease dict must have exactly the fields ['ref', 'deadline', 'visibility_timeout', "
        "'redelivery_count', 'lease_id', 'epoch']; missing ['epoch'], unknown ['colour']"
    )):
        Lease.from_dict(data)
    with pytest.raises(TypeError, match=exact("Lease.from_dict needs a dict, got list; pass what to_dict returned")):
        Lease.from_dict([])


def test_lease_constructor_validates_its_fields():
    ref = make_ref("a", 1)
    vt = VisibilityTimeout(1.0)
    with pytest.raises(TypeError, match=exact(
        "Lease.ref must be a SampleRef, got 'a' (str); a lease names the ref it delivers"
    )):
        Lease("a", 1.0, vt)
    with pytest.raises(ValueError, match=exact(
        "Lease.deadline must be finite, got nan; pass the clock time the lease expires at"
    )):
        Lease(ref, math.nan, vt)
    with pytest.raises(TypeError, match=exact(
        "Lease.visibility_timeout must be a VisibilityTimeout, got 1.0; wrap the seconds: VisibilityTimeout(seconds)"
    )):
        Lease(ref, 1.0, 1.0)
    with pytest.raises(ValueError, match=exact("Lease.redelivery_count must be >= 0, got -1; pass a whole number >= 0")):
        Lease(ref, 1.0, vt, -1)
    with pytest.raises(TypeError, match=exact(
        "Lease.lease_id must be an int, got False (bool); pass a whole number >= 0"
    )):
        Lease(ref, 1.0, vt, 0, False)
    with pytest.raises(TypeError, match=exact("Lease.epoch must be a str, got None (NoneType); pass the issuing queue's epoch")):
        Lease(ref, 1.0, vt, 0, 1, None)
    # seed compatibility: a lease built without an id gets a fresh one
    a, b = Lease(ref, 1.0, vt), Lease(ref, 1.0, vt)
    assert a.lease_id != b.lease_id and a.epoch == ""


def test_dead_letter_is_a_frozen_record():
    ref = make_ref("a", 1)
    letter = DeadLetter(ref, "poison", 2)
    assert (letter.ref, letter.reason, letter.deliveries) == (ref, "poison", 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        letter.reason = "x"  # type: ignore[misc]


# -- construction ----------------------------------------------------------------------


def test_constructor_defaults_follow_the_seed():
    store = BytesStore()
    q = SampleRefQueue(store)
    assert q.visibility_timeout == VisibilityTimeout(30.0)
    assert q.store is store
    assert not q.is_closed and not q.is_drained and not q.is_paused
    assert q.pending_count() == q.outstanding_count() == 0 and q.dead_letters() == []
    assert re.fullmatch(r"[0-9a-f]{32}", q.epoch)
    assert SampleRefQueue(store).epoch != q.epoch


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(store=object()), TypeError,
         "SampleRefQueue(store) needs a refqueue.store.FeatureStore, got {obj} (object); pass the store the "
         "producers put into"),
        (dict(visibility_timeout=5.0), TypeError,
         "SampleRefQueue(visibility_timeout) must be a VisibilityTimeout or None, got 5.0 (float); wrap the "
         "seconds: VisibilityTimeout(seconds)"),
        (dict(high_watermark_bytes=True, low_watermark_bytes=0), TypeError,
         "SampleRefQueue(high_watermark_bytes) must be an int or None, got True (bool); pass a positive byte "
         "count (a store always holds >= 0 bytes, so a high of 0 would pause for ever), or None to use the store's"),
        (dict(high_watermark_bytes=10, low_watermark_bytes=-1), ValueError,
         "SampleRefQueue(low_watermark_bytes) must be >= 0, got -1; pass a non-negative byte count, or None to use "
         "the store's"),
        (dict(on_pause="log"), TypeError,
         "SampleRefQueue(on_pause) must be callable or None, got 'log' (str); pass a function taking a StoreHealth"),
        (dict(on_resume=3), TypeError,
         "SampleRefQueue(on_resume) must be callable or None, got 3 (int); pass a function taking a StoreHealth"),
        (dict(max_deliveries=0), ValueError,
         "SampleRefQueue(max_deliveries) must be >= 1, got 0; pass None for no limit or a count >= 1"),
        (dict(max_deliveries=2.0), TypeError,
         "SampleRefQueue(max_deliveries) must be an int or None, got 2.0 (float); pass None for no limit or a "
         "count >= 1"),
        (dict(dedup_window=-1), ValueError,
         "SampleRefQueue(dedup_window) must be >= 0, got -1; pass 0 to turn deduplication off"),
        (dict(dedup_window=None), TypeError,
         "SampleRefQueue(dedup_window) must be an int, got None (NoneType); pass 0 to turn deduplication off"),
        (dict(clock=42), TypeError,
         "SampleRefQueue(clock) must have a now() method returning seconds, got 42 (int); pass "
         "refqueue.clock.MonotonicClock() or ManualClock()"),
    ],
)
def test_constructor_rejects_bad_arguments(kwargs, error, message):
    store = kwargs.pop("store", BytesStore())
    message = message.replace("{obj}", repr(store))
    with pytest.raises(error, match=exact(message)):
        SampleRefQueue(store, **kwargs)


@pytest.mark.parametrize(
    "store_kw, queue_kw, message",
    [
        (dict(), dict(high_watermark_bytes=10),
         "the effective watermark pair is half set: high=10 (queue), low=None (store); pass both "
         "high_watermark_bytes and low_watermark_bytes, or neither and configure both on the store"),
        (dict(high_watermark_bytes=10, low_watermark_bytes=5), dict(low_watermark_bytes=10),
         "the effective low watermark 10 (queue) must be strictly less than the effective high watermark 10 (store); lower "
         "low_watermark_bytes or raise high_watermark_bytes"),
        (dict(high_watermark_bytes=10, low_watermark_bytes=5), dict(high_watermark_bytes=4),
         "the effective low watermark 5 (store) must be strictly less than the effective high watermark 4 (queue); lower "
         "low_watermark_bytes or raise high_watermark_bytes"),
        (dict(capacity_bytes=8), dict(high_watermark_bytes=9, low_watermark_bytes=2),
         "the effective high watermark 9 (queue) exceeds the store's capacity_bytes=8, so the producer could "
         "never pause; pass high_watermark_bytes <= 8"),
        (dict(capacity_bytes=8, high_watermark_bytes=9, low_watermark_bytes=1), dict(),
         "the effective high watermark 9 (store) exceeds the store's capacity_bytes=8, so the producer could "
         "never pause; pass high_watermark_bytes <= 8"),
    ],
)
def test_constructor_validates_the_effective_watermark_pair(store_kw, queue_kw, message):
    with pytest.raises(ValueError, match=exact(message)):
        SampleRefQueue(BytesStore(**store_kw), **queue_kw)


def test_mixed_watermark_pairs_are_accepted_when_valid():
    store = BytesStore(high_watermark_bytes=10, low_watermark_bytes=5, capacity_bytes=20)
    SampleRefQueue(store, high_watermark_bytes=20)  # queue high, store low
    SampleRefQueue(store, low_watermark_bytes=9)  # store high, queue low
    SampleRefQueue(BytesStore(capacity_bytes=10), high_watermark_bytes=10, low_watermark_bytes=0)


def test_a_store_with_a_broken_watermark_is_named():
    class Broken(BytesStore):
        @property
        def high_watermark_bytes(self):
            return "lots"

    with pytest.raises(TypeError, match=exact(
        "store.high_watermark_bytes must be an int or None, got 'lots' (str); fix the store's watermark configuration"
    )):
        SampleRefQueue(Broken(low_watermark_bytes=1))


# -- bad calls change nothing ------------------------------------------------------------


def test_put_rejects_what_is_not_a_ref_of_its_store(make_queue, store):
    q = make_queue()
    before = snapshot(q, store)
    with pytest.raises(TypeError, match=exact(
        "put needs a SampleRef, got 'a' (str); pass the ref FeatureStore.put returned"
    )):
        q.put("a")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=exact(
        "put('a'): the ref names store 'mem://elsewhere', but this queue is bound to 'mem://bytes'; put refs "
        "of the queue's store"
    )):
        q.put(make_ref("a", 1, store_uri="mem://elsewhere"))
    with pytest.raises(TypeError, match=exact(
        "put_blocks_until_below needs a SampleRef, got None (NoneType); pass the ref FeatureStore.put returned"
    )):
        q.put_blocks_until_below(None)  # type: ignore[arg-type]
    assert snapshot(q, store) == before


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(poll_interval=0), ValueError,
         f"put_blocks_until_below(poll_interval) must be > 0, got 0{POLL}"),
        (dict(poll_interval=math.nan), ValueError,
         f"put_blocks_until_below(poll_interval) must be > 0, got nan{POLL}"),
        (dict(poll_interval=1e10), ValueError,
         "put_blocks_until_below(poll_interval) must be at most threading.TIMEOUT_MAX = 9223372036.0 s, got "
         "10000000000.0; pass a number of seconds no larger than that, or math.inf to wait with no timeout"),
        (dict(poll_interval=True), TypeError,
         "put_blocks_until_below(poll_interval) must be a number of seconds, got True (bool); pass e.g. 0.05"),
        (dict(abort_when=True), TypeError,
         "put_blocks_until_below(abort_when) must be callable or None, got True (bool); pass a function "
         "returning True to give up"),
    ],
)
def test_put_blocks_until_below_validates_before_any_step(make_queue, store, kwargs, error, message):
    q = make_queue()
    before = snapshot(q, store)
    with pytest.raises(error, match=exact(message)):
        q.put_blocks_until_below(make_ref("a", 1), **kwargs)
    assert snapshot(q, store) == before


@pytest.mark.parametrize(
    "value, error, message",
    [
        (0, ValueError, f"acquire(poll_interval) must be > 0, got 0{POLL}"),
        (-0.5, ValueError, f"acquire(poll_interval) must be > 0, got -0.5{POLL}"),
        (-math.inf, ValueError, f"acquire(poll_interval) must be > 0, got -inf{POLL}"),
        (math.nan, ValueError, f"acquire(poll_interval) must be > 0, got nan{POLL}"),
        (1e10, ValueError,
         "acquire(poll_interval) must be at most threading.TIMEOUT_MAX = 9223372036.0 s, got 10000000000.0; "
         "pass a number of seconds no larger than that, or math.inf to wait with no timeout"),
        (False, TypeError, "acquire(poll_interval) must be a number of seconds, got False (bool); pass e.g. 0.05"),
        ("1", TypeError, "acquire(poll_interval) must be a number of seconds, got '1' (str); pass e.g. 0.05"),
    ],
)
def test_acquire_rejects_bad_poll_intervals(make_queue, stored, store, value, error, message):
    q = make_queue()
    q.put(stored("a"))
    before = snapshot(q, store)
    with pytest.raises(error, match=exact(message)):
        q.acquire(poll_interval=value)
    assert snapshot(q, store) == before
    assert q.acquire(poll_interval=1).ref.sample_id == "a"  # an int is a number of seconds


@pytest.mark.parametrize("call", ["ack", "fail", "extend", "dead_letter"])
def test_lease_calls_reject_what_is_not_a_lease(make_queue, stored, store, call):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    before = snapshot(q, store)
    args = ("poison",) if call == "dead_letter" else ()
    with pytest.raises(TypeError, match=exact(
        f"{call} needs a Lease, got {lease.to_dict()!r} (dict); pass what acquire returned (or Lease.from_json of it)"
    )):
        getattr(q, call)(lease.to_dict(), *args)
    foreign = dataclasses.replace(lease, epoch="0" * 32)
    with pytest.raises(ForeignLease, match=exact(
        f"{call} got a lease of queue epoch '{'0' * 32}', but this queue's epoch is {q.epoch!r}; hand a lease "
        f"back to the queue that issued it"
    )):
        getattr(q, call)(foreign, *args)
    assert snapshot(q, store) == before
    assert q.ack(lease) is True


def test_a_lease_of_another_queue_is_foreign(store, stored):
    q1, q2 = SampleRefQueue(store), SampleRefQueue(store)
    q1.put(stored("a"))
    lease = q1.acquire_nowait()
    with pytest.raises(ForeignLease):
        q2.ack(lease)
    assert issubclass(ForeignLease, ValueError) and ForeignLease.KIND == "foreign"
    assert q1.outstanding_count() == 1


@pytest.mark.parametrize(
    "seconds, error, message",
    [
        (0, ValueError, "extend(seconds) must be finite and > 0, got 0; pass a positive number of seconds"),
        (math.nan, ValueError, "extend(seconds) must be finite and > 0, got nan; pass a positive number of seconds"),
        (True, TypeError, "extend(seconds) must be a number of seconds, got True (bool); pass e.g. 0.05"),
    ],
)
def test_extend_rejects_bad_durations(make_queue, stored, store, clock, seconds, error, message):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    before = snapshot(q, store)
    with pytest.raises(error, match=exact(message)):
        q.extend(lease, seconds)
    assert snapshot(q, store) == before
    clock.advance(10.0)
    assert q.reclaim_expired() == 1  # the deadline did not move


def test_dead_letter_needs_a_reason(make_queue, stored, store):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    before = snapshot(q, store)
    with pytest.raises(ValueError, match=exact(
        "dead_letter(reason) must not be empty; say why the sample is poison"
    )):
        q.dead_letter(lease, "")
    with pytest.raises(TypeError, match=exact(
        "dead_letter(reason) must be a str, got None (NoneType); say why the sample is poison"
    )):
        q.dead_letter(lease, None)  # type: ignore[arg-type]
    # a reason with no UTF-8 form, as Redis refuses it (tests/fuzz/test_fuzz_redis.py)
    with pytest.raises(ValueError, match=exact(
        "dead_letter(reason='bad \\udcff byte'): the reason holds '\\udcff' at index 4, which has no UTF-8 form "
        "(an event log's reader or another backend could not carry it); say why in text without lone surrogates"
    )):
        q.dead_letter(lease, "bad \udcff byte")
    with pytest.raises(ValueError, match=r"^dead_letter\(reason='x{77}'\.\.\.\): the reason holds '\\ud800' at index 200,"):
        q.dead_letter(lease, "x" * 200 + "\ud800")
    assert snapshot(q, store) == before
    assert q.dead_letter(lease, "échantillon ☠") is True
    assert [d.reason for d in q.dead_letters()] == ["échantillon ☠"]


def test_start_reclaimer_validates_its_interval(make_queue):
    q = make_queue()
    with pytest.raises(ValueError, match=exact(
        "start_reclaimer(interval) must be finite and > 0, got -1; pass a positive number of seconds"
    )):
        q.start_reclaimer(-1)
    q.stop_reclaimer()  # no reclaimer: a no-op


def test_every_store_is_a_feature_store():
    assert isinstance(BytesStore(), FeatureStore)


def test_repr_names_the_store_and_the_counts(make_queue, stored):
    q = make_queue()
    q.put(stored("a"))
    assert repr(q) == (
        f"SampleRefQueue('mem://bytes', open, pending=1, outstanding=0, dead=0, epoch={q.epoch!r})"
    )
