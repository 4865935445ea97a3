"""Fuzz: every public entry point of ``SampleRefQueue`` with hostile values.

Each rejected call raises the documented exception with a message naming the
value, and leaves the observable state (counts, dead letters, pause flag,
parked bytes, store residency and handles) exactly as it was.  A value the
queue accepts does what the docs say.  Real ``LocalFeatureStore`` and torch.
"""

from __future__ import annotations

import copy
import json
import dataclasses
import math
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_helpers import hostile, hostile_number, hostile_text, names, put, snapshot, unbounded_store, world

from refqueue.clock import ManualClock
from refqueue.errors import ForeignLease, QueueClosed
from refqueue.queue import Lease, SampleRefQueue, VisibilityTimeout
from refqueue.refs import SampleRef

pytestmark = pytest.mark.timeout(300)
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)

CONSTRUCTOR_ARGS = ("visibility_timeout", "high_watermark_bytes", "low_watermark_bytes", "on_pause", "on_resume",
                    "max_deliveries", "dedup_window", "clock", "dead_letter_limit")


def is_seconds(value, *, inf_ok: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if inf_ok and value == math.inf:
        return True
    return 0 < value <= threading.TIMEOUT_MAX  # NaN compares False; ints compare exactly


@SETTINGS
@given(arg=st.sampled_from(CONSTRUCTOR_ARGS), value=hostile)
def test_the_constructor_rejects_a_hostile_argument_and_builds_nothing(arg, value):
    store = unbounded_store()
    before = snapshot(store)
    try:
        queue = SampleRefQueue(store, **{arg: value})
    except (TypeError, ValueError) as exc:
        assert arg in str(exc) or names(str(exc), value), str(exc)
    else:  # accepted: a value of the documented kind
        assert value is None or arg in ("on_pause", "on_resume") and callable(value) or (
            isinstance(value, int) and not isinstance(value, bool) and value >= 0), (arg, value)
        queue.close()
    assert snapshot(store) == before


@SETTINGS
@given(value=hostile)
def test_put_rejects_what_is_not_a_ref_of_its_store(value):
    store, queue, _, _ = world()
    before = snapshot(store, queue)
    with pytest.raises(TypeError) as info:
        queue.put(value)
    assert names(str(info.value), value)
    with pytest.raises(TypeError):
        queue.put_blocks_until_below(value)
    assert snapshot(store, queue) == before


@SETTINGS
@given(sample_id=hostile_text)
def test_put_of_a_foreign_or_duplicate_ref_changes_nothing(sample_id):
    store, queue, _, leases = world()
    other = unbounded_store()
    before = snapshot(store, queue)
    try:
        foreign = put(other, sample_id)
    except (TypeError, ValueError):
        return  # the store refused the id (test_fuzz_store covers that)
    with pytest.raises(ValueError, match="names store"):
        queue.put(foreign)
    for ref in (leases[0].ref, copy.deepcopy(leases[0].ref), SampleRef.from_json(leases[0].ref.to_json())):
        with pytest.raises(ValueError, match="already leased"):
            queue.put(ref)
    assert snapshot(store, queue) == before


@SETTINGS
@given(poll=hostile, abort=st.sampled_from([None, lambda: True]))
def test_put_blocks_until_below_rejects_a_hostile_poll_interval(poll, abort):
    store, queue, _, _ = world(0, leased=0)
    ref = put(store, "new")
    before = snapshot(store, queue)
    try:
        queue.put_blocks_until_below(ref, poll_interval=poll, abort_when=abort)
    except (TypeError, ValueError) as exc:
        assert not is_seconds(poll, inf_ok=True) and names(str(exc), poll), str(exc)
        assert snapshot(store, queue) == before
    else:  # no watermarks: admitted at once
        assert is_seconds(poll, inf_ok=True) and queue.pending_count() == 1


@SETTINGS
@given(abort=hostile)
def test_put_blocks_until_below_rejects_an_abort_when_that_is_not_callable(abort):
    store, queue, _, _ = world(0, leased=0)
    ref = put(store, "new")
    before = snapshot(store, queue)
    if abort is None or callable(abort):
        return
    with pytest.raises(TypeError) as info:
        queue.put_blocks_until_below(ref, abort_when=abort)
    assert names(str(info.value), abort) and snapshot(store, queue) == before


@SETTINGS
@given(poll=hostile)
def test_acquire_rejects_a_hostile_poll_interval(poll):
    store, queue, _, _ = world(1, leased=1)
    queue.close()  # one outstanding lease: a valid acquire waits poll seconds, so only drained below
    before = snapshot(store, queue)
    if is_seconds(poll, inf_ok=True):
        return
    with pytest.raises((TypeError, ValueError)) as info:
        queue.acquire(poll)
    assert names(str(info.value), poll) and snapshot(store, queue) == before


def altered(lease: Lease, field: str, value) -> Lease:
    forged = copy.copy(lease)
    object.__setattr__(forged, field, value)
    return forged


@SETTINGS
@given(
    call=st.sampled_from(["ack", "fail", "extend", "dead_letter"]),
    field=st.sampled_from(["lease_id", "epoch", "ref"]),
    value=st.one_of(hostile, hostile_number),
)
def test_a_lease_altered_in_any_field_is_rejected_or_stale_and_changes_nothing(call, field, value):
    store, queue, _, leases = world(2, leased=1)
    lease = leases[0]
    forged = altered(lease, field, value)
    before = snapshot(store, queue)
    args = (forged, "poison") if call == "dead_letter" else (forged,)
    try:
        result = getattr(queue, call)(*args)
    except ForeignLease as exc:
        assert field == "epoch" and names(str(exc), value)
    except (TypeError, ValueError) as exc:
        assert names(str(exc), value) or field == "ref", str(exc)
    else:
        # accepted: the alteration kept the identity (an equal value), or it is
        # an id the queue never minted for a live sample: stale, nothing changes
        if result:
            assert getattr(lease, field) == value or field == "ref"
            return
    assert snapshot(store, queue) == before


@SETTINGS
@given(call=st.sampled_from(["ack", "fail", "extend", "dead_letter"]), value=hostile)
def test_a_lease_call_with_something_that_is_not_a_lease_is_a_type_error(call, value):
    store, queue, _, _ = world(2, leased=1)
    before = snapshot(store, queue)
    args = (value, "poison") if call == "dead_letter" else (value,)
    with pytest.raises(TypeError) as info:
        getattr(queue, call)(*args)
    assert names(str(info.value), value) and snapshot(store, queue) == before


@SETTINGS
@given(call=st.sampled_from(["ack", "fail", "extend", "dead_letter"]))
def test_a_lease_of_another_queue_is_foreign_and_changes_nothing(call):
    store, queue, _, _ = world(2, leased=1)
    _, other, _, other_leases = world(2, leased=1)
    before = snapshot(store, queue)
    for lease in (other_leases[0], Lease.from_json(other_leases[0].to_json())):
        args = (lease, "poison") if call == "dead_letter" else (lease,)
        with pytest.raises(ForeignLease) as info:
            getattr(queue, call)(*args)
        assert lease.epoch in str(info.value)
    assert snapshot(store, queue) == before


@SETTINGS
@given(seconds=hostile)
def test_extend_rejects_hostile_seconds(seconds):
    store, queue, _, leases = world(2, leased=1)
    before = snapshot(store, queue)
    try:
        result = queue.extend(leases[0], seconds)
    except (TypeError, ValueError) as exc:
        assert not (seconds is None or is_seconds(seconds, inf_ok=False)) and names(str(exc), seconds)
        assert snapshot(store, queue) == before
    else:
        assert result is True and (seconds is None or is_seconds(seconds, inf_ok=False))


@SETTINGS
@given(reason=hostile)
def test_dead_letter_rejects_a_hostile_reason(reason):
    store, queue, _, leases = world(2, leased=1)
    before = snapshot(store, queue)
    if isinstance(reason, str) and reason:
        return
    with pytest.raises((TypeError, ValueError)) as info:
        queue.dead_letter(leases[0], reason)
    assert names(str(info.value), reason) or reason == "" and snapshot(store, queue) == before
    assert snapshot(store, queue) == before


@SETTINGS
@given(interval=hostile)
def test_start_reclaimer_rejects_a_hostile_interval(interval):
    store, queue, _, _ = world(1, leased=1)
    before = snapshot(store, queue)
    try:
        queue.start_reclaimer(interval)
    except (TypeError, ValueError) as exc:
        assert names(str(exc), interval)
        assert snapshot(store, queue) == before
        queue.stop_reclaimer()  # none was started: a no-op
    else:
        assert interval is None or is_seconds(interval, inf_ok=True)
        queue.stop_reclaimer()


@SETTINGS
@given(sample_id=hostile_text, blocking=st.booleans())
def test_a_put_after_close_raises_queue_closed_and_changes_nothing(sample_id, blocking):
    store, queue, _, _ = world(1, leased=0)
    try:
        ref = put(store, sample_id)
    except (TypeError, ValueError):
        return
    queue.close()
    before = snapshot(store, queue)
    with pytest.raises(QueueClosed) as info:
        (queue.put_blocks_until_below if blocking else queue.put)(ref)
    assert repr(sample_id)[:60] in str(info.value)
    assert snapshot(store, queue) == before


@SETTINGS
@given(seconds=hostile_number)
def test_visibility_timeout_rejects_hostile_seconds(seconds):
    try:
        vt = VisibilityTimeout(seconds)
    except (TypeError, ValueError) as exc:
        assert names(str(exc), seconds) and not is_seconds(seconds, inf_ok=False)
    else:
        assert is_seconds(seconds, inf_ok=False) and dataclasses.asdict(vt) == {"seconds": seconds}


@SETTINGS
@given(call=st.sampled_from(["ack", "fail", "extend", "dead_letter"]), wire=st.booleans())
def test_a_lease_after_close_still_settles_and_a_copy_acts_as_the_original(call, wire):
    store, queue, clock, leases = world(2, leased=1)
    queue.close()
    lease = Lease.from_json(leases[0].to_json()) if wire else copy.deepcopy(leases[0])
    args = (lease, "poison") if call == "dead_letter" else (lease,)
    assert getattr(queue, call)(*args) is True
    assert getattr(queue, "ack")(leases[0]) is (call == "extend")  # the original is now stale unless extended
    assert isinstance(ManualClock(0.0).now(), float) and clock.now() == 0.0


class AbortRaised(Exception):
    pass


@SETTINGS
@given(raise_at=st.integers(0, 3), extra=st.integers(0, 2))
def test_an_abort_when_that_raises_leaves_the_ref_unparked_and_unqueued(raise_at, extra):
    store = unbounded_store()
    queue = SampleRefQueue(store, clock=ManualClock(0.0), high_watermark_bytes=1, low_watermark_bytes=0)
    work = put(store, "work")
    queue.put(work)  # residency >= high and work pending: a blocking put pauses
    refs = [put(store, f"p{i}") for i in range(extra + 1)]
    before = snapshot(store, queue)
    calls = []

    def abort_when():
        calls.append(1)
        if len(calls) > raise_at:
            raise AbortRaised("abort_when failed (injected)")
        return False

    with pytest.raises(AbortRaised):
        queue.put_blocks_until_below(refs[0], poll_interval=1e-3, abort_when=abort_when)
    after = snapshot(store, queue)
    assert after.parked == 0 and after.pending == before.pending == 1
    assert dataclasses.replace(after, paused=before.paused) == before  # the pause itself is a committed step


@SETTINGS
@given(call=st.sampled_from(["next", "commit", "extend", "close", "iter"]))
def test_a_loader_after_close_ends_or_does_nothing(call):
    from refqueue.loader import FeatureDataLoader

    store, queue, _, _ = world(2, leased=0)
    loader = FeatureDataLoader(queue, algorithm="eagle3", schema_version=1, close_queue=False)
    next(loader)
    loader.close()
    before = snapshot(store, queue)
    if call == "next":
        with pytest.raises(StopIteration):
            next(loader)
    elif call == "iter":
        assert list(loader) == []
    elif call == "extend":
        assert loader.extend() is False
    else:
        getattr(loader, call)()
    assert snapshot(store, queue) == before and loader.held == []


@SETTINGS
@given(
    call=st.sampled_from(["ack", "fail", "extend", "dead_letter"]),
    field=st.sampled_from(["lease_id", "epoch", "redelivery_count", "deadline", "visibility_timeout"]),
    value=st.one_of(st.integers(-3, 5), st.floats(), hostile_text, st.none(), st.booleans()),
)
def test_a_lease_edited_on_the_wire_is_rejected_or_acts_as_the_lease_it_names(call, field, value):
    store, queue, _, leases = world(2, leased=1)
    data = json.loads(leases[0].to_json())
    data[field] = value
    before = snapshot(store, queue)
    try:
        lease = Lease.from_json(json.dumps(data))
    except (TypeError, ValueError):
        assert snapshot(store, queue) == before
        return
    args = (lease, "poison") if call == "dead_letter" else (lease,)
    try:
        result = getattr(queue, call)(*args)
    except (TypeError, ValueError) as exc:  # ForeignLease is a ValueError
        assert snapshot(store, queue) == before and str(exc)
        return
    # accepted: identity is (epoch, lease_id); the other fields describe the delivery only
    same = lease.lease_id == leases[0].lease_id and lease.epoch == leases[0].epoch
    assert result is same
    if not result:
        assert snapshot(store, queue) == before
