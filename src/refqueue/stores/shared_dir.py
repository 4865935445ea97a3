"""``SharedDirFeatureStore``: tensors as safetensors files in a directory that
many processes (on many machines, over a shared mount) use at once.

Layout under ``root``::

    samples/<sample_id>.safetensors   published samples (the ref's JSON in the header's metadata)
    tmp/<host>.<pid>.<hex>.part       puts being written (no sample id: the name stays short)
    .refqueue/lock                    fcntl lock file: every change of the counters holds it
    .refqueue/counters.json           {"resident_bytes": ..., "sample_count": ...}
    .refqueue/damaged/<name>.<hex>    what gc() or a scrub found damaged under samples/, moved aside

Design notes
------------
* **Atomic publish.**  ``put`` is ``stage`` (write the whole file under
  ``tmp/``, fsync it when ``fsync=True``) and then ``publish``: with the lock
  held, ``os.link`` of the temporary to its final name (which fails if the
  name exists: no put ever replaces data) and the counters; then the
  temporary's name is removed.  A reader sees a sample whole or not at all;
  a producer killed before ``publish`` leaves only a temporary, which
  ``gc`` removes once its writer is dead.
* **Counters shared by processes.**  ``counters.json`` is replaced (write a
  temporary of an unpredictable name, ``os.replace``; ``refqueue.stores._counters``)
  with the lock held, so ``health()`` reads it without the lock, in O(1),
  never scanning the directory, and always sees a whole version.  A put
  writes the new counters' temporary *before* it links the sample, so a
  disk with room for the sample but not for the counters fails the put with
  nothing published.  A process killed between the link and the rename
  leaves them short of the truth; ``gc`` recounts from the directory.  A
  counters file that is damaged (not JSON, negative, not ints) is recounted
  from the directory, with the lock, by whoever reads it, and a warning
  names it.
* **Files are distrusted** (``refqueue.stores._sample_files``): a reader
  never follows a symlink, never blocks on a FIFO, and checks the header,
  the ref and every tensor's bounds before it maps anything.  A damaged
  sample is the sample's fault, never the reader's: ``get`` raises
  ``RefMismatch`` (the loader dead-letters it), ``scrub`` of its ref moves
  it aside to ``.refqueue/damaged/`` (the ref's own file or not, nobody can
  use it), ``gc`` moves aside every damaged thing it finds and counts the
  rest, ``refs`` skips it.
* **Only a scrub removes data** (D2), from any process: ``scrub(ref)``
  removes the file if it holds that very ref, and updates the counters.
* **Each put is its own ref.**  The feature keys of a put's ref carry a
  token drawn for that put (``"<sample_id>@<token>/<feature>"``), so two
  puts of the same id with the same tensors make unequal refs.  A scrub is
  therefore a compare-and-delete of one put's data: a late or repeated
  scrub of an old incarnation (a queue's scrub intent collected after its
  committing client died, D9) never removes the data of a later put of the
  same id.
* **Memory-mapped gets.**  ``get`` maps the file copy-on-write and builds
  each tensor on the mapping (``torch.frombuffer``): no copy until the
  consumer asks for a device, a consumer that edits a feature edits its own
  pages (never the file, never a redelivery's data), and the tensors stay
  valid after the sample is scrubbed (an unlinked file lives while mapped).
* **Sample ids** are checked to be file names that cannot leave the
  directory: letters, digits, ``.``, ``_``, ``-``, not starting with ``.``,
  at most 200 characters.

Locking rule: ``_lock`` (a ``threading.Lock``) and then the lock file's
``fcntl.flock`` are taken together (threads of one process share the file
descriptor, which flock alone would not tell apart), never across tensor
I/O: a put writes its file before taking them.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import logging
import os
import re
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from refqueue._torch import require_safetensors

require_safetensors("SharedDirFeatureStore (it writes safetensors files)")

from safetensors import SafetensorError  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from refqueue.errors import RefMismatch, SampleMissing, StoreClosed
from refqueue.refs import FeatureAlgorithm, SampleRef
from refqueue.store import FeatureStore, StoreHandle, StoreHealth
from refqueue.stores._common import check_handle, check_ref, check_room, duplicate_sample, new_ref
from refqueue.stores._counters import Counters
from refqueue.stores._sample_files import SUFFIX as _SUFFIX
from refqueue.stores._sample_files import WRITABLE, Damaged, map_sample, read_ref
from refqueue.stores._tensors import resolve_device

__all__ = ["SharedDirFeatureStore", "Staged"]

logger = logging.getLogger(__name__)

_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}")
_PART = ".part"
# A temporary's name starts with its writer's host (at most 64 safe characters).
_HOST_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def check_sample_id(call: str, sample_id: object) -> str:
    """A sample id usable as a file name inside the store (no path escape)."""
    if not isinstance(sample_id, str):
        raise TypeError(f"{call}: sample_id must be a str, got {sample_id!r} ({type(sample_id).__name__})")
    if not _ID.fullmatch(sample_id):
        raise ValueError(
            f"{call}: sample_id {sample_id!r} is not a safe file name; use 1-200 letters, digits, '.', '_' "
            f"or '-', not starting with '.' (no '/', no '..': a sample id must not escape the store directory)"
        )
    return sample_id


class _NotPassed:
    """The value of a cap the caller did not pass (the default: no cap)."""

    def __repr__(self) -> str:
        return "<not passed>"


_NOT_PASSED: Any = _NotPassed()


@dataclass(frozen=True)
class Staged:
    """A put written to its temporary file and not yet published."""

    ref: SampleRef
    path: str


class SharedDirFeatureStore(FeatureStore):
    """Samples as safetensors files under ``root``, shared by every process
    that opens the same directory (with the same ``uri``).

    ``max_samples``/``max_bytes`` cap what is resident (``StoreFull`` at the
    publish that would pass them; not passed: no cap, the directory is
    bounded by the mount and the watermarks; both passed as ``None`` with no
    watermark is refused, as in the seed); ``high_watermark_bytes`` /
    ``low_watermark_bytes`` set the flags of ``health()`` (both or neither;
    ``low < high <= max_bytes``).  ``fsync=True`` (the default) makes a
    published sample survive a crash of the machine (the file and the
    directory are synced before the publish returns); ``False`` trusts the
    page cache (a crash of a process still never shows half a sample).
    ``uri`` defaults to ``file://<absolute root>``: give every process the
    same one.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        max_samples: int | None = _NOT_PASSED,
        max_bytes: int | None = _NOT_PASSED,
        high_watermark_bytes: int | None = None,
        low_watermark_bytes: int | None = None,
        *,
        uri: str | None = None,
        fsync: bool = True,
    ) -> None:
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"SharedDirFeatureStore(root) must be a path, got {root!r}; pass the shared directory")
        if os.fspath(root) == "":  # (Path("") is the working directory: an unset variable, most likely)
            raise ValueError(
                f"SharedDirFeatureStore(root) is empty ({root!r}), which would make the store in the working "
                f"directory; pass the shared directory's path (use '.' to mean this directory)"
            )
        if max_samples is None and max_bytes is None and high_watermark_bytes is None:
            # both caps turned off on purpose, and no watermark either: the seed refuses
            # that (a store that nothing bounds); the default (neither passed) is uncapped
            raise ValueError(
                "SharedDirFeatureStore(max_samples=None, max_bytes=None) turns off both caps and sets no "
                "watermark, so nothing bounds the directory; at least one of max_samples / max_bytes must be set "
                "(or pass the watermarks, or leave both caps out for the shared directory's default: no cap, "
                "bounded by the mount)"
            )
        max_samples = None if max_samples is _NOT_PASSED else max_samples
        max_bytes = None if max_bytes is _NOT_PASSED else max_bytes
        for name, value in (("max_samples", max_samples), ("max_bytes", max_bytes),
                            ("high_watermark_bytes", high_watermark_bytes), ("low_watermark_bytes", low_watermark_bytes)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"SharedDirFeatureStore({name}={value!r}) must be an int or None; pass a count")
            if value is not None and value < (1 if name.startswith("max") else 0):
                raise ValueError(f"SharedDirFeatureStore({name}={value!r}) is out of range; pass a positive count or None")
        if (high_watermark_bytes is None) != (low_watermark_bytes is None):
            raise ValueError(
                f"SharedDirFeatureStore: pass both watermarks or neither (high={high_watermark_bytes!r}, "
                f"low={low_watermark_bytes!r})"
            )
        if high_watermark_bytes is not None:
            if not low_watermark_bytes < high_watermark_bytes:  # type: ignore[operator]
                raise ValueError(
                    f"SharedDirFeatureStore: low_watermark_bytes={low_watermark_bytes} must be strictly less than "
                    f"high_watermark_bytes={high_watermark_bytes}; lower low or raise high so the hysteresis band "
                    f"is not empty"
                )
            if max_bytes is not None and high_watermark_bytes > max_bytes:
                raise ValueError(
                    f"SharedDirFeatureStore: high_watermark_bytes={high_watermark_bytes} exceeds max_bytes={max_bytes}"
                )
        if not isinstance(fsync, bool):
            raise TypeError(f"SharedDirFeatureStore(fsync={fsync!r}) must be a bool")
        self._root = Path(root).absolute()
        if uri is None:
            uri = f"file://{self._root}"
        elif not isinstance(uri, str) or "://" not in uri:
            raise ValueError(f"SharedDirFeatureStore(uri={uri!r}) must be a str like 'file:///mnt/features'")
        self._uri = uri
        self._max_samples, self._max_bytes = max_samples, max_bytes
        self._high, self._low = high_watermark_bytes, low_watermark_bytes
        self._fsync = fsync
        self._samples = self._root / "samples"
        self._tmp = self._root / "tmp"
        meta = self._root / ".refqueue"
        for folder in (self._samples, self._tmp, meta):
            folder.mkdir(parents=True, exist_ok=True)
        self._damaged = meta / "damaged"
        self._counters = Counters(meta / "counters.json")
        self._lock = threading.Lock()
        self._lock_fd = os.open(meta / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        # a store dropped without close() gives its descriptor back when collected
        self._close_fd = weakref.finalize(self, os.close, self._lock_fd)
        # set when this process could not update the counters after a scrub
        # (a full disk): the next change under the lock recounts first
        self._recount_due = False
        with self._locked():
            if not os.path.lexists(self._counters.path):
                self._counters.write(0, 0)
        self._host = _HOST_UNSAFE.sub("_", socket.gethostname())[:64] or "host"
        self._handles: dict[int, str] = {}
        self._handle_ids = itertools.count(1)
        self._closed = False

    # -- configuration --------------------------------------------------------------

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def root(self) -> Path:
        return self._root

    @property
    def capacity_bytes(self) -> int | None:
        return self._max_bytes

    @property
    def high_watermark_bytes(self) -> int | None:
        return self._high

    @property
    def low_watermark_bytes(self) -> int | None:
        return self._low

    def __repr__(self) -> str:
        return f"SharedDirFeatureStore({str(self._root)!r}, uri={self._uri!r})"

    # -- producers --------------------------------------------------------------------

    def put(
        self,
        sample_id: str,
        tensors: Mapping[str, Any],
        *,
        run_id: str,
        algorithm: FeatureAlgorithm | str,
        schema_version: int,
        target_model_version: str | int,
        draft_weight_version: str | int,
        num_tokens: int,
    ) -> SampleRef:
        """Write the sample and publish it (``stage`` then ``publish``); its ref."""
        staged = self.stage(
            sample_id, tensors, run_id=run_id, algorithm=algorithm, schema_version=schema_version,
            target_model_version=target_model_version, draft_weight_version=draft_weight_version,
            num_tokens=num_tokens,
        )
        return self.publish(staged)

    def stage(
        self,
        sample_id: str,
        tensors: Mapping[str, Any],
        *,
        run_id: str,
        algorithm: FeatureAlgorithm | str,
        schema_version: int,
        target_model_version: str | int,
        draft_weight_version: str | int,
        num_tokens: int,
    ) -> Staged:
        """Write the sample to a temporary file (invisible to ``get``); no lock held."""
        self._check_open("put")
        call = f"SharedDirFeatureStore.put({sample_id!r})"
        check_sample_id(call, sample_id)
        fields = dict(
            run_id=run_id, algorithm=algorithm, schema_version=schema_version, num_tokens=num_tokens,
            target_model_version=target_model_version, draft_weight_version=draft_weight_version,
        )
        ref, pairs = new_ref(call, self._uri, sample_id, tensors, fields, key_prefix=f"{sample_id}@{uuid.uuid4().hex[:16]}")
        for name, tensor in pairs:
            if tensor.dtype not in WRITABLE:  # (complex128: a ref names it, safetensors cannot write it)
                raise ValueError(
                    f"{call}: feature {name!r} has dtype {tensor.dtype}, which a safetensors file cannot hold; "
                    f"convert it (complex128 to torch.complex64) or put it in a LocalFeatureStore"
                )
        if os.path.lexists(self._final(sample_id)):
            raise duplicate_sample(call, sample_id, self._uri)
        path = self._tmp / f"{self._host}.{os.getpid()}.{uuid.uuid4().hex}{_PART}"
        try:
            save_file({name: _cpu_contiguous(t) for name, t in pairs}, str(path), metadata={"ref": ref.to_json()})
            if self._fsync:
                _fsync_file(path)
        except (OSError, SafetensorError) as exc:
            with contextlib.suppress(OSError):
                path.unlink()
            raise OSError(
                getattr(exc, "errno", None) or 0,
                f"{call}: cannot write the sample under {str(self._tmp)!r} ({exc}); nothing was published; "
                f"free space on the store's mount (or fix its permissions) and put again",
            ) from exc
        except BaseException:
            with contextlib.suppress(OSError):
                path.unlink()
            raise
        return Staged(ref, str(path))

    def publish(self, staged: Staged) -> SampleRef:
        """Make a staged sample visible, atomically; ``DuplicateSample`` if data
        of that id is present, ``StoreFull`` past a cap (the temporary is removed)."""
        if not isinstance(staged, Staged):
            raise TypeError(f"SharedDirFeatureStore.publish needs what stage() returned, got {type(staged).__name__}")
        ref, part = staged.ref, Path(staged.path)
        call = f"SharedDirFeatureStore.put({ref.sample_id!r})"
        try:
            self._check_open("put")
            with self._locked():
                resident, count = self._locked_counters()
                nbytes = ref.estimated_bytes
                check_room(call, nbytes, resident, count, self._max_bytes, self._max_samples)
                # the counters first: a disk without room for them fails the put here,
                # before anything is published
                try:
                    counters = self._counters.stage(resident + nbytes, count + 1)
                except OSError as exc:
                    raise OSError(
                        exc.errno, f"{call}: cannot update the counters ({exc.strerror}); nothing was published; "
                        f"free space on {str(self._root)!r} and put again"
                    ) from exc
                final = self._final(ref.sample_id)
                try:
                    os.link(part, final)  # never replaces: fails if present
                except FileExistsError:
                    self._counters.discard(counters)
                    raise duplicate_sample(call, ref.sample_id, self._uri) from None
                except BaseException:
                    self._counters.discard(counters)
                    raise
                try:
                    self._counters.commit(counters)
                except BaseException:
                    final.unlink()  # unpublish: the put fails whole
                    self._counters.discard(counters)
                    raise
            if self._fsync:
                _fsync_dir(self._samples)
        finally:
            with contextlib.suppress(OSError):
                part.unlink()
        return ref

    # -- consumers --------------------------------------------------------------------

    def get(self, ref: SampleRef, device: Any = None) -> tuple[dict[str, torch.Tensor], StoreHandle]:
        """The sample's tensors, memory-mapped copy-on-write (``device`` None or
        cpu), or copied to ``device``; and a handle to release."""
        self._check_open("get")
        self._check_ref("get", ref)
        target = None if device is None else resolve_device("SharedDirFeatureStore.get(device)", device)
        path = self._final(ref.sample_id)
        try:
            tensors, stored = map_sample(path, ref.sample_id)
        except FileNotFoundError:
            raise SampleMissing(
                f"SharedDirFeatureStore.get({ref.sample_id!r}): its data is not in {self._uri!r} (never "
                f"published, or scrubbed after its ack or dead-lettering); a stale lease holder should drop it"
            ) from None
        except Damaged as exc:
            raise RefMismatch(
                f"SharedDirFeatureStore.get({ref.sample_id!r}): {path} is damaged ({exc}); the sample cannot be "
                f"served: dead-letter it (the loader does), and its scrub moves the file to {str(self._damaged)!r}"
            ) from None
        if stored != ref:
            raise RefMismatch(
                f"SharedDirFeatureStore.get({ref.sample_id!r}): the resident data was put under another ref; "
                f"get it with the ref its put returned"
            )
        if target is not None and target.type != "cpu":
            tensors = {name: t.to(target) for name, t in tensors.items()}
        with self._lock:
            handle = StoreHandle(self._uri, ref.sample_id, next(self._handle_ids))
            self._handles[handle.handle_id] = ref.sample_id
        return tensors, handle

    def release(self, handle: StoreHandle) -> None:
        """End the holder's use (idempotent; never scrubs)."""
        self._check_open("release")
        check_handle("SharedDirFeatureStore", handle, self._uri)
        with self._lock:
            self._handles.pop(handle.handle_id, None)

    # -- the queue's calls ------------------------------------------------------------

    def scrub(self, ref: SampleRef) -> bool:
        """Remove the data published under ``ref`` (from any process); True if
        there was some.  A damaged file under the ref's name is moved aside
        to ``.refqueue/damaged/`` (True): nobody can use it, and whose put it
        was cannot be read from it."""
        self._check_open("scrub")
        self._check_ref("scrub", ref)
        path = self._final(ref.sample_id)
        with self._locked():
            resident, count = self._locked_counters()
            try:
                stored = read_ref(path, ref.sample_id)
            except FileNotFoundError:
                return False
            except Damaged as exc:
                self._quarantine(path, exc)
            else:
                if stored != ref:
                    return False
                path.unlink()
            self._update_after_removal(max(0, resident - ref.estimated_bytes), max(0, count - 1))
        return True

    def refs(self) -> list[SampleRef]:
        """The refs of every published sample, by sample id (one header read
        each): what an operator puts again after a queue lost its state.  A
        file that is damaged or unreadable is skipped (with a warning)."""
        self._check_open("refs")
        out = []
        for path in sorted(self._samples.glob(f"*{_SUFFIX}")):
            try:
                out.append(read_ref(path, path.name[: -len(_SUFFIX)]))
            except FileNotFoundError:
                continue
            except (Damaged, OSError) as exc:
                logger.warning("SharedDirFeatureStore.refs: skipped %s: %s", path, exc)
        return out

    def health(self) -> StoreHealth:
        """Occupancy from the shared counters: one small file read, no lock, no
        scan (a damaged counters file is recounted, with the lock, first)."""
        if self._closed:
            resident, count = 0, 0
        else:
            counters = self._counters.read()
            if isinstance(counters, str):
                with self._locked():
                    resident, count = self._locked_counters()
            else:
                resident, count = counters
        return StoreHealth.of_counters(
            resident, count, capacity_bytes=self._max_bytes, high_watermark_bytes=self._high,
            low_watermark_bytes=self._low,
        )

    def gc(self, *, orphan_age: float = 3600.0) -> int:
        """Remove what crashed producers left: temporaries of dead writers on
        this host, and of other hosts once older than ``orphan_age`` seconds;
        move aside (to ``.refqueue/damaged/``) whatever under ``samples/`` is
        not a sample file this store wrote whole (a damaged file, a FIFO, a
        folder, a symlink); sweep this process's handles whose sample is
        gone; recount the counters from the directory.  A file it cannot
        read (an I/O error) is left where it is, uncounted, with a warning.
        Returns how many things were removed or moved aside."""
        self._check_open("gc")
        removed = 0
        with self._locked():
            for part in self._tmp.glob(f"*{_PART}"):
                host, pid = _writer(part.name)
                dead = False
                if host == self._host:
                    dead = pid is not None and not _alive(pid)
                else:
                    with contextlib.suppress(FileNotFoundError):
                        dead = time.time() - part.lstat().st_mtime > orphan_age
                if dead:
                    try:
                        part.unlink()
                        removed += 1
                    except FileNotFoundError:
                        pass
                    except OSError as exc:  # not a file this store writes (a folder planted there)
                        logger.warning("SharedDirFeatureStore.gc: cannot remove %s (%s); left in place", part, exc)
            resident, count, moved = self._recount()
            removed += moved
            self._counters.write(resident, count)
            self._recount_due = False
            gone = [h for h, sample_id in self._handles.items() if not os.path.lexists(self._final(sample_id))]
            for h in gone:
                del self._handles[h]
        return removed + len(gone)

    def close(self) -> None:
        """This process stops using the store (the files stay: they are shared)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._handles.clear()
                self._close_fd()

    # -- helpers ----------------------------------------------------------------------

    def _final(self, sample_id: str) -> Path:
        return self._samples / f"{sample_id}{_SUFFIX}"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _locked_counters(self) -> tuple[int, int]:
        """The counters (lock held); recounted from the directory, and the file
        rewritten, when it is damaged or this process left it stale."""
        counters = self._counters.read()
        if isinstance(counters, str) or self._recount_due:
            if isinstance(counters, str):
                logger.warning("SharedDirFeatureStore: %s is damaged (%s); recounted from %s",
                               self._counters.path, counters, self._samples)
            resident, count, _ = self._recount()
            self._counters.write(resident, count)
            self._recount_due = False
            return resident, count
        return counters

    def _recount(self) -> tuple[int, int, int]:
        """(resident bytes, samples, things moved aside) from ``samples/`` (lock held)."""
        resident = count = moved = 0
        for path in self._samples.glob(f"*{_SUFFIX}"):
            try:
                resident += read_ref(path, path.name[: -len(_SUFFIX)]).estimated_bytes
                count += 1
            except FileNotFoundError:
                continue
            except Damaged as exc:
                moved += self._quarantine(path, exc)
            except OSError as exc:
                logger.warning("SharedDirFeatureStore: cannot read %s (%s); left in place, not counted", path, exc)
        return resident, count, moved

    def _quarantine(self, path: Path, why: Exception) -> int:
        """Move ``path`` (damaged) to ``.refqueue/damaged/``; 1 if moved (lock held)."""
        self._damaged.mkdir(exist_ok=True)
        target = self._damaged / f"{path.name}.{uuid.uuid4().hex[:12]}"
        try:
            os.rename(path, target)
        except FileNotFoundError:
            return 0
        logger.warning("SharedDirFeatureStore: %s is damaged (%s); moved to %s", path, why, target)
        return 1

    def _update_after_removal(self, resident: int, count: int) -> None:
        """Write the counters after data was removed (lock held).  The data is
        gone whatever happens here: if the disk cannot take the counters, they
        stay too high (backpressure errs on the safe side), a warning says so,
        and this process's next change recounts first (``gc()`` in any)."""
        try:
            self._counters.write(resident, count)
        except OSError as exc:
            self._recount_due = True
            logger.warning("SharedDirFeatureStore: could not update %s after removing data (%s); it reads "
                           "high until the next change recounts (or gc())", self._counters.path, exc)

    def _check_open(self, call: str) -> None:
        if self._closed:
            raise StoreClosed(
                f"SharedDirFeatureStore {self._uri!r} is closed in this process; {call} needs an open store, "
                f"open the directory again"
            )

    def _check_ref(self, call: str, ref: object) -> None:
        ref = check_ref("SharedDirFeatureStore", call, ref, self._uri)
        check_sample_id(f"SharedDirFeatureStore.{call}", ref.sample_id)


def _cpu_contiguous(tensor: torch.Tensor) -> torch.Tensor:
    tensor = tensor.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    return tensor.contiguous()


def _writer(name: str) -> tuple[str, int | None]:
    """(host, pid) of a temporary's writer, from its name."""
    host, _, rest = name.partition(".")
    pid, _, _ = rest.partition(".")
    return host, int(pid) if pid.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
