"""Shorten a failing run by deleting steps while it still fails (delta debugging).

``shrink(items, replay)`` runs Zeller's ddmin over ``items`` (rules of a
lockstep example, actions of a walk): it tries the run without one chunk
of them, keeps any removal after which ``replay`` still fails, and refines
the chunks down to single items.  ``replay(items)`` runs them on a fresh
backend and returns the ``Failure`` or None; any divergence counts as
failing, and the shortest failing trace seen is returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from refqueue.conformance.harness import Failure

__all__ = ["shrink"]

T = TypeVar("T")


def shrink(items: Sequence[T], replay: Callable[[list[T]], Failure | None], failure: Failure, *, budget: int = 3000) -> Failure:
    """The shortest failing run found within ``budget`` replays (``failure`` if none is shorter)."""
    best = failure
    current = list(items)
    runs = 0
    chunks = 2
    while len(current) >= 2 and runs < budget:
        size = -(-len(current) // chunks)
        for start in range(0, len(current), size):
            if runs >= budget:
                break
            rest = current[:start] + current[start + size :]
            runs += 1
            found = replay(rest)
            if found is not None:
                if len(found.trace) <= len(best.trace):
                    best = found
                current = rest
                chunks = max(chunks - 1, 2)
                break
        else:
            if chunks >= len(current):
                break
            chunks = min(len(current), chunks * 2)
    return best
