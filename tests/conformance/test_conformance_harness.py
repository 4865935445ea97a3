"""The lockstep harness: what it compares, and the exact divergence it reports."""

import math

import pytest

from refqueue.conformance import Capabilities, backend_of, load_backend
from refqueue.conformance.harness import Divergence, Harness, ModelConfig
from refqueue.conformance.samples import LOCKSTEP_SIZES, UNIT_BYTES
from refqueue.model.actions import Rejection

pytestmark = pytest.mark.torch


def harness(target="conformance.mutants._base:make", backend=None, **config):
    return Harness(backend or load_backend(target), ModelConfig(**config), sizes=LOCKSTEP_SIZES)


def reclaimed_and_redelivered(h):
    """s0 is leased, reclaimed and leased again: lease1 stale, lease2 live."""
    ref = h.store_put("s0")
    h.put(ref)
    stale = h.acquire()
    h.tick(2.0)
    h.reclaim()
    live = h.acquire()
    return stale, live


def test_a_correct_backend_follows_the_model_step_by_step():
    h = harness(visibility_timeout=2.0, max_deliveries=2, dedup_window=1)
    stale, live = reclaimed_and_redelivered(h)
    assert (stale, live) == ("lease1", "lease2")
    h.ack(stale)  # stale: False
    copy = h.copy(live, "json")
    handle = h.get(copy)
    h.ack(copy)  # the JSON round trip of the live lease acks
    h.release(handle)  # after the scrub the holder's data is still intact
    ref = h.latest_ref["s0"]
    h.put(ref)  # replay within the dedup window: rejected
    assert h.trace[-1].expect.kind == "replay"
    assert [step.op for step in h.trace] == [
        "store_put", "put", "acquire", "tick", "reclaim", "acquire", "ack", "copy", "get", "ack", "release", "put",
    ]  # fmt: skip
    assert h.trace[6].expect is False and h.trace[9].expect is True
    pending, outstanding, closed, drained, paused, dead, resident, count, high, low, events = h.trace[-1].obs
    assert (pending, outstanding, resident, count, dead) == (0, 0, 0, 0, ())


def test_the_model_decides_argument_errors_and_foreign_leases():
    h = harness(visibility_timeout=2.0)
    ref = h.store_put("s1")
    h.put_wrong(ref, "type")
    h.put_wrong(ref, "uri")
    h.put(ref)
    lease = h.acquire()
    h.extend(lease, math.nan)
    h.dead_letter(lease, "")
    h.lease_wrong("fail")
    foreign = h.foreign()
    h.ack(foreign)
    h.acquire_wait(0.0)
    kinds = [s.expect.kind for s in h.trace if isinstance(s.expect, Rejection)]
    assert kinds == ["invalid", "invalid", "invalid", "invalid", "invalid", "foreign", "invalid"]
    assert h.trace[-1].obs[:2] == (0, 1)
    assert h.trace[1].obs[6] == 2 * UNIT_BYTES


def test_a_stale_ack_that_pops_the_live_lease_is_caught():
    h = harness("conformance.mutants.stale_ack:make", visibility_timeout=2.0)
    stale, _live = reclaimed_and_redelivered(h)
    with pytest.raises(Divergence, match=r"^step 7, q\.ack\(lease1\): returned True; the model says False$"):
        h.ack(stale)


def test_a_duplicate_put_that_is_accepted_is_caught():
    h = harness("conformance.mutants.duplicate_put:make")
    ref = h.store_put("s0")
    h.put(ref)
    with pytest.raises(
        Divergence,
        match=r"^step 3, q\.put\(ref1\): returned None; the model rejects the call as 'duplicate': put\('s0'\): "
        r"that sample is already pending; put it again only after its lease is acked or it is dead-lettered$",
    ):
        h.put(ref)


def test_observables_are_compared_after_every_step():
    h = harness("conformance.mutants.close_drops_pending:make")
    h.put(h.store_put("s0"))
    with pytest.raises(
        Divergence,
        match=r"^step 3, q\.close\(\): after the call pending_count\(\) is 0, the model says 1; "
        r"is_drained is True, the model says False$",
    ):
        h.close()


def test_a_broken_store_release_is_caught_by_residency():
    h = harness("conformance.mutants.release_scrubs:make", visibility_timeout=2.0)
    stale, live = reclaimed_and_redelivered(h)
    handle = h.get(stale)
    with pytest.raises(Divergence, match=r"^step 8, store\.release\(handle1\): after the call health\(\)\.resident_bytes is 0, the model says 18; health\(\)\.sample_count is 0, the model says 1$"):
        h.release(handle)


