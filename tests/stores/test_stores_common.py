"""LocalFeatureStore and SharedDirFeatureStore build refs, check puts and
report health with the same code (``refqueue.stores._common`` and
``StoreHealth.of_counters``): for the same put, the same ref; for the same
rejection, the same message but for the store's name; a rejected put
changes no counter."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from refqueue.errors import DuplicateSample, ForeignRef, StoreFull  # noqa: E402
from refqueue.refs import FeatureAlgorithm, SampleRef  # noqa: E402
from refqueue.store import StoreHandle, StoreHealth  # noqa: E402
from refqueue.stores.local import LocalFeatureStore  # noqa: E402
from refqueue.stores.shared_dir import SharedDirFeatureStore  # noqa: E402

from store_helpers import META, eagle3_tensors, exact, nbytes_of, put  # noqa: E402

SIZE = nbytes_of(eagle3_tensors())


def both(tmp_path, **caps):
    """(name, store) of each kind, on the URI ``mem://x`` resp. ``file://x``, with the same caps."""
    return [
        ("LocalFeatureStore", LocalFeatureStore(uri="mem://x", **caps)),
        ("SharedDirFeatureStore", SharedDirFeatureStore(tmp_path, uri="file://x", **caps)),
    ]


def test_the_same_put_makes_the_same_ref_but_for_the_store_and_the_shared_dirs_put_token(tmp_path):
    (_, local), (_, shared) = both(tmp_path)
    a, b = put(local, "s1"), put(shared, "s1")
    assert a == SampleRef.build(
        "s1", b.feature_specs, store_uri="mem://x", algorithm=FeatureAlgorithm.EAGLE3, num_tokens=4, **META
    )
    # The shared directory's feature keys carry a token drawn for the put (D9: a
    # late scrub of one put never removes another put's data); the rest is equal.
    token = list(b.feature_keys.values())[0].split("/")[0]
    assert token.startswith("s1@") and len(token) == len("s1@") + 16
    assert dict(b.feature_keys) == {name: f"{token}/{name}" for name in a.feature_keys}
    assert a.to_dict() | {"store_uri": "file://x", "feature_keys": dict(b.feature_keys)} == b.to_dict()
    assert a.estimated_bytes == SIZE and list(a.feature_keys.values())[0] == "s1/aux_hidden_states"


@pytest.mark.parametrize("kind", ["LocalFeatureStore", "SharedDirFeatureStore"])
def test_put_rejections_name_the_store_and_change_nothing(tmp_path, kind):
    store = dict(both(tmp_path, max_samples=2, max_bytes=3 * SIZE // 2, high_watermark_bytes=SIZE,
                      low_watermark_bytes=1))[kind]
    uri = store.uri
    put(store, "a")
    before = store.health()
    with pytest.raises(DuplicateSample, match=exact(
        f"{kind}.put('a'): data for 'a' is already present in {uri!r}; a sample id is written once per "
        f"incarnation (ack or dead-letter it before putting it again)"
    )):
        put(store, "a")
    with pytest.raises(StoreFull, match=exact(
        f"{kind}.put('b') of {SIZE} bytes would exceed the byte cap: the store would hold {2 * SIZE} bytes, "
        f"over max_bytes={3 * SIZE // 2}; ack samples to free room or raise max_bytes"
    )):
        put(store, "b")
    assert store.health() == before


@pytest.mark.parametrize("kind", ["LocalFeatureStore", "SharedDirFeatureStore"])
def test_the_sample_cap_message_is_shared(tmp_path, kind):
    store = dict(both(tmp_path, max_samples=1))[kind]
    put(store, "a")
    with pytest.raises(StoreFull, match=exact(
        f"{kind}.put('b') would exceed the sample-count cap: the store would hold 2 samples, over "
        f"max_samples=1; ack samples to free room or raise max_samples"
    )):
        put(store, "b")
    assert store.health().sample_count == 1


@pytest.mark.parametrize("kind", ["LocalFeatureStore", "SharedDirFeatureStore"])
def test_refs_and_handles_of_another_store_are_rejected_alike(tmp_path, kind):
    store = dict(both(tmp_path))[kind]
    uri = store.uri
    ref = put(store, "a")
    foreign = SampleRef.from_dict(ref.to_dict() | {"store_uri": "mem://elsewhere"})
    with pytest.raises(ForeignRef, match=exact(
        f"{kind}.scrub: ref 'a' names store 'mem://elsewhere', which does not match this store's URI {uri!r}; "
        f"use the store "
        f"the ref names"
    )):
        store.scrub(foreign)
    with pytest.raises(TypeError, match=exact(
        f"{kind}.get needs a SampleRef, got str; pass the ref that put() returned (or lease.ref)"
    )):
        store.get("a")
    with pytest.raises(ForeignRef, match=exact(
        f"{kind}.release got a handle of store 'mem://elsewhere', a different store than this one ({uri!r}); "
        f"release it "
        f"on the store that gave it out"
    )):
        store.release(StoreHandle("mem://elsewhere", "a", 1))
    with pytest.raises(TypeError, match=exact(f"{kind}.release needs the StoreHandle that get() returned, got int")):
        store.release(1)
    assert store.health().sample_count == 1


@pytest.mark.parametrize("kind", ["LocalFeatureStore", "SharedDirFeatureStore"])
def test_health_flags_follow_the_watermarks_and_a_closed_store_reports_empty(tmp_path, kind):
    store = dict(both(tmp_path, max_samples=4, max_bytes=4 * SIZE, high_watermark_bytes=2 * SIZE,
                      low_watermark_bytes=SIZE))[kind]
    seen = [store.health()]
    for sample_id in ("a", "b"):
        put(store, sample_id)
        seen.append(store.health())
    store.close()
    seen.append(store.health())
    flags = [(h.resident_bytes, h.sample_count, h.high_watermark_hit, h.low_watermark_hit) for h in seen]
    assert flags == [(0, 0, False, True), (SIZE, 1, False, True), (2 * SIZE, 2, True, False), (0, 0, False, True)]
    assert {h.capacity_bytes for h in seen} == {4 * SIZE}


def test_of_counters_computes_both_flags_inclusively():
    def flags(resident, high, low):
        h = StoreHealth.of_counters(resident, 1, capacity_bytes=None, high_watermark_bytes=high, low_watermark_bytes=low)
        return h.high_watermark_hit, h.low_watermark_hit

    assert [flags(r, 10, 5) for r in (4, 5, 6, 9, 10, 11)] == [
        (False, True), (False, True), (False, False), (False, False), (True, False), (True, False)
    ]
    assert flags(10**9, None, None) == (False, False)
    assert StoreHealth.of_counters(7, 2, capacity_bytes=9, high_watermark_bytes=None, low_watermark_bytes=None) == (
        StoreHealth(7, 9, 2, False, False)
    )
