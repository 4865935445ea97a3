"""Issue 12, defect 2 and the resource bounds docs/API.md states.

On 8456e91 dead letters grew without bound (10^6 ``dead_letter`` calls kept
10^6 records, about 105 MB) and could not be drained.  Now the queue keeps
the newest ``dead_letter_limit`` (default 10,000), counts the ones it drops
in ``dead_letters_dropped``, and ``drain_dead_letters()`` takes them out.
The other bounds are pinned here too: the dedup window holds N ids, the
lease table holds live samples only, and the deadline heap stays within
``2 * max(L, SLACK) + 1`` entries (L: the most leases outstanding at once)
however often a lease is extended.
"""

from __future__ import annotations

import re
import sys

import pytest
from bytes_store import features

from refqueue._deadlines import SLACK
from refqueue.errors import ReplayedSample
from refqueue.queue import DeadLetter, SampleRefQueue

pytestmark = pytest.mark.timeout(120)


def exact(message: str) -> str:
    return "^" + re.escape(message) + "$"


def dead_letter_all(q: SampleRefQueue, store, ids, reason: str = "poison") -> None:
    for sid in ids:
        q.put(store.put(sid, features(b"x")))
        assert q.dead_letter(q.acquire_nowait(), reason) is True


# -- dead letters ----------------------------------------------------------------------


def test_dead_letters_keep_the_newest_limit_and_count_the_dropped(make_queue, store):
    q = make_queue(dead_letter_limit=3)
    assert q.dead_letter_limit == 3 and q.dead_letters_dropped == 0
    dead_letter_all(q, store, [f"s{i}" for i in range(5)])
    assert [d.ref.sample_id for d in q.dead_letters()] == ["s2", "s3", "s4"]
    assert q.dead_letters_dropped == 2
    assert store.health().resident_bytes == 0  # every one was scrubbed, kept or not


def test_the_default_limit_is_ten_thousand(make_queue, store):
    q = make_queue()
    assert q.dead_letter_limit == 10_000
    dead_letter_all(q, store, [f"s{i}" for i in range(10_050)])
    kept = q.dead_letters()
    assert len(kept) == 10_000 and kept[0].ref.sample_id == "s50" and kept[-1].ref.sample_id == "s10049"
    assert q.dead_letters_dropped == 50


def test_max_deliveries_dead_letters_are_bounded_too(make_queue, store):
    q = make_queue(max_deliveries=1, dead_letter_limit=2)
    for i in range(4):
        q.put(store.put(f"s{i}", features(b"x")))
        assert q.fail(q.acquire_nowait()) is True  # delivered once: dead-lettered
    assert [(d.ref.sample_id, d.reason) for d in q.dead_letters()] == [
        ("s2", "max_deliveries"), ("s3", "max_deliveries")
    ]
    assert q.dead_letters_dropped == 2


def test_drain_dead_letters_returns_and_removes_them(make_queue, store):
    q = make_queue(dead_letter_limit=2)
    dead_letter_all(q, store, ["a", "b", "c"])
    drained = q.drain_dead_letters()
    assert [d.ref.sample_id for d in drained] == ["b", "c"] and all(isinstance(d, DeadLetter) for d in drained)
    assert q.dead_letters() == [] and q.drain_dead_letters() == []
    assert q.dead_letters_dropped == 1  # draining is not dropping
    dead_letter_all(q, store, ["d"], reason="bad tokens")
    assert [(d.ref.sample_id, d.reason, d.deliveries) for d in q.dead_letters()] == [("d", "bad tokens", 1)]


def test_a_limit_of_zero_keeps_none_and_counts_all(make_queue, store):
    q = make_queue(dead_letter_limit=0)
    dead_letter_all(q, store, ["a", "b"])
    assert q.dead_letters() == [] and q.dead_letters_dropped == 2


@pytest.mark.parametrize(
    "value, error, message",
    [
        (-1, ValueError, "SampleRefQueue(dead_letter_limit) must be >= 0, got -1; pass how many dead letters to "
                         "keep (the oldest are dropped first), e.g. 10000"),
        (True, TypeError, "SampleRefQueue(dead_letter_limit) must be an int, got True (bool); pass how many dead "
                          "letters to keep (the oldest are dropped first), e.g. 10000"),
        (None, TypeError, "SampleRefQueue(dead_letter_limit) must be an int, got None (NoneType); pass how many "
                          "dead letters to keep (the oldest are dropped first), e.g. 10000"),
        (1.5, TypeError, "SampleRefQueue(dead_letter_limit) must be an int, got 1.5 (float); pass how many dead "
                         "letters to keep (the oldest are dropped first), e.g. 10000"),
        # (more than a deque's maxlen holds: an OverflowError from the deque before)
        (2**70, ValueError, f"SampleRefQueue(dead_letter_limit) must be <= {sys.maxsize}, got {2**70}; pass how "
                            "many dead letters to keep (the oldest are dropped first), e.g. 10000"),
    ],
)
def test_dead_letter_limit_is_validated(make_queue, value, error, message):
    with pytest.raises(error, match=exact(message)):
        make_queue(dead_letter_limit=value)


