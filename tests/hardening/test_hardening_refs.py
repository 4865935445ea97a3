"""Issue 12, defects 9-12: control-plane records that the constructor accepted
but could not represent, and nesting that exhausted the stack.

On 8456e91: ``FrozenMap((("a", 1), ("a", 2)))`` had ``len()`` 2 and one key;
``FeatureSpec({3: "a", 4: "b"}, "float32")`` had shape ``(3, 4)`` (a dict's
keys); ``schema_version=10**5000`` built a ref whose ``to_json`` raised; and
deeply nested JSON raised ``RecursionError`` from ``SampleRef.from_json``,
``Lease.from_json`` and ``assert_no_tensors``.
"""

from __future__ import annotations

import json
from collections import OrderedDict

import pytest

from refqueue.queue import Lease, VisibilityTimeout
from refqueue.refs import FeatureSpec, FrozenMap, SampleRef, assert_no_tensors

# refs.MAX_INT and refs.MAX_NESTING, spelled out so that each test here fails on
# its own on 8456e91 (which had neither name)
MAX_INT = 2**63 - 1
MAX_NESTING = 100


def test_the_bounds_are_the_documented_ones():
    from refqueue import refs

    assert (refs.MAX_INT, refs.MAX_NESTING) == (MAX_INT, MAX_NESTING)

SPECS = {
    "aux_hidden_states": FeatureSpec((2, 4), "bfloat16"),
    "input_ids": FeatureSpec((2,), "int64"),
    "attention_mask": FeatureSpec((2,), "bool"),
    "loss_mask": FeatureSpec((2,), "float32"),
}


def ref(**overrides) -> SampleRef:
    return SampleRef.build("s0", SPECS, algorithm="eagle3", **overrides)


# -- FrozenMap with a duplicate key --------------------------------------------------------------


def test_a_frozen_map_with_a_duplicate_key_is_rejected_naming_the_key():
    with pytest.raises(ValueError, match=r"^FrozenMap got the key 'a' more than once; each key may appear once"):
        FrozenMap((("a", 1), ("a", 2)))
    with pytest.raises(ValueError, match=r"the key 'x' more than once"):
        FrozenMap((("x", 1), ("y", 2), ("x", 1)))  # equal values too


def test_a_ref_cannot_be_built_from_feature_maps_with_duplicates():
    with pytest.raises(ValueError, match="more than once"):
        SampleRef(
            sample_id="s0", run_id="r", store_uri="mem://local",
            feature_keys=FrozenMap((("input_ids", "k"), ("input_ids", "k2"))),
            feature_specs=SPECS, algorithm="eagle3", schema_version=1, num_tokens=0,
            estimated_bytes=0, target_model_version="t", draft_weight_version=0,
        )


@pytest.mark.parametrize("items", [(("a",),), (["a", 1],), ("ab",), (1,)])
def test_a_frozen_map_item_that_is_not_a_pair_is_rejected(items):
    with pytest.raises(TypeError, match=r"^FrozenMap items must be \(key, value\) pairs, got "):
        FrozenMap(items)


def test_a_frozen_map_of_unique_keys_still_round_trips():
    frozen = FrozenMap((("a", 1), ("b", 2)))
    assert len(frozen) == 2 and list(frozen) == ["a", "b"] and frozen == FrozenMap({"a": 1, "b": 2})


# -- FeatureSpec shape that is not a sequence ------------------------------------------------------


@pytest.mark.parametrize("shape", [{3: "a", 4: "b"}, OrderedDict([(3, 1)]), {3, 4}, frozenset({2}), "34", b"34", 3])
def test_a_shape_that_is_not_a_sequence_is_rejected(shape):
    with pytest.raises(TypeError, match=r"^FeatureSpec.shape must be a sequence of ints, got .*pass e\.g\. \(seq_len"):
        FeatureSpec(shape, "float32")


def test_a_shape_of_a_list_tuple_or_torch_size_is_accepted():
    assert FeatureSpec([3, 4], "float32").shape == (3, 4)
    torch = pytest.importorskip("torch")
    assert FeatureSpec(torch.Size([3, 4]), "float32").shape == (3, 4)


def test_a_dimension_beyond_63_bits_is_rejected():
    assert FeatureSpec((MAX_INT,), "int8").shape == (MAX_INT,)
    with pytest.raises(ValueError, match=r"at most 2\*\*63 - 1"):
        FeatureSpec((MAX_INT + 1,), "int8")


# -- counts a ref cannot serialise -----------------------------------------------------------------


