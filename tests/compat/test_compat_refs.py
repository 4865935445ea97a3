"""The seed's refs module: names, errors and checks refqueue keeps."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from compat_helpers import EAGLE3, exact, hand_built_ref  # noqa: E402

from refqueue.refs import FeatureAlgorithm, FeatureSpec, SampleRef, assert_no_tensors  # noqa: E402

pytestmark = pytest.mark.torch


class DataPtrOnly:
    def data_ptr(self):
        return 0


class IsCudaOnly:
    is_cuda = False


class NumelOnly:
    def numel(self):
        return 4


def test_feature_names_lists_the_features_in_order():
    ref = hand_built_ref()
    assert list(ref.feature_names()) == list(EAGLE3)
    assert tuple(ref.feature_names()) == tuple(ref.feature_keys)


def test_a_hand_built_ref_keeps_the_estimate_it_was_given():
    ref = hand_built_ref(estimated_bytes=1024)  # the specs add up to 216 bytes
    assert ref.estimated_bytes == 1024


def test_a_ref_is_frozen():
    ref = hand_built_ref()
    with pytest.raises(AttributeError):
        ref.sample_id = "other"  # type: ignore[misc]


def test_algorithms_and_their_required_features():
    assert [a.value for a in FeatureAlgorithm] == ["eagle3", "dflash", "dspark"]
    assert FeatureAlgorithm.EAGLE3.required_features == EAGLE3
    with pytest.raises(ValueError):
        hand_built_ref(feature_keys={"input_ids": "k"}, feature_specs={"input_ids": FeatureSpec((4,), "int64")})


def test_feature_spec_carries_shape_and_dtype():
    spec = FeatureSpec((2, 3), torch.bfloat16)
    assert spec.shape == (2, 3)
    assert spec.torch_dtype is torch.bfloat16  # the name is spec.dtype (see MIGRATING.md)


def test_assert_no_tensors_passes_tensor_free_records():
    assert_no_tensors(hand_built_ref())
    assert_no_tensors({"run": "r", "ids": [1, 2, 3], "nested": {"ok": (1.5, None)}})


def test_assert_no_tensors_raises_value_error_naming_the_path():
    with pytest.raises(ValueError, match=exact(
        "batch['meta'][1] is a torch.Tensor: the control plane carries no tensors or arrays (a tensor-like "
        "object is not allowed on it); put the data in a FeatureStore and pass its SampleRef"
    )):
        assert_no_tensors({"meta": [1, torch.zeros(2)]}, path="batch")


def test_assert_no_tensors_takes_the_path_positionally_too():
    with pytest.raises(ValueError, match=r"^obj\[0\] is a torch\.Tensor"):
        assert_no_tensors([torch.zeros(1)], "obj")


@pytest.mark.parametrize("tensor_like", [DataPtrOnly(), IsCudaOnly(), NumelOnly()], ids=lambda t: type(t).__name__)
def test_assert_no_tensors_catches_objects_that_only_duck_type_as_tensors(tensor_like):
    with pytest.raises(ValueError, match=r"^x\['t'\] is a .*: the control plane carries no tensors"):
        assert_no_tensors({"t": tensor_like}, path="x")


def test_assert_no_tensors_rejects_mapping_keys_that_are_not_str():
    with pytest.raises(ValueError, match=exact(
        "x has the key 3 (int): control-plane dicts must be str-keyed (they travel as JSON); use str keys, "
        "e.g. '3'"
    )):
        assert_no_tensors({3: "three"}, path="x")


def test_a_tensor_inside_feature_specs_is_a_value_error():
    specs = dict(hand_built_ref().feature_specs)
    specs["input_ids"] = torch.zeros(4, dtype=torch.int64)
    with pytest.raises(ValueError, match=exact(
        "SampleRef.feature_specs['input_ids'] is a torch.Tensor: the control plane carries no tensors or "
        "arrays (a tensor-like object is not allowed on it); put the data in a FeatureStore and pass its SampleRef"
    )):
        hand_built_ref(feature_specs=specs)


def test_a_tensor_in_any_ref_field_is_a_value_error():
    with pytest.raises(ValueError, match=r"^SampleRef\.num_tokens is a torch\.Tensor"):
        hand_built_ref(num_tokens=torch.tensor(4))


def test_refs_are_json_and_never_need_pickle():
    ref = hand_built_ref()
    assert SampleRef.from_json(ref.to_json()) == ref
