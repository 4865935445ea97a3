"""Issue 12, defect 8 (High) and defect 13 (Low): the loader and consumer-side errors.

On 8456e91 ``FeatureDataLoader(q, algorithm="eagle3", schema_version=1,
device="meta")`` was accepted; with ``max_deliveries=1`` the first ``next()``
raised, failed the lease, and the queue dead-lettered the good sample and
scrubbed its data.  Now a device the loader cannot hand tensors on is refused
at construction, and any consumer-side error (``get`` failing for another
reason than the sample's data, ``collate`` raising) keeps the lease in
``loader.held``: nothing is failed or dead-lettered, and the next ``next()``
retries the same sample.  An ack that raised left its lease held by no one
until the visibility timeout; now it stays in ``loader.held`` and is tried
again.  Real ``LocalFeatureStore``, real torch tensors.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from refqueue.loader import FeatureDataLoader  # noqa: E402
from refqueue.queue import SampleRefQueue, VisibilityTimeout  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402

pytestmark = pytest.mark.timeout(120)


class FaultyStore(LocalFeatureStore):
    """A real store whose ``get`` or ``scrub`` raises the next ``n`` times told."""

    def __init__(self) -> None:
        super().__init__(max_samples=None, max_bytes=None, high_watermark_bytes=None, low_watermark_bytes=None)
        self.get_faults = 0
        self.scrub_faults = 0

    def get(self, ref, device=None):
        if self.get_faults:
            self.get_faults -= 1
            raise RuntimeError("device copy failed (injected)")
        return super().get(ref, device)

    def scrub(self, ref):
        if self.scrub_faults:
            self.scrub_faults -= 1
            raise OSError("scrub failed (injected)")
        return super().scrub(ref)


def tensors(i: int) -> dict:
    return {
        "aux_hidden_states": torch.full((2, 3, 4), float(i)),
        "input_ids": torch.arange(3) + i,
        "attention_mask": torch.ones(3, dtype=torch.bool),
        "loss_mask": torch.ones(3),
    }


def setup(n: int = 1, *, max_deliveries: int | None = 1, close: bool = True):
    store = FaultyStore()
    queue = SampleRefQueue(store, VisibilityTimeout(30.0), max_deliveries=max_deliveries)
    for i in range(n):
        queue.put(store.put(f"s{i}", tensors(i), run_id="r", algorithm="eagle3", schema_version=1,
                            target_model_version="t", draft_weight_version=0, num_tokens=3))
    if close:
        queue.close()
    return store, queue


def value_of(batch) -> int:
    return int(batch[0].tensors["aux_hidden_states"][0, 0, 0].item())


def snapshot(store, queue) -> tuple:
    health = store.health()
    return (queue.pending_count(), queue.outstanding_count(), len(queue.dead_letters()),
            health.sample_count, health.resident_bytes, store.handle_count)


@pytest.mark.parametrize(
    ("device", "reason"),
    [
        ("meta", "'meta' tensors hold no data"),
        (torch.device("meta"), "'meta' tensors hold no data"),
        pytest.param("mps", "MPS is not available", marks=pytest.mark.skipif(
            getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available(), reason="has MPS")),
        pytest.param("cuda", "CUDA is not available", marks=pytest.mark.skipif(
            torch.cuda.is_available(), reason="has CUDA")),
        pytest.param("cuda:0", "CUDA is not available", marks=pytest.mark.skipif(
            torch.cuda.is_available(), reason="has CUDA")),
        ("xla", "'cpu', 'cuda' or 'mps' only"),
    ],
)
def test_a_device_the_loader_cannot_serve_is_refused_at_construction(device, reason):
    store, queue = setup()
    before = snapshot(store, queue)
    with pytest.raises(ValueError) as info:
        FeatureDataLoader(queue, algorithm="eagle3", schema_version=1, device=device)
    message = str(info.value)
    assert message.startswith(f"FeatureDataLoader(device) got {device!r}") and reason in message and "pass " in message
    assert snapshot(store, queue) == before == (1, 0, 0, 1, store.health().resident_bytes, 0)
    with FeatureDataLoader(queue, algorithm="eagle3", schema_version=1) as loader:  # the sample is intact
        assert [value_of(b) for b in loader] == [0]


@pytest.mark.parametrize("prefetch", [0, 2])
def test_a_get_that_raises_keeps_the_lease_and_the_next_pull_retries_it(prefetch):
    store, queue = setup(2)
    store.get_faults = 1
    loader = FeatureDataLoader(queue, algorithm="eagle3", schema_version=1, prefetch=prefetch)
    with pytest.raises(RuntimeError, match=r"^device copy failed \(injected\)$"):
        next(loader)
    assert queue.dead_letters() == [] and store.health().sample_count == 2  # nothing destroyed
    assert [lease.ref.sample_id for lease in loader.held] == ["s0"]
    assert queue.outstanding_count() >= 1
    seen = [value_of(b) for b in loader]
    assert sorted(seen) == [0, 1] and seen[0] == 0  # the held sample first
    assert loader.held == [] and queue.dead_letters() == []
    assert loader.stats.acked == 2 and loader.stats.failed == 0
    loader.close()
    assert queue.is_drained and store.health().sample_count == 0 and store.handle_count == 0


def test_a_get_that_raises_for_a_later_sample_of_a_batch_keeps_the_earlier_one():
    store, queue = setup(2)
    real_get = LocalFeatureStore.get
    calls = []

    def get_second_fails(self, ref, device=None):
        calls.append(ref.sample_id)
        if len(calls) == 2:
            raise RuntimeError("out of device memory (injected)")
        return real_get(self, ref, device)

    store.get = get_second_fails.__get__(store)
    loader = FeatureDataLoader(queue, algorithm="eagle3", schema_version=1, batch_size=2)
    with pytest.raises(RuntimeError, match="out of device memory"):
        next(loader)
    assert queue.dead_letters() == [] and store.health().sample_count == 2 and store.handle_count == 0
    assert [lease.ref.sample_id for lease in loader.held] == ["s0", "s1"]
    batch = next(loader)
    assert [s.ref.sample_id for s in batch] == ["s0", "s1"]
    with pytest.raises(StopIteration):
        next(loader)
    assert queue.dead_letters() == [] and queue.is_drained


def test_a_collate_that_raises_keeps_the_batch_and_the_next_pull_collates_it_again():
    store, queue = setup(1)
    failures = [ValueError("collate bug (injected)")]

    def collate(batch):
        if failures:
            raise failures.pop()
        return value_of(batch)

    loader = FeatureDataLoader(queue, algorithm="eagle3", schema_version=1, collate=collate)
    with pytest.raises(ValueError, match="collate bug"):
        next(loader)
    assert queue.dead_letters() == [] and store.health().sample_count == 1
    assert [lease.ref.sample_id for lease in loader.held] == ["s0"] and loader.current is None
    assert list(loader) == [0]
    assert loader.stats.batches == 1 and loader.stats.acked == 1 and queue.dead_letters() == []
    loader.close()
    assert store.handle_count == 0


def test_a_held_sample_whose_lease_expired_meanwhile_is_dropped_as_stale():
    from refqueue.clock import ManualClock

    clock = ManualClock(0.0)
    store = FaultyStore()
    queue = SampleRefQueue(store, VisibilityTimeout(10.0), clock=clock)
    queue.put(store.put("s0", tensors(0), run_id="r", algorithm="eagle3", schema_version=1,
                        target_model_version="t", draft_weight_version=0, num_tokens=3))
    store.get_faults = 1
    loader = FeatureDataLoader(queue, algorithm="eagle3", schema_version=1, reclaim=False)
    with pytest.raises(RuntimeError):
        next(loader)
    clock.advance(11)
    assert queue.reclaim_expired() == 1  # another consumer may have it now
    queue.close()
    assert [value_of(b) for b in loader] == [0]  # redelivered once, not twice
    assert loader.stats.stale == 1 and loader.stats.acked == 1 and queue.is_drained


def test_an_ack_that_raises_keeps_its_lease_and_is_tried_again():
    store, queue = setup(2)
    loader = FeatureDataLoader(queue, algorithm="eagle3", schema_version=1)
    first = next(loader)
    store.scrub_faults = 1
    with pytest.raises(OSError, match="scrub failed"):
        next(loader)  # acks the first batch: the queue's scrub raises, nothing changed
    assert loader.held == first.leases and queue.outstanding_count() == 1
    assert store.handle_count == 0  # the consumer is done with the tensors
    assert [value_of(b) for b in loader] == [1]  # the ack is retried first, then s1
    assert loader.held == [] and loader.stats.acked == 2 and queue.is_drained
    assert store.health().sample_count == 0


def test_close_retries_a_raising_ack_and_keeps_the_lease_when_it_raises_again():
    store, queue = setup(1)
    loader = FeatureDataLoader(queue, algorithm="eagle3", schema_version=1)
    batch = next(loader)
    store.scrub_faults = 2
    with pytest.raises(OSError):
        loader.commit()
    with pytest.raises(OSError):
        loader.close()
    assert loader.held == batch.leases and queue.outstanding_count() == 1  # still retrievable
    assert queue.ack(loader.held[0]) is True and queue.is_drained


def test_close_gives_back_a_held_sample_with_fail():
    store, queue = setup(1, max_deliveries=None)
    store.get_faults = 1
    loader = FeatureDataLoader(queue, algorithm="eagle3", schema_version=1)
    with pytest.raises(RuntimeError):
        next(loader)
    loader.close()
    assert loader.held == [] and queue.pending_count() == 1 and queue.outstanding_count() == 0
    assert loader.stats.failed == 1 and store.health().sample_count == 1


class ExtendFaultQueue(SampleRefQueue):
    """A real queue whose extend raises the next ``extend_faults`` times."""

    extend_faults = 0

    def extend(self, lease, seconds=None):
        if self.extend_faults:
            self.extend_faults -= 1
            raise RuntimeError("extend failed (injected)")
        return super().extend(lease, seconds)


def test_an_extend_that_raises_at_hand_off_keeps_the_prefetched_leases():
    store = FaultyStore()
    queue = ExtendFaultQueue(store, VisibilityTimeout(30.0), max_deliveries=1)
    for i in range(3):
        queue.put(store.put(f"s{i}", tensors(i), run_id="r", algorithm="eagle3", schema_version=1,
                            target_model_version="t", draft_weight_version=0, num_tokens=3))
    queue.close()
    loader = FeatureDataLoader(queue, algorithm="eagle3", schema_version=1, batch_size=2, prefetch=2)
    queue.extend_faults = 1
    with pytest.raises(RuntimeError, match="extend failed"):
        next(loader)
    held = [lease.ref.sample_id for lease in loader.held]
    assert len(held) in (1, 2) and queue.dead_letters() == [] and store.handle_count <= 2
    seen = sorted(value_of_sample(s) for b in loader for s in b)
    assert seen == [0, 1, 2] and queue.dead_letters() == [] and queue.is_drained
    loader.close()
    assert store.handle_count == 0


def value_of_sample(sample) -> int:
    return int(sample.tensors["aux_hidden_states"][0, 0, 0].item())
