import copy
import json
import re

import pytest

from refqueue.refs import FeatureAlgorithm, FeatureSpec, SampleRef, assert_no_tensors, dtype_name

EAGLE = {
    "aux_hidden_states": FeatureSpec((3, 8, 16), "bfloat16"),
    "input_ids": FeatureSpec((8,), "int64"),
    "attention_mask": FeatureSpec((8,), "bool"),
    "loss_mask": FeatureSpec((8,), "bool"),
}


def make_ref(**changes):
    ref = SampleRef.build("s1", EAGLE, algorithm="eagle3", num_tokens=8)
    fields = ref.to_dict()
    fields["feature_specs"] = dict(ref.feature_specs)
    fields["feature_keys"] = dict(ref.feature_keys)
    fields.update(changes)
    return SampleRef(**fields)


def test_feature_spec_keeps_dtype_by_name_and_sizes():
    spec = FeatureSpec([2, 3], "bfloat16")
    assert spec.dtype == "bfloat16" and spec.shape == (2, 3)
    assert spec.numel == 6 and spec.nbytes == 12
    assert FeatureSpec((), "float32").nbytes == 4
    assert FeatureSpec.from_dict(spec.to_dict()) == spec


def test_feature_spec_accepts_torch_dtype_and_gives_it_back():
    torch = pytest.importorskip("torch")
    spec = FeatureSpec((4,), torch.bfloat16)
    assert spec.dtype == "bfloat16"
    assert spec.torch_dtype is torch.bfloat16
    assert FeatureSpec.of(torch.zeros(2, 5, dtype=torch.int32)) == FeatureSpec((2, 5), "int32")


def test_feature_spec_rejects_unknown_dtype_and_bad_shape():
    with pytest.raises(ValueError, match=r"^dtype 'float128' is not one refqueue can size; use one of "):
        FeatureSpec((1,), "float128")
    with pytest.raises(TypeError, match=r"^dtype 3 \(int\) is neither a dtype name nor a torch.dtype"):
        dtype_name(3)
    with pytest.raises(ValueError, match=r"^FeatureSpec.shape \(2, -1\) has dimension -1; a shape must be a tuple of non-negative ints, so pass every "
                       r"dimension as an int >= 0$"):
        FeatureSpec((2, -1), "int8")
    with pytest.raises(ValueError, match=r"has dimension True"):
        FeatureSpec((True,), "int8")
    with pytest.raises(TypeError, match=r"^FeatureSpec.shape must be a sequence of ints, got 'ab'"):
        FeatureSpec("ab", "int8")


def test_ref_is_hashable_and_round_trips_through_json_losslessly():
    ref = make_ref()
    again = SampleRef.from_json(ref.to_json())
    assert again == ref and hash(again) == hash(ref)
    assert list(again.feature_keys) == list(EAGLE)
    assert copy.deepcopy(ref) == ref
    assert {ref: 1}[again] == 1
    assert json.loads(ref.to_json())["feature_specs"]["aux_hidden_states"] == {"shape": [3, 8, 16], "dtype": "bfloat16"}


def test_feature_order_is_significant():
    reordered = dict(reversed(list(EAGLE.items())))
    a = SampleRef.build("s1", EAGLE, algorithm="eagle3")
    b = SampleRef.build("s1", reordered, algorithm="eagle3")
    assert a != b
    assert list(SampleRef.from_json(b.to_json()).feature_specs) == list(reordered)


def test_estimated_bytes_is_the_producers_estimate():
    # As in the seed: a hand-built ref keeps the estimate it was given; refs a
    # store or SampleRef.build makes carry the specs' exact total.
    expected = sum(s.nbytes for s in EAGLE.values())
    assert make_ref().estimated_bytes == expected == make_ref().specs_nbytes
    ref = make_ref(estimated_bytes=7)
    assert ref.estimated_bytes == 7 and ref.specs_nbytes == expected
    assert SampleRef.from_json(ref.to_json()) == ref
    with pytest.raises(ValueError, match=r"^SampleRef.estimated_bytes must be >= 0, got -1; pass a non-negative count$"):
        make_ref(estimated_bytes=-1)


@pytest.mark.parametrize(
    "changes, error, message",
    [
        ({"sample_id": ""}, ValueError, r"^SampleRef.sample_id must be a non-empty str, got ''; pass the producer's id for this sample$"),
        ({"run_id": None}, ValueError, r"^SampleRef.run_id must be a non-empty str, got None"),
        ({"store_uri": "local"}, ValueError, r"^SampleRef.store_uri must look like 'scheme://location', got 'local'"),
        ({"store_uri": "mem://"}, ValueError, r"^SampleRef.store_uri 'mem://' has nothing after '://'"),
        ({"store_uri": "1x://a"}, ValueError, r"^SampleRef.store_uri '1x://a' has no valid scheme"),
        ({"algorithm": "medusa"}, ValueError, r"^SampleRef.algorithm 'medusa' is not a FeatureAlgorithm; use one of eagle3, dflash, dspark$"),
        ({"schema_version": True}, TypeError, r"^SampleRef.schema_version must be an int, got True \(bool\); pass a whole number \(a bool is not accepted\)$"),
        ({"num_tokens": -1}, ValueError, r"^SampleRef.num_tokens must be >= 0, got -1; pass a non-negative count$"),
        ({"target_model_version": ""}, ValueError, r"^SampleRef.target_model_version must not be empty"),
        ({"draft_weight_version": 1.5}, TypeError, r"^SampleRef.draft_weight_version must be a str or an int, got 1.5"),
    ],
)
def test_ref_validation_names_the_value_and_the_fix(changes, error, message):
    with pytest.raises(error, match=message):
        make_ref(**changes)


