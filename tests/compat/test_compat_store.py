"""The seed's store and local store: names, defaults, errors refqueue keeps."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from compat_helpers import EAGLE3, exact, put  # noqa: E402

from refqueue.store import FeatureStore, StoreHandle, StoreHealth  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402

pytestmark = pytest.mark.torch

MiB = 1024 * 1024


def test_the_default_store_has_the_seeds_caps_and_watermarks():
    store = LocalFeatureStore()
    assert store.max_samples == 64
    assert store.capacity_bytes == 256 * MiB
    assert store.high_watermark_bytes == 192 * MiB
    assert store.low_watermark_bytes == 64 * MiB
    assert store.health() == StoreHealth(0, 256 * MiB, 0, False, True)


def test_the_constructor_takes_the_seeds_arguments_in_the_seeds_order():
    store = LocalFeatureStore(8, 4096, 2048, 1024)
    assert (store.max_samples, store.capacity_bytes) == (8, 4096)
    assert (store.high_watermark_bytes, store.low_watermark_bytes) == (2048, 1024)
    keywords = LocalFeatureStore(max_samples=None, max_bytes=4096, high_watermark_bytes=None, low_watermark_bytes=None)
    assert keywords.max_samples is None and keywords.high_watermark_bytes is None


def test_a_store_without_any_cap_is_a_value_error():
    with pytest.raises(ValueError, match="at least one of max_samples / max_bytes must be set"):
        LocalFeatureStore(max_samples=None, max_bytes=None)


def test_store_uri_names_the_store_and_every_ref_it_makes():
    store = LocalFeatureStore()
    assert store.store_uri == store.uri
    assert put(store, "s0").store_uri == store.store_uri


def test_get_returns_one_tensor_per_feature_in_order_and_a_handle_naming_the_store():
    store = LocalFeatureStore()
    ref = put(store, "s0", 7)
    tensors, handle = store.get(ref)
    assert list(tensors) == list(EAGLE3)
    assert int(tensors["aux_hidden_states"][0]) == 7
    assert isinstance(handle, StoreHandle) and handle.store == store.store_uri and handle.sample_id == "s0"
    store.release(handle)
    store.release(handle)  # idempotent


def test_get_of_another_stores_ref_is_a_key_error():
    a, b = LocalFeatureStore(), LocalFeatureStore()
    ref = put(a, "s0")
    with pytest.raises(KeyError) as caught:
        b.get(ref)
    assert f"names store {a.uri!r}" in str(caught.value)


def test_a_put_past_the_sample_count_cap_is_a_memory_error():
    store = LocalFeatureStore(max_samples=2)
    put(store, "a")
    put(store, "b")
    with pytest.raises(MemoryError, match="sample-count cap"):
        put(store, "c")
    assert store.health().sample_count == 2


def test_a_put_past_the_byte_cap_is_a_memory_error():
    store = LocalFeatureStore(max_bytes=100, high_watermark_bytes=None, low_watermark_bytes=None)
    put(store, "a", nbytes=60)
    with pytest.raises(MemoryError, match="byte cap"):
        put(store, "b", nbytes=60)
    assert store.health().resident_bytes == 60


def test_a_duplicate_put_says_the_sample_is_already_present():
    store = LocalFeatureStore()
    put(store, "s0")
    with pytest.raises(ValueError, match="already present"):
        put(store, "s0")


def test_the_low_watermark_must_be_strictly_less_than_the_high():
    with pytest.raises(ValueError, match=exact(
        "LocalFeatureStore(low_watermark_bytes=100) must be strictly less than high_watermark_bytes=100; lower "
        "low or raise high so the hysteresis band is not empty"
    )):
        LocalFeatureStore(high_watermark_bytes=100, low_watermark_bytes=100)


def test_health_is_ints_and_flags_against_the_stores_own_watermarks():
    store = LocalFeatureStore(max_bytes=1000, high_watermark_bytes=300, low_watermark_bytes=100)
    put(store, "a", nbytes=100)
    assert store.health() == StoreHealth(100, 1000, 1, False, True)
    put(store, "b", nbytes=200)
    assert store.health() == StoreHealth(300, 1000, 2, True, False)


def test_health_after_close_reports_an_empty_store():
    store = LocalFeatureStore()
    put(store, "s0")
    store.close()
    health = store.health()
    assert (health.resident_bytes, health.sample_count) == (0, 0)


def test_every_other_call_after_close_is_a_runtime_error():
    store = LocalFeatureStore()
    ref = put(store, "s0")
    store.close()
    for call in (lambda: store.get(ref), lambda: put(store, "s1"), store.gc):
        with pytest.raises(RuntimeError):
            call()


def test_gc_returns_how_many_items_it_swept():
    store = LocalFeatureStore()
    assert store.gc() == 0


def test_the_store_is_a_feature_store():
    assert isinstance(LocalFeatureStore(), FeatureStore)
