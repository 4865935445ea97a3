"""put(copy=False), get(copy=False) and the pinned stager's chunking, on CPU tensors.

The CUDA side of the same behaviour (copy stream, ready events, staging
through pinned memory) is in test_local_store_cuda.py, marked gpu.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from store_helpers import eagle3_tensors, put  # noqa: E402

from refqueue.errors import RefMismatch  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402
from refqueue.stores._device import PinnedStager, adoptable, as_bytes  # noqa: E402

pytestmark = pytest.mark.torch


# -- put(copy=False): ownership transfer ------------------------------------------------


def test_a_handed_over_tensor_is_kept_without_a_copy():
    store = LocalFeatureStore()
    tensors = eagle3_tensors()
    ref = put(store, "s0", tensors, copy=False)
    got, handle = store.get(ref, copy=False)
    for name, tensor in tensors.items():
        assert got[name].data_ptr() == tensor.data_ptr(), name
    store.release(handle)


def test_a_slice_of_a_larger_buffer_is_copied_even_when_handed_over():
    store = LocalFeatureStore()
    buffer = torch.randn(2, 3, 4, 8)
    tensors = dict(eagle3_tensors(), aux_hidden_states=buffer[0])  # half of buffer's storage
    assert not adoptable(buffer[0], torch.device("cpu"))
    expected = buffer[0].clone()
    ref = put(store, "s0", tensors, copy=False)
    got, _ = store.get(ref, copy=False)
    assert got["aux_hidden_states"].data_ptr() != buffer.data_ptr()
    buffer.zero_()  # the producer's buffer stays its own: the stored copy is unchanged
    assert torch.equal(got["aux_hidden_states"], expected)
    assert torch.equal(store.get(ref)[0]["aux_hidden_states"], expected)


def test_a_producer_writing_a_handed_over_tensor_makes_the_next_get_refuse():
    store = LocalFeatureStore()
    tensors = eagle3_tensors()
    ref = put(store, "s0", tensors, copy=False)
    tensors["loss_mask"].zero_()  # broke its promise
    with pytest.raises(RefMismatch, match=r"^LocalFeatureStore.get\('s0'\): the resident data of \['loss_mask'\] "
                                          r"was written to after its put"):
        store.get(ref)
    assert store.handle_count == 0  # the refused get opened no handle
    assert store.health().sample_count == 1  # and dropped nothing: only a scrub does (D2)


def test_copy_must_be_a_bool_and_a_rejected_put_changes_nothing():
    store = LocalFeatureStore()
    with pytest.raises(TypeError, match=r"copy must be True or False, got 'no' \(str\)"):
        put(store, "s0", copy="no")
    assert store.health().sample_count == 0
    ref = put(store, "s0")  # the id was not reserved by the rejected call
    with pytest.raises(TypeError, match=r"copy must be True or False, got str"):
        store.get(ref, copy="False")
    assert store.handle_count == 0


# -- get(copy=False): views ---------------------------------------------------------------


def test_views_share_the_stored_memory_and_copies_do_not():
    store = LocalFeatureStore()
    ref = put(store, "s0")
    first, h1 = store.get(ref, copy=False)
    second, h2 = store.get(ref, copy=False)
    copied, h3 = store.get(ref)
    for name in first:
        assert first[name].data_ptr() == second[name].data_ptr()
        assert copied[name].data_ptr() != first[name].data_ptr()
        assert torch.equal(copied[name], first[name])
    for handle in (h1, h2, h3):
        store.release(handle)
    assert store.handle_count == 0


def test_writing_through_a_view_is_caught_at_the_next_get_and_never_redelivered():
    store = LocalFeatureStore()
    ref = put(store, "s0")
    views, handle = store.get(ref, copy=False)
    views["loss_mask"][0] = 0.0  # a consumer masking in place, as copy=True would allow
    store.release(handle)
    with pytest.raises(RefMismatch, match=r"\['loss_mask'\] was written to after its put"):
        store.get(ref, copy=False)
    with pytest.raises(RefMismatch):
        store.get(ref)  # copy=True refuses as well: the data itself is no longer the put's


def test_a_copy_may_be_written_freely():
    store = LocalFeatureStore()
    ref = put(store, "s0")
    copies, handle = store.get(ref)
    copies["loss_mask"].zero_()
    store.release(handle)
    again, _ = store.get(ref, copy=False)
    assert torch.equal(again["loss_mask"], eagle3_tensors()["loss_mask"])


def test_views_stay_valid_after_a_scrub():
    store = LocalFeatureStore()
    ref = put(store, "s0")
    views, _ = store.get(ref, copy=False)
    assert store.scrub(ref)
    assert store.health().resident_bytes == 0
    assert torch.equal(views["aux_hidden_states"], eagle3_tensors()["aux_hidden_states"])


# -- the stager's chunks --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.bool, torch.int64, torch.uint8])
@pytest.mark.parametrize("numel", [0, 1, 7, 64, 65, 1000])
def test_the_stager_copies_every_byte_across_chunk_boundaries(dtype, numel):
    stager = PinnedStager(chunk_bytes=64, slots=2, pin=False)
    gen = torch.Generator().manual_seed(numel)
    source = (torch.randn(numel, generator=gen) * 100).to(dtype)
    target = torch.empty_like(source)
    stager.copy(source, target)
    assert torch.equal(as_bytes(source), as_bytes(target))
    nbytes = numel * source.element_size()
    assert stager.chunks == -(-nbytes // 64)


def test_the_stager_reuses_its_buffers():
    stager = PinnedStager(chunk_bytes=128, slots=3, pin=False)
    for size in (10, 1000, 5000, 3):
        source = torch.arange(size, dtype=torch.float64).reshape(-1, 1) if size > 1 else torch.tensor(3.0)
        target = torch.empty_like(source)
        stager.copy(source, target)
        assert torch.equal(source, target)
    assert stager.allocations == 3


def test_the_stager_refuses_mismatched_or_strided_tensors():
    stager = PinnedStager(chunk_bytes=64, slots=2, pin=False)
    with pytest.raises(ValueError, match="differ; pass tensors of one dtype and size"):
        stager.copy(torch.zeros(4), torch.zeros(5))
    with pytest.raises(ValueError, match="differ"):
        stager.copy(torch.zeros(4), torch.zeros(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="must be contiguous"):
        stager.copy(torch.zeros(4, 4).t(), torch.zeros(4, 4))
    assert stager.allocations == 0  # nothing was made for a refused copy
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match=r"chunk_bytes=.* must be a positive int"):
            PinnedStager(chunk_bytes=bad)
    with pytest.raises(ValueError, match=r"slots=1\) must be an int >= 2"):
        PinnedStager(slots=1)


def test_the_stager_packs_small_pieces_into_shared_chunks_at_their_offsets():
    stager = PinnedStager(chunk_bytes=100, slots=2, pin=False)
    gen = torch.Generator().manual_seed(3)
    pieces = [
        (torch.randint(0, 255, (30,), generator=gen, dtype=torch.uint8), 0),
        (torch.randn(5, generator=gen), 40),  # 20 bytes at 40..60
        (torch.ones(0), 60),  # an empty piece
        (torch.randint(0, 1 << 30, (40,), generator=gen, dtype=torch.int64), 64),  # 320 bytes: spans chunks
        (torch.tensor([True, False, True]), 384),
    ]
    target = torch.full((400,), 0xAB, dtype=torch.uint8)
    stager.copy_pieces(pieces, target)
    for source, offset in pieces:
        data = as_bytes(source)
        assert torch.equal(target[offset:offset + data.numel()], data), offset
    assert stager.chunks == 4  # 387 bytes in chunks of 100, small pieces sharing them
    assert torch.equal(target[387:], torch.full((13,), 0xAB, dtype=torch.uint8))  # nothing past the last piece
    with pytest.raises(ValueError, match="past the target's 10"):
        stager.copy_pieces([(torch.zeros(4), 0)], torch.empty(10, dtype=torch.uint8))
