"""FeatureDataLoader(copy=False): the store's views instead of copies (CPU tensors)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from loader_helpers import SCHEMA, assert_nothing_leaked, index_of, make_queue, put_sample  # noqa: E402

from refqueue.loader import FeatureDataLoader  # noqa: E402
from refqueue.queue import SampleRefQueue, VisibilityTimeout  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402

pytestmark = pytest.mark.torch


def plain_queue(n: int, max_deliveries: int = 3):
    store = LocalFeatureStore()
    queue = SampleRefQueue(store, VisibilityTimeout(30.0), max_deliveries=max_deliveries)
    refs = [put_sample(store, queue, i) for i in range(n)]
    queue.close()
    return store, queue, refs


@pytest.mark.parametrize("prefetch", [0, 2])
def test_views_are_the_stored_memory_and_everything_is_settled(prefetch):
    store, queue, refs = plain_queue(4)
    stored = {ref.sample_id: store.get(ref, copy=False) for ref in refs}
    for _, handle in stored.values():
        store.release(handle)
    seen = []
    with FeatureDataLoader(queue, algorithm="eagle3", schema_version=SCHEMA, prefetch=prefetch, copy=False) as loader:
        for batch in loader:
            sample = batch[0]
            views, _ = stored[sample.ref.sample_id]
            assert sample.tensors["aux_hidden_states"].data_ptr() == views["aux_hidden_states"].data_ptr()
            seen.append(index_of(sample))
    assert seen == [0, 1, 2, 3]
    assert_nothing_leaked(store, queue)


def test_a_trainer_writing_a_view_gets_the_sample_dead_lettered_not_retrained():
    store, queue, refs = plain_queue(2)
    loader = FeatureDataLoader(queue, algorithm="eagle3", schema_version=SCHEMA, copy=False, close_queue=False)
    batch = next(loader)
    assert batch[0].ref == refs[0]
    batch.loss_mask[0] = 0.0  # an in-place edit, allowed on copies only
    loader.close(ack=False)  # the step failed: the sample goes back to the queue
    with FeatureDataLoader(queue, algorithm="eagle3", schema_version=SCHEMA, copy=False, on_mismatch="skip") as again:
        trained = [index_of(b[0]) for b in again]
    assert trained == [1]  # s0 was never handed out again
    assert [d.ref.sample_id for d in queue.dead_letters()] == ["s0"]
    assert "['loss_mask'] was written to after its put" in queue.dead_letters()[0].reason
    assert again.stats.refused == 1
    assert_nothing_leaked(store, queue)


def test_copy_false_needs_a_store_whose_get_takes_it():
    store, queue = make_queue(1)  # CountingStore.get(ref, device) has no copy keyword
    with pytest.raises(ValueError, match=r"^FeatureDataLoader\(copy=False\) needs a store whose get takes "
                                         r"copy=False .*CountingStore.get does not, so pass copy=True$"):
        FeatureDataLoader(queue, copy=False)
    with pytest.raises(TypeError, match=r"^FeatureDataLoader\(copy\) must be a bool, got "):
        FeatureDataLoader(queue, copy=0)
    assert queue.pending_count() == 1 and not queue.outstanding_count()  # a refused loader leased nothing
