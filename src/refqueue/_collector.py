"""The cyclic garbage collector paused around a long pure computation.

The explorer and the trace checker build millions of small tuples and keep
most of them (tables, nodes, replayed states); each young-generation
collection walks them again for nothing.  They make no reference cycles that
need collecting while they run, so the collector is paused for the duration
and set back as the caller had it (a caller that had it off keeps it off).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
