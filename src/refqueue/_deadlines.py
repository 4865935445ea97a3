"""``DeadlineHeap``: the leases' deadlines, for a reclaim that never scans.

Entries are ``(deadline, sample_id, lease_id)`` tuples in a binary heap, so
expired leases come out in the order the model reclaims them: by deadline,
ties by sample id.  Deletion is lazy: an ack, fail, reclaim or dead-letter
leaves its entry in place, and an ``extend`` adds a new entry beside the old
one.  An entry is *current* when ``live[sample_id]`` (the owner's mapping of
live samples, whose records carry ``lease_id`` and ``deadline``) still has
that lease id and that deadline; every other entry is stale and is dropped
when met.

Adding is two steps, so that the owner's state change can commit between
them with nothing that can raise in the way: ``add`` pushes the entry
*before* the owner commits the lease (until then the entry is stale, and a
stale entry is harmless), and ``settle`` compacts *after* the commit (a
compaction keeps only current entries, so it must see the committed lease).
An exception at any point therefore leaves every live lease with its current
entry: a lease is never left without the entry that lets reclaim find it.
Likewise ``peek_expired`` does not remove the current entry it returns: the
owner's requeue makes it stale, and the next peek drops it.

Costs: ``add`` O(log n); ``peek_expired`` O(log n) per entry dropped, so a
reclaim of k expired leases is O(k log n) plus the stale entries it drops,
each of which was added once; an idle reclaim reads the top entry only.

Bound: stale entries are bounded by compaction.  Once the heap holds more
than ``threshold`` entries (at first ``SLACK``), ``settle`` rebuilds it from
its current entries and sets ``threshold = 2 * max(current, SLACK)``: O(n),
paid for by the >= n/2 adds since the last compaction (O(1) amortised each).
So the heap never holds more than ``max(2 * max(c, SLACK), live leases) + 1``
entries, ``c`` the live leases at the last compaction: repeated ``extend`` of
one lease keeps it at most ``2 * SLACK + 1``.  When the entry just added is
the only current one (one lease outstanding, the common case of a consumer
that acks each lease before taking the next), the rebuild is that entry
alone, with no scan.

NaN: a lease whose deadline is NaN (a clock that returned NaN) is never
due, as in the model (``deadline <= now`` is false), so its entry is never
pushed (a NaN would also break the heap's order); a reclaim at a NaN ``now``
finds nothing due.  ``refqueue._decisions.reclaim_order`` replays this heap
for ``crosshair diffbehavior`` against the model's ``reclaim_order``.

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
        # Invariant (between the owner's operations): every live lease has
        # exactly one current entry in _heap; len(_heap) <= _compact_above + 1
        # unless more leases than that are live.
        self._heap: list[Entry] = []
        self._live = live
        self._compact_above = SLACK

    def __len__(self) -> int:
        """Entries held, stale ones included."""
        return len(self._heap)

    def add(self, entry: Entry) -> None:
        """Push ``entry`` (``(deadline, sample_id, lease_id)``) before the
        owner commits that lease; it is stale until then.  A NaN deadline is
        never due: not pushed."""
        if entry[0] == entry[0]:
            heappush(self._heap, entry)

    def settle(self, entry: Entry, current: int) -> None:
        """After the owner committed ``entry``'s lease: compact if the heap
        grew past its threshold.  ``current`` is the number of live leases
        (the owner's outstanding count), ``entry`` among them."""
        if len(self._heap) > self._compact_above:
            if current == 1:
                self._heap = [entry] if entry[0] == entry[0] else []
            else:
                self.compact()
            self._compact_above = 2 * max(len(self._heap), SLACK)

    def peek_expired(self, now: float) -> Entry | None:
        """The earliest current entry with ``deadline <= now`` (ties by sample
        id), left in place, dropping the stale entries above it; None when no
        live lease has expired.  The owner's requeue makes it stale."""
        heap = self._heap
        live = self._live
        while heap:
            entry = heap[0]
            if not entry[0] <= now:  # not due (and nothing is due at a NaN now)
                return None
            rec = live.get(entry[1])
            if rec is not None and rec.lease_id == entry[2] and rec.deadline == entry[0]:
                return entry
            heappop(heap)
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
