"""LocalFeatureStore: every rejected call names the value and the fix, and changes nothing."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from store_helpers import META, eagle3_tensors, exact, put  # noqa: E402

from refqueue.errors import RefMismatch, StoreClosed  # noqa: E402
from refqueue.refs import FeatureSpec, SampleRef  # noqa: E402
from refqueue.store import StoreHandle, StoreHealth  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402

pytestmark = pytest.mark.torch


# -- constructor -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            dict(max_bytes=True),
            TypeError,
            "LocalFeatureStore(max_bytes=True) must be an int or None, got bool; "
            "pass a positive byte count (a bool is not accepted)",
        ),
        (
            dict(max_samples=0),
            ValueError,
            "LocalFeatureStore(max_samples=0) must be > 0; pass a positive sample count, or None for no cap",
        ),
        (
            dict(max_bytes=1.5),
            TypeError,
            "LocalFeatureStore(max_bytes=1.5) must be an int or None, got float; "
            "pass a positive byte count (a bool is not accepted)",
        ),
        (
            dict(high_watermark_bytes=100, low_watermark_bytes=None),
            ValueError,
            "LocalFeatureStore watermarks are half set (high_watermark_bytes=100, "
            "low_watermark_bytes=None); set both or neither",
        ),
        (
            dict(high_watermark_bytes=100, low_watermark_bytes=100),
            ValueError,
            "LocalFeatureStore(low_watermark_bytes=100) must be strictly less than high_watermark_bytes=100; "
            "lower low or raise high so the hysteresis band is not empty",
        ),
        (
            dict(max_bytes=50, high_watermark_bytes=100, low_watermark_bytes=10),
            ValueError,
            "LocalFeatureStore(high_watermark_bytes=100) exceeds max_bytes=50, so the high watermark "
            "could never be hit; use high_watermark_bytes <= 50",
        ),
        (
            dict(high_watermark_bytes=False, low_watermark_bytes=0),
            TypeError,
            "LocalFeatureStore(high_watermark_bytes=False) must be an int or None, got bool; "
            "pass a byte count (a bool is not accepted)",
        ),
        (
            dict(high_watermark_bytes=10, low_watermark_bytes=-1),
            ValueError,
            "LocalFeatureStore(low_watermark_bytes=-1) must be >= 0; pass a byte count",
        ),
        (  # the low passed alone: named as itself, not as the high of -3 derived from it
            dict(low_watermark_bytes=-1),
            ValueError,
            "LocalFeatureStore(low_watermark_bytes=-1) must be >= 0; pass a byte count",
        ),
        (
            dict(device="gpu"),
            ValueError,
            "LocalFeatureStore(device) got 'gpu', which torch does not know as a device; "
            "pass e.g. 'cpu' or 'cuda:0'",
        ),
        (
            dict(device="meta"),
            ValueError,
            "LocalFeatureStore(device) got 'meta'; tensors are kept on 'cpu' or 'cuda' only, pass one of those",
        ),
        (
            dict(device=0),
            TypeError,
            "LocalFeatureStore(device) must be a str or torch.device, got 0 (int); pass e.g. 'cpu' or 'cuda:0'",
        ),
        (
            dict(uri="local"),
            ValueError,
            "LocalFeatureStore(uri='local') must look like 'mem://<name>'; pass e.g. 'mem://features'",
        ),
        (
            dict(uri="shared:///mnt/x"),
            ValueError,
            "LocalFeatureStore(uri='shared:///mnt/x') must look like 'mem://<name>'; pass e.g. 'mem://features'",
        ),
    ],
)
def test_constructor_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=exact(message)):
        LocalFeatureStore(**kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_store_without_cuda_says_so():
    with pytest.raises(ValueError, match=exact(
        "LocalFeatureStore(device) got 'cuda', but CUDA is not available on this machine; pass 'cpu'"
    )):
        LocalFeatureStore(device="cuda")


def test_constructor_accepts_a_valid_configuration():
    store = LocalFeatureStore(max_bytes=100, max_samples=3, high_watermark_bytes=100, low_watermark_bytes=0)
    assert (store.capacity_bytes, store.max_samples) == (100, 3)
    assert (store.high_watermark_bytes, store.low_watermark_bytes) == (100, 0)
    assert store.device == torch.device("cpu")


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, (64, 256 << 20, 192 << 20, 64 << 20)),  # the seed's defaults
        (dict(max_bytes=1000), (64, 1000, 750, 250)),  # 3/4 and 1/4 of the byte cap
        (dict(max_bytes=3), (64, 3, 2, 0)),
        (dict(max_bytes=None), (64, None, 192 << 20, 64 << 20)),
        (dict(max_bytes=1000, high_watermark_bytes=600), (64, 1000, 600, 200)),  # low keeps the 3 : 1 ratio
        (dict(max_bytes=100, low_watermark_bytes=10), (64, 100, 30, 10)),
        (dict(max_bytes=100, low_watermark_bytes=40), (64, 100, 100, 40)),  # high no more than the cap
        (dict(high_watermark_bytes=None), (64, 256 << 20, None, None)),  # watermarks off
        (dict(max_samples=None, max_bytes=None, high_watermark_bytes=None, low_watermark_bytes=None),
         (None, None, None, None)),  # every bound off, explicitly
        ((8, 4096, 2048, 1024), (8, 4096, 2048, 1024)),  # the seed's positional order
    ],
)
def test_caps_and_watermarks_default_to_the_seeds(kwargs, expected):
    store = LocalFeatureStore(*kwargs) if isinstance(kwargs, tuple) else LocalFeatureStore(**kwargs)
    assert (store.max_samples, store.capacity_bytes, store.high_watermark_bytes, store.low_watermark_bytes) == expected


def test_a_store_needs_a_cap_unless_its_watermarks_are_passed_too():
    with pytest.raises(ValueError, match=exact(
        "LocalFeatureStore(max_samples=None, max_bytes=None) has no cap at all, so nothing stops it from growing "
        "until the process runs out of memory; at least one of max_samples / max_bytes must be set (for a store "
        "bounded only by its watermarks, or not at all, pass high_watermark_bytes and low_watermark_bytes "
        "explicitly too)"
    )):
        LocalFeatureStore(max_samples=None, max_bytes=None)
    watermarks_only = LocalFeatureStore(max_samples=None, max_bytes=None, high_watermark_bytes=300,
                                        low_watermark_bytes=100)
    assert (watermarks_only.capacity_bytes, watermarks_only.high_watermark_bytes) == (None, 300)


def test_a_defaulted_watermark_is_named_as_such():
    with pytest.raises(ValueError, match=exact(
        "LocalFeatureStore(low_watermark_bytes=100) must be strictly less than high_watermark_bytes=100 (the "
        "default); lower low or raise high so the hysteresis band is not empty"
    )):
        LocalFeatureStore(max_bytes=100, low_watermark_bytes=100)


def test_uris_are_unique_unless_given():
    a, b = LocalFeatureStore(), LocalFeatureStore()
    assert a.uri != b.uri
    assert a.uri.startswith("mem://local-")
    assert LocalFeatureStore(uri="mem://features").uri == "mem://features"


# -- put -----------------------------------------------------------------------------


def _assert_empty(store: LocalFeatureStore) -> None:
    health = store.health()
    assert (health.resident_bytes, health.sample_count) == (0, 0)


@pytest.mark.parametrize(
    ("tensors", "error", "message"),
    [
        (
            [1, 2],
            TypeError,
            "LocalFeatureStore.put('s0'): tensors must be a dict of feature name -> torch.Tensor, got list; "
            "pass e.g. {'input_ids': ids, ...}",
        ),
        (
            {},
            ValueError,
            "LocalFeatureStore.put('s0'): tensors is empty; a sample carries at least the features its "
            "algorithm requires",
        ),
        (
            {"": torch.zeros(1)},
            ValueError,
            "LocalFeatureStore.put('s0'): feature name '' is not a non-empty str; name every feature with a str",
        ),
        (
            dict(eagle3_tensors(), input_ids=[1, 2, 3]),
            TypeError,
            "LocalFeatureStore.put('s0'): feature 'input_ids' is a builtins.list, not a torch.Tensor; "
            "convert it with torch.as_tensor(...)",
        ),
        (
            dict(eagle3_tensors(), loss_mask=torch.ones(4).to_sparse()),
            ValueError,
            "LocalFeatureStore.put('s0'): feature 'loss_mask' has layout torch.sparse_coo; "
            "pass a dense tensor (tensor.to_dense())",
        ),
        (
            dict(eagle3_tensors(), loss_mask=torch.ones(4, device="meta")),
            ValueError,
            "LocalFeatureStore.put('s0'): feature 'loss_mask' is on the meta device and holds no data; "
            "pass a materialised tensor",
        ),
        (
            dict(eagle3_tensors(), loss_mask=torch.zeros(4, dtype=torch.float8_e4m3fnuz)),
            ValueError,
            "LocalFeatureStore.put('s0'): feature 'loss_mask' has dtype torch.float8_e4m3fnuz, which a SampleRef "
            "cannot name; convert it to a supported dtype (e.g. tensor.to(torch.bfloat16))",
        ),
    ],
)
def test_put_rejects_bad_tensors(tensors, error, message):
    store = LocalFeatureStore()
    with pytest.raises(error, match=exact(message)):
        put(store, "s0", tensors)
    _assert_empty(store)


def test_put_rejects_a_missing_required_feature():
    store = LocalFeatureStore()
    tensors = eagle3_tensors()
    del tensors["loss_mask"]
    with pytest.raises(ValueError, match=exact(
        "SampleRef 's0' for algorithm 'eagle3' is missing required features ['loss_mask']; add them "
        "(it needs ['aux_hidden_states', 'input_ids', 'attention_mask', 'loss_mask'])"
    )):
        put(store, "s0", tensors)
    _assert_empty(store)


@pytest.mark.parametrize(
    ("overrides", "error", "message"),
    [
        (
            dict(algorithm="medusa"),
            ValueError,
            "SampleRef.algorithm 'medusa' is not a FeatureAlgorithm; use one of eagle3, dflash, dspark",
        ),
        (
            dict(schema_version=True),
            TypeError,
            "SampleRef.schema_version must be an int, got True (bool); pass a whole number (a bool is not accepted)",
        ),
        (
            dict(num_tokens=-1),
            ValueError,
            "SampleRef.num_tokens must be >= 0, got -1; pass a non-negative count",
        ),
        (
            dict(run_id=""),
            ValueError,
            "SampleRef.run_id must be a non-empty str, got ''; pass the id of the training run",
        ),
    ],
)
def test_put_rejects_bad_ref_fields(overrides, error, message):
    store = LocalFeatureStore()
    with pytest.raises(error, match=exact(message)):
        put(store, "s0", **overrides)
    _assert_empty(store)


def test_put_rejects_a_bad_sample_id():
    store = LocalFeatureStore()
    with pytest.raises(ValueError, match=exact(
        "LocalFeatureStore.put: sample_id must be a non-empty str, got 3; pass the producer's id for this sample"
    )):
        put(store, 3)
    _assert_empty(store)


# -- put_ref -----------------------------------------------------------------------


def _declared(store: LocalFeatureStore, sample_id: str = "s0") -> SampleRef:
    return SampleRef.build(
        sample_id,
        {name: FeatureSpec.of(t) for name, t in eagle3_tensors().items()},
        algorithm="eagle3",
        store_uri=store.uri,
        **META,
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: {k: t[k] for k in ["input_ids", "aux_hidden_states", "attention_mask", "loss_mask"]},
            "feature #0 is 'input_ids' but the ref declares 'aux_hidden_states' there (the ref's order is "
            "['aux_hidden_states', 'input_ids', 'attention_mask', 'loss_mask'])",
        ),
        (
            lambda t: {k: t[k] for k in ["aux_hidden_states", "input_ids", "attention_mask"]},
            "feature 'loss_mask' is missing (the ref declares ['aux_hidden_states', 'input_ids', "
            "'attention_mask', 'loss_mask'])",
        ),
        (
            lambda t: dict(t, extra=torch.zeros(1)),
            "feature 'extra' is not declared by the ref (it declares ['aux_hidden_states', 'input_ids', "
            "'attention_mask', 'loss_mask'])",
        ),
        (
            lambda t: dict(t, loss_mask=t["loss_mask"].to(torch.bfloat16)),
            "feature 'loss_mask' has dtype bfloat16 but the ref declares float32",
        ),
        (
            lambda t: dict(t, aux_hidden_states=t["aux_hidden_states"][:2]),
            "feature 'aux_hidden_states' has shape (2, 4, 8) but the ref declares (3, 4, 8)",
        ),
    ],
)
def test_put_ref_names_the_first_difference(edit, message):
    store = LocalFeatureStore(uri="mem://a")
    with pytest.raises(RefMismatch, match=exact(
        f"LocalFeatureStore.put_ref('s0'): {message}; pass the tensors the ref was made for"
    )):
        store.put_ref(_declared(store), edit(eagle3_tensors()))
    _assert_empty(store)


def test_put_ref_rejects_a_ref_of_another_store():
    store = LocalFeatureStore(uri="mem://a")
    ref = _declared(LocalFeatureStore(uri="mem://b"))
    with pytest.raises(RefMismatch, match=exact(
        "LocalFeatureStore.put_ref('s0'): the ref names store 'mem://b' but this store is 'mem://a'; "
        "put it into the store it names"
    )):
        store.put_ref(ref, eagle3_tensors())
    _assert_empty(store)


def test_put_ref_rejects_a_non_ref():
    store = LocalFeatureStore()
    with pytest.raises(TypeError, match=exact(
        "LocalFeatureStore.put_ref needs a SampleRef, got dict; build one with SampleRef(...) or "
        "SampleRef.from_json(...)"
    )):
        store.put_ref({"sample_id": "s0"}, eagle3_tensors())


# -- get / release / scrub ---------------------------------------------------------


def test_get_rejects_a_ref_of_another_store():
    a, b = LocalFeatureStore(uri="mem://a"), LocalFeatureStore(uri="mem://b")
    ref = put(b, "s0")
    with pytest.raises(ValueError, match=exact(
        "LocalFeatureStore.get: ref 's0' names store 'mem://b', which does not match this store's URI 'mem://a'; "
        "use the store the ref names"
    )):
        a.get(ref)
    assert a.handle_count == 0


def test_get_rejects_a_non_ref_and_a_bad_device():
    store = LocalFeatureStore()
    ref = put(store, "s0")
    with pytest.raises(TypeError, match=exact(
        "LocalFeatureStore.get needs a SampleRef, got str; pass the ref that put() returned (or lease.ref)"
    )):
        store.get("s0")
    with pytest.raises(ValueError, match=exact(
        "LocalFeatureStore.get(device) got 'mps'; tensors are kept on 'cpu' or 'cuda' only, pass one of those"
    )):
        store.get(ref, device="mps")
    assert store.handle_count == 0


def test_get_with_a_ref_of_another_incarnation_is_a_mismatch():
    store = LocalFeatureStore(uri="mem://a")
    resident = put(store, "s0")
    other = put(LocalFeatureStore(uri="mem://a"), "s0", eagle3_tensors(seq=5))
    with pytest.raises(RefMismatch, match=exact(
        f"LocalFeatureStore.get('s0'): the resident data was put under another ref (feature_specs "
        f"differs: resident {resident.feature_specs!r}, given {other.feature_specs!r}); get it with "
        f"the ref its put returned"
    )):
        store.get(other)
    assert store.handle_count == 0
    assert store.scrub(other) is False  # scrub drops only data put under an equal ref
    assert store.health().sample_count == 1


def test_release_rejects_a_foreign_handle():
    store = LocalFeatureStore(uri="mem://a")
    with pytest.raises(ValueError, match=exact(
        "LocalFeatureStore.release got a handle of store 'mem://b', a different store than this one ('mem://a'); "
        "release it on the store that gave it out"
    )):
        store.release(StoreHandle("mem://b", "s0", 1))
    with pytest.raises(TypeError, match=exact(
        "LocalFeatureStore.release needs the StoreHandle that get() returned, got int"
    )):
        store.release(1)


# -- close -------------------------------------------------------------------------


def test_every_call_after_close_raises_store_closed():
    store = LocalFeatureStore(uri="mem://a")
    ref = put(store, "s0")
    _, handle = store.get(ref)
    store.close()
    store.close()  # idempotent
    calls = {
        "put": lambda: put(store, "s1"),
        "put_ref": lambda: store.put_ref(ref, eagle3_tensors()),
        "get": lambda: store.get(ref),
        "release": lambda: store.release(handle),
        "scrub": lambda: store.scrub(ref),
        "gc": store.gc,
    }
    for call, fn in calls.items():
        with pytest.raises(StoreClosed, match=exact(
            f"LocalFeatureStore 'mem://a' is closed; {call} needs an open store, make a new LocalFeatureStore"
        )):
            fn()
    assert isinstance(StoreClosed("x"), RuntimeError)  # seed code catching RuntimeError keeps working
    # health() keeps answering (as the seed's does), so a dashboard polling it does not crash.
    assert store.health() == StoreHealth(0, store.capacity_bytes, 0, False, True)
