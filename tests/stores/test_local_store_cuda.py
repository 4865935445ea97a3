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
    pytest.mark.gpu,
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


# -- issue 24: the data plane on the device ----------------------------------------------------

MiB = 1024 * 1024


def big_sample(mib: int, *, device: str = "cuda", pin: bool = False, seed: int = 0) -> dict:
    """An eagle3 sample whose aux hidden states hold about ``mib`` MiB of bf16, every tensor a
    multiple of 512 bytes (so the caching allocator's byte counts are exact)."""
    gen = torch.Generator().manual_seed(seed)
    hidden = 1024
    seq = max(512, mib * MiB // (3 * hidden * 2) // 512 * 512)
    aux = torch.randn(3, seq, hidden, generator=gen).to(torch.bfloat16)
    tensors = {
        "aux_hidden_states": aux,
        "input_ids": torch.randint(0, 1000, (seq,), generator=gen),
        "attention_mask": torch.ones(seq, dtype=torch.bool),
        "loss_mask": torch.ones(seq, dtype=torch.float32),
    }
    if device == "cuda":
        return {k: t.cuda() for k, t in tensors.items()}
    return {k: t.pin_memory() for k, t in tensors.items()} if pin else tensors


def put_big(store, sample_id: str, tensors: dict, **kw):
    seq = tensors["input_ids"].shape[0]
    return put(store, sample_id, tensors, num_tokens=seq, **kw)


def allocated() -> int:
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated()


def test_a_device_put_makes_exactly_one_copy_and_a_handed_over_one_none():
    store = LocalFeatureStore(max_samples=None, max_bytes=None, high_watermark_bytes=None, low_watermark_bytes=None,
                              device="cuda")
    tensors = big_sample(8)
    nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
    before = allocated()
    ref = put_big(store, "copied", tensors)
    assert allocated() - before == ref.estimated_bytes == nbytes
    before = allocated()
    adopted = put_big(store, "adopted", tensors, copy=False)
    assert allocated() == before  # ownership passed: nothing allocated
    views, handle = store.get(adopted, copy=False)
    assert all(views[k].data_ptr() == tensors[k].data_ptr() for k in tensors)
    store.release(handle)


def test_views_allocate_nothing_and_a_copy_allocates_the_sample_once():
    store = LocalFeatureStore(device="cuda")
    ref = put_big(store, "s0", big_sample(8))
    before = allocated()
    views, h1 = store.get(ref, copy=False)
    assert allocated() == before
    copies, h2 = store.get(ref)
    assert allocated() - before == ref.estimated_bytes
    for name in views:
        assert torch.equal(views[name], copies[name]) and views[name].data_ptr() != copies[name].data_ptr()
    store.release(h1)
    store.release(h2)


def test_the_hot_path_never_synchronizes_the_device():
    store = LocalFeatureStore(device="cuda")
    source = big_sample(4)
    handed_over = big_sample(1, seed=1)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")  # any synchronizing call raises
    try:
        ref = put_big(store, "s0", source)
        adopted = put_big(store, "s1", handed_over, copy=False)
        views, h1 = store.get(ref, copy=False)
        copies, h2 = store.get(ref)
        health = store.health()
        store.release(h1)
        store.release(h2)
        store.scrub(adopted)
        store.gc()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert health.sample_count == 2
    assert torch.equal(views["aux_hidden_states"], source["aux_hidden_states"])
    assert torch.equal(copies["aux_hidden_states"], source["aux_hidden_states"])


@pytest.mark.parametrize("pin", [True, False], ids=["pinned", "pageable"])
def test_host_puts_cross_the_staging_chunks_exactly_and_reuse_the_pinned_buffers(pin):
    store = LocalFeatureStore(max_bytes=512 * MiB, device="cuda")
    refs, sources = [], []
    for i in range(3):
        source = big_sample(40, device="cpu", pin=pin, seed=i)  # 40 MiB: several staging chunks
        refs.append(put_big(store, f"s{i}", source))
        sources.append(source)
        for t in source.values():
            t.zero_()  # the producer reuses its host buffers as soon as put returns
    for i, ref in enumerate(refs):
        got, handle = store.get(ref, copy=False)
        expected = big_sample(40, device="cpu", seed=i)
        assert all(torch.equal(got[k].cpu(), expected[k]) for k in expected)
        store.release(handle)
    stager = store._cuda.stager
    assert stager.allocations == stager.slots  # made once, reused by every put
    if pin:
        # the large pinned tensor goes by one direct copy; the three small ones share one chunk
        assert stager.chunks == 3
    else:
        chunks_per_put = -(-refs[0].estimated_bytes // stager.chunk_bytes)
        assert stager.chunks == 3 * chunks_per_put  # the small features share the aux tensor's last chunk


def test_a_producer_reusing_its_device_buffer_right_after_put_cannot_change_the_stored_data():
    store = LocalFeatureStore(max_bytes=1024 * MiB, device="cuda")
    source = big_sample(256)
    expected = source["aux_hidden_states"].clone()
    torch.cuda.synchronize()
    ref = put_big(store, "s0", source)
    source["aux_hidden_states"].fill_(7)  # on the producer's stream, with no wait of its own
    got, _ = store.get(ref)
    assert torch.equal(got["aux_hidden_states"], expected)


def test_a_drained_queue_gives_back_every_byte_of_device_memory():
    store = LocalFeatureStore(max_bytes=1024 * MiB, device="cuda")
    queue = SampleRefQueue(store)
    torch.cuda.synchronize()
    before = allocated()
    refs = []
    for i in range(6):
        source = big_sample(16, seed=i)
        refs.append(put_big(store, f"s{i}", source))
        queue.put(refs[-1])
        del source
    # at least the samples' bytes: the caching allocator rounds a block of
    # over 1 MiB up to its 2 MiB-aligned segment when the rest is too small to split
    assert allocated() - before >= sum(ref.estimated_bytes for ref in refs)
    queue.close()
    with FeatureDataLoader(queue, algorithm="eagle3", schema_version=2, prefetch=2) as loader:
        for batch in loader:
            batch[0].tensors["aux_hidden_states"].float().sum()
    del batch
    assert store.health().sample_count == 0 and store.handle_count == 0
    assert allocated() == before


def test_a_view_keeps_its_memory_after_the_scrub_until_it_is_dropped():
    store = LocalFeatureStore(device="cuda")
    before = allocated()
    ref = put_big(store, "s0", big_sample(8))
    views, handle = store.get(ref, copy=False)
    store.release(handle)
    assert store.scrub(ref) and store.health().resident_bytes == 0
    assert allocated() - before == ref.estimated_bytes  # the views still hold it
    del views
    assert allocated() == before


def test_a_cpu_store_feeding_a_cuda_loader_reuses_its_pinned_buffers():
    store = LocalFeatureStore(max_bytes=1024 * MiB)
    queue = SampleRefQueue(store)
    for i in range(8):
        queue.put(put_big(store, f"s{i}", big_sample(20, device="cpu", seed=i)))
    queue.close()
    seen = 0
    with FeatureDataLoader(queue, algorithm="eagle3", schema_version=2, prefetch=2, device="cuda") as loader:
        for batch in loader:
            assert batch[0].tensors["aux_hidden_states"].is_cuda
            seen += 1
    assert seen == 8
    assert store._stager.allocations == store._stager.slots  # made once, reused for every sample


def test_pad_collate_assembles_a_cuda_batch_on_the_device():
    from refqueue.collate import pad_collate

    store = LocalFeatureStore(max_bytes=1024 * MiB, device="cuda")
    queue = SampleRefQueue(store)
    lengths = [512, 1024, 1536]
    for i, seq in enumerate(lengths):
        tensors = {k: v[..., :seq, :] if k == "aux_hidden_states" else v[:seq]
                   for k, v in big_sample(16, seed=i).items()}
        tensors = {k: v.contiguous() for k, v in tensors.items()}
        queue.put(put(store, f"s{i}", tensors, num_tokens=seq))
    queue.close()
    with FeatureDataLoader(queue, algorithm="eagle3", schema_version=2, batch_size=3, prefetch=3,
                           collate=pad_collate) as loader:
        (batch,) = list(loader)
    assert batch["aux_hidden_states"].shape == (3, 3, 1536, 1024)
    assert all(t.is_cuda for t in batch.values())
    assert batch["lengths"].tolist() == lengths
    assert batch["loss_mask"].sum().item() == sum(lengths)
