"""The phrases the seed's error messages carry, kept as a clause of refqueue's.

Code written against the seed matches its errors with
``pytest.raises(..., match=<phrase>)``.  refqueue's messages are fuller (each
names the value, what is wrong and the fix), but for the same condition they
keep the seed's phrase, so such a match keeps passing.  One test per phrase
(and per condition, where the seed raises one phrase for several), each
reaching the condition through the public API only; each checks too that the
rejected call changed nothing.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from compat_helpers import eagle3_tensors, hand_built_ref, put  # noqa: E402

from refqueue.errors import DuplicateSample, ForeignRef, TensorOnControlPlane  # noqa: E402
from refqueue.loader import FeatureDataLoader  # noqa: E402
from refqueue.queue import SampleRefQueue, VisibilityTimeout  # noqa: E402
from refqueue.refs import FeatureSpec, assert_no_tensors  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402

pytestmark = pytest.mark.torch


# -- "already present": a sample id put twice ---------------------------------------


def test_a_queue_put_of_a_pending_sample_id_says_already_present():
    store = LocalFeatureStore()
    queue = SampleRefQueue(store)
    ref = put(store, "s0")
    queue.put(ref)
    with pytest.raises(DuplicateSample, match="already present"):
        queue.put(ref)
    assert (queue.pending_count(), queue.outstanding_count()) == (1, 0)


def test_a_queue_put_of_a_leased_sample_id_says_already_present():
    store = LocalFeatureStore()
    queue = SampleRefQueue(store)
    ref = put(store, "s0")
    queue.put(ref)
    lease = queue.acquire_nowait()
    with pytest.raises(DuplicateSample, match="already present"):
        queue.put(ref)
    assert (queue.pending_count(), queue.outstanding_count()) == (0, 1)
    assert queue.ack(lease) is True


def test_a_store_put_of_a_resident_sample_id_says_already_present():
    store = LocalFeatureStore()
    put(store, "s0")
    with pytest.raises(DuplicateSample, match="already present"):
        put(store, "s0", i=7)
    assert store.health().sample_count == 1


# -- "positive": sizes, durations and counts that must be > 0 -----------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda store: SampleRefQueue(store, high_watermark_bytes=0, low_watermark_bytes=0),
        lambda store: SampleRefQueue(store, visibility_timeout=VisibilityTimeout(0)),
        lambda store: LocalFeatureStore(max_samples=0),
        lambda store: LocalFeatureStore(max_bytes=0),
        lambda store: FeatureDataLoader(SampleRefQueue(store), store, acquire_poll_interval=0),
    ],
    ids=["queue-high-watermark", "visibility-timeout", "max-samples", "max-bytes", "loader-poll-interval"],
)
def test_a_zero_where_a_positive_number_is_needed_says_positive(make):
    store = LocalFeatureStore()
    with pytest.raises(ValueError, match="positive"):
        make(store)


def test_a_negative_queue_low_watermark_says_non_negative():
    with pytest.raises(ValueError, match="non-negative"):
        SampleRefQueue(LocalFeatureStore(), high_watermark_bytes=10, low_watermark_bytes=-1)


# -- another store's ref or handle --------------------------------------------------


def test_get_of_another_stores_ref_says_it_does_not_match_this_stores_uri():
    a, b = LocalFeatureStore(uri="mem://a"), LocalFeatureStore(uri="mem://b")
    ref = put(b, "s0")
    with pytest.raises(KeyError, match="does not match this store's URI"):
        a.get(ref)
    assert a.health().sample_count == 0 and b.health().sample_count == 1


def test_release_of_another_stores_handle_says_different_store():
    a, b = LocalFeatureStore(uri="mem://a"), LocalFeatureStore(uri="mem://b")
    _, handle = b.get(put(b, "s0"))
    with pytest.raises(ValueError, match="different store"):
        a.release(handle)
    with pytest.raises(ForeignRef, match="different store"):
        a.release(handle)
    b.release(handle)  # still the holder's to release where it came from


# -- refs ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, -1), (2, 1.5), ("4",)], ids=["negative", "float", "str"])
def test_a_feature_spec_shape_with_a_bad_dimension_says_tuple_of_non_negative_ints(shape):
    with pytest.raises(ValueError, match="tuple of non-negative ints"):
        FeatureSpec(shape, "bfloat16")


def test_feature_keys_and_specs_of_different_features_say_must_name_the_same_feature_set():
    specs = dict(hand_built_ref().feature_specs)
    specs["extra"] = FeatureSpec((1,), "int64")
    with pytest.raises(ValueError, match="must name the same feature set"):
        hand_built_ref(feature_specs=specs)


def test_a_ref_without_a_feature_its_algorithm_needs_says_missing_required_features():
    good = hand_built_ref()
    keys = {name: key for name, key in good.feature_keys.items() if name != "loss_mask"}
    specs = {name: spec for name, spec in good.feature_specs.items() if name != "loss_mask"}
    with pytest.raises(ValueError, match="missing required features"):
        hand_built_ref(feature_keys=keys, feature_specs=specs)


def test_a_store_put_without_a_required_feature_says_missing_required_features():
    store = LocalFeatureStore()
    tensors = eagle3_tensors()
    del tensors["attention_mask"]
    with pytest.raises(ValueError, match="missing required features"):
        store.put("s0", tensors, run_id="run", algorithm="eagle3", schema_version=1,
                  target_model_version="target", draft_weight_version=0, num_tokens=0)
    assert store.health().sample_count == 0


# -- the no-tensors guard -----------------------------------------------------------


class _DuckTensor:
    """Only quacks like a tensor: torch's data_ptr, is_cuda and numel."""

    is_cuda = False

    def data_ptr(self) -> int:
        return 0

    def numel(self) -> int:
        return 1


