"""The seed's loader: constructor, lifecycle and names refqueue keeps.

The seed documents its ``FeatureDataLoader(queue, store, algorithm=None,
acquire_poll_interval=0.05)`` as an iterator that pulls one lease at a
time, hands the trainer a batch, and acks the previous lease (releasing its
handle) on the next pull, so a trainer holds one batch across one forward.
"""

from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")

from compat_helpers import GUARD_S, exact, put  # noqa: E402

from refqueue.queue import SampleRefQueue  # noqa: E402
from refqueue.refs import FeatureAlgorithm  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402
from refqueue.loader import FeatureDataLoader  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.timeout(120)]


def filled(n: int, *, close: bool = True, **fields):
    store = LocalFeatureStore()
    queue = SampleRefQueue(store)
    for i in range(n):
        queue.put(put(store, f"s{i}", i, **fields))
    if close:
        queue.close()
    return store, queue


def test_the_seeds_constructor_works_as_it_is():
    store, queue = filled(2)
    FeatureDataLoader(queue, store)
    FeatureDataLoader(queue, store, FeatureAlgorithm.EAGLE3, 0.01)
    loader = FeatureDataLoader(queue=queue, store=store, algorithm=None, acquire_poll_interval=0.01)
    assert (loader.queue, loader.store, loader.acquire_poll_interval) == (queue, store, 0.01)
    assert [b.input_ids.shape for b in loader] == [torch.Size([0])] * 2


def test_a_batch_answers_the_seeds_eagle3_field_names():
    store, queue = filled(1)
    batch = next(FeatureDataLoader(queue, store))
    assert int(batch.aux_hidden_states[0]) == 0
    for name in ("input_ids", "attention_mask", "loss_mask"):
        assert isinstance(getattr(batch, name), torch.Tensor)
    assert batch.logits is None and batch.target_probs is None  # optional fields the sample lacks


def test_the_previous_lease_is_acked_on_the_next_pull():
    store, queue = filled(3)
    loader = FeatureDataLoader(queue, store)
    first = next(loader)
    assert queue.outstanding_count() == 1 and store.health().sample_count == 3
    held = first.aux_hidden_states
    second = next(loader)
    assert queue.outstanding_count() == 1  # the first was acked, the second is held
    assert queue.ack(first[0].lease) is False  # already acked by the loader
    assert int(held[0]) == 0  # the trainer's tensors of the first batch stay valid
    assert int(second.aux_hidden_states[0]) == 1


def test_consume_now_acks_the_batch_in_hand_at_once():
    store, queue = filled(2)
    loader = FeatureDataLoader(queue, store)
    next(loader)
    loader.consume_now()
    assert queue.outstanding_count() == 0 and store.health().sample_count == 1


def test_iteration_stops_when_the_queue_is_closed_and_drained():
    store, queue = filled(3)
    loader = FeatureDataLoader(queue, store)
    assert iter(loader) is loader
    assert sum(1 for _ in loader) == 3
    assert queue.outstanding_count() == 0 and store.health().sample_count == 0


def test_a_live_producer_is_followed_until_it_closes_the_queue():
    store, queue = filled(0, close=False)

    def produce():
        for i in range(20):
            queue.put_blocks_until_below(put(store, f"s{i}", i))
        queue.close()

    producer = threading.Thread(target=produce)
    producer.start()
    seen = [int(batch.aux_hidden_states[0]) for batch in FeatureDataLoader(queue, store, acquire_poll_interval=0.01)]
    producer.join(GUARD_S)
    assert seen == list(range(20))


def test_close_consumes_the_batch_in_hand_and_closes_the_queue():
    store, queue = filled(2, close=False)
    loader = FeatureDataLoader(queue, store)
    next(loader)
    loader.close()
    assert queue.is_closed and queue.outstanding_count() == 0 and queue.pending_count() == 1
    loader.close()  # idempotent
    with pytest.raises(StopIteration):
        next(loader)


def test_a_ref_of_another_algorithm_raises_value_error_instead_of_waiting():
    store, queue = filled(0, close=False)  # open: waiting would hang
    queue.put(put(store, "s0"))
    loader = FeatureDataLoader(queue, store, algorithm="dflash", acquire_poll_interval=0.01)
    with pytest.raises(ValueError, match=exact(
        "FeatureDataLoader cannot train on ref 's0': algorithm 'eagle3' is not the loader's 'dflash' (the loader "
        "is bound to algorithm=FeatureAlgorithm.DFLASH); it was "
        "dead-lettered (queue.dead_letters() lists it).  Give the loader the algorithm and schema_version the "
        "producers write, or pass on_mismatch='skip' to skip such refs with a warning"
    )):
        next(loader)
