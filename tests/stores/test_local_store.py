"""LocalFeatureStore behaviour on real CPU tensors: round trips, copies, D2, caps, health."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from store_helpers import META, eagle3_tensors, exact, nbytes_of, put  # noqa: E402

from refqueue.errors import DuplicateSample, SampleMissing, StoreFull  # noqa: E402
from refqueue.refs import FeatureAlgorithm, FeatureSpec, SampleRef  # noqa: E402
from refqueue.store import FeatureStore, StoreHealth  # noqa: E402
from refqueue.stores import LocalFeatureStore, _tensors  # noqa: E402

pytestmark = pytest.mark.torch


def _same(a: dict, b: dict) -> bool:
    return list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)


# -- round trips -------------------------------------------------------------------


def test_put_returns_a_ref_that_describes_the_tensors():
    store = LocalFeatureStore(uri="mem://a")
    tensors = eagle3_tensors()
    ref = put(store, "s0", tensors)
    assert isinstance(store, FeatureStore)
    assert ref.store_uri == "mem://a"
    assert list(ref.feature_keys.items()) == [(k, f"s0/{k}") for k in tensors]
    assert dict(ref.feature_specs) == {k: FeatureSpec.of(t) for k, t in tensors.items()}
    assert ref.estimated_bytes == nbytes_of(tensors)
    assert (ref.algorithm, ref.run_id, ref.schema_version) == (FeatureAlgorithm.EAGLE3, "run-1", 2)
    assert (ref.target_model_version, ref.draft_weight_version, ref.num_tokens) == ("t-1", 7, 4)
    assert SampleRef.from_json(ref.to_json()) == ref


@pytest.mark.parametrize(
    ("algorithm", "names"),
    [
        ("dflash", ["loss_mask", "hidden_states", "attention_mask", "input_ids"]),
        ("dspark", ["target_last_hidden_states", "input_ids", "target_hidden_states", "loss_mask", "extra"]),
    ],
)
def test_get_returns_every_feature_in_put_order(algorithm, names):
    store = LocalFeatureStore()
    tensors = {name: torch.full((2, 3), float(i)) for i, name in enumerate(names)}
    ref = put(store, "s0", tensors, algorithm=algorithm)
    got, handle = store.get(ref)
    assert list(got) == names
    assert _same(got, tensors)
    assert (handle.store_uri, handle.sample_id) == (store.uri, "s0")


def test_put_ref_stores_under_a_ref_rebuilt_from_json():
    store = LocalFeatureStore(uri="mem://a")
    tensors = eagle3_tensors()
    declared = SampleRef.build(
        "s0", {k: FeatureSpec.of(t) for k, t in tensors.items()}, algorithm="eagle3", store_uri="mem://a", **META
    )
    ref = SampleRef.from_json(declared.to_json())
    assert store.put_ref(ref, tensors) is ref
    got, _ = store.get(declared)
    assert _same(got, tensors)
    assert store.health().resident_bytes == declared.estimated_bytes


def test_non_contiguous_and_grad_tensors_are_stored_as_plain_copies():
    store = LocalFeatureStore()
    tensors = eagle3_tensors()
    weights = torch.randn(8, 4, requires_grad=True)
    tensors["aux_hidden_states"] = weights.t().unsqueeze(0).expand(3, 4, 8) * 1.0  # has a grad_fn
    tensors["input_ids"] = torch.arange(8)[::2]  # strided view
    ref = put(store, "s0", tensors)
    got, _ = store.get(ref)
    assert _same(got, {k: t.detach() for k, t in tensors.items()})
    assert all(t.is_contiguous() and not t.requires_grad for t in got.values())
    assert ref.estimated_bytes == nbytes_of(tensors)


# -- copies: neither side can change the other's data ---------------------------------


def test_producer_mutating_its_tensors_after_put_changes_nothing_stored():
    store = LocalFeatureStore()
    tensors = eagle3_tensors()
    original = {k: t.clone() for k, t in tensors.items()}
    ref = put(store, "s0", tensors)
    for t in tensors.values():
        t.zero_()
    got, _ = store.get(ref)
    assert _same(got, original)


def test_consumer_mutating_what_get_returned_does_not_corrupt_a_redelivery():
    store = LocalFeatureStore()
    tensors = eagle3_tensors()
    ref = put(store, "s0", tensors)
    first, handle = store.get(ref)
    first["loss_mask"].zero_()
    first["aux_hidden_states"].add_(1)
    store.release(handle)  # the consumer failed; its lease goes back to the queue
    again, _ = store.get(ref)
    assert _same(again, tensors)
    assert first["aux_hidden_states"].data_ptr() != again["aux_hidden_states"].data_ptr()


def test_get_to_an_explicit_device():
    store = LocalFeatureStore()
    ref = put(store, "s0")
    got, _ = store.get(ref, device=torch.device("cpu"))
    assert all(t.device == torch.device("cpu") for t in got.values())


# -- D2: only a scrub removes data ---------------------------------------------------


def test_release_never_scrubs_and_is_idempotent():
    store = LocalFeatureStore()
    ref = put(store, "s0")
    before = store.health()
    _, handle = store.get(ref)
    assert store.handle_count == 1
    store.release(handle)
    store.release(handle)
    assert store.handle_count == 0
    assert store.health() == before
    store.get(ref)  # still resident


def test_get_after_scrub_is_missing_but_the_holder_keeps_its_tensors():
    store = LocalFeatureStore(uri="mem://a", max_samples=None, max_bytes=None, high_watermark_bytes=None)
    tensors = eagle3_tensors()
    ref = put(store, "s0", tensors)
    held, handle = store.get(ref)
    assert store.scrub(ref) is True
    assert store.scrub(ref) is False
    assert store.health() == StoreHealth(0, None, 0, False, False)
    with pytest.raises(SampleMissing, match=exact(
        "LocalFeatureStore.get('s0'): its data is not in 'mem://a' (never put, or scrubbed after its ack or "
        "dead-lettering); a stale lease holder should drop the sample"
    )):
        store.get(ref)
    assert _same(held, tensors)  # the holder's copy is intact after the scrub
    store.release(handle)  # a late release of a scrubbed sample is harmless
    store.release(handle)
    assert store.handle_count == 0


def test_stale_release_after_a_reput_leaves_the_new_data():
    store = LocalFeatureStore()
    ref = put(store, "s0")
    _, old_handle = store.get(ref)
    store.scrub(ref)
    new_ref = put(store, "s0", eagle3_tensors(seed=1))  # a new incarnation of the same id
    _, new_handle = store.get(new_ref)
    store.release(old_handle)
    got, _ = store.get(new_ref)
    assert _same(got, eagle3_tensors(seed=1))
    assert store.health().sample_count == 1


def test_gc_sweeps_handles_of_gone_samples_and_never_data():
    store = LocalFeatureStore()
    live = put(store, "live")
    gone = put(store, "gone")
    store.get(live)
    store.get(gone)
    store.get(gone)
    assert store.gc() == 0  # both samples resident: their holders may still be working
    store.scrub(gone)
    old = put(store, "gone", eagle3_tensors(seed=2))  # the re-put does not revive the old handles
    assert store.handle_count == 3
    assert store.gc() == 2
    assert store.handle_count == 1
    assert store.gc() == 0
    assert store.health().sample_count == 2
    store.get(live)
    store.get(old)


# -- duplicates and caps ---------------------------------------------------------------


def test_put_of_resident_data_is_a_duplicate_and_changes_nothing():
    store = LocalFeatureStore(uri="mem://a")
    tensors = eagle3_tensors()
    ref = put(store, "s0", tensors)
    before = store.health()
    with pytest.raises(DuplicateSample, match=exact(
        "LocalFeatureStore.put('s0'): data for 's0' is already present in 'mem://a'; a sample id is written "
        "once per incarnation (ack or dead-letter it before putting it again)"
    )):
        put(store, "s0", eagle3_tensors(seed=5))
    with pytest.raises(DuplicateSample):
        store.put_ref(ref, tensors)
    assert store.health() == before
    got, _ = store.get(ref)
    assert _same(got, tensors)


def test_max_samples_caps_residency():
    store = LocalFeatureStore(max_samples=2)
    a = put(store, "a")
    put(store, "b")
    with pytest.raises(StoreFull, match=exact(
        "LocalFeatureStore.put('c') would exceed the sample-count cap: the store would hold 3 samples, over "
        "max_samples=2; ack samples to free room or raise max_samples"
    )):
        put(store, "c")
    assert store.health().sample_count == 2
    store.scrub(a)
    put(store, "c")
    assert isinstance(StoreFull("x"), MemoryError)  # seed code catching MemoryError keeps working


def test_max_bytes_allows_exactly_the_cap():
    size = nbytes_of(eagle3_tensors())
    store = LocalFeatureStore(max_bytes=2 * size + 1)
    put(store, "a")
    put(store, "b")
    with pytest.raises(StoreFull, match=exact(
        f"LocalFeatureStore.put('c') of {size} bytes would exceed the byte cap: the store would hold {3 * size} "
        f"bytes, over max_bytes={2 * size + 1}; ack samples to free room or raise max_bytes"
    )):
        put(store, "c")
    tiny = {"input_ids": torch.zeros(1, dtype=torch.uint8), "aux_hidden_states": torch.zeros(0),
            "attention_mask": torch.zeros(0), "loss_mask": torch.zeros(0)}
    put(store, "c", tiny)  # exactly at the cap
    assert store.health().resident_bytes == 2 * size + 1


def test_a_failed_copy_leaves_no_trace(monkeypatch):
    store = LocalFeatureStore(max_samples=1)
    real = _tensors.copy_to
    calls = []

    def failing_copy(tensor, device):
        calls.append(tensor)
        if len(calls) == 2:
            raise RuntimeError("out of device memory")
        return real(tensor, device)

    monkeypatch.setattr(_tensors, "copy_to", failing_copy)
    with pytest.raises(RuntimeError, match="^out of device memory$"):
        put(store, "s0")
    assert store.health().sample_count == 0
    ref = put(store, "s0")  # neither the id nor the cap stayed reserved
    calls.clear()
    calls.append(None)
    with pytest.raises(RuntimeError, match="^out of device memory$"):
        store.get(ref)
    assert store.handle_count == 0


# -- health ---------------------------------------------------------------------------


def test_health_flags_follow_the_watermarks():
    size = nbytes_of(eagle3_tensors())
    store = LocalFeatureStore(max_bytes=10 * size, high_watermark_bytes=3 * size, low_watermark_bytes=size)
    seen = []
    refs = []
    for i in range(4):
        seen.append(store.health())
        refs.append(put(store, f"s{i}"))
    seen.append(store.health())
    assert [(h.resident_bytes, h.high_watermark_hit, h.low_watermark_hit) for h in seen] == [
        (0, False, True),
        (size, False, True),  # low is inclusive
        (2 * size, False, False),
        (3 * size, True, False),  # high is inclusive
        (4 * size, True, False),
    ]
    assert all(h.capacity_bytes == 10 * size for h in seen)
    assert [h.sample_count for h in seen] == [0, 1, 2, 3, 4]
    for ref in refs[:3]:
        store.scrub(ref)
    assert store.health() == StoreHealth(size, 10 * size, 1, False, True)


def test_health_without_watermarks_never_flags():
    store = LocalFeatureStore(max_bytes=None, high_watermark_bytes=None, low_watermark_bytes=None)
    put(store, "s0")
    health = store.health()
    assert (health.high_watermark_hit, health.low_watermark_hit, health.capacity_bytes) == (False, False, None)