LONE = r"lone surrogate \(U\+D800\.\.U\+DFFF\) at index \d+, which has no UTF-8 form; pass text that encodes as UTF-8"


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"sample_id": "s\ud800"}, "sample_id"),
        ({"run_id": "\udcff"}, "run_id"),
        ({"store_uri": "mem://\udfff"}, "store_uri"),
        ({"target_model_version": "v\ud83d"}, "target_model_version"),
        ({"feature_keys": {**make_ref().feature_keys, "input_ids": "k\udc80"}}, "feature_keys['input_ids']"),
    ],
)
def test_text_without_a_utf8_form_is_refused_by_every_way_in(changes, field):
    # Redis, a file name or another language's JSON reader refuses a lone surrogate;
    # the ref refuses it where it comes in, on the fast and the slow parse alike
    with pytest.raises(ValueError, match=re.escape(f"SampleRef.{field} ") + ".*" + LONE):
        make_ref(**changes)
    fields = json.loads(make_ref().to_json())
    fields.update({k: dict(v) if isinstance(v, dict) else v for k, v in changes.items()})
    with pytest.raises(ValueError, match=LONE):  # JSON escapes it (\\ud800) and its reader gives it back
        SampleRef.from_json(json.dumps(fields))
    with pytest.raises(ValueError, match=LONE):
        SampleRef.from_dict(fields)


def test_a_feature_name_without_a_utf8_form_is_refused():
    keys, specs = dict(make_ref().feature_keys), dict(make_ref().feature_specs)
    keys["x\ud800"], specs["x\ud800"] = "k", FeatureSpec((1,), "int64")
    with pytest.raises(ValueError, match=re.escape("SampleRef.feature_keys feature name 'x\\ud800' holds a ") + LONE):
        make_ref(feature_keys=keys, feature_specs=specs)


def test_a_long_id_with_a_lone_surrogate_is_named_short_with_where_it_is():
    with pytest.raises(ValueError) as caught:
        make_ref(sample_id="a" * 10_000 + "\udc80")
    message = str(caught.value)
    assert len(message) < 300 and "at index 10000," in message, message


def test_text_with_a_utf8_form_is_kept_as_given():
    for text in ("é✓", "𝕏", "a\x00b", "\u202e"):
        ref = make_ref(sample_id=text, run_id=text, target_model_version=text)
        assert SampleRef.from_json(ref.to_json()) == ref and ref.sample_id == text


def test_keys_and_specs_must_name_the_same_features_in_order():
    keys = {k: f"s1/{k}" for k in EAGLE}
    swapped = dict(list(keys.items())[1:] + list(keys.items())[:1])
    with pytest.raises(ValueError, match=r"^SampleRef.feature_keys names \['input_ids', .*both must name the same feature set, in the same order$"):
        make_ref(feature_keys=swapped)


def test_required_features_per_algorithm():
    assert FeatureAlgorithm("dspark").required_features == (
        "target_hidden_states", "target_last_hidden_states", "input_ids", "loss_mask",
    )
    specs = {k: v for k, v in EAGLE.items() if k != "loss_mask"}
    with pytest.raises(ValueError, match=re.escape("SampleRef 's1' for algorithm 'eagle3' is missing required features ['loss_mask']")):
        SampleRef.build("s1", specs, algorithm="eagle3")


def test_from_dict_rejects_unknown_and_missing_fields():
    data = make_ref().to_dict()
    data["tensor"] = 1
    del data["run_id"]
    with pytest.raises(ValueError, match=r"missing \['run_id'\], unknown \['tensor'\]$"):
        SampleRef.from_dict(data)


def test_assert_no_tensors_names_the_path():
    torch = pytest.importorskip("torch")
    assert_no_tensors(make_ref())
    with pytest.raises(TypeError, match=r"^ref\['meta'\]\[1\] is a torch.Tensor: the control plane carries no tensors"):
        assert_no_tensors({"meta": [1, torch.zeros(1)]})
    np = pytest.importorskip("numpy")
    with pytest.raises(TypeError, match=r"^x.arr is a numpy.ndarray"):

        class Holder:
            def __init__(self):
                self.arr = np.zeros(2)

        assert_no_tensors(Holder(), "x")
    assert_no_tensors({"dtype": torch.float32, "shape": torch.Size([2])})
