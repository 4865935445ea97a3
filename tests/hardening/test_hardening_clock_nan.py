"""Found by ``crosshair diffbehavior`` (issue 12, CrossHair part).

A reclaim at a clock reading of NaN took back every lease (``nan >
deadline`` is false, so every entry looked due), where the model takes back
none (``deadline <= nan`` is false).  8456e91 did not have this (its heap
tested ``deadline <= now``); the commit-last rewrite of the heap (f11440c)
introduced it, and CrossHair found it before it shipped.  Older than that,
and still until this fix, a NaN deadline (a clock reading NaN at acquire)
was pushed into the heap, whose order NaN breaks.  Now due means ``deadline
<= now`` and a NaN deadline is never pushed.  Both tests fail on 838e9e9^;
the first also fails on 8456e91.
"""

from __future__ import annotations

import math

from refqueue._deadlines import DeadlineHeap


def test_a_clock_reading_nan_reclaims_nothing_and_a_nan_deadline_is_never_due():
    live = {"a": type("R", (), {"lease_id": 1, "deadline": 1.0})(),
            "b": type("R", (), {"lease_id": 2, "deadline": math.nan})()}
    heap = DeadlineHeap(live)
    heap.add((1.0, "a", 1))
    heap.add((math.nan, "b", 2))
    assert len(heap) == 1  # the NaN entry is never pushed
    assert heap.peek_expired(math.nan) is None  # on 838e9e9^: (1.0, 'a', 1)
    assert heap.peek_expired(5.0) == (1.0, "a", 1)


class SettableClock:
    """A clock that reads whatever the test set last (NaN included)."""

    def __init__(self, value: float) -> None:
        self.value = value

    def now(self) -> float:
        return self.value


def test_a_queue_whose_clock_reads_nan_reclaims_nothing(make_queue, stored):
    clock = SettableClock(0.0)
    queue = make_queue(clock=clock)
    queue.put(stored("s0"))
    lease = queue.acquire_nowait()  # deadline 10.0
    clock.value = math.nan
    assert queue.reclaim_expired() == 0 and queue.outstanding_count() == 1  # on 838e9e9^: 1 and 0
    clock.value = 20.0
    assert queue.reclaim_expired() == 1  # a finite reading again: the lease is due
    assert queue.ack(lease) is False
