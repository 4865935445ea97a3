"""Mutant: a deadline heap whose acquire settles the new entry before the lease count is updated.

The heap (lazy deletion, as ``refqueue._deadlines``) is compacted once its
stale entries pass ``SLACK``; when the entry just pushed belongs to the only
lease outstanding, the compaction keeps that entry alone, with no scan.  The
acquire pushes and settles its entry *before* it counts the new lease, so
with one other lease outstanding it reads a count of 1, takes the shortcut
and drops that other lease's entry: that lease is never reclaimed.  It takes
more than ``SLACK`` stale entries (leases acked or failed long before their
deadlines) and an acquire at the crossing made beside exactly one other lease.
"""

from heapq import heapify, heappop, heappush
from typing import Any

from conformance.mutants._base import BaseQueue, Lease, _Entry, _check_seconds, factory

SLACK = 1024  # stale entries tolerated before a compaction (the in-process queue's)


class DeadlineSettleBeforeCount(BaseQueue):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._heap: list[tuple[float, str, int]] = []  # (deadline, sample id, lease id), stale ones included
        self._leased = 0  # leases outstanding
        self._compact_above = SLACK

    def _push(self, entry: _Entry) -> tuple[float, str, int]:
        item = (entry.deadline, entry.ref.sample_id, entry.lease.lease_id)  # type: ignore[union-attr]
        if item[0] == item[0]:  # a NaN deadline is never due
            heappush(self._heap, item)
        return item

    def _current(self, item: tuple[float, str, int]) -> bool:
        entry = self._entries.get(item[1])
        return entry is not None and entry.lease is not None and entry.lease.lease_id == item[2] and entry.deadline == item[0]

    def _settle(self, item: tuple[float, str, int], current: int) -> None:
        if len(self._heap) > self._compact_above:
            if current == 1:  # the new entry is the only current one: keep it alone, no scan
                self._heap = [item]
            else:
                self._heap = [i for i in self._heap if self._current(i)]
                heapify(self._heap)
            self._compact_above = 2 * max(len(self._heap), SLACK)

    def _acquire_nowait(self) -> Lease | None:
        lease = super()._acquire_nowait()
        if lease is not None:
            item = self._push(self._entries[lease.ref.sample_id])
            self._settle(item, self._leased)  # the bug: the count does not include this lease yet
            self._leased += 1
        return lease

    def extend(self, lease: Lease, seconds: float | None = None) -> bool:
        with self._lock:
            self._check_lease("extend", lease)
            seconds = self._vt.seconds if seconds is None else _check_seconds("extend(seconds)", seconds)
            entry = self._live(lease)
            if entry is None:
                return False
            deadline = self._clock.now() + seconds
            if deadline != entry.deadline:
                entry.deadline = deadline
                self._settle(self._push(entry), self._leased)
            return True

    def _requeue(self, entry: _Entry) -> None:
        if self._max_deliveries is None or entry.deliveries < self._max_deliveries:
            self._leased -= 1  # (at the cap _finish counts it)
        super()._requeue(entry)

    def _finish(self, entry: _Entry, reason: str | None) -> None:
        super()._finish(entry, reason)  # the scrub first: one that raises changes nothing
        self._leased -= 1

    def _expired(self, now: float) -> list[_Entry]:
        hits = []
        while self._heap and self._heap[0][0] <= now:
            item = heappop(self._heap)
            if self._current(item):
                hits.append(self._entries[item[1]])
        return hits

    def reclaim_expired(self) -> int:
        with self._lock:
            hits = self._expired(self._clock.now())
            for k, entry in enumerate(hits):
                try:
                    self._requeue(entry)
                except BaseException:  # (a scrub that raised: the entries not reclaimed keep their heap items)
                    for left in hits[k:]:
                        self._push(left)
                    raise
            return len(hits)


make = factory(DeadlineSettleBeforeCount)
