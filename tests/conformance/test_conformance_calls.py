"""The calls phase: each check passes on the correct backends, catches the
mutant made for it, and is listed as not run where a capability rules it out."""

import pytest

from refqueue.conformance import load_backend
from refqueue.conformance.calls import CHECKS, ScrubSwitch, check_calls
from refqueue.conformance.samples import STORE_META, default_store, sample_tensors

pytestmark = pytest.mark.torch


ONE_CLIENT = dict.fromkeys(
    ("dedup-across-clients", "leases-across-clients"), "one client: the factory has no open_client (or the run passed clients=1)"
)


@pytest.mark.parametrize(
    "target, not_run",
    [
        ("refqueue.conformance.backends:inprocess", ONE_CLIENT),
        ("conformance.mutants._base:make", ONE_CLIENT),
        ("conformance.legal.shared_client:make", {}),
    ],
)
def test_correct_backends_pass_every_call(target, not_run):
    report = check_calls(target)
    assert report.ok, report.failure
    assert list(report.checks) == [c for c in CHECKS if c not in not_run] and report.not_run == not_run


@pytest.mark.parametrize(
    "mutant, check, says",
    [
        ("json_drops_redelivery", "json-round-trip", "redelivery_count is 0, not 1"),
        ("same_epoch", "two-queues-one-store", "share the epoch 'queue'"),
        ("ack_before_scrub", "scrub-fails", "outstanding_count() is 0, expected 1"),
        ("deadline_heap_1000", "deadline-soak", "q.reclaim_expired(): returned"),
        ("epoch_empty_accepted", "lease-epoch-empty", "returned True; docs/API.md says it raises ('foreign')"),
        ("lease_ids_from_0", "lease-ids-from-1", "the first lease of a fresh queue has lease_id 0; docs/API.md: a queue mints lease ids as ints counting up from 1"),
        ("lease_id_negative_stale", "lease-id-below-1", "ack(a copy of the live lease with lease_id=0, which no queue mints) returned False; docs/API.md says it raises ('invalid')"),
        ("dead_letters_own_list", "dead-letters-copied", "a caller appended to and cleared the list dead_letters() returned, and then dead_letters() returned []: it gave out the queue's own list; it must return a copy"),
        ("extend_unbounded", "durations-above-max", "extend(lease, 1e+300) returned True; docs/API.md: every duration is at most threading.TIMEOUT_MAX"),
        ("callback_health_at_delivery", "callback-own-health", "on_pause received (resident_bytes=36, capacity_bytes=None, sample_count=2, high_watermark_hit=False, low_watermark_hit=False) but the step of put_blocks_until_below('p1', abort_when=lambda: True) read (resident_bytes=90,"),
        ("deadline_settle_before_count", "deadline-heap-interleaved", "q.reclaim_expired(): returned 0; the model says 1"),
        ("drain_keeps_list", "dead-letters-drained-copied", "the list drain_dead_letters() returned lists ['d'] after the queue dead-lettered 'd': it is the queue's own list"),
        ("drain_torn", "drain-concurrent", "dead letter(s) never drained"),
        ("lease_id_bool", "lease-id-not-int", "ack(a copy of the live lease with lease_id=True (a bool, == 1), which no queue mints: docs/API.md, a TypeError) returned True"),
        ("lease_default_timeout", "lease-fields", "a lease of a queue made with visibility_timeout=7.3125 carries visibility_timeout Timeout(seconds=30.0)"),
        ("reclaimer_interval_zero", "durations-not-positive", "start_reclaimer(0) returned None"),
        ("put_poll_zero", "durations-not-positive", "put_blocks_until_below(ref, poll_interval=0) returned None"),
        ("dead_letter_reason_any", "dead-letter-reason", "dead_letter(lease, 42) returned True; docs/API.md says it raises ('invalid')"),
        ("uri_scheme_only", "foreign-uri-same-scheme", "put(ref of 'mem://conformance-elsewhere') (put of a ref for another store URI"),
        ("lease_json_no_bytes", "json-round-trip", "type(lease).from_json(lease.to_json().encode()) raised TypeError"),
        ("lease_json_ms_deadline", "json-round-trip", "differs field by field: deadline is 107.312, not 107.3126234"),
        ("dead_letters_cap_100", "dead-letters-kept", "after 300 dead letters on a queue made with the default dead_letter_limit (docs/API.md: 10,000), dead_letters() lists 100 (200 missing"),
        ("put_duplicate_race", "put-duplicate-concurrent", "4 threads put("),
        ("orphan_limit", "orphans-collected", "store.scrub of the orphan 'o3' (the 4th collected, 18 bytes) returned True, but health() went from 360 bytes in 11 samples to 360 in 11"),
    ],
)
def test_each_call_mutant_is_caught_by_its_check(mutant, check, says):
    report = check_calls(f"conformance.mutants.{mutant}:make")
    assert report.failed_check == check and says in report.failure, report.failure