# -- the dedup window, the lease table, the deadline heap -----------------------------------


def test_the_dedup_window_holds_n_ids(make_queue, store):
    q = make_queue(dedup_window=4)
    for i in range(100):
        q.put(store.put(f"s{i}", features(b"x")))
        assert q.ack(q.acquire_nowait())
    assert len(q._completed) == len(q._completed_ids) == 4
    with pytest.raises(ReplayedSample):
        q.put(store.put("s96", features(b"x")))
    q.put(store.put("s95", features(b"x")))  # completed before the window: a new incarnation


def test_the_lease_table_holds_live_samples_only(make_queue, store, clock):
    q = make_queue(max_deliveries=3)
    for i in range(1000):
        q.put(store.put(f"s{i}", features(b"x")))
        lease = q.acquire_nowait()
        if i % 3 == 0:
            assert q.ack(lease)
        elif i % 3 == 1:
            assert q.dead_letter(lease, "poison")
        else:
            assert q.fail(lease) and q.fail(q.acquire_nowait()) and q.fail(q.acquire_nowait())  # third: dead
    assert len(q._live) == 0 and q.pending_count() == q.outstanding_count() == 0
    q.put(store.put("loop", features(b"x")))
    for _ in range(1000):
        assert q.acquire_nowait() is not None
        clock.advance(10.0)
        assert q.reclaim_expired() <= 1
        if q.pending_count() == 0:  # dead-lettered at max_deliveries
            break
    assert len(q._live) == 0


def test_extending_one_lease_keeps_the_deadline_heap_bounded(make_queue, stored, clock):
    q = make_queue()
    q.put(stored("a"))
    lease = q.acquire_nowait()
    for _ in range(10 * SLACK):
        clock.advance(0.5)  # a new deadline each time: a new heap entry
        assert q.extend(lease, 10.0)
        assert len(q._deadlines) <= 2 * SLACK + 1
    clock.advance(10.0)
    assert q.reclaim_expired() == 1  # the one current entry survived every compaction
    assert q.acquire_nowait().redelivery_count == 1


def test_extending_many_leases_keeps_the_deadline_heap_within_twice_the_peak(make_queue, store, clock):
    q = make_queue()
    peak = 3 * SLACK
    for i in range(peak):
        q.put(store.put(f"s{i}", features(b"x")))
    leases = [q.acquire_nowait() for _ in range(peak)]
    for _ in range(4):
        clock.advance(0.5)
        for lease in leases:
            assert q.extend(lease, 10.0)
            assert len(q._deadlines) <= 2 * max(peak, SLACK) + 1
    for lease in leases[: peak - 5]:
        assert q.ack(lease)
    for _ in range(3 * SLACK):
        clock.advance(0.5)
        for lease in leases[peak - 5:]:
            assert q.extend(lease, 10.0)
            assert len(q._deadlines) <= 2 * max(peak, SLACK) + 1
    clock.advance(10.0)
    assert q.reclaim_expired() == 5


# -- store handles and the loader's leases ----------------------------------------------------


def _loader_world(n: int):
    torch = pytest.importorskip("torch")
    from refqueue.stores import LocalFeatureStore

    store = LocalFeatureStore(None, None, None, None)
    q = SampleRefQueue(store)
    for i in range(n):
        q.put(store.put(f"s{i}", {"aux_hidden_states": torch.full((2, 3), float(i)), "input_ids": torch.arange(3),
                                  "attention_mask": torch.ones(3), "loss_mask": torch.ones(3)},
                        run_id="r", algorithm="eagle3", schema_version=1, target_model_version="t",
                        draft_weight_version=0, num_tokens=3))
    q.close()
    return store, q


@pytest.mark.parametrize(("batch_size", "prefetch"), [(1, 0), (3, 0), (2, 4), (1, 8)])
def test_a_loader_holds_at_most_prefetch_plus_batch_size_handles_and_leases(batch_size, prefetch):
    from refqueue.loader import FeatureDataLoader

    store, q = _loader_world(60)
    bound = prefetch + batch_size
    seen = 0
    with FeatureDataLoader(q, batch_size=batch_size, prefetch=prefetch) as loader:
        for batch in loader:
            seen += len(batch)
            assert store.handle_count <= bound and q.outstanding_count() <= bound
            assert len(loader.held) <= bound
    assert seen == 60 and store.handle_count == 0 and q.is_drained


def test_unreleased_handles_are_one_per_get_and_gc_sweeps_those_of_scrubbed_samples():
    store, q = _loader_world(5)
    refs = []
    for _ in range(5):
        lease = q.acquire_nowait()
        refs.append(lease.ref)
        for _ in range(3):
            store.get(lease.ref)  # a holder that never releases
        assert q.ack(lease)  # the ack scrubs the data; the handles are left behind
    assert store.handle_count == 15  # one per get not released: the only growth, and gc bounds it
    assert store.gc() == 15 and store.handle_count == 0
    assert store.gc() == 0
