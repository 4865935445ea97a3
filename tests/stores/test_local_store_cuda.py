"""LocalFeatureStore and FeatureDataLoader on CUDA (skipped on machines without a GPU)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from store_helpers import eagle3_tensors, put  # noqa: E402

from refqueue.loader import FeatureDataLoader  # noqa: E402
from refqueue.queue import SampleRefQueue  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402

pytestmark = [
    pytest.mark.torch,
    pytest.mark.timeout(120),
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def _same(a: dict, b: dict) -> bool:
    return list(a) == list(b) and all(torch.equal(a[k].cpu(), b[k].cpu()) for k in a)


def test_a_cuda_store_keeps_its_tensors_on_the_device():
    store = LocalFeatureStore(device="cuda")
    assert store.device.type == "cuda" and store.device.index is not None
    tensors = eagle3_tensors()
    ref = put(store, "s0", tensors)
    for t in tensors.values():
        t.zero_()  # the producer reuses its buffers
    on_device, _ = store.get(ref)
    assert all(t.device == store.device for t in on_device.values())
    assert _same(on_device, eagle3_tensors())
    on_host, _ = store.get(ref, device="cpu")
    assert all(t.device.type == "cpu" for t in on_host.values())
    assert _same(on_host, eagle3_tensors())


def test_a_get_on_another_stream_sees_the_put_and_survives_a_scrub():
    store = LocalFeatureStore(device="cuda")
    big = eagle3_tensors(seq=2048, hidden=1024)
    ref = put(store, "s0", {k: t.cuda() for k, t in big.items()})  # device-to-device copy
    side = torch.cuda.Stream(device=store.device)
    with torch.cuda.stream(side):
        got, _ = store.get(ref)
        store.scrub(ref)
        filler = torch.ones(3, 2048, 1024, device=store.device)  # may reuse freed memory
        total = got["aux_hidden_states"].sum()
    side.synchronize()
    assert torch.allclose(total.cpu(), big["aux_hidden_states"].sum(), rtol=1e-4)
    del filler


def test_a_cpu_store_can_serve_cuda_tensors():
    store = LocalFeatureStore()
    ref = put(store, "s0")
    got, _ = store.get(ref, device="cuda")
    assert all(t.is_cuda for t in got.values())
    assert _same(got, eagle3_tensors())


@pytest.mark.parametrize("prefetch", [0, 3])
def test_the_loader_hands_cuda_batches_to_a_consumer_stream(prefetch):
    store = LocalFeatureStore(device="cuda")
    queue = SampleRefQueue(store)
    for i in range(8):
        queue.put(put(store, f"s{i}", eagle3_tensors(seed=i)))
    queue.close()
    consumer = torch.cuda.Stream(device=store.device)
    sums = {}
    with torch.cuda.stream(consumer):
        with FeatureDataLoader(queue, algorithm="eagle3", schema_version=2, prefetch=prefetch, device="cuda") as loader:
            for batch in loader:
                sample = batch[0]
                sums[sample.ref.sample_id] = sample.tensors["aux_hidden_states"].sum()
    consumer.synchronize()
    for i in range(8):
        expected = eagle3_tensors(seed=i)["aux_hidden_states"].sum()
        assert torch.allclose(sums[f"s{i}"].cpu(), expected, rtol=1e-4)
    assert store.health().sample_count == 0 and store.handle_count == 0
