"""The model's decisions as small pure functions, with contracts.

The actions in ``refqueue.model.actions`` make three decisions that a
backend must make identically: the producer's pause flag (the hysteresis of
D4 on the *effective* residency of D8), when a lease is due for reclaim and
in which order leases are reclaimed, and a lease's deadline.  Each one is a
function here, used by the actions, with its documented cases written as
PEP 316 docstring contracts (``pre:``/``post:``) that CrossHair checks
(``scripts/crosshair.sh``: ``crosshair check refqueue.model.decisions``), and
``crosshair diffbehavior`` compares ``next_paused`` and ``reclaim_order``
with the production queue's own (``refqueue._decisions``), which shares no
code with these.

Names are those of ``spec/SampleRefQueue.tla`` where it has them
(``effective`` residency, ``paused``, ``deadline``, ``now``).  Imports
neither torch nor threading.
"""

from __future__ import annotations

__all__ = ["effective_residency", "next_paused", "is_due", "reclaim_order", "lease_deadline_at"]


def effective_residency(resident_bytes: int, parked_bytes: int) -> int:
    """What the hysteresis compares with the watermarks (D8): the store's
    residency less the bytes of the refs parked in blocking puts (the
    stepping ref's own included), never below zero.

    pre: resident_bytes >= 0 and parked_bytes >= 0
    post: __return__ >= 0
    post: __return__ <= resident_bytes
    post: __return__ == resident_bytes - parked_bytes or (__return__ == 0 and parked_bytes >= resident_bytes)
    """
    return max(0, resident_bytes - parked_bytes)


def next_paused(paused: bool, effective: int, high: int | None, low: int | None) -> bool:
    """The pause flag after one producer step (D4): ``paused' = paused ?
    ~(effective <= low) : (effective >= high)``; never paused without
    watermarks.

    pre: effective >= 0
    pre: (high is None) == (low is None)
    pre: high is None or 0 <= low < high
    post: (high is not None and low is not None) or __return__ == paused
    post: implies(__return__ and not paused, high is not None and effective >= high)
    post: implies(paused and not __return__, low is not None and effective <= low)
    post: implies(high is not None and low < effective < high, __return__ == paused)
    post: implies(high is not None and effective >= high, __return__)
    post: implies(high is not None and effective <= low, not __return__)
    """
    if high is None or low is None:  # a config sets both or neither
        return paused
    if paused:
        return not effective <= low
    return effective >= high


def implies(a: bool, b: bool) -> bool:
    """Logical implication, for the contracts above."""
    return b or not a


def is_due(deadline: float, now: float) -> bool:
    """A lease is reclaimed once its deadline is reached: ``deadline <= now``
    (a lease is live until its deadline, exclusive of nothing after it).

    post: __return__ == (deadline <= now)
    post: implies(deadline < now, __return__)
    """
    return deadline <= now


def reclaim_order(deadlines: dict[str, float], now: float) -> list[str]:
    """The sample ids a reclaim at ``now`` takes back, in the model's order:
    every leased sample whose deadline is due, by deadline, ties by sample id.
    ``deadlines`` maps each leased sample's id to its lease's deadline.

    post: len(__return__) == len(set(__return__))
    post: set(__return__) == {s for s, d in deadlines.items() if d <= now}
    post: all(deadlines[a] <= deadlines[b] for a, b in zip(__return__, __return__[1:]))
    post: all(a < b for a, b in zip(__return__, __return__[1:]) if deadlines[a] == deadlines[b])
    """
    due = [(deadline, sample_id) for sample_id, deadline in deadlines.items() if is_due(deadline, now)]
    due.sort()
    return [sample_id for _, sample_id in due]


def lease_deadline_at(now: float, seconds: float) -> float:
    """The deadline of a lease granted (``acquire``, with the visibility
    timeout) or extended (``extend``) at ``now``: ``now + seconds``, counted
    from now, never from the old deadline.

    pre: seconds > 0
    pre: abs(now) < 1e300 and seconds < 1e300
    post: __return__ == now + seconds
    post: __return__ >= now
    post: not is_due(__return__, now) or now + seconds == now
    """
    return now + seconds
