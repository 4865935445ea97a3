"""The queue over ``LocalFeatureStore`` (CPU tensors), where data really moves:
the anchor's D2 failures (a late release after reclaim deleting the data the
redelivery needs; fail-without-release leaking bytes that keep the producer
paused) must not happen."""

from __future__ import annotations

import pytest

from refqueue.clock import ManualClock
from refqueue.errors import PutAborted, SampleMissing
from refqueue.queue import SampleRefQueue, VisibilityTimeout

torch = pytest.importorskip("torch")
LocalFeatureStore = pytest.importorskip("refqueue.stores.local").LocalFeatureStore

pytestmark = pytest.mark.torch


def put_sample(store, sample_id: str, value: float, n: int = 16):
    tensors = {
        "aux_hidden_states": torch.full((n,), value, dtype=torch.float32),
        "input_ids": torch.arange(n, dtype=torch.int64),
        "attention_mask": torch.ones(n, dtype=torch.bool),
        "loss_mask": torch.ones(n, dtype=torch.bool),
    }
    return store.put(sample_id, tensors, run_id="r", algorithm="eagle3", schema_version=1,
                     target_model_version="t", draft_weight_version=0, num_tokens=n)


def test_a_late_release_after_reclaim_leaves_the_redelivery_its_data():
    store = LocalFeatureStore(device="cpu")
    clock = ManualClock(0.0)
    q = SampleRefQueue(store, VisibilityTimeout(5.0), clock=clock)
    q.put(put_sample(store, "a", 1.5))
    slow = q.acquire_nowait()
    slow_tensors, slow_handle = store.get(slow.ref)
    clock.advance(5.0)
    assert q.reclaim_expired() == 1
    fresh = q.acquire_nowait()
    store.release(slow_handle)  # the slow consumer wakes up and lets go
    assert q.ack(slow) is False
    tensors, handle = store.get(fresh.ref)  # still there for the live lease
    assert torch.equal(tensors["aux_hidden_states"], torch.full((16,), 1.5))
    assert q.ack(fresh) is True
    assert store.health().resident_bytes == 0
    with pytest.raises(SampleMissing):
        store.get(fresh.ref)
    # both holders keep what get gave them after the scrub
    assert torch.equal(slow_tensors["aux_hidden_states"], tensors["aux_hidden_states"])
    store.release(handle)


def test_fail_without_release_leaks_nothing_and_the_producer_resumes():
    ref_bytes = put_sample(LocalFeatureStore(device="cpu"), "probe", 0.0).estimated_bytes
    store = LocalFeatureStore(device="cpu", high_watermark_bytes=2 * ref_bytes, low_watermark_bytes=ref_bytes)
    q = SampleRefQueue(store)
    q.put(put_sample(store, "a", 1.0))
    q.put(put_sample(store, "c", 3.0))
    blocked = put_sample(store, "b", 2.0)
    with pytest.raises(PutAborted):
        q.put_blocks_until_below(blocked, abort_when=lambda: True)  # 2 samples of work resident: paused (D8)
    lease = q.acquire_nowait()
    store.get(lease.ref)  # never released
    assert q.fail(lease) is True  # a retry, data kept
    for _ in range(2):  # c, then a again
        again = q.acquire_nowait()
        store.get(again.ref)  # never released either
        assert q.ack(again) is True  # the live ack scrubs regardless of open handles
    assert again.ref.sample_id == "a" and again.redelivery_count == 1
    q.put_blocks_until_below(blocked, abort_when=lambda: True)  # no work left: resumes
    assert not q.is_paused and q.pending_count() == 1
    assert store.gc() == 3  # the handles the holders dropped are swept, nothing else
    assert store.health().sample_count == 1


def test_the_store_watermarks_are_the_default_pair():
    store = LocalFeatureStore(device="cpu", max_bytes=1000, high_watermark_bytes=600, low_watermark_bytes=100)
    with pytest.raises(ValueError):
        SampleRefQueue(store, high_watermark_bytes=1001)  # above the store's capacity
    q = SampleRefQueue(store, low_watermark_bytes=300)  # mixed: store high, queue low
    assert not q.is_paused
