"""The counters file of ``SharedDirFeatureStore``: ``.refqueue/counters.json``,
``{"resident_bytes": int, "sample_count": int}``, shared by every process.

Design notes
------------
* **Read without trust.**  ``read`` opens the file without following a
  symlink or blocking on a FIFO, reads at most 4 KiB, and accepts only an
  object of exactly two ints (not bools) in ``[0, 2**63 - 1]``; anything else
  (not JSON, nested too deeply, negative, a float, missing) answers *why* it
  is damaged, never raises: the store then recounts from its directory.
* **Replace in two steps.**  ``stage`` writes the new counters to a
  temporary of an unpredictable name (``O_EXCL | O_NOFOLLOW``: a planted
  file or symlink is never written through) and ``commit`` renames it over
  the file.  A writer can therefore do everything that needs disk space
  *before* the change it counts (a put stages the counters, then links
  the sample, then commits): a full disk fails the call with nothing
  changed.  Readers see the old or the new file whole.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
from pathlib import Path

from refqueue.refs import MAX_INT

__all__ = ["Counters"]

_READ_MAX = 4096
_KEYS = ("resident_bytes", "sample_count")


class Counters:
    """The counters file at ``path`` (its folder holds the temporaries)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> tuple[int, int] | str:
        """``(resident_bytes, sample_count)``, or why the file cannot be trusted."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return "it is missing"
        except OSError as exc:
            return "it is a symbolic link" if exc.errno == errno.ELOOP else f"it cannot be read ({exc.strerror})"
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return "it is not a regular file"
            raw = os.read(fd, _READ_MAX + 1)
        finally:
            os.close(fd)
        if len(raw) > _READ_MAX:
            return f"it is longer than {_READ_MAX} bytes"
        try:
            data = json.loads(raw)
        except RecursionError:
            return "it nests JSON too deeply"
        except ValueError as exc:
            return f"it is not UTF-8 JSON ({exc})"
        if type(data) is not dict or sorted(data) != sorted(_KEYS):
            return f"it is not an object of exactly {list(_KEYS)}"
        values = tuple(data[key] for key in _KEYS)
        if not all(type(v) is int and 0 <= v <= MAX_INT for v in values):
            return f"its counts {list(values)!r} are not ints in [0, {MAX_INT}]"
        return values

    def stage(self, resident: int, count: int) -> Path:
        """Write the new counters to a fresh temporary beside the file; its path.
        Raises ``OSError`` (e.g. ``ENOSPC``) with no temporary left behind."""
        tmp = self.path.with_name(f"counters.{secrets.token_hex(8)}.tmp")
        data = json.dumps({"resident_bytes": resident, "sample_count": count}).encode()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        os.close(fd)
        return tmp

    def commit(self, tmp: Path) -> None:
        """Rename the staged temporary over the counters file (atomic for readers)."""
        os.replace(tmp, self.path)

    @staticmethod
    def discard(tmp: Path) -> None:
        with contextlib.suppress(OSError):
            tmp.unlink()

    def write(self, resident: int, count: int) -> None:
        """``stage`` then ``commit``."""
        tmp = self.stage(resident, count)
        try:
            self.commit(tmp)
        except BaseException:
            self.discard(tmp)
            raise