@pytest.mark.parametrize("field", ["schema_version", "num_tokens"])
@pytest.mark.parametrize("value", [10**5000, MAX_INT + 1], ids=["10**5000", "2**63"])
def test_a_count_beyond_63_bits_is_refused_at_construction(field, value):
    with pytest.raises(ValueError) as info:
        ref(**{field: value})
    message = str(info.value)
    assert message.startswith(f"SampleRef.{field} must be at most 2**63 - 1 (a signed 63-bit int")
    assert len(message) < 300  # names the value without printing 5,000 digits


@pytest.mark.parametrize("field", ["target_model_version", "draft_weight_version"])
def test_a_version_number_beyond_63_bits_is_refused(field):
    with pytest.raises(ValueError, match=rf"^SampleRef.{field} must be at most 2\*\*63 - 1"):
        ref(**{field: 10**5000})


def test_every_ref_the_constructor_accepts_at_the_bound_serialises():
    big = ref(schema_version=MAX_INT, num_tokens=MAX_INT, target_model_version=MAX_INT, draft_weight_version=MAX_INT)
    assert SampleRef.from_json(big.to_json()) == big


def test_a_lease_id_beyond_63_bits_is_refused():
    with pytest.raises(ValueError, match=r"^Lease.lease_id must be at most 2\*\*63 - 1"):
        Lease(ref(), 0.0, VisibilityTimeout(), 0, 10**5000, "e")


# -- deep nesting ---------------------------------------------------------------------------------------


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 10_000, 1_000_000])
@pytest.mark.parametrize("parse", [SampleRef.from_json, Lease.from_json], ids=["SampleRef", "Lease"])
def test_deeply_nested_json_from_the_wire_raises_value_error(parse, depth):
    for text in (nested(depth), nested(depth).encode()):
        with pytest.raises(ValueError, match=rf"from_json got JSON nested {depth} levels deep; .* at most {MAX_NESTING}"):
            parse(text)


def test_deep_nesting_inside_a_ref_dict_is_reported_by_depth():
    text = json.dumps({**ref().to_dict(), "run_id": None})[:-1] + ',"x":' + nested(5000) + "}"
    with pytest.raises(ValueError, match="nested 5001 levels deep"):
        SampleRef.from_json(text)


def test_brackets_inside_strings_do_not_count_as_nesting():
    deep_id = "[" * 10_000
    assert SampleRef.from_json(ref(run_id=deep_id).to_json()).run_id == deep_id


@pytest.mark.parametrize("text", [3, None, ["[]"], {"a": 1}])
def test_from_json_of_something_that_is_not_text_is_a_type_error(text):
    with pytest.raises(TypeError, match=r"from_json needs a str or bytes of JSON"):
        SampleRef.from_json(text)
    with pytest.raises(TypeError, match=r"from_json needs a str or bytes of JSON"):
        Lease.from_json(text)


def test_from_json_of_text_that_is_not_json_is_a_value_error():
    with pytest.raises(ValueError, match=r"^SampleRef.from_json got text that is not JSON"):
        SampleRef.from_json("{not json")


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 100_000])
def test_assert_no_tensors_on_deep_nesting_raises_value_error(depth):
    value: object = []
    for _ in range(depth):
        value = [value]
    with pytest.raises(ValueError, match=rf"^ref nests more than {MAX_NESTING} levels deep"):
        assert_no_tensors(value)


def test_assert_no_tensors_accepts_nesting_up_to_the_bound():
    value: object = "leaf"
    for _ in range(MAX_NESTING - 1):
        value = {"k": value}
    assert_no_tensors(value)


# -- found by the fuzz suite: messages that could not be written ------------------------------------


class ReprRaises:
    def __repr__(self) -> str:
        raise RuntimeError("hostile __repr__")


def plain_deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("value", [plain_deep_list(100_000), ReprRaises()], ids=["deep-list", "repr-raises"])
def test_a_rejected_value_whose_repr_fails_is_still_named_by_its_type(value):
    from refqueue.queue import SampleRefQueue
    from refqueue.store import FeatureStore

    with pytest.raises(TypeError, match=rf"^SampleRefQueue\(store\) needs a refqueue.store.FeatureStore, got <a "
                                        rf"{type(value).__name__} "):
        SampleRefQueue(value)
    assert FeatureStore  # the import the message names


@pytest.mark.parametrize("seconds", [10**400, -(10**400)], ids=["10**400", "-10**400"])
def test_an_int_beyond_float_range_is_a_value_error_not_an_overflow(seconds):
    from refqueue._checks import check_poll_interval, check_seconds

    for check in (check_seconds, check_poll_interval):
        with pytest.raises(ValueError, match=r"^x must be (at most threading.TIMEOUT_MAX|finite and > 0|> 0)"):
            check("x", seconds)
    with pytest.raises(ValueError, match=r"^VisibilityTimeout.seconds must be finite, got <an int of \d+ bits>"):
        VisibilityTimeout(seconds)
