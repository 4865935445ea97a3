"""Fuzz: refs, leases and JSON from the wire.

A ``SampleRef`` or ``Lease`` built from hostile fields or parsed from hostile
JSON is either valid (and round-trips through JSON exactly) or rejected with
``TypeError``/``ValueError`` (``TensorOnControlPlane`` for a tensor) naming
the field; never another exception (``RecursionError``, ``OverflowError``,
``KeyError``, ``AttributeError``).  ``assert_no_tensors`` finds a tensor
smuggled anywhere and names its path.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_helpers import hostile, hostile_tensor, hostile_text, torch

from refqueue.errors import TensorOnControlPlane
from refqueue.queue import Lease, VisibilityTimeout
from refqueue.refs import FeatureSpec, FrozenMap, SampleRef, assert_no_tensors

pytestmark = pytest.mark.timeout(300)
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)

SPECS = {
    "aux_hidden_states": FeatureSpec((2, 3), "float32"),
    "input_ids": FeatureSpec((3,), "int64"),
    "attention_mask": FeatureSpec((3,), "bool"),
    "loss_mask": FeatureSpec((3,), "float32"),
}
REF = SampleRef.build("s0", SPECS, algorithm="eagle3")
LEASE = Lease(REF, 5.0, VisibilityTimeout(10.0), 0, 7, "epoch")
FIELDS = tuple(REF.to_dict())

# JSON values of every kind, nested a little
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), hostile_text),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(hostile_text, children, max_size=3)),
    max_leaves=8,
)


@SETTINGS
@given(field=st.sampled_from(FIELDS), value=st.one_of(hostile, hostile_tensor()))
def test_a_ref_with_one_hostile_field_is_valid_or_rejected_naming_the_field(field, value):
    fields = {f: getattr(REF, f) for f in FIELDS}
    fields[field] = value
    try:
        ref = SampleRef(**fields)
    except (TypeError, ValueError) as exc:
        assert field in str(exc) or "SampleRef" in str(exc) or "FeatureSpec" in str(exc) or "FrozenMap" in str(exc), str(exc)
        if isinstance(value, torch.Tensor):
            assert isinstance(exc, TensorOnControlPlane)
        return
    assert SampleRef.from_json(ref.to_json()) == ref


@SETTINGS
@given(field=st.sampled_from(FIELDS), value=json_values)
def test_ref_json_from_the_wire_with_one_field_replaced_parses_or_raises_a_value_or_type_error(field, value):
    data = REF.to_dict()
    data[field] = value
    text = json.dumps(data)
    try:
        ref = SampleRef.from_json(text)
    except (TypeError, ValueError) as exc:
        assert str(exc)
        return
    assert SampleRef.from_json(ref.to_json()) == ref


@SETTINGS
@given(text=st.one_of(st.text(max_size=200), st.binary(max_size=200)), cut=st.integers(0, 400))
def test_arbitrary_or_truncated_text_from_the_wire_raises_a_value_error(text, cut):
    for candidate in (text, REF.to_json()[:cut], LEASE.to_json()[:cut]):
        for parse in (SampleRef.from_json, Lease.from_json):
            try:
                parsed = parse(candidate)
            except (TypeError, ValueError):
                continue
            assert parsed.to_json() == candidate  # only the complete record parses


@SETTINGS
@given(depth=st.integers(1, 3000), opener=st.sampled_from(["[", "{\"a\":"]))
def test_nesting_from_the_wire_at_any_depth_is_a_value_error_never_a_recursion_error(depth, opener):
    closer = "]" if opener == "[" else "}"
    text = opener * depth + "1" + closer * depth
    for parse in (SampleRef.from_json, Lease.from_json):
        with pytest.raises((ValueError, TypeError)):
            parse(text)


@SETTINGS
@given(field=st.sampled_from(["ref", "deadline", "visibility_timeout", "redelivery_count", "lease_id", "epoch"]),
       value=json_values)
def test_lease_json_from_the_wire_with_one_field_replaced_parses_or_raises(field, value):
    data = LEASE.to_dict()
    data[field] = value
    try:
        lease = Lease.from_json(json.dumps(data))
    except (TypeError, ValueError) as exc:
        assert str(exc)
        return
    assert Lease.from_json(lease.to_json()) == lease and lease.to_json() == Lease.from_json(lease.to_json()).to_json()


@SETTINGS
@given(field=st.sampled_from(["ref", "deadline", "visibility_timeout", "redelivery_count", "lease_id", "epoch"]),
       value=hostile)
def test_a_lease_with_one_hostile_field_is_rejected_naming_the_field(field, value):
    fields = dict(ref=REF, deadline=5.0, visibility_timeout=VisibilityTimeout(10.0), redelivery_count=0,
                  lease_id=7, epoch="e")
    fields[field] = value
    try:
        lease = Lease(**fields)
    except (TypeError, ValueError) as exc:
        assert f"Lease.{field}" in str(exc) or "VisibilityTimeout" in str(exc), str(exc)
        return
    assert Lease.from_json(lease.to_json()) == lease


@st.composite
def smuggled(draw):
    """A JSON-like structure (lists, dicts, tuples, FrozenMaps) with one tensor hidden at a random depth."""
    value: object = draw(hostile_tensor())
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["list", "dict", "tuple", "frozen"]))
        if kind == "list":
            value = [*draw(st.lists(st.integers(), max_size=2)), value]
        elif kind == "dict":
            value = {"k": value, "other": 1}
        elif kind == "tuple":
            value = (0, value)
        else:
            value = FrozenMap({"f": value})
    return value


@SETTINGS
@given(value=smuggled())
def test_a_tensor_smuggled_anywhere_is_found(value):
    with pytest.raises(TensorOnControlPlane) as info:
        assert_no_tensors(value)
    assert "torch" in str(info.value) and str(info.value).startswith("ref")


@SETTINGS
@given(value=json_values)
def test_json_like_data_without_tensors_passes_or_is_a_value_error(value):
    try:
        assert_no_tensors(value)
    except ValueError as exc:
        assert not isinstance(exc, TensorOnControlPlane) and ("key" in str(exc) or "nests" in str(exc))
