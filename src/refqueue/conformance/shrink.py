"""Shorten a failing run by deleting steps while it still fails (delta debugging).

``shrink_threads`` does the same for a failing threaded history: see there.

``shrink(items, replay)`` runs Zeller's ddmin over ``items`` (rules of a
lockstep example, actions of a walk): it tries the run without one chunk
of them, keeps any removal after which ``replay`` still fails, and refines
the chunks down to single items.  ``replay(items)`` runs them on a fresh
backend and returns the ``Failure`` or None; any divergence counts as
failing, and the shortest failing trace seen is returned.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from refqueue.conformance.harness import Failure

__all__ = ["ThreadsShrink", "shrink", "shrink_threads"]

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


# -- threaded histories -----------------------------------------------------------------------

Programs = dict[int, list[str]]


@dataclass
class ThreadsShrink:
    """What ``shrink_threads`` found: the smallest failing ``programs`` and the
    history (and verdict) a recording of them failed with; the size before
    and after; how many recordings it made and how long it took; and whether
    it stopped at its time budget before trying every reduction."""

    programs: Programs
    history: Any
    verdict: Any
    operations_before: int
    threads_before: int
    recordings: int = 0
    seconds: float = 0.0
    out_of_time: bool = False

    @property
    def operations(self) -> int:
        return len(self.history)

    @property
    def threads(self) -> int:
        return self.history.threads

    @property
    def shrunk(self) -> bool:
        return self.operations < self.operations_before or self.threads < self.threads_before


def shrink_threads(
    programs: Mapping[int, Sequence[str]],
    attempt: Callable[[Programs], tuple[Any, Any] | None],
    history: Any,
    verdict: Any,
    *,
    reruns: int = 3,
    seconds: float = 30.0,
) -> ThreadsShrink:
    """Reduce the failing per-thread ``programs`` of a threaded history.

    ``attempt(programs)`` records the programs once on a fresh backend and
    checks the history; it returns ``(history, verdict)`` when that recording
    fails, else None.  Threads are not deterministic, so a candidate counts as
    failing only when one of up to ``reruns`` recordings fails; a candidate
    that passed them all is dropped (it may still fail sometimes: the result
    is the smallest program seen to fail, not a proof that nothing smaller
    does).  First whole threads are removed, one at a time; then ddmin runs
    over all the calls of all the programs (a chunk of them removed at a
    time, the chunks refined down to single calls).  It stops after
    ``seconds``; what it found by then is kept.
    """
    if isinstance(reruns, bool) or not isinstance(reruns, int) or reruns < 1:
        raise ValueError(f"reruns must be an int >= 1 (recordings per candidate), got {reruns!r}")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < 3600:
        raise ValueError(f"seconds must be a number in (0, 3600) (the shrinking budget), got {seconds!r}")
    give_up = time.monotonic() + seconds
    started = time.perf_counter()
    best = ThreadsShrink(
        {t: list(p) for t, p in programs.items()}, history, verdict, len(history), history.threads
    )

    def fails(candidate: Programs) -> bool:
        if not any(candidate.values()):
            return False
        for _ in range(reruns):
            if time.monotonic() > give_up:
                best.out_of_time = True
                return False
            best.recordings += 1
            found = attempt(candidate)
            if found is not None:
                best.programs = candidate
                best.history, best.verdict = found
                return True
        return False

    # Fewer threads: drop each thread whose removal still fails.
    for t in sorted(best.programs, reverse=True):
        if len(best.programs) <= 1 or best.out_of_time:
            break
        fails({u: p for u, p in best.programs.items() if u != t})

    # Fewer calls: ddmin over (thread, call) positions of every program.
    def build(items: list[tuple[int, int]]) -> Programs:
        out: Programs = {t: [] for t in best.programs}
        for t, k in items:
            out[t].append(best_kinds[t][k])
        return {t: p for t, p in out.items() if p}

    best_kinds = {t: list(p) for t, p in best.programs.items()}
    current = [(t, k) for t, p in best_kinds.items() for k in range(len(p))]
    chunks = 2
    while len(current) >= 2 and not best.out_of_time:
        size = -(-len(current) // chunks)
        for start in range(0, len(current), size):
            rest = current[:start] + current[start + size :]
            if fails(build(rest)):
                current = rest
                chunks = max(chunks - 1, 2)
                break
            if best.out_of_time:
                break
        else:
            if chunks >= len(current):
                break
            chunks = min(len(current), chunks * 2)
    best.seconds = time.perf_counter() - started
    return best
