"""Issue 21, defects 1-6: ``SharedDirFeatureStore`` under damaged files, planted
files and a full disk.

On 7655507:

1. a damaged sample file made ``get`` raise a raw ``JSONDecodeError`` /
   ``ValueError``, which the loader takes for the consumer's fault and
   retries for ever (the samples behind it never arrived), and ``scrub``
   raised too (the sample could be neither acked nor dead-lettered);
2. ``gc()`` stopped at the first unreadable ``*.safetensors``, and on a FIFO
   blocked for ever holding the store's lock (every put and scrub of every
   process blocked behind it);
3. a 200-character id (documented as valid) failed with "File name too
   long" on a host with a long name (the temporary's name held both);
4. with room for the sample but not for the counters' update, ``put``
   raised *after* publishing: the file stayed uncounted and a retry got
   ``DuplicateSample``;
5. the counters' temporary file had a predictable name and was written
   through a planted symlink;
6. a damaged ``counters.json`` raised a bare ``JSONDecodeError`` naming no
   file, and negative counters were reported as they were.

Real files, real tensors, a real FIFO, a real full disk (a small tmpfs).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from disk_helpers import fill, free, small_disk  # noqa: E402

from refqueue.errors import DuplicateSample, RefMismatch, SchemaMismatch  # noqa: E402
from refqueue.loader import FeatureDataLoader  # noqa: E402
from refqueue.queue import SampleRefQueue, VisibilityTimeout  # noqa: E402
from refqueue.stores.shared_dir import SharedDirFeatureStore  # noqa: E402

pytestmark = pytest.mark.timeout(120)

META = dict(run_id="run", schema_version=1, target_model_version="t", draft_weight_version=0)


def tensors(i: int = 0) -> dict:
    return {
        "aux_hidden_states": torch.full((3, 4, 8), float(i)),
        "input_ids": torch.arange(4) + i,
        "attention_mask": torch.ones(4, dtype=torch.bool),
        "loss_mask": torch.ones(4),
    }


def put(store, sample_id: str, i: int = 0):
    return store.put(sample_id, tensors(i), algorithm="eagle3", num_tokens=4, **META)


def counts(store) -> tuple[int, int]:
    health = store.health()
    return health.resident_bytes, health.sample_count


def _header_of(data: bytes) -> tuple[dict, int]:
    size = int.from_bytes(data[:8], "little")
    return json.loads(data[8 : 8 + size]), 8 + size


def _with_header(data: bytes, header: dict) -> bytes:
    _, start = _header_of(data)
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + data[start:]


def _edit_ref(data: bytes, **fields) -> bytes:
    header, _ = _header_of(data)
    ref = json.loads(header["__metadata__"]["ref"])
    ref.update(fields)
    header["__metadata__"]["ref"] = json.dumps(ref)
    return _with_header(data, header)


def _edit_entry(data: bytes, **fields) -> bytes:
    header, _ = _header_of(data)
    header["input_ids"].update(fields)
    return _with_header(data, header)


# Ways a published file can be damaged (a disk error, a partial copy, an editor,
# an attacker): each maps the file's bytes to the damaged bytes.
DAMAGE = {
    "not safetensors": lambda data: b"this is not a safetensors file",
    "empty": lambda data: b"",
    "header length past the file": lambda data: (2**63).to_bytes(8, "little") + data[8:],
    "header not JSON": lambda data: (5).to_bytes(8, "little") + b"{nope" + data[8:],
    "header a JSON list": lambda data: (5).to_bytes(8, "little") + b"[1,2]" + data[8:],
    "header nested deep": lambda data: (200_000).to_bytes(8, "little") + b"[" * 200_000,
    "header not UTF-8": lambda data: (4).to_bytes(8, "little") + b"\xff\xfe\xfd\xfc" + data[8:],
    "no ref in the metadata": lambda data: _with_header(data, {**_header_of(data)[0], "__metadata__": {}}),
    "ref not a ref": lambda data: _with_header(data, {**_header_of(data)[0], "__metadata__": {"ref": "{}"}}),
    "ref of another id": lambda data: _edit_ref(data, sample_id="other"),
    "truncated data": lambda data: data[: len(data) - 40],
    "offsets past the data": lambda data: _edit_entry(data, data_offsets=[0, 10**9]),
    "offsets not ints": lambda data: _edit_entry(data, data_offsets=["a", None]),
    "unknown dtype": lambda data: _edit_entry(data, dtype="Q99"),
    "shape not a list": lambda data: _edit_entry(data, shape={"x": 1}),
    "shape of another size": lambda data: _edit_entry(data, shape=[400]),
    "entry missing": lambda data: _with_header(data, {k: v for k, v in _header_of(data)[0].items() if k != "input_ids"}),
}


# The damage a reader finds only past the header (the ref in it is whole): a
# listing still names the ref, and a scrub removes the file as the ref's own.
DATA_DAMAGE = {"truncated data", "offsets past the data", "offsets not ints", "unknown dtype", "shape not a list",
               "shape of another size", "entry missing"}


def damage(store, sample_id: str, how: str) -> None:
    path = store.root / "samples" / f"{sample_id}.safetensors"
    path.write_bytes(DAMAGE[how](path.read_bytes()))


# -- 1. a damaged sample file ----------------------------------------------------------------


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_sample_file_is_refused_as_the_samples_fault_and_scrub_removes_it(tmp_path, how):
    store = SharedDirFeatureStore(tmp_path, fsync=False)
    ref = put(store, "s0")
    good = put(store, "s1", 1)
    damage(store, "s0", how)
    assert store.refs() == ([ref, good] if how in DATA_DAMAGE else [good])  # a header it cannot read is skipped
    with pytest.raises(RefMismatch, match=r"^SharedDirFeatureStore.get\('s0'\): .*s0\.safetensors is damaged \("):
        store.get(ref)
    assert store.scrub(ref) is True  # it was at the ref's name: no longer resident
    assert counts(store) == (good.estimated_bytes, 1)
    if how in DATA_DAMAGE:  # its header still holds its ref: removed as the ref's own file
        assert not (tmp_path / ".refqueue" / "damaged").exists()
    else:  # whose it is cannot be read: moved aside, for an operator to look at
        (moved,) = (tmp_path / ".refqueue" / "damaged").iterdir()
        assert moved.name.startswith("s0.safetensors.")
    put(store, "s0")  # the id is free again


def test_the_loader_dead_letters_a_damaged_sample_and_delivers_the_good_ones_behind_it(tmp_path):
    store = SharedDirFeatureStore(tmp_path, fsync=False)
    queue = SampleRefQueue(store, VisibilityTimeout(30.0))
    for i in range(3):
        queue.put(put(store, f"s{i}", i))
    damage(store, "s0", "header not JSON")
    queue.close()
    loader = FeatureDataLoader(queue, store, poll_interval=0.01)
    with pytest.raises(SchemaMismatch, match="^FeatureDataLoader cannot train on ref 's0': the store cannot serve it: "):
        next(loader)  # at s0's place, dead-lettered at once (D7); the loader stays usable
    seen = [batch[0].lease.ref.sample_id for batch in loader]
    assert seen == ["s1", "s2"]
    (dead,) = queue.dead_letters()
    assert dead.ref.sample_id == "s0" and "damaged" in dead.reason
    assert queue.is_drained and counts(store) == (0, 0)


# -- 2. gc over unreadable files ---------------------------------------------------------------


def test_gc_over_a_fifo_a_folder_and_damaged_files_never_blocks_and_recounts_the_good_ones(tmp_path):
    store = SharedDirFeatureStore(tmp_path, fsync=False)
    good = put(store, "good")
    put(store, "bad")
    damage(store, "bad", "header not JSON")
    samples = tmp_path / "samples"
    os.mkfifo(samples / "fifo.safetensors")
    (samples / "folder.safetensors").mkdir()
    (samples / "link.safetensors").symlink_to(samples / "good.safetensors")
    finished = threading.Event()
    result: list = []

    def run_gc():
        result.append(store.gc())
        finished.set()

    threading.Thread(target=run_gc, daemon=True).start()
    try:
        assert finished.wait(30), "gc() blocked (on the FIFO), holding the store's lock"
    finally:
        if not finished.is_set():  # let the stuck reader go, so the test process can end
            os.close(os.open(samples / "fifo.safetensors", os.O_WRONLY | os.O_NONBLOCK))
    assert result == [4]  # the four things that are not samples were moved aside
    assert sorted(p.name for p in samples.iterdir()) == ["good.safetensors"]
    assert counts(store) == (good.estimated_bytes, 1)
    put(store, "other")  # nothing holds the lock
    assert [r.sample_id for r in store.refs()] == ["good", "other"]


def test_get_on_a_fifo_is_refused_at_once(tmp_path):
    store = SharedDirFeatureStore(tmp_path, fsync=False)
    ref = put(store, "s0")
    path = tmp_path / "samples" / "s0.safetensors"
    path.unlink()
    os.mkfifo(path)
    finished = threading.Event()
    errors: list = []

    def get():
        try:
            store.get(ref)
        except RefMismatch as exc:
            errors.append(exc)
        finished.set()

    threading.Thread(target=get, daemon=True).start()
    try:
        assert finished.wait(30), "get() blocked on the FIFO"
    finally:
        if not finished.is_set():
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    assert "not a regular file" in str(errors[0])


# -- 3. long ids on a host with a long name ------------------------------------------------


def test_a_200_character_id_is_stored_on_a_host_with_the_longest_name(tmp_path, monkeypatch):
    longest = "h" * 31 + "." + "n" * 32  # 64 characters: Linux's HOST_NAME_MAX
    monkeypatch.setattr(socket, "gethostname", lambda: longest)
    store = SharedDirFeatureStore(tmp_path, fsync=False)
    sample_id = "x" * 200
    ref = put(store, sample_id)
    got, handle = store.get(ref)
    assert torch.equal(got["input_ids"], tensors()["input_ids"])
    store.release(handle)
    staged = store.stage("y" * 200, tensors(), algorithm="eagle3", num_tokens=4, **META)
    assert len(os.path.basename(staged.path)) <= 255
    store.publish(staged)
    assert store.gc() == 0 and counts(store)[1] == 2


# -- 4. a full disk at the counters' update ------------------------------------------------


def test_a_put_with_room_for_the_sample_but_not_the_counters_publishes_nothing(tmp_path):
    with small_disk(tmp_path / "disk") as disk:
        store = SharedDirFeatureStore(disk / "store", fsync=False)
        staged = store.stage("s0", tensors(), algorithm="eagle3", num_tokens=4, **META)
        filler = fill(disk)
        with pytest.raises(OSError, match=r"^.*SharedDirFeatureStore.put\('s0'\): cannot update the counters .*"
                                          r"nothing was published; free space .* and put again"):
            store.publish(staged)
        assert not (disk / "store" / "samples" / "s0.safetensors").exists()
        assert list((disk / "store" / "tmp").iterdir()) == []
        free(filler)
        assert counts(store) == (0, 0)
        ref = put(store, "s0")  # the retry: no DuplicateSample
        assert counts(store) == (ref.estimated_bytes, 1)


# -- 5. the counters' temporary --------------------------------------------------------------


def test_the_counters_update_never_writes_through_a_planted_symlink(tmp_path):
    store = SharedDirFeatureStore(tmp_path / "store", fsync=False)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    meta = tmp_path / "store" / ".refqueue"
    # the name the counters' temporary had on 7655507, and a spread of guesses
    for name in [f"counters.{os.getpid()}.{threading.get_ident()}.tmp", "counters.json.tmp", "counters.tmp"]:
        (meta / name).symlink_to(victim)
    ref = put(store, "s0")
    store.scrub(ref)
    store.gc()
    assert victim.read_text() == "precious"
    assert json.loads((meta / "counters.json").read_text()) == {"resident_bytes": 0, "sample_count": 0}
    assert not (meta / "counters.json").is_symlink()


# -- 6. a damaged counters file ----------------------------------------------------------------


@pytest.mark.parametrize("content", [
    b"not json", b"", b"[1, 2]", b'{"resident_bytes": -5, "sample_count": -1}',
    b'{"resident_bytes": "x", "sample_count": 1}', b'{"resident_bytes": 1e400, "sample_count": 1}',
    b'{"resident_bytes": true, "sample_count": 1}', b"[" * 100_000, b"\xff\xfe",
])
def test_a_damaged_counters_file_is_recounted_from_the_directory_and_named(tmp_path, content, caplog):
    store = SharedDirFeatureStore(tmp_path, fsync=False)
    ref = put(store, "s0")
    path = tmp_path / ".refqueue" / "counters.json"
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="refqueue.stores.shared_dir"):
        assert counts(store) == (ref.estimated_bytes, 1)
    assert str(path) in caplog.text and "recounted" in caplog.text
    assert json.loads(path.read_text()) == {"resident_bytes": ref.estimated_bytes, "sample_count": 1}
    path.write_bytes(content)
    other = put(store, "s1", 1)  # a put recounts too, then adds its own
    assert counts(store) == (ref.estimated_bytes + other.estimated_bytes, 2)
    path.write_bytes(content)
    assert store.scrub(ref) is True
    assert counts(store) == (other.estimated_bytes, 1)
    with pytest.raises(DuplicateSample):
        put(store, "s1")


def test_a_store_dropped_without_close_gives_its_lock_descriptor_back(tmp_path):
    # found by the fuzz suite: thousands of stores dropped without close() kept one
    # descriptor each, until select() in another test failed on a descriptor past 1024
    import gc

    before = len(os.listdir("/proc/self/fd"))
    for i in range(50):
        SharedDirFeatureStore(tmp_path / f"s{i}", fsync=False)
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= before
