"""A real full disk for the hardening tests: a small ``tmpfs`` mounted for one
test (the kernel answers ``ENOSPC`` exactly as a full shared mount does).

Mounting needs the privilege to mount (root, or ``CAP_SYS_ADMIN``): where it
is missing the test is skipped, saying so.  ``fill`` takes every free page
of the mount with a filler file; ``free`` removes it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(where: Path, size: str = "1m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` for the ``with`` block."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill a real disk ({done.stderr.strip() or done.returncode}); "
                    f"run as root to check the full-disk case")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path) -> Path:
    """Write a filler file until the disk answers ENOSPC; its path."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        chunk = b"\0" * 4096
        while True:
            try:
                os.write(fd, chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
        while True:  # the last partial page
            try:
                os.write(fd, b"\0")
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    finally:
        os.close(fd)
    return filler


def free(filler: Path) -> None:
    filler.unlink()
