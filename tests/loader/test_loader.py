"""FeatureDataLoader against the real SampleRefQueue and LocalFeatureStore (CPU tensors)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

torch = pytest.importorskip("torch")

from loader_helpers import (  # noqa: E402
    GUARD_S,
    exact,
    SCHEMA,
    ManualClock,
    assert_nothing_leaked,
    index_of,
    make_queue,
    put_sample,
    sample_tensors,
)

from refqueue.errors import SchemaMismatch, StoreClosed  # noqa: E402
from refqueue.loader import Batch, FeatureDataLoader, LoaderStats  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.timeout(120)]

CONFIGS = [(1, 0), (3, 0), (1, 4), (3, 3), (4, 8)]  # (batch_size, prefetch)


def loader_for(queue, **kwargs) -> FeatureDataLoader:
    kwargs.setdefault("algorithm", "eagle3")
    kwargs.setdefault("schema_version", SCHEMA)
    kwargs.setdefault("poll_interval", 0.01)
    return FeatureDataLoader(queue, **kwargs)


@pytest.mark.parametrize(("batch_size", "prefetch"), CONFIGS)
def test_every_sample_is_consumed_exactly_once(batch_size, prefetch):
    store, queue = make_queue(20)
    seen = []
    with loader_for(queue, batch_size=batch_size, prefetch=prefetch) as loader:
        for batch in loader:
            assert isinstance(batch, Batch) and 1 <= len(batch) <= batch_size
            assert batch.leases == [s.lease for s in batch]
            assert all(t is s.tensors for t, s in zip(batch.tensors, batch, strict=True))
            for sample in batch:
                assert list(sample.tensors) == ["aux_hidden_states", "input_ids", "attention_mask", "loss_mask"]
                i = index_of(sample)
                assert sample.ref.sample_id == f"s{i}"
                assert torch.equal(sample.tensors["input_ids"], sample_tensors(i)["input_ids"])
                seen.append(i)
    assert seen == list(range(20))  # FIFO, each once
    assert loader.stats == LoaderStats(batches=loader.stats.batches, acked=20)
    assert_nothing_leaked(store, queue)


@pytest.mark.parametrize(("batch_size", "prefetch"), CONFIGS)
def test_a_live_producer_is_followed_until_the_queue_drains(batch_size, prefetch):
    store, queue = make_queue(0, close=False)

    def produce():
        for i in range(30):
            put_sample(store, queue, i)
        queue.close()

    producer = threading.Thread(target=produce)
    producer.start()
    with loader_for(queue, batch_size=batch_size, prefetch=prefetch) as loader:
        seen = [index_of(s) for batch in loader for s in batch]
    producer.join()
    assert sorted(seen) == list(range(30)) and len(seen) == 30
    assert_nothing_leaked(store, queue)


@pytest.mark.parametrize("prefetch", [0, 2])
def test_a_raising_step_fails_its_batch_and_the_redelivery_is_intact(prefetch):
    store, queue = make_queue(5)
    with pytest.raises(RuntimeError, match="^step failed$"):
        with loader_for(queue, prefetch=prefetch) as loader:
            for batch in loader:
                if batch[0].ref.sample_id == "s2":
                    if prefetch:
                        store.wait_for_gets(5)  # s3 and s4 are prefetched
                    batch[0].tensors["aux_hidden_states"].zero_()  # edit in place, then fail
                    batch[0].tensors["loss_mask"].fill_(7)
                    raise RuntimeError("step failed")
    # s0 and s1 were acked; s2 and whatever was prefetched went back to the queue.
    assert loader.stats.acked == 2
    assert loader.stats.failed == (3 if prefetch else 1)
    assert queue.outstanding_count() == 0 and queue.pending_count() == 3
    assert store.handle_count == 0
    redelivered = {}
    with loader_for(queue) as again:
        for batch in again:
            redelivered[batch[0].ref.sample_id] = batch[0]
    assert set(redelivered) == {"s2", "s3", "s4"}
    s2 = redelivered["s2"]
    assert s2.lease.redelivery_count == 1
    assert torch.equal(s2.tensors["aux_hidden_states"], sample_tensors(2)["aux_hidden_states"])
    assert torch.equal(s2.tensors["loss_mask"], sample_tensors(2)["loss_mask"])
    assert_nothing_leaked(store, queue)


def test_close_while_an_exception_propagates_fails_the_batch_in_hand():
    store, queue = make_queue(2)
    loader = loader_for(queue)
    first = None
    with pytest.raises(ValueError, match="^bad step$"):
        try:
            first = next(loader)
            raise ValueError("bad step")
        finally:
            loader.close()  # no with block: close() sees the exception in flight
    assert queue.pending_count() == 2
    assert queue.fail(first[0].lease) is False  # already failed by the loader
    assert loader.stats.failed == 1 and store.handle_count == 0
    with pytest.raises(StopIteration):
        next(loader)


def test_close_acks_the_batch_in_hand_as_the_next_pull_would():
    store, queue = make_queue(4)
    with loader_for(queue) as loader:
        for batch in loader:
            if batch[0].ref.sample_id == "s1":
                break  # the with block's orderly exit closes the loader: s1 is consumed
    assert loader.stats == LoaderStats(batches=2, acked=2)
    loader = loader_for(queue)
    assert next(loader)[0].ref.sample_id == "s2"
    loader.close(ack=False)  # explicitly: give it back
    assert loader.stats == LoaderStats(batches=1, failed=1)
    assert [lease.ref.sample_id for lease in _drain(queue)] == ["s3", "s2"]


def test_close_fails_what_was_prefetched_but_never_handed_out():
    store, queue = make_queue(3)
    loader = loader_for(queue, prefetch=2)
    next(loader)
    store.wait_for_gets(3)
    loader.close()
    assert loader.stats == LoaderStats(batches=1, acked=1, failed=2)
    assert queue.pending_count() == 2 and store.handle_count == 0


def test_close_closes_the_queue_unless_told_not_to():
    _, queue = make_queue(1, close=False)
    with loader_for(queue, close_queue=False) as loader:
        next(loader)
    assert not queue.is_closed and queue.pending_count() == 0
    _, queue = make_queue(1, close=False)
    with loader_for(queue) as loader:
        next(loader)
    assert queue.is_closed and queue.is_drained


def test_refs_the_consumer_cannot_use_are_dead_lettered_and_skipped_with_a_warning(caplog):
    store, queue = make_queue(0, close=False)
    put_sample(store, queue, 0)
    put_sample(store, queue, 1, algorithm="dflash")
    put_sample(store, queue, 2, schema_version=SCHEMA + 1)
    lost = put_sample(store, queue, 3)
    put_sample(store, queue, 4)
    queue.close()
    store.scrub(lost)  # its data is gone before anyone reads it
    with caplog.at_level("WARNING", logger="refqueue.loader"):
        with loader_for(queue, prefetch=2, on_mismatch="skip") as loader:
            seen = [b[0].ref.sample_id for b in loader]
    assert seen == ["s0", "s4"]
    reasons = {d.ref.sample_id: d.reason for d in queue.dead_letters()}
    assert reasons == {
        "s1": "algorithm 'dflash' is not the loader's 'eagle3' (the loader is bound to algorithm=FeatureAlgorithm.EAGLE3)",
        "s2": f"schema_version {SCHEMA + 1} is not the loader's {SCHEMA}",
        "s3": (
            f"the store cannot serve it: LocalFeatureStore.get('s3'): its data is not in {store.uri!r} "
            f"(never put, or scrubbed after its ack or dead-lettering); a stale lease holder should drop the sample"
        ),
    }
    assert all(d.deliveries == 1 for d in queue.dead_letters())  # dead-lettered once, never looped
    # s3's data left the store behind the queue's back while its lease was live: a wrong ref too
    assert loader.stats == LoaderStats(batches=2, acked=2, dead_lettered=3, refused=3)
    assert [r.getMessage() for r in caplog.records] == [
        f"FeatureDataLoader skipped ref 's1' (dead-lettered): {reasons['s1']}",
        f"FeatureDataLoader skipped ref 's2' (dead-lettered): {reasons['s2']}",
        f"FeatureDataLoader skipped ref 's3' (dead-lettered): {reasons['s3']}",
    ]
    assert_nothing_leaked(store, queue)


@pytest.mark.parametrize(("batch_size", "prefetch"), [(1, 0), (3, 0), (1, 2), (3, 4)])
def test_a_ref_the_consumer_cannot_use_raises_at_its_place_and_never_waits(batch_size, prefetch):
    store, queue = make_queue(0, close=False)  # open: a loader that skipped and waited would hang
    put_sample(store, queue, 0)
    put_sample(store, queue, 1, schema_version=SCHEMA + 1)
    put_sample(store, queue, 2)
    loader = loader_for(queue, batch_size=batch_size, prefetch=prefetch, close_queue=False)
    # The batch ends before the refused ref, whatever the batch size or prefetch.
    assert [s.ref.sample_id for s in next(loader)] == ["s0"]
    with pytest.raises(SchemaMismatch, match=exact(
        f"FeatureDataLoader cannot train on ref 's1': schema_version {SCHEMA + 1} is not the loader's {SCHEMA}; "
        f"it was dead-lettered (queue.dead_letters() lists it).  Give the loader the algorithm and schema_version "
        f"the producers write, or pass on_mismatch='skip' to skip such refs with a warning"
    )):
        next(loader)
    assert [d.ref.sample_id for d in queue.dead_letters()] == ["s1"]
    assert [s.ref.sample_id for s in next(loader)] == ["s2"]  # the loader stays usable
    queue.close()
    assert list(loader) == []
    assert loader.stats == LoaderStats(batches=2, acked=2, dead_lettered=1, refused=1)
    assert_nothing_leaked(store, queue)


def test_algorithm_and_schema_not_given_are_taken_from_the_first_ref():
    store, queue = make_queue(0, close=False)
    put_sample(store, queue, 0, schema_version=7)
    put_sample(store, queue, 1, algorithm="dflash", schema_version=7)
    queue.close()
    loader = FeatureDataLoader(queue, store, poll_interval=0.01)
    assert loader.algorithm is None and loader.schema_version is None
    assert next(loader)[0].ref.sample_id == "s0"
    assert loader.algorithm == "eagle3" and loader.schema_version == 7
    with pytest.raises(SchemaMismatch, match="^FeatureDataLoader cannot train on ref 's1': algorithm 'dflash' is "
                       "not the loader's 'eagle3' \\(the loader is bound to algorithm=FeatureAlgorithm.EAGLE3, taken "
                       "from the first ref, 's0'\\); "):
        next(loader)
    assert list(loader) == []
    assert_nothing_leaked(store, queue)


@pytest.mark.parametrize("reclaim", [True, False])
def test_stops_only_when_drained_after_close_with_leases_outstanding(reclaim):
    clock = ManualClock()
    store, queue = make_queue(3, close=False, clock=clock, visibility_timeout=10)
    crashed = queue.acquire_nowait()  # s0: a consumer that will never come back
    queue.close()
    clock.advance(6)
    last_seen = threading.Event()
    seen = []

    def consume():
        with loader_for(queue, reclaim=reclaim) as loader:
            for batch in loader:
                seen.append((batch[0].ref.sample_id, batch[0].lease.redelivery_count))
                if len(seen) == 2:
                    clock.advance(5)  # s0's lease expires; ours (deadline 16) do not
                    last_seen.set()
        return loader.stats

    if reclaim:
        stats = consume()  # the loader reclaims s0 itself when acquire comes back empty
    else:
        result = []
        consumer = threading.Thread(target=lambda: result.append(consume()))
        consumer.start()
        assert last_seen.wait(GUARD_S)
        assert queue.is_closed and not queue.is_drained
        assert queue.reclaim_expired() == 1  # someone else's reclaimer
        consumer.join(GUARD_S)
        assert not consumer.is_alive()
        stats = result[0]
    assert seen == [("s1", 0), ("s2", 0), ("s0", 1)]
    assert stats.acked == 3
    assert queue.ack(crashed) is False
    assert_nothing_leaked(store, queue)


@pytest.mark.parametrize(("batch_size", "prefetch"), [(1, 3), (2, 4)])
def test_prefetch_depth_is_respected(batch_size, prefetch):
    store, queue = make_queue(24)
    bound = prefetch + batch_size
    with loader_for(queue, batch_size=batch_size, prefetch=prefetch) as loader:
        for n, batch in enumerate(loader):
            if n == 0:
                # The prefetch thread fills its buffer while this step runs, and stops there.
                wait_buffered(loader, prefetch)
                assert store.gets == len(batch) + prefetch
                assert queue.outstanding_count() == len(batch) + prefetch
            assert loader.buffered <= prefetch
            assert queue.outstanding_count() <= bound
            assert store.gets <= 24
    assert loader.stats.acked == 24
    assert_nothing_leaked(store, queue)


def test_a_prefetched_sample_reclaimed_while_buffered_is_dropped_not_yielded():
    clock = ManualClock()
    store, queue = make_queue(5, clock=clock, visibility_timeout=10)
    yielded = []
    with loader_for(queue, prefetch=2, reclaim=False) as loader:
        for batch in loader:
            yielded.append((batch[0].ref.sample_id, batch[0].lease.redelivery_count))
            if len(yielded) == 1:
                store.wait_for_gets(3)  # s0 in hand, s1 and s2 buffered
                clock.advance(11)
                assert queue.reclaim_expired() == 3
    assert yielded == [("s0", 0), ("s3", 0), ("s4", 0), ("s0", 1), ("s1", 1), ("s2", 1)]
    # s0's late ack was stale; s1 and s2 were dropped at hand-off, their handles released.
    assert loader.stats == LoaderStats(batches=6, acked=5, stale=3)
    counts = Counter(sid for sid, _ in yielded)
    assert counts["s1"] == counts["s2"] == 1
    assert_nothing_leaked(store, queue)


def test_extend_is_a_heartbeat_for_the_batch_in_hand():
    clock = ManualClock()
    store, queue = make_queue(1, clock=clock, visibility_timeout=10)
    with loader_for(queue) as loader:
        assert loader.extend() is False  # nothing in hand yet
        for _ in loader:
            clock.advance(8)
            assert loader.extend() is True
            clock.advance(8)  # 16 s after the acquire, 8 s after the heartbeat
            assert queue.reclaim_expired() == 0
    assert loader.stats.acked == 1
    assert_nothing_leaked(store, queue)


@pytest.mark.parametrize("prefetch", [0, 2])
def test_a_store_error_fails_the_lease_and_propagates(prefetch):
    store, queue = make_queue(2)
    store.close()
    with pytest.raises(StoreClosed):
        with loader_for(queue, prefetch=prefetch) as loader:
            for _ in loader:
                pass
    assert queue.pending_count() == 2 and queue.outstanding_count() == 0


def test_a_loader_is_an_iterator_that_continues_where_it_stopped():
    _, queue = make_queue(3)
    loader = loader_for(queue)
    assert iter(loader) is loader
    for batch in loader:
        break
    assert [b[0].ref.sample_id for b in loader] == ["s1", "s2"]  # s0 was acked by the next pull
    assert loader.stats.acked == 3
    with pytest.raises(StopIteration):
        next(loader)
    loader.close()
    assert list(loader) == []


def wait_buffered(loader: FeatureDataLoader, n: int) -> None:
    """Wait until the prefetch buffer holds ``n`` samples (its condition is
    notified on every change the prefetch thread makes)."""
    with loader._filled:
        assert loader._filled.wait_for(lambda: len(loader._buffer) == n, GUARD_S), loader.buffered


def _drain(queue):
    leases = []
    while (lease := queue.acquire_nowait()) is not None:
        leases.append(lease)
    return leases
