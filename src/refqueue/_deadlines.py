"""``DeadlineHeap``: the leases' deadlines, for a reclaim that never scans.

Entries are ``(deadline, sample_id, lease_id)`` tuples in a binary heap, so
expired leases pop in the order the model reclaims them: by deadline, ties by
sample id.  Deletion is lazy: an ack, fail or dead-letter leaves its entry in
place, and an ``extend`` pushes a new entry beside the old one.  An entry is
*current* when ``live[sample_id]`` (the owner's mapping of live samples,
whose records carry ``lease_id`` and ``deadline``) still has that lease id and
that deadline; every other entry is stale and is dropped when met.

Costs: ``push`` O(log n); ``pop_expired`` O(log n) per entry popped, so a
reclaim of k expired leases is O(k log n) plus the stale entries it drops,
each of which was pushed once; an idle reclaim reads the top entry only.
Stale entries are bounded by compaction: once the heap holds more stale
entries than ``max(current, SLACK)``, it is rebuilt from its current entries,
in O(n) paid for by the >= n/2 pushes since the last compaction (O(1)
amortised each).  When the entry just pushed is the only current one (one
lease outstanding, the common case of a consumer that acks each lease before
taking the next), the rebuild is that entry alone, with no scan.

Not thread-safe by itself: the owning queue calls it with its lock held.
"""

from __future__ import annotations

from collections.abc import Mapping
from heapq import heapify, heappop, heappush
from typing import Any

__all__ = ["DeadlineHeap", "Entry", "SLACK"]

Entry = tuple[float, str, int]  # (deadline, sample_id, lease_id)

# Stale entries tolerated (beyond as many as there are current ones) before a compaction.
SLACK = 1024


class DeadlineHeap:
    """A min-heap of lease deadlines with lazy deletion and compaction."""

    __slots__ = ("_heap", "_live", "_compact_above")

    def __init__(self, live: Mapping[str, Any]) -> None:
        # Invariant: every live lease has exactly one current entry in _heap.
        self._heap: list[Entry] = []
        self._live = live
        self._compact_above = SLACK

    def __len__(self) -> int:
        """Entries held, stale ones included."""
        return len(self._heap)

    def push(self, deadline: float, sample_id: str, lease_id: int, current: int) -> None:
        """Record that lease ``lease_id`` of ``sample_id`` now expires at
        ``deadline``; ``current`` is the number of live leases counting this
        one (the owner's outstanding count), used to size compaction."""
        heap = self._heap
        entry = (deadline, sample_id, lease_id)
        heappush(heap, entry)
        if len(heap) > self._compact_above:
            if current == 1:
                heap = self._heap = [entry]
            else:
                self.compact()
                heap = self._heap
            self._compact_above = 2 * max(len(heap), SLACK)

    def restore(self, entry: Entry) -> None:
        """Put back an entry ``pop_expired`` returned (its reclaim was rejected)."""
        heappush(self._heap, entry)

    def pop_expired(self, now: float) -> Entry | None:
        """Remove and return the earliest current entry with ``deadline <= now``
        (ties by sample id), dropping the stale entries met on the way; None
        when no live lease has expired."""
        heap = self._heap
        live = self._live
        while heap and heap[0][0] <= now:
            entry = heappop(heap)
            rec = live.get(entry[1])
            if rec is not None and rec.lease_id == entry[2] and rec.deadline == entry[0]:
                return entry
        return None

    def compact(self) -> None:
        """Drop every stale entry (O(n))."""
        live = self._live
        heap = [
            e
            for e in self._heap
            if (rec := live.get(e[1])) is not None and rec.lease_id == e[2] and rec.deadline == e[0]
        ]
        heapify(heap)
        self._heap = heap
