"""Fuzz: ``SharedDirFeatureStore`` with hostile ids, damaged sample files,
damaged counters and things planted in its folders (issue 21, defects 1-6).

A put either stores exactly what it was given or raises the documented
error with the store unchanged.  Whatever a sample file became (bytes
flipped, cut short, a hostile header), ``get`` returns tensors of the ref's
shapes and dtypes or raises ``RefMismatch``, and ``scrub``, ``refs``,
``health`` and ``gc`` never raise: the damage is the sample's, never the
reader's.  Whatever ``counters.json`` holds, ``health`` reports what the
directory holds.  Whatever is planted under ``samples/`` or ``tmp/`` (a
FIFO, a folder, a symlink, bytes), ``gc`` returns (never blocks) and counts
exactly the samples the store wrote.  Real files, real tensors.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_helpers import hostile, hostile_text, names, tensors, torch

pytest.importorskip("safetensors")

from refqueue.errors import DuplicateSample, RefMismatch, StoreFull  # noqa: E402
from refqueue.refs import SampleRef  # noqa: E402
from refqueue.stores.shared_dir import SharedDirFeatureStore  # noqa: E402

pytestmark = pytest.mark.timeout(300)
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
# Each example makes files (a store, a log; tens of ms under load): half the
# profile's examples (50 in CI; the deep profile's 2,000 give 1,000).
HALF = settings(SETTINGS, max_examples=max(1, settings.default.max_examples // 2))
PUT = dict(run_id="r", algorithm="eagle3", schema_version=1, target_model_version="t", draft_weight_version=0,
           num_tokens=3)


@contextlib.contextmanager
def fresh_store() -> Iterator[tuple[SharedDirFeatureStore, Path]]:
    """A store in a fresh folder, removed afterwards (one per Hypothesis example)."""
    top = Path(tempfile.mkdtemp(prefix="fuzz-shared-"))
    store = SharedDirFeatureStore(top / "store", fsync=False)
    try:
        yield store, top / "store"
    finally:
        store.close()
        shutil.rmtree(top, ignore_errors=True)


def files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "samples").iterdir())


def counts(store) -> tuple[int, int]:
    health = store.health()
    return health.resident_bytes, health.sample_count


@HALF
@given(sample_id=st.one_of(hostile_text, hostile, st.text(alphabet="abc._-/\\", min_size=1, max_size=210)))
def test_put_under_a_hostile_id_stores_it_exactly_or_changes_nothing(sample_id):
    with fresh_store() as (store, root):
        store.put("other", tensors(0), **PUT)
        before = (files(root), counts(store), sorted(os.listdir(root / "tmp")))
        try:
            ref = store.put(sample_id, tensors(1), **PUT)
        except (TypeError, ValueError, StoreFull, DuplicateSample) as exc:
            assert names(str(exc), sample_id) or type(sample_id).__name__ in str(exc), str(exc)
            assert (files(root), counts(store), sorted(os.listdir(root / "tmp"))) == before
            return
        assert ref.sample_id == sample_id and SampleRef.from_json(ref.to_json()) == ref
        got, handle = store.get(ref)
        assert all(torch.equal(got[k], v) for k, v in tensors(1).items())
        store.release(handle)
        assert store.scrub(ref) is True and (files(root), counts(store)) == before[:2]


def _header(data: bytes) -> tuple[dict, int]:
    size = int.from_bytes(data[:8], "little")
    return json.loads(data[8 : 8 + size]), 8 + size


header_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=8), c, max_size=3)),
    max_leaves=6,
)


@st.composite
def damage(draw):
    """A function from a sample file's bytes to damaged bytes, and what it did."""
    kind = draw(st.sampled_from(["flip", "cut", "header field", "header bytes", "length", "metadata"]))
    if kind == "flip":
        flips = draw(st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=4))

        def flip(data: bytes) -> bytes:
            out = bytearray(data)
            for at, mask in flips:
                out[at % len(out)] ^= mask
            return bytes(out)
        return kind, flip
    if kind == "cut":
        keep = draw(st.integers(0, 10**6))
        return kind, lambda data: data[: keep % (len(data) + 1)]
    if kind == "length":
        length = draw(st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 1, 7, 2**63, 2**64 - 1])))
        return kind, lambda data: length.to_bytes(8, "little") + data[8:]
    if kind == "header bytes":
        raw = draw(st.binary(max_size=64))
        return kind, lambda data: len(raw).to_bytes(8, "little") + raw + data[_header(data)[1]:]
    field = draw(st.sampled_from(["input_ids", "aux_hidden_states", "__metadata__"]))
    key = draw(st.sampled_from(["dtype", "shape", "data_offsets", "ref", "x"]))
    value = draw(header_values)

    def edit(data: bytes) -> bytes:
        header, start = _header(data)
        entry = header.get(field)
        if kind == "metadata" or not isinstance(entry, dict):
            header[field] = value
        else:
            entry[key] = value
        text = json.dumps(header).encode()
        return len(text).to_bytes(8, "little") + text + data[start:]
    return kind, edit


