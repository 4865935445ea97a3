"""The parse fast path of ``SampleRef.from_dict`` / ``from_json`` decides
exactly as the slow path does.

``from_dict`` of a plain ``dict`` first tries ``refs._from_plain_dict``; any
other mapping (here a ``MappingProxyType`` of the same dict) goes the slow
way, through ``__post_init__``.  For every dict, valid or mutated: where the
fast path accepts, the slow path accepts an equal ref (same fields, same
types, same hash); where the slow path rejects, the fast path declines (None)
and ``from_dict`` raises the slow path's very error.
"""

from __future__ import annotations

import copy
import json
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refqueue.refs import (
    DTYPE_SIZES,
    MAX_INT,
    FeatureAlgorithm,
    FeatureSpec,
    FrozenMap,
    SampleRef,
    _from_plain_dict,
)

SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None, max_examples=400)

# Values at and around every boundary a field checks, of every JSON kind.
edge_values = st.one_of(
    st.sampled_from(
        [0, 1, -1, MAX_INT, MAX_INT + 1, 2**64, True, False, None, 0.0, 1.5, "", "x", "eagle3", "dflash",
         "EAGLE3", "bfloat16", "torch.bfloat16", "bool_", "bool", "float128", "mem://", "://x", "1a://x",
         "mem://local", "shared:///mnt/x", [], [1], [-1], [True], [1.0], [MAX_INT], [MAX_INT + 1], [0, -1],
         {}, {"shape": [1]},
         {"shape": [1], "dtype": "int8"}, {"shape": "ab", "dtype": "int8"}, {"shape": {}, "dtype": "int8"},
         {"shape": [1], "dtype": "int8", "x": 1}, {"shape": [MAX_INT + 1], "dtype": "int8"}]
    ),
    st.integers(),
    st.text(max_size=6),
)


@st.composite
def valid_ref_dicts(draw: Any) -> dict[str, Any]:
    algorithm = draw(st.sampled_from(list(FeatureAlgorithm)))
    names = list(algorithm.required_features)
    names += draw(st.lists(st.text(min_size=1, max_size=5), max_size=2, unique=True))
    names = list(dict.fromkeys(names))
    names = draw(st.permutations(names))
    specs = {
        name: FeatureSpec(draw(st.lists(st.integers(0, 64), max_size=3)), draw(st.sampled_from(sorted(DTYPE_SIZES))))
        for name in names
    }
    version = st.one_of(st.text(min_size=1, max_size=4), st.integers(0, MAX_INT))
    ref = SampleRef.build(
        draw(st.text(min_size=1, max_size=6)),
        specs,
        algorithm=algorithm,
        store_uri=draw(st.sampled_from(["mem://local", "shared:///mnt/f", "s3+x.y://b/k"])),
        run_id=draw(st.text(min_size=1, max_size=4)),
        schema_version=draw(st.integers(0, MAX_INT)),
        num_tokens=draw(st.integers(0, MAX_INT)),
        target_model_version=draw(version),
        draft_weight_version=draw(version),
    )
    return json.loads(ref.to_json())


@st.composite
def mutated_ref_dicts(draw: Any) -> dict[str, Any]:
    data = draw(valid_ref_dicts())
    for _ in range(draw(st.integers(0, 3))):
        names = list(data["feature_keys"]) if isinstance(data.get("feature_keys"), dict) else []
        where = draw(st.sampled_from(["field", "drop", "add", "key", "spec", "spec_part", "rename", "reorder"]))
        field = draw(st.sampled_from(sorted(data) or ["sample_id"]))
        if where == "field":
            data[field] = draw(edge_values)
        elif where == "drop":
            data.pop(field, None)
        elif where == "add":
            data[draw(st.text(max_size=4))] = draw(edge_values)
        elif names and where == "key" and isinstance(data.get("feature_keys"), dict):
            data["feature_keys"][draw(st.sampled_from(names))] = draw(edge_values)
        elif names and where == "spec" and isinstance(data.get("feature_specs"), dict):
            data["feature_specs"][draw(st.sampled_from(names))] = draw(edge_values)
        elif names and where == "spec_part" and isinstance(data.get("feature_specs"), dict):
            spec = data["feature_specs"].get(draw(st.sampled_from(names)))
            if isinstance(spec, dict):
                spec[draw(st.sampled_from(["shape", "dtype", "other"]))] = draw(edge_values)
        elif names and where == "rename":
            table = draw(st.sampled_from(["feature_keys", "feature_specs"]))
            if isinstance(data.get(table), dict):
                old = draw(st.sampled_from(names))
                items = [((draw(st.text(max_size=3)) if k == old else k), v) for k, v in data[table].items()]
                data[table] = dict(items)
        elif where == "reorder":
            table = draw(st.sampled_from(["feature_keys", "feature_specs"]))
            if isinstance(data.get(table), dict):
                data[table] = dict(draw(st.permutations(list(data[table].items()))))
    return data