def test_a_check_the_capabilities_rule_out_is_listed_as_not_run():
    report = check_calls("conformance.legal.seed_api:make")
    assert report.ok, report.failure
    assert report.not_run == {
        "dead-letters-copied": "dead_letter=False declared",
        "dead-letter-reason": "dead_letter=False declared",
        "json-round-trip": "lease_json=False declared",
        "lease-json-hostile": "lease_json=False declared",
        "callback-own-health": "abort_when=False declared",
        "dead-letters-drained-copied": "dead_letter=False declared",
        "drain-concurrent": "dead_letter=False declared",
        "dead-letters-kept": "dead_letter=False declared",
        "dedup-across-clients": "dedup_window=False declared",
        "leases-across-clients": "one client: the factory has no open_client (or the run passed clients=1)",
    }


def test_the_soak_is_not_run_on_a_backend_whose_own_store_is_too_small():
    from conformance.mutants._base import BaseQueue, factory
    from refqueue.conformance.contract import backend_of

    make = factory(BaseQueue, make_store=lambda: default_store(capacity=100))
    report = check_calls(backend_of(make, "small_store:make"), checks=("deadline-soak", "scrub-fails"))
    assert report.ok, report.failure
    assert list(report.checks) == ["scrub-fails"]
    assert report.not_run == {"deadline-soak": "the backend's own store holds 100 samples of one unit (capacity); the soak needs 1200"}


def test_the_failing_store_refuses_scrub_only_on_demand():
    inner = default_store()
    store = ScrubSwitch(inner)
    try:
        ref = store.put("a", sample_tensors(1, 1), num_tokens=1, **STORE_META)
        store.failing = True
        with pytest.raises(OSError, match="failed on demand"):
            store.scrub(ref)
        assert store.health().sample_count == 1 and store.scrubs_refused == 1
        store.failing = False
        assert store.scrub(ref) is True and store.health().sample_count == 0
    finally:
        inner.close()


def test_check_names_are_validated():
    with pytest.raises(ValueError, match="checks must be a non-empty subset"):
        check_calls(load_backend("conformance.mutants._base:make"), checks=("nope",))


def test_drain_concurrent_is_not_run_on_a_backend_without_drain_dead_letters(monkeypatch):
    # docs/API.md lists drain_dead_letters(), but a backend that has only dead_letters() has nothing to tear
    from conformance.mutants._base import BaseQueue

    monkeypatch.delattr(BaseQueue, "drain_dead_letters")
    report = check_calls("conformance.mutants._base:make", checks=("drain-concurrent",))
    assert report.ok and report.not_run == {
        "drain-concurrent": "the backend has no drain_dead_letters() (docs/API.md lists it)"
    }


def test_leases_across_clients_takes_any_pending_sample_from_a_backend_that_is_not_fifo():
    """A backend that declares fifo=False may hand the two clients the pending samples in any order; the
    check judges identities and deadlines, not which sample came first."""
    from conformance.legal import random_order, shared_client
    from refqueue.conformance.contract import backend_of

    def make(store, clock, **config):
        return random_order.make(store, clock, **config)

    make.capabilities = random_order.make.capabilities
    make.open_client = shared_client.open_client
    backend = backend_of(make, "random_order_two_clients:make")
    for _ in range(10):  # the order is drawn afresh each time (an unseeded generator)
        report = check_calls(backend, checks=("leases-across-clients",))
        assert report.ok and list(report.checks) == ["leases-across-clients"], report.failure