@HALF
@given(how=damage())
def test_a_damaged_sample_file_is_the_samples_fault_and_never_the_readers(how):
    kind, damaged = how
    with fresh_store() as (store, root):
        ref = store.put("s0", tensors(0), **PUT)
        good = store.put("s1", tensors(1), **PUT)
        path = root / "samples" / "s0.safetensors"
        path.write_bytes(damaged(path.read_bytes()))
        try:
            got, handle = store.get(ref)
        except RefMismatch as exc:
            assert "s0" in str(exc)
        else:  # the damage left a readable sample of the ref's shapes (e.g. flipped data bytes)
            for name, spec in ref.feature_specs.items():
                assert tuple(got[name].shape) == tuple(spec.shape) and str(got[name].dtype) == f"torch.{spec.dtype}"
            store.release(handle)
        listed = store.refs()
        assert good in listed and all(r == good or r.sample_id == "s0" for r in listed)
        assert isinstance(store.scrub(ref), bool)
        assert store.gc() >= 0
        if "s0.safetensors" in files(root):  # its header holds another whole ref of s0: another put's, kept
            (other,) = [r for r in store.refs() if r.sample_id == "s0"]
            assert other != ref and counts(store) == (good.estimated_bytes + other.estimated_bytes, 2)
        else:
            assert counts(store) == (good.estimated_bytes, 1) and files(root) == ["s1.safetensors"]


@HALF
@given(content=st.one_of(
    st.binary(max_size=64),
    header_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"resident_bytes": header_values, "sample_count": header_values}).map(
        lambda v: json.dumps(v).encode()),
    st.integers(1, 5_000).map(lambda d: b"[" * d),
))
def test_whatever_the_counters_file_holds_health_reports_the_directory(content):
    with fresh_store() as (store, root):
        ref = store.put("s0", tensors(0), **PUT)
        (root / ".refqueue" / "counters.json").write_bytes(content)
        data = json.loads(content) if _is_json(content) else None
        exact = (type(data) is dict and sorted(data) == ["resident_bytes", "sample_count"]
                 and all(type(v) is int and 0 <= v < 2**63 for v in data.values()))
        expected = (data["resident_bytes"], data["sample_count"]) if exact else (ref.estimated_bytes, 1)
        assert counts(store) == expected  # a valid file is trusted as it is (gc corrects a short one)
        store.gc()
        assert counts(store) == (ref.estimated_bytes, 1)


def _is_json(content: bytes) -> bool:
    try:
        json.loads(content)
    except (ValueError, RecursionError):
        return False
    return True


planted = st.sampled_from(["fifo", "folder", "symlink out", "symlink in", "dangling symlink", "bytes", "empty"])


@HALF
@given(plants=st.lists(st.tuples(st.sampled_from(["samples", "tmp"]), st.text(alphabet="abcxyz-_.", min_size=1,
                                                                                max_size=12), planted,
                                 st.binary(max_size=32)), max_size=4))
def test_gc_over_anything_planted_returns_and_counts_the_stores_samples(plants):
    with fresh_store() as (store, root):
        ref = store.put("s0", tensors(0), **PUT)
        outside = root.parent / "outside"
        outside.write_bytes(b"precious")
        for folder, name, what, data in plants:
            suffix = ".safetensors" if folder == "samples" else ".part"
            path = root / folder / f"{name}{suffix}"
            if os.path.lexists(path) or path.name == "s0.safetensors":
                continue
            if what == "fifo":
                os.mkfifo(path)
            elif what == "folder":
                path.mkdir()
            elif what == "symlink out":
                path.symlink_to(outside)
            elif what == "symlink in":
                path.symlink_to(root / "samples" / "s0.safetensors")
            elif what == "dangling symlink":
                path.symlink_to(root / "nowhere")
            else:
                path.write_bytes(data if what == "bytes" else b"")
        assert store.gc(orphan_age=0.0) >= 0
        assert counts(store) == (ref.estimated_bytes, 1) and files(root) == ["s0.safetensors"]
        assert outside.read_bytes() == b"precious"
        got, handle = store.get(ref)
        assert torch.equal(got["input_ids"], tensors(0)["input_ids"])
        store.release(handle)
