"""The production queue's decisions, as small pure functions.

``SampleRefQueue`` makes its pause decision with ``next_paused`` (in
``_try_put_nowait``) and its reclaim decision with ``DeadlineHeap`` (in
``_reclaim_nowait``); ``reclaim_order`` replays that heap on a set of
leases, so that ``crosshair diffbehavior`` (``scripts/crosshair.sh``) can
compare both with the reference model's (``refqueue.model.decisions``),
which was written separately and shares no code with these.
"""

from __future__ import annotations

from refqueue._deadlines import DeadlineHeap

__all__ = ["next_paused", "reclaim_order"]


def next_paused(paused: bool, effective: int, high: int | None, low: int | None) -> bool:
    """The queue's pause flag after one blocking-put step (D4): a paused
    producer resumes once the effective residency is at or below ``low``; a
    running one pauses once it is at or above ``high``; no watermarks, no
    pause."""
    if high is None or low is None:
        return paused
    if paused:
        return effective > low
    return effective >= high


class _Leased:
    """What the heap reads of a live sample: its lease id and deadline."""

    __slots__ = ("lease_id", "deadline")

    def __init__(self, lease_id: int, deadline: float) -> None:
        self.lease_id = lease_id
        self.deadline = deadline


def reclaim_order(deadlines: dict[str, float], now: float) -> list[str]:
    """The sample ids ``reclaim_expired`` at ``now`` takes back, in its
    order, for leased samples with these deadlines: the queue's own
    ``DeadlineHeap``, drained as ``_reclaim_nowait`` drains it (each
    requeue makes the entry it was given stale)."""
    live = {sample_id: _Leased(i, deadline) for i, (sample_id, deadline) in enumerate(deadlines.items(), 1)}
    heap = DeadlineHeap(live)
    for sample_id, rec in live.items():
        entry = (rec.deadline, sample_id, rec.lease_id)
        heap.add(entry)
        heap.settle(entry, len(live))
    order = []
    while (expired := heap.peek_expired(now)) is not None:
        order.append(expired[1])
        del live[expired[1]]  # the requeue: the record is no longer leased
    return order