@pytest.mark.parametrize("value", [torch.zeros(2), _DuckTensor()], ids=["torch", "duck-typed"])
def test_a_tensor_on_the_control_plane_says_tensor_like_object_is_not_allowed(value):
    with pytest.raises(ValueError, match="tensor-like object is not allowed"):
        assert_no_tensors({"meta": [1, value]}, path="batch")


def test_a_tensor_in_a_ref_field_says_tensor_like_object_is_not_allowed():
    with pytest.raises(TensorOnControlPlane, match="tensor-like object is not allowed"):
        hand_built_ref(num_tokens=torch.tensor(4))


def test_a_mapping_with_a_non_str_key_says_control_plane_dicts_must_be_str_keyed():
    with pytest.raises(ValueError, match="control-plane dicts must be str-keyed"):
        assert_no_tensors({"ok": {7: "seven"}}, path="record")


# -- the shared directory and the loader's algorithm ----------------------------------


def test_a_shared_dir_sample_id_leaving_the_directory_says_escape_the_store_directory(tmp_path):
    from refqueue.stores.shared_dir import SharedDirFeatureStore

    store = SharedDirFeatureStore(tmp_path / "store", fsync=False)
    with pytest.raises(ValueError, match="escape the store directory"):
        put(store, "../escape")
    assert store.health().sample_count == 0
    assert not (tmp_path / "escape.safetensors").exists()


def test_shared_dir_watermarks_the_wrong_way_round_say_strictly_less_than(tmp_path):
    from refqueue.stores.shared_dir import SharedDirFeatureStore

    for high, low in ((128, 128), (128, 256)):
        with pytest.raises(ValueError, match="strictly less than"):
            SharedDirFeatureStore(tmp_path / "store", max_bytes=1024, high_watermark_bytes=high,
                                  low_watermark_bytes=low)


def test_a_shared_dir_with_both_caps_turned_off_says_at_least_one_cap(tmp_path):
    from refqueue.stores.shared_dir import SharedDirFeatureStore

    with pytest.raises(ValueError, match="at least one of max_samples / max_bytes"):
        SharedDirFeatureStore(tmp_path / "store", max_samples=None, max_bytes=None)
    assert not (tmp_path / "store").exists()  # the refused store made nothing
    # left out, the caps default to none (the directory is bounded by the mount), and with
    # watermarks both may be turned off
    assert SharedDirFeatureStore(tmp_path / "a").capacity_bytes is None
    SharedDirFeatureStore(tmp_path / "b", max_samples=None, max_bytes=None, high_watermark_bytes=2,
                          low_watermark_bytes=1)


def test_a_ref_of_another_algorithm_says_the_loader_is_bound_to_its_algorithm():
    store = LocalFeatureStore()
    queue = SampleRefQueue(store)
    tensors = {"hidden_states" if k == "aux_hidden_states" else k: t for k, t in eagle3_tensors().items()}
    queue.put(store.put("d0", tensors, run_id="r", algorithm="dflash", schema_version=1,
                        target_model_version="t", draft_weight_version=0, num_tokens=4))
    loader = FeatureDataLoader(queue, algorithm="eagle3", close_queue=False)
    with pytest.raises(ValueError, match=r"bound to algorithm=.*EAGLE3"):
        next(loader)
    assert [d.ref.sample_id for d in queue.dead_letters()] == ["d0"]  # D7: dead-lettered, not failed back
    loader.close()


# -- the seed's private counter map, kept as a snapshot ---------------------------------


def test_sample_counters_is_a_snapshot_of_live_samples_redeliveries_that_never_grows():
    store = LocalFeatureStore()
    queue = SampleRefQueue(store)
    queue.put(put(store, "s0"))
    queue.put(put(store, "s1", i=1))
    assert queue._sample_counters == {"s0": 0, "s1": 0}
    first = queue.acquire_nowait()
    assert queue.fail(first) is True
    assert queue._sample_counters == {"s0": 1, "s1": 0}
    snapshot = queue._sample_counters
    snapshot.clear()  # a copy: the queue's own state is untouched
    assert queue._sample_counters == {"s0": 1, "s1": 0}
    for _ in range(2):
        lease = queue.acquire_nowait()
        assert queue.ack(lease) is True
    assert queue._sample_counters == {}  # completed samples are absent