def test_a_wrong_exception_kind_is_a_divergence():
    from conformance.mutants._base import BaseQueue, factory

    class ClosedIsRuntime(BaseQueue):
        def _validate_put(self, call, ref):
            if self._closed:
                raise RuntimeError("closed")
            super()._validate_put(call, ref)

    h = harness(backend=backend_of(factory(ClosedIsRuntime)))
    ref = h.store_put("s0")
    h.close()
    with pytest.raises(
        Divergence,
        match=r"^step 3, q\.put\(ref1\): raised RuntimeError \(kind None\): closed; the model rejects the call as "
        r"'closed': put\('s0'\) after close\(\); the queue takes no more refs$",
    ):
        h.put(ref)


def _lifo(fifo):
    from conformance.mutants._base import BaseQueue, factory

    class Lifo(BaseQueue):
        """Hands out the newest pending ref first."""

        def _acquire_nowait(self):
            self._pending.rotate(1)
            return super()._acquire_nowait()

    make = factory(Lifo)
    make.capabilities = Capabilities(fifo=fifo)
    return backend_of(make)


def test_an_any_order_backend_is_checked_against_the_allowed_set():
    h = harness(backend=_lifo(fifo=False))
    h.put(h.store_put("s0"))
    h.put(h.store_put("s1"))
    h.acquire()
    assert h.model_lease("lease1").sample_id == "s1"
    assert h.state.pending == ("s0",)


def test_a_fifo_backend_that_is_not_fifo_is_caught():
    h = harness(backend=_lifo(fifo=True))
    h.put(h.store_put("s0"))
    h.put(h.store_put("s1"))
    with pytest.raises(Divergence, match=r"^step 5, q\.acquire_nowait\(\): returned a lease on 's1'; the model hands out 's0'$"):
        h.acquire()


def test_a_factory_that_accepts_what_the_model_rejects_fails_construction():
    from conformance.mutants._base import BaseQueue, factory
    from refqueue.conformance.certify import check_construction

    class Lax(BaseQueue):
        """Quietly replaces a non-positive timeout by the default."""

        def __init__(self, store, clock, *, visibility_timeout=30.0, **config):
            super().__init__(store, clock, visibility_timeout=visibility_timeout if visibility_timeout > 0 else 30.0, **config)

    checked, failure = check_construction(backend_of(factory(Lax)))
    assert checked == 2
    assert failure["message"] == (
        "constructing with zero visibility timeout succeeded; the model rejects it: visibility_timeout must be "
        "finite and > 0, got 0.0; pass a positive number of seconds"
    )
    assert "with pytest.raises((TypeError, ValueError)):" in failure["source"]


def test_the_base_backend_passes_every_construction_check():
    from refqueue.conformance.certify import check_construction

    assert check_construction(load_backend("conformance.mutants._base:make")) == (21, None)


def _dead_letter_limit_variant(rule):
    """The base queue with ``rule(dead_letter_limit)`` in place of its own check of the value."""
    from conformance.mutants._base import BaseQueue, factory

    class Variant(BaseQueue):
        def __init__(self, store, clock, *, dead_letter_limit=10_000, **config):
            super().__init__(store, clock, dead_letter_limit=rule(dead_letter_limit), **config)

    return backend_of(factory(Variant))


def test_a_queue_that_refuses_a_dead_letter_limit_of_zero_fails_construction():
    from refqueue.conformance.certify import check_construction

    def at_least_one(limit):
        if limit == 0:
            raise ValueError("dead_letter_limit must be >= 1")
        return limit

    checked, failure = check_construction(_dead_letter_limit_variant(at_least_one))
    assert failure["message"] == (
        "constructing with dead_letter_limit=0 raised ValueError: dead_letter_limit must be >= 1; the model accepts it"
    ), failure
    assert "Session.start(BACKEND, sizes={}, visibility_timeout=30.0, dead_letter_limit=0)" in failure["source"]


# what a queue that mends a bad value instead of refusing it keeps; each mends one kind only
_MENDS = {
    "negative clamped to 0": (
        lambda limit: limit if isinstance(limit, bool) else max(limit, 0),
        "dead_letter_limit=-1 succeeded; the model rejects it: dead_letter_limit must be >= 0, got -1; "
        "pass how many dead letters to keep, 0 for none",
    ),
    "True taken for 1": (
        lambda limit: 1 if limit is True else limit,
        "dead_letter_limit=True succeeded; the model rejects it: dead_letter_limit must be an int, got True (bool); "
        "pass how many dead letters to keep, 0 for none",
    ),
}


@pytest.mark.parametrize("how", sorted(_MENDS))
def test_a_queue_that_mends_a_bad_dead_letter_limit_fails_construction(how):
    from refqueue.conformance.certify import check_construction

    mend, message = _MENDS[how]
    checked, failure = check_construction(_dead_letter_limit_variant(mend))
    assert failure is not None and failure["message"] == f"constructing with {message}", failure
