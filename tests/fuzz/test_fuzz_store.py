"""Fuzz: ``LocalFeatureStore`` with hostile ids, tensors, refs and handles.

A put either stores exactly what it was given (``get`` returns equal
tensors under a ref that round-trips through JSON) or raises the documented
error with the store unchanged; tensors that contradict their ref are
``RefMismatch``; every call after ``close()`` is ``StoreClosed``.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_helpers import hostile, hostile_tensor, hostile_text, names, put, snapshot, tensors, torch, unbounded_store

from refqueue.errors import DuplicateSample, RefMismatch, StoreClosed, StoreFull
from refqueue.refs import SampleRef
from refqueue.store import StoreHandle

pytestmark = pytest.mark.timeout(300)
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
PUT_ERRORS = (TypeError, ValueError, StoreFull, DuplicateSample)


def put_kwargs(**overrides):
    kwargs = dict(run_id="r", algorithm="eagle3", schema_version=1, target_model_version="t",
                  draft_weight_version=0, num_tokens=3)
    kwargs.update(overrides)
    return kwargs


@SETTINGS
@given(sample_id=st.one_of(hostile_text, hostile))
def test_put_under_a_hostile_id_stores_it_exactly_or_changes_nothing(sample_id):
    store = unbounded_store()
    put(store, "other")
    before = snapshot(store)
    try:
        ref = store.put(sample_id, tensors(1), **put_kwargs())
    except PUT_ERRORS as exc:
        assert names(str(exc), sample_id), str(exc)
        assert snapshot(store) == before
        return
    assert isinstance(sample_id, str) and sample_id and ref.sample_id == sample_id
    assert SampleRef.from_json(ref.to_json()) == ref
    got, handle = store.get(ref)
    assert all(torch.equal(got[k], v) for k, v in tensors(1).items())
    store.release(handle)
    assert store.scrub(ref) is True and snapshot(store) == before


@SETTINGS
@given(field=st.sampled_from(["run_id", "algorithm", "schema_version", "target_model_version",
                              "draft_weight_version", "num_tokens"]), value=hostile)
def test_put_with_a_hostile_ref_field_is_rejected_before_anything_is_stored(field, value):
    store = unbounded_store()
    before = snapshot(store)
    try:
        ref = store.put("s", tensors(0), **put_kwargs(**{field: value}))
    except PUT_ERRORS as exc:
        assert field in str(exc) or names(str(exc), value), str(exc)
        assert snapshot(store) == before
    else:
        assert SampleRef.from_json(ref.to_json()) == ref


@SETTINGS
@given(feature=st.sampled_from(["aux_hidden_states", "input_ids", "extra"]),
       value=st.one_of(hostile_tensor(), hostile))
def test_put_with_hostile_tensors_is_rejected_or_stored_exactly(feature, value):
    store = unbounded_store()
    before = snapshot(store)
    data = {**tensors(0), feature: value}
    try:
        ref = store.put("s", data, **put_kwargs())
    except PUT_ERRORS as exc:
        assert feature in str(exc) or names(str(exc), value), str(exc)
        assert snapshot(store) == before
        return
    got, handle = store.get(ref)
    for name, tensor in data.items():
        assert got[name].dtype == tensor.dtype and got[name].shape == tensor.shape
        assert torch.equal(got[name], tensor) or torch.isnan(tensor).any()
    store.release(handle)


@SETTINGS
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
       dtype=st.sampled_from([torch.float32, torch.int64, torch.bool, torch.float16]))
def test_put_ref_with_tensors_contradicting_the_ref_is_a_ref_mismatch(shape, dtype):
    store = unbounded_store()
    ref = put(store, "s")
    store.scrub(ref)
    before = snapshot(store)
    wrong = {**tensors(0), "aux_hidden_states": torch.zeros(shape, dtype=dtype)}
    if tuple(shape) == (2, 3) and dtype == torch.float32:
        return  # that is what the ref declares
    with pytest.raises(RefMismatch) as info:
        store.put_ref(ref, wrong)
    assert "aux_hidden_states" in str(info.value)
    assert snapshot(store) == before


@SETTINGS
@given(call=st.sampled_from(["get", "scrub", "release"]), value=hostile)
def test_get_scrub_and_release_reject_what_is_not_a_ref_or_handle(call, value):
    store = unbounded_store()
    ref = put(store, "s")
    _, handle = store.get(ref)
    before = snapshot(store)
    with pytest.raises((TypeError, ValueError, KeyError)) as info:
        getattr(store, call)(value)
    message = str(info.value)
    assert names(message, value) or type(value).__name__ in message, message
    assert snapshot(store) == before
    store.release(handle)


@SETTINGS
@given(field=st.sampled_from(["store_uri", "sample_id", "handle_id"]), value=hostile)
def test_release_of_an_altered_handle_never_releases_another(field, value):
    store = unbounded_store()
    ref = put(store, "s")
    _, handle = store.get(ref)
    _, other = store.get(ref)
    forged = dataclasses.replace(handle)
    object.__setattr__(forged, field, value)
    try:
        store.release(forged)
    except (TypeError, ValueError, KeyError):
        pass
    # whatever happened to the forged handle, the other one is still held
    assert store.handle_count in (1, 2)
    store.release(other)
    store.release(handle)
    assert store.handle_count == 0


@SETTINGS
@given(call=st.sampled_from(["put", "get", "scrub", "release", "gc"]))
def test_every_call_after_close_is_store_closed(call):
    store = unbounded_store()
    ref = put(store, "s")
    _, handle = store.get(ref)
    store.close()
    args = {"put": ("t", tensors(0)), "get": (ref,), "scrub": (ref,), "release": (handle,), "gc": ()}[call]
    kwargs = put_kwargs() if call == "put" else {}
    with pytest.raises(StoreClosed) as info:
        getattr(store, call)(*args, **kwargs)
    assert call in str(info.value)
    assert store.health().sample_count == 0
    store.close()  # idempotent


@SETTINGS
@given(device=hostile)
def test_get_on_a_hostile_device_is_rejected_and_releases_nothing(device):
    store = unbounded_store()
    ref = put(store, "s")
    before = snapshot(store)
    try:
        got, handle = store.get(ref, device)
    except (TypeError, ValueError) as exc:
        assert names(str(exc), device) or type(device).__name__ in str(exc), str(exc)
        assert snapshot(store) == before
    else:
        assert device is None or str(torch.device(device)) == "cpu"
        store.release(handle)


def test_a_handle_of_another_store_is_foreign():
    a, b = unbounded_store(), unbounded_store()
    ref = put(a, "s")
    _, handle = a.get(ref)
    with pytest.raises(ValueError, match="handle of store"):
        b.release(handle)
    assert isinstance(handle, StoreHandle) and a.handle_count == 1
