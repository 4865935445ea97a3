"""SharedDirFeatureStore: safetensors files in a directory shared by processes."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from refqueue.errors import DuplicateSample, ForeignRef, SampleMissing, StoreClosed, StoreFull  # noqa: E402
from refqueue.refs import DTYPE_SIZES, SampleRef  # noqa: E402
from refqueue.stores.shared_dir import SharedDirFeatureStore  # noqa: E402

from store_helpers import META, eagle3_tensors, nbytes_of, put  # noqa: E402

SPAWN = multiprocessing.get_context("spawn")


def test_put_get_round_trip_memory_mapped_and_copy_on_write(tmp_path):
    store = SharedDirFeatureStore(tmp_path)
    tensors = eagle3_tensors(seed=3)
    ref = put(store, "s1", tensors)
    assert ref.store_uri == f"file://{tmp_path}" and ref.estimated_bytes == nbytes_of(tensors)
    got, handle = store.get(ref)
    assert list(got) == list(tensors)
    for name in tensors:
        assert torch.equal(got[name], tensors[name])
    got["loss_mask"].zero_()  # the consumer's own pages: the file keeps the data
    again, _ = store.get(ref)
    assert torch.equal(again["loss_mask"], tensors["loss_mask"])
    store.release(handle)
    store.release(handle)  # idempotent
    h = store.health()
    assert (h.resident_bytes, h.sample_count) == (ref.estimated_bytes, 1)


@pytest.mark.parametrize("dtype", sorted(set(DTYPE_SIZES) - {"complex128"}))
def test_every_dtype_a_ref_names_round_trips(tmp_path, dtype):
    # (float8, uint16/32/64 and complex64 were written, then read back as "damaged")
    store = SharedDirFeatureStore(tmp_path)
    gen = torch.Generator().manual_seed(7)
    raw = torch.randint(0, 256, (3, 4, 8 * DTYPE_SIZES[dtype]), dtype=torch.uint8, generator=gen)
    aux = raw.view(getattr(torch, dtype))  # every bit pattern, compared bit for bit below
    ref = put(store, "s1", dict(eagle3_tensors(), aux_hidden_states=aux))
    assert ref.feature_specs["aux_hidden_states"].dtype_name == dtype
    got, handle = store.get(ref)
    assert got["aux_hidden_states"].dtype == aux.dtype and got["aux_hidden_states"].shape == aux.shape
    assert torch.equal(got["aux_hidden_states"].view(torch.uint8), raw)
    store.release(handle)


def test_a_dtype_safetensors_cannot_hold_is_refused_before_anything_is_written(tmp_path):
    store = SharedDirFeatureStore(tmp_path)
    aux = torch.zeros(3, 4, 8, dtype=torch.complex128)
    with pytest.raises(ValueError, match=r"feature 'aux_hidden_states' has dtype torch.complex128, which a "
                       r"safetensors file cannot hold; convert it \(complex128 to torch.complex64\)"):
        put(store, "s1", dict(eagle3_tensors(), aux_hidden_states=aux))
    assert list((tmp_path / "tmp").iterdir()) == [] and list((tmp_path / "samples").iterdir()) == []
    assert store.health().sample_count == 0
    put(store, "s1", dict(eagle3_tensors(), aux_hidden_states=aux.to(torch.complex64)))  # the fix it names works


def test_scrub_removes_the_data_and_a_holder_keeps_its_tensors(tmp_path):
    store = SharedDirFeatureStore(tmp_path)
    ref = put(store, "s1")
    held, _ = store.get(ref)
    assert store.scrub(ref) is True
    assert store.scrub(ref) is False
    assert torch.equal(held["input_ids"], eagle3_tensors()["input_ids"])  # still mapped
    with pytest.raises(SampleMissing, match="not in"):
        store.get(ref)
    assert (store.health().resident_bytes, store.health().sample_count) == (0, 0)


def test_a_late_scrub_of_an_old_put_never_removes_a_later_put_of_the_same_id(tmp_path):
    # D9: a scrub intent collected after its committing client died may scrub the
    # old incarnation again after the id was put anew with the very same tensors.
    store = SharedDirFeatureStore(tmp_path)
    old = put(store, "s1")
    assert store.scrub(old) is True
    new = put(store, "s1")  # the same id and tensors: a re-put (D5)
    assert new != old and new.feature_specs == old.feature_specs
    assert store.scrub(old) is False  # the late scrub of the old put
    got, _ = store.get(new)
    assert torch.equal(got["input_ids"], eagle3_tensors()["input_ids"])
    assert (store.health().resident_bytes, store.health().sample_count) == (new.estimated_bytes, 1)


def test_refs_lists_what_is_published(tmp_path):
    store = SharedDirFeatureStore(tmp_path)
    a, b = put(store, "b"), put(store, "a")
    assert store.refs() == [b, a]  # by sample id
    store.scrub(a)
    assert store.refs() == [b]
    store.close()
    with pytest.raises(StoreClosed, match="refs needs an open store"):
        store.refs()


def test_rejections(tmp_path):
    store = SharedDirFeatureStore(tmp_path, max_samples=1)
    ref = put(store, "s1")
    with pytest.raises(DuplicateSample, match="already present"):
        put(store, "s1")
    with pytest.raises(StoreFull, match="sample-count cap"):
        put(store, "s2")
    assert list((tmp_path / "tmp").iterdir()) == []  # the refused put left nothing behind
    for bad in ("../escape", "a/b", ".hidden", "", "x" * 201, "sp ace"):
        with pytest.raises(ValueError, match="not a safe file name"):
            put(store, bad)
    other = SharedDirFeatureStore(tmp_path / "other")
    with pytest.raises(ForeignRef):
        other.scrub(ref)
    forged = SampleRef.from_dict({**ref.to_dict(), "sample_id": "../../etc/passwd"})
    with pytest.raises(ValueError, match="not a safe file name"):
        store.get(forged)
    store.close()
    with pytest.raises(StoreClosed):
        store.get(ref)
    assert store.health().sample_count == 0


def test_counters_are_shared_by_instances_and_processes(tmp_path):
    first = SharedDirFeatureStore(tmp_path)
    children = [SPAWN.Process(target=_put_many, args=(str(tmp_path), f"p{i}", 10)) for i in range(2)]
    for child in children:
        child.start()
    for child in children:
        child.join(120)
        assert child.exitcode == 0
    put(first, "mine")
    second = SharedDirFeatureStore(tmp_path)
    assert second.health().sample_count == 21
    assert second.health().resident_bytes == 21 * nbytes_of(eagle3_tensors())
    refs = [p for p in (tmp_path / "samples").iterdir()]
    assert len(refs) == 21


def _put_many(root: str, prefix: str, n: int) -> None:
    store = SharedDirFeatureStore(root)
    for i in range(n):
        put(store, f"{prefix}-{i}")


def _stage_then_wait(root: str, conn) -> None:
    store = SharedDirFeatureStore(root)
    staged = store.stage("orphan", eagle3_tensors(), algorithm="eagle3", num_tokens=4, **META)
    conn.send_bytes(json.dumps({"path": staged.path}).encode())
    conn.recv_bytes()  # killed here: written, never published


def test_a_producer_killed_before_publishing_leaves_nothing_visible_and_gc_collects_it(tmp_path):
    store = SharedDirFeatureStore(tmp_path)
    mine, theirs = SPAWN.Pipe()
    child = SPAWN.Process(target=_stage_then_wait, args=(str(tmp_path), theirs))
    child.start()
    assert mine.poll(120), "the producer never staged"
    part = json.loads(mine.recv_bytes())["path"]
    assert os.path.exists(part)
    assert store.gc() == 0  # its writer is alive: not an orphan yet
    os.kill(child.pid, signal.SIGKILL)
    child.join(30)
    assert not (tmp_path / "samples" / "orphan.safetensors").exists()
    assert store.health().sample_count == 0
    assert store.gc() == 1
    assert not os.path.exists(part)
    put(store, "orphan")  # the id is free


def test_gc_recounts_counters_left_short_by_a_crash(tmp_path):
    store = SharedDirFeatureStore(tmp_path)
    ref = put(store, "s1")
    (tmp_path / ".refqueue" / "counters.json").write_text(json.dumps({"resident_bytes": 0, "sample_count": 0}))
    assert store.gc() == 0
    assert (store.health().resident_bytes, store.health().sample_count) == (ref.estimated_bytes, 1)


def test_watermarks_and_validation(tmp_path):
    store = SharedDirFeatureStore(tmp_path, max_bytes=10_000, high_watermark_bytes=400, low_watermark_bytes=100)
    assert store.health().low_watermark_hit and not store.health().high_watermark_hit
    put(store, "s1")
    assert store.health().high_watermark_hit
    with pytest.raises(ValueError, match="both watermarks or neither"):
        SharedDirFeatureStore(tmp_path, high_watermark_bytes=5)
    with pytest.raises(ValueError, match="must be strictly less than high_watermark_bytes=5"):
        SharedDirFeatureStore(tmp_path, high_watermark_bytes=5, low_watermark_bytes=5)
    with pytest.raises(TypeError, match="fsync"):
        SharedDirFeatureStore(tmp_path, fsync="yes")


@pytest.mark.parametrize("root", ["", "PathLike"])
def test_an_empty_root_is_refused_and_nothing_is_made_in_the_working_directory(tmp_path, monkeypatch, root):
    # Path("") is the working directory: an unset variable would have made the store there
    monkeypatch.chdir(tmp_path)
    root = PurePosixPathLike("") if root == "PathLike" else root
    with pytest.raises(ValueError, match=r"^SharedDirFeatureStore\(root\) is empty .*use '\.' to mean this directory\)$"):
        SharedDirFeatureStore(root)
    assert list(tmp_path.iterdir()) == []


class PurePosixPathLike:
    """An os.PathLike whose path is the given str (Path("") would be "." already)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"PurePosixPathLike({self.path!r})"