def _slow(data: dict[str, Any]) -> tuple[str, Any]:
    """The slow path's answer: ("ok", ref) or ("error", type, message)."""
    try:
        return ("ok", SampleRef.from_dict(MappingProxyType(copy.deepcopy(data))))
    except (TypeError, ValueError) as exc:
        return ("error", type(exc), str(exc))


def _same_ref(fast: SampleRef, slow: SampleRef) -> None:
    assert fast == slow and hash(fast) == hash(slow)
    for name in SampleRef.__slots__:
        a, b = getattr(fast, name), getattr(slow, name)
        assert type(a) is type(b) and a == b, name
    assert isinstance(fast.feature_keys, FrozenMap) and isinstance(fast.feature_specs, FrozenMap)
    assert tuple(fast.feature_keys.items()) == tuple(slow.feature_keys.items())
    for spec in fast.feature_specs.values():
        assert type(spec) is FeatureSpec and type(spec.shape) is tuple
    assert fast.to_json() == slow.to_json()


@SETTINGS
@given(data=valid_ref_dicts())
def test_the_fast_path_takes_every_valid_ref_and_builds_the_slow_paths_ref(data):
    fast = _from_plain_dict(copy.deepcopy(data))
    assert fast is not None, "a valid ref dict fell back to the slow path"
    verdict = _slow(data)
    assert verdict[0] == "ok"
    _same_ref(fast, verdict[1])
    _same_ref(SampleRef.from_json(json.dumps(data)), verdict[1])


@SETTINGS
@given(data=mutated_ref_dicts())
def test_the_fast_path_never_accepts_what_the_slow_path_rejects(data):
    verdict = _slow(data)
    fast = _from_plain_dict(copy.deepcopy(data))
    if verdict[0] == "ok":
        if fast is not None:
            _same_ref(fast, verdict[1])
        _same_ref(SampleRef.from_dict(copy.deepcopy(data)), verdict[1])
    else:
        assert fast is None, f"the fast path accepted what the slow path rejects with {verdict[2]!r}"
        with pytest.raises(verdict[1]) as caught:
            SampleRef.from_dict(copy.deepcopy(data))
        assert str(caught.value) == verdict[2]


def _valid() -> dict[str, Any]:
    specs = {name: FeatureSpec((2,), "int8") for name in FeatureAlgorithm.EAGLE3.required_features}
    return json.loads(SampleRef.build("s", specs, algorithm="eagle3").to_json())


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(schema_version=True),
        lambda d: d.update(num_tokens=-1),
        lambda d: d.update(estimated_bytes=MAX_INT + 1),
        lambda d: d.update(estimated_bytes=1.0),
        lambda d: d.update(target_model_version=""),
        lambda d: d.update(draft_weight_version=False),
        lambda d: d.update(sample_id=""),
        lambda d: d.update(run_id=7),
        lambda d: d.update(store_uri="no-scheme"),
        lambda d: d.update(store_uri="9x://y"),
        lambda d: d.update(algorithm="EAGLE3"),
        lambda d: d["feature_keys"].update(input_ids=""),
        lambda d: d["feature_specs"]["input_ids"].update(dtype="float128"),
        lambda d: d["feature_specs"]["input_ids"].update(shape=[True]),
        lambda d: d["feature_specs"]["input_ids"].update(shape=[MAX_INT + 1]),
        lambda d: d["feature_specs"]["input_ids"].update(extra=1),
        lambda d: d["feature_keys"].pop("input_ids"),
        lambda d: d.pop("num_tokens"),
        lambda d: d.update(extra=1),
    ],
)
def test_each_rejection_reaches_the_slow_paths_error(change):
    data = _valid()
    change(data)
    verdict = _slow(data)
    assert verdict[0] == "error"
    assert _from_plain_dict(copy.deepcopy(data)) is None
    with pytest.raises(verdict[1]) as caught:
        SampleRef.from_json(json.dumps(data))
    assert str(caught.value) == verdict[2]


def test_names_the_slow_path_normalises_are_left_to_it():
    # "torch.bfloat16" and "bool_" are valid dtype names the slow path rewrites;
    # the fast path leaves them to it, and the answer is the same ref.
    data = _valid()
    data["feature_specs"]["input_ids"]["dtype"] = "torch.int8"
    data["feature_specs"]["loss_mask"]["dtype"] = "bool_"
    assert _from_plain_dict(copy.deepcopy(data)) is None
    ref = SampleRef.from_json(json.dumps(data))
    assert ref.feature_specs["input_ids"].dtype == "int8" and ref.feature_specs["loss_mask"].dtype == "bool"
