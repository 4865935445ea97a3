"""Issue 12, defect 6 (and 8, by design): an altered lease never touches a
pending sample.

On 8456e91 a pending sample's record held ``lease_id = -1``, and a lease
altered to ``lease_id = -1`` (by ``object.__setattr__`` or a subclass) acked
it: ``outstanding_count()`` went to -1 and the data was scrubbed.  Now a
lease id that no queue mints (not an int, a bool, below 1) is rejected with
an error that names it, and a pending record matches no lease at all.

Forging a *valid* lease stays possible by design (defect 8, docs/API.md):
lease ids count up from 1 per queue and the epoch is in every lease, so a
lease is a capability without a secret.  The last test pins that, so the
documentation and the code cannot drift apart unnoticed.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from refqueue.queue import Lease, SampleRefQueue

pytestmark = pytest.mark.timeout(60)


def exact(message: str) -> str:
    return "^" + re.escape(message) + "$"


def observable(q: SampleRefQueue, store) -> tuple:
    return (q.pending_count(), q.outstanding_count(), q.is_drained, q.dead_letters(), store.health(),
            tuple(store.scrubs), list(q._deadlines._heap))


def altered(lease: Lease, **fields) -> Lease:
    """``lease`` with ``fields`` set behind the frozen dataclass's back."""
    twin = dataclasses.replace(lease)
    for name, value in fields.items():
        object.__setattr__(twin, name, value)
    return twin


CALLS = {
    "ack": lambda q, lease: q.ack(lease),
    "fail": lambda q, lease: q.fail(lease),
    "extend": lambda q, lease: q.extend(lease, 5.0),
    "dead_letter": lambda q, lease: q.dead_letter(lease, "poison"),
}


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize(
    "lease_id, error, message",
    [
        (-1, ValueError, "{call} got a lease with lease_id=-1, which no queue mints (lease ids count up from 1); "
                         "pass the lease acquire returned, unaltered"),
        (0, ValueError, "{call} got a lease with lease_id=0, which no queue mints (lease ids count up from 1); "
                        "pass the lease acquire returned, unaltered"),
        (True, TypeError, "{call} got a lease whose lease_id is True (bool), not an int; pass the lease acquire "
                          "returned, unaltered"),
        (None, TypeError, "{call} got a lease whose lease_id is None (NoneType), not an int; pass the lease "
                          "acquire returned, unaltered"),
        (1.0, TypeError, "{call} got a lease whose lease_id is 1.0 (float), not an int; pass the lease acquire "
                         "returned, unaltered"),
    ],
)
def test_a_lease_id_no_queue_mints_is_rejected_and_changes_nothing(make_queue, stored, store, call, lease_id,
                                                                    error, message):
    q = make_queue()
    q.put(stored("a"))
    pending_ref = stored("b")
    q.put(pending_ref)
    live = q.acquire_nowait()  # "a" is leased, "b" pending
    before = observable(q, store)
    for target in (altered(live, ref=pending_ref), live):  # a lease of the pending "b", the live one of "a"
        with pytest.raises(error, match=exact(message.format(call=call))):
            CALLS[call](q, altered(target, lease_id=lease_id))
        assert observable(q, store) == before  # 8456e91: lease_id=-1 acked the pending "b"
    assert q.ack(live) is True


@pytest.mark.parametrize("call", list(CALLS))
def test_a_lease_subclass_with_a_forged_id_is_rejected(make_queue, stored, store, call):
    @dataclasses.dataclass(frozen=True)
    class Sneaky(Lease):
        pass

    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    q.fail(lease)  # "a" is pending again
    sneaky = Sneaky(lease.ref, lease.deadline, lease.visibility_timeout, 0, 1, q.epoch)
    object.__setattr__(sneaky, "lease_id", -1)
    before = observable(q, store)
    with pytest.raises(ValueError, match=r"lease_id=-1, which no queue mints"):
        CALLS[call](q, sneaky)
    assert observable(q, store) == before


@pytest.mark.parametrize("call", list(CALLS))
def test_an_int_subclass_lease_id_that_equals_everything_is_rejected(make_queue, stored, store, call):
    class EqualsAll(int):
        def __eq__(self, other):
            return True

        def __ne__(self, other):
            return False

        __hash__ = int.__hash__

    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    before = observable(q, store)
    with pytest.raises(TypeError, match=r"lease_id is 7 \(EqualsAll\), not an int"):
        CALLS[call](q, altered(lease, lease_id=EqualsAll(7)))
    assert observable(q, store) == before


@pytest.mark.parametrize("call", list(CALLS))
def test_a_valid_but_unminted_id_is_stale_and_a_pending_sample_matches_nothing(make_queue, stored, store, call):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    q.fail(lease)  # pending again: the old lease and every other id are stale
    before = observable(q, store)
    for lease_id in (lease.lease_id, lease.lease_id + 1, 10**30):
        assert CALLS[call](q, altered(lease, lease_id=lease_id)) is False
    assert observable(q, store) == before


def test_a_lease_whose_ref_was_replaced_is_rejected(make_queue, stored, store):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    before = observable(q, store)
    with pytest.raises(TypeError, match=exact(
        "ack got a lease whose ref is 'a' (str), not a SampleRef; pass the lease acquire returned, unaltered"
    )):
        q.ack(altered(lease, ref="a"))
    assert observable(q, store) == before


def test_by_design_a_lease_is_a_capability_without_a_secret(make_queue, stored):
    """Defect 8, documented in docs/API.md: anyone who knows the epoch (it is
    in every lease) and guesses the id (ids count up from 1) holds the lease."""
    q = make_queue()
    q.put(stored("a"))
    q.put(stored("b"))
    mine = q.acquire_nowait()
    theirs = q.acquire_nowait()
    forged = Lease(theirs.ref, 0.0, mine.visibility_timeout, 0, mine.lease_id + 1, mine.epoch)
    assert forged == theirs and q.ack(forged) is True
