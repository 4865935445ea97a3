"""The calls phase: each check passes on the correct backends, catches the
mutant made for it, and is listed as not run where a capability rules it out."""

import pytest

from conformance.mutants import CAUGHT_BY, NAMED_CHECK, REPEATS
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


# Each call mutant is rejected by its named check (NAMED_CHECK), saying what it says: in the
# default run conformance/test_mutants.py shows it for each mutant it certifies there (the calls
# phase's fail-fast short pass, which must stop at the same check with the same words); here,
# straight through check_calls, only the mutants that file leaves to the slow run (REPEATS).
@pytest.mark.parametrize(
    "mutant, check, says",
    [
        pytest.param(m, check, says, marks=() if m in REPEATS else pytest.mark.slow, id=m)
        for m, (check, says) in NAMED_CHECK.items()
        if CAUGHT_BY[m] == "calls"
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
        "dead-letter-reasons-kept": "dead_letter=False declared",
        "json-round-trip": "lease_json=False declared",
        "lease-json-hostile": "lease_json=False declared",
        "callback-own-health": "abort_when=False declared",
        "dead-letters-drained-copied": "dead_letter=False declared",
        "drain-concurrent": "dead_letter=False declared",
        "dead-letters-kept": "dead_letter=False declared",
        "dead-letter-limit": "dead_letter, dead_letter_limit=False declared",
        "dedup-window-large": "dedup_window=False declared",
        "dedup-ids-exact": "dedup_window=False declared",
        "dedup-across-clients": "dedup_window=False declared",
        "scrub-fails-keeps-windows": "dedup_window=False declared",
        "put-health-fails": "abort_when=False declared",
        "one-step-parks-nothing": "abort_when=False declared",
        "put-duplicate-while-blocked": "abort_when=False declared",
        "reclaim-scrub-fails": "max_deliveries=False declared",
        "extend-while-clock-read": "extend=False declared",
        "reclaimer-error-kept": "max_deliveries=False declared",
        "leases-across-clients": "one client: the factory has no open_client (or the run passed clients=1)",
    }


def test_the_soak_is_not_run_on_a_backend_whose_own_store_is_too_small():
    from conformance.mutants._base import BaseQueue, factory
    from refqueue.conformance.contract import backend_of

    make = factory(BaseQueue, make_store=lambda: default_store(capacity=100))
    report = check_calls(backend_of(make, "small_store:make"), checks=("deadline-soak", "scrub-fails", "pending-many"))
    assert report.ok, report.failure
    assert list(report.checks) == ["scrub-fails"]
    assert report.not_run["deadline-soak"] == (
        "the backend's own store holds 100 samples of one unit (capacity); the soak needs 1200"
    )
    refused = report.not_run["pending-many"]
    assert refused.startswith("the store refused sample 101 of 5000 (LocalFeatureStore.put('m00100') of 18 bytes would")
    assert refused.endswith("pending-many needs a store that holds 5000 samples of one unit")


def test_lease_ids_many_is_not_run_on_a_backend_too_slow_for_it(monkeypatch):
    # (its 131,000 calls: a backend that would take longer than LEASES_BUDGET is listed, with its speed)
    import refqueue.conformance.calls_scale as scale

    monkeypatch.setattr(scale, "LEASES_BUDGET", 1e-6)
    report = check_calls("conformance.mutants._base:make", checks=("lease-ids-many",))
    assert report.ok and list(report.checks) == []
    assert report.not_run["lease-ids-many"].startswith("2000 leases took ")
    assert "more than the 0 s this check may take" in report.not_run["lease-ids-many"]


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


def _reason_variant(change):
    """The base queue whose dead_letter runs ``change(base's dead_letter, lease, reason)``,
    the base's own refusal of a reason with no UTF-8 form left out (``change`` decides)."""
    from conformance.mutants._base import BaseQueue, factory
    from refqueue.conformance.contract import backend_of

    class Variant(BaseQueue):
        @staticmethod
        def _check_reason(reason):
            if not isinstance(reason, str) or not reason:
                raise ValueError(f"dead_letter needs a non-empty reason str, got {reason!r}")

        def dead_letter(self, lease, reason):
            return change(super().dead_letter, lease, reason)

    return backend_of(factory(Variant), "reason_variant:make")


def _mangles(dead_letter, lease, reason):  # stores what its UTF-8 column could take
    return dead_letter(lease, reason.encode("utf-8", "replace").decode("utf-8") if isinstance(reason, str) else reason)


def _keeps(dead_letter, lease, reason):  # takes any str, as a backend that never writes it out would
    return dead_letter(lease, reason)


def _raises_after(dead_letter, lease, reason):  # the letter made, then the encoding fails
    answer = dead_letter(lease, reason)
    if isinstance(reason, str):
        reason.encode("utf-8")
    return answer


def _refuses(dead_letter, lease, reason):  # as the in-process and Redis queues
    if isinstance(reason, str) and not reason.isascii():
        reason.encode("utf-8")  # UnicodeEncodeError: a ValueError, before anything changes
    return dead_letter(lease, reason)


@pytest.mark.parametrize("change, says", [
    (_mangles, "dead_letter(lease of 'b', 'bad \\udcff byte') of the live lease returned True (dead_letters() lists "
               "its reason as ['bad ? byte'])"),
    (_keeps, "dead_letter(lease of 'b', 'bad \\udcff byte') of the live lease returned True (dead_letters() lists "
             "its reason as ['bad \\udcff byte']); docs/API.md: a reason holding a lone surrogate has no UTF-8 form"),
    (_raises_after, "dead_letter(lease of 'b', 'bad \\udcff byte'): outstanding_count() is 0, expected 1"),
    (_refuses, None),
], ids=["mangles", "keeps", "raises-after-the-letter", "refuses-first"])
def test_a_reason_with_no_utf8_form_is_refused_cleanly(change, says):
    report = check_calls(_reason_variant(change), checks=("dead-letter-reason",))
    if says is None:
        assert report.ok, report.failure
    else:
        assert not report.ok and says in report.failure, report.failure
