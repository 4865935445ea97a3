"""Reading a published sample file of ``SharedDirFeatureStore``, distrusting it.

A file under ``samples/`` is shared by every process and machine that
mounts the directory, so anything may have happened to it: a disk error, a
partial copy, an editor, an attacker planting a FIFO, a folder or a symlink
under a sample's name.  Every reader here checks before it trusts:

* the name is opened without following a symlink and without blocking (a
  FIFO would block ``open`` for ever), and must be a regular file;
* the safetensors header length must fit in the file (and in safetensors'
  own 100 MB cap), the header must be UTF-8 JSON of bounded nesting holding
  an object, its metadata must hold the ref of the sample the file is
  named after;
* each feature's entry must name a known dtype, offsets inside the data and
  a shape whose size is exactly those bytes; the tensors must match the ref.

Anything else raises ``Damaged`` (a ``ValueError``) saying what is wrong;
``FileNotFoundError`` stays what it is (the sample is not there), and other
``OSError``s (an I/O error of the mount) propagate unchanged.
"""

from __future__ import annotations

import errno
import json
import math
import mmap
import os
import stat
from pathlib import Path
from typing import Any

import torch

from refqueue.refs import SampleRef
from refqueue.stores._tensors import first_mismatch

__all__ = ["Damaged", "SUFFIX", "WRITABLE", "read_ref", "map_sample", "open_regular"]

SUFFIX = ".safetensors"
# safetensors refuses headers past 100 MB; so do we (a length read from a damaged
# file must not make a reader allocate or read gigabytes).
_HEADER_MAX = 100_000_000
# safetensors dtype names -> torch dtypes: every dtype a SampleRef names
# (refqueue.refs.DTYPE_SIZES) that safetensors writes, so what put writes get
# reads back.  complex128 has no safetensors name: put refuses it (WRITABLE).
_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U64": torch.uint64, "U32": torch.uint32, "U16": torch.uint16, "U8": torch.uint8,
    "BOOL": torch.bool, "C64": torch.complex64,
}
# The torch dtypes a sample file can hold.
WRITABLE = frozenset(_DTYPES.values())
_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFDIR: "a folder", stat.S_IFSOCK: "a socket",
          stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}


class Damaged(ValueError):
    """A file under a sample's name that is not a sample this store wrote whole."""


def open_regular(path: Path) -> int:
    """A read-only descriptor of the regular file ``path``: never follows a
    symlink, never blocks on a FIFO; ``Damaged`` for anything but a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Damaged("it is a symbolic link, not a regular file") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise Damaged(f"it is {_KINDS.get(stat.S_IFMT(mode), 'not a regular file')}, not a regular file")
    return fd


def _header(fd: int, size: int) -> tuple[dict[str, Any], int]:
    """The safetensors header (a JSON object) and where the data starts."""
    if size < 8:
        raise Damaged(f"{size} bytes, shorter than a safetensors header")
    length = int.from_bytes(os.pread(fd, 8, 0), "little")
    if length > min(size - 8, _HEADER_MAX):
        raise Damaged(f"its header length {length} runs past the file ({size} bytes)")
    raw = os.pread(fd, length, 8)
    if len(raw) != length:
        raise Damaged(f"its header was cut short ({len(raw)} of {length} bytes)")
    try:
        header = json.loads(raw)
    except RecursionError:
        raise Damaged("its header nests JSON too deeply") from None
    except ValueError as exc:  # UnicodeDecodeError included
        raise Damaged(f"its header is not UTF-8 JSON ({exc})") from None
    if type(header) is not dict:
        raise Damaged(f"its header is a JSON {type(header).__name__}, not an object")
    return header, 8 + length


def _ref(header: dict[str, Any], sample_id: str) -> SampleRef:
    meta = header.get("__metadata__")
    text = meta.get("ref") if type(meta) is dict else None
    if type(text) is not str:
        raise Damaged("its header's metadata holds no ref")
    try:
        ref = SampleRef.from_json(text)
    except (TypeError, ValueError) as exc:
        raise Damaged(f"the ref in its header is not a ref ({exc})") from None
    if ref.sample_id != sample_id:
        raise Damaged(f"it holds the ref of sample {ref.sample_id!r}, not of {sample_id!r}")
    return ref


def read_ref(path: Path, sample_id: str) -> SampleRef:
    """The ref the file of ``sample_id`` at ``path`` was put under (its header only)."""
    fd = open_regular(path)
    try:
        header, _ = _header(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return _ref(header, sample_id)


def map_sample(path: Path, sample_id: str) -> tuple[dict[str, torch.Tensor], SampleRef]:
    """The file's tensors on a private (copy-on-write) mapping, in the ref's
    feature order, and its ref; ``Damaged`` unless every part checks out."""
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        header, start = _header(fd, size)
        ref = _ref(header, sample_id)
        mapped = mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    tensors = {name: _tensor(mapped, header.get(name), name, start, size - start) for name in ref.feature_specs}
    problem = first_mismatch(ref, list(tensors.items()))
    if problem is not None:
        raise Damaged(f"its tensors do not match its ref ({problem})")
    return tensors, ref


def _tensor(mapped: mmap.mmap, entry: object, name: str, start: int, data_size: int) -> torch.Tensor:
    if type(entry) is not dict:
        raise Damaged(f"its header has no entry for feature {name!r}")
    declared = entry.get("dtype")
    dtype = _DTYPES.get(declared) if isinstance(declared, str) else None
    if dtype is None:
        raise Damaged(f"feature {name!r} has dtype {entry.get('dtype')!r}, not one of {sorted(_DTYPES)}")
    offsets, shape = entry.get("data_offsets"), entry.get("shape")
    if not (type(offsets) is list and len(offsets) == 2 and all(type(o) is int for o in offsets)
            and 0 <= offsets[0] <= offsets[1] <= data_size):
        raise Damaged(f"feature {name!r} has data_offsets {offsets!r}, not two ints within the {data_size} data bytes")
    if not (type(shape) is list and len(shape) <= 64 and all(type(d) is int and d >= 0 for d in shape)):
        raise Damaged(f"feature {name!r} has shape {shape!r}, not a list of dimensions")
    begin, end = offsets
    itemsize = torch.empty((), dtype=dtype).element_size()
    count = math.prod(shape)
    if count * itemsize != end - begin:
        raise Damaged(f"feature {name!r} has shape {shape} of {count * itemsize} bytes in {end - begin} bytes of data")
    flat = torch.frombuffer(mapped, dtype=dtype, count=count, offset=start + begin) if count else torch.empty(0, dtype=dtype)
    return flat.reshape(shape)
