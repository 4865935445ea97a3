"""Interesting situations: what a share of transitions does not say.

"100 % of the transitions" of a world that never holds two samples at once
says nothing about order.  So besides the share of transitions, the kit
reports which of these *situations* its walks reached.  Each is a predicate
over one transition of a world graph, ``(world, src node, action, arg, dst
node, value)``, defined once here; ``SITUATIONS`` lists them in the order the
certificate prints them, each with the capabilities it needs (a backend that
does not declare one cannot reach it, so it does not count against it).

``situations_of(world, edge, nodes)`` names the situations one transition is
in; ``Reach`` accumulates them over a run and answers reached/total.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from refqueue.model import actions as A
from refqueue.model.state import LEASED, LIVE, MAX_DELIVERIES_REASON
from refqueue.model.world import Node, World

__all__ = ["SITUATIONS", "Reach", "Situation", "situations_of"]


class Situation(NamedTuple):
    name: str
    what: str  # one line for the certificate
    needs: tuple[str, ...]  # capabilities a backend must declare to reach it
    holds: Callable[[World, Node, str, Any, Node, Any], bool]


def _live(node: Node) -> int:
    return sum(1 for r in node.state.recs if r.status in LIVE)


def _outstanding(node: Node) -> int:
    return sum(1 for r in node.state.recs if r.status == LEASED)


def _events(value: Any) -> tuple[str, ...]:
    return getattr(value, "events", ()) or ()


def _tie(world: World, src: Node, action: str, arg: Any, dst: Node, value: Any) -> bool:
    if action != "ReclaimExpired":
        return False
    due = [src.state.recs[i].deadline for i in A.expired(src.state)]
    return len(due) != len(set(due))


def _re_put(world: World, src: Node, action: str, arg: Any, dst: Node, value: Any) -> bool:
    if action != "TryPut" or not getattr(value, "enqueued", False):
        return False
    sample_id = src.producers[arg]
    rec = A.rec_of(dst.state, sample_id) if sample_id is not None else None
    return rec is not None and rec.incarnation >= 2


def _refused(kind: str) -> Callable[[World, Node, str, Any, Node, Any], bool]:
    def holds(world: World, src: Node, action: str, arg: Any, dst: Node, value: Any) -> bool:
        return action == "TryPut" and isinstance(value, A.Rejection) and value.kind == kind

    return holds


def _extend_expired(world: World, src: Node, action: str, arg: Any, dst: Node, value: Any) -> bool:
    if action != "Extend" or value is not True:
        return False
    consumer = arg[0] if isinstance(arg, tuple) else arg
    lease = src.consumers[consumer].lease
    deadline = A.lease_deadline(src.state, lease) if lease is not None else None
    return deadline is not None and deadline <= src.state.now


def _ack_expired(world: World, src: Node, action: str, arg: Any, dst: Node, value: Any) -> bool:
    if action != "Ack" or value is not True:
        return False
    lease = src.consumers[arg].lease
    deadline = A.lease_deadline(src.state, lease) if lease is not None else None
    return deadline is not None and deadline <= src.state.now


def _dead_at_cap(world: World, src: Node, action: str, arg: Any, dst: Node, value: Any) -> bool:
    added = dst.state.dead[len(src.state.dead) :]
    return any(reason == MAX_DELIVERIES_REASON for _, reason in added)


SITUATIONS: tuple[Situation, ...] = (
    Situation("two_live", "two samples live (pending or leased) at once", (), lambda w, s, a, g, d, v: _live(d) >= 2),
    Situation("three_live", "three samples live at once", (), lambda w, s, a, g, d, v: _live(d) >= 3),
    Situation("pending_two", "pending holding two refs or more", (), lambda w, s, a, g, d, v: len(d.state.pending) >= 2),
    Situation("two_leased", "two leases outstanding at once", (), lambda w, s, a, g, d, v: _outstanding(d) >= 2),
    Situation("reclaim_tie", "a reclaim of two leases due at the same instant", ("injected_clock",), _tie),
    Situation(
        "reclaim_nothing", "a reclaim attempted with nothing expired (returns 0)", (),
        lambda w, s, a, g, d, v: a == "ReclaimExpired" and v == 0,
    ),
    Situation("re_put", "a re-put of a completed id enqueued (a new incarnation)", (), _re_put),
    Situation("replay_refused", "a re-put refused within the dedup window", ("dedup_window",), _refused("replay")),
    Situation("put_after_close", "a put refused because the queue closed", (), _refused("closed")),
    Situation(
        "pause_with_work", "a pause while refs are pending or leased", ("abort_when",),
        lambda w, s, a, g, d, v: "pause" in _events(v) and (bool(s.state.pending) or _outstanding(s) > 0),
    ),
    Situation("resume", "a resume of the paused producer", ("abort_when",), lambda w, s, a, g, d, v: "resume" in _events(v)),
    Situation(
        "redelivery", "a ref delivered again (redelivery_count >= 1)", (),
        lambda w, s, a, g, d, v: a == "Acquire" and getattr(v, "redelivery_count", 0) >= 1,
    ),
    Situation(
        "dead_letter", "a lease dead-lettered by hand", ("dead_letter",),
        lambda w, s, a, g, d, v: a == "DeadLetter" and v is True,
    ),
    Situation(
        "stale_dead_letter", "dead_letter of a stale lease (False)", ("dead_letter", "injected_clock"),
        lambda w, s, a, g, d, v: a == "DeadLetter" and v is False,
    ),
    Situation("dead_at_cap", "a sample dead-lettered at max_deliveries", ("max_deliveries",), _dead_at_cap),
    Situation(
        "two_dead_letters", "two dead letters listed", ("max_deliveries",),
        lambda w, s, a, g, d, v: len(d.state.dead) >= 2,
    ),
    Situation(
        "stale_ack", "an ack of a stale lease (False)", ("injected_clock",),
        lambda w, s, a, g, d, v: a in ("Ack", "AckCopy") and v is False,
    ),
    Situation(
        "stale_fail", "a fail of a stale lease (False)", ("injected_clock",),
        lambda w, s, a, g, d, v: a in ("Fail", "FailCopy") and v is False,
    ),
    Situation("ack_expired", "an ack of a lease past its deadline, not yet reclaimed (True)", ("injected_clock",), _ack_expired),
    Situation(
        "extend_reclaimed", "an extend of a reclaimed lease (False)", ("extend", "injected_clock"),
        lambda w, s, a, g, d, v: a == "Extend" and v is False,
    ),
    Situation(
        "extend_other_amount", "an extend by another amount than the visibility timeout", ("extend",),
        lambda w, s, a, g, d, v: a == "Extend" and isinstance(g, tuple) and v is True,
    ),
    Situation("extend_expired", "an extend of a lease past its deadline, not yet reclaimed", ("extend", "injected_clock"), _extend_expired),
    Situation(
        "close_with_leased", "close with work leased", (),
        lambda w, s, a, g, d, v: a == "Close" and _outstanding(s) > 0,
    ),
    Situation(
        "close_with_pending", "close with refs pending", (),
        lambda w, s, a, g, d, v: a == "Close" and bool(s.state.pending),
    ),
    Situation("orphan_collected", "the data of a refused put collected (store.scrub)", (), lambda w, s, a, g, d, v: a == "CollectOrphan"),
    Situation("drained_stop", "a consumer stops on a drained queue", (), lambda w, s, a, g, d, v: a == "Stop"),
)  # fmt: skip

_BY_NAME = {s.name: s for s in SITUATIONS}


def situations_of(world: World, src: Node, action: str, arg: Any, dst: Node, value: Any) -> list[str]:
    """The names of the situations the transition ``src --action(arg)--> dst`` is in."""
    return [s.name for s in SITUATIONS if s.holds(world, src, action, arg, dst, value)]


@dataclass
class Reach:
    """The situations a run reached, against those its backend can reach."""

    capabilities: dict[str, bool]
    reached: set[str] = field(default_factory=set)

    def possible(self) -> list[str]:
        """Situations whose capabilities the backend declares, and any it reached anyway."""
        return [s.name for s in SITUATIONS if all(self.capabilities.get(c, True) for c in s.needs) or s.name in self.reached]

    def add(self, names: list[str]) -> None:
        self.reached.update(names)

    def counts(self) -> tuple[int, int]:
        possible = self.possible()
        return sum(1 for n in possible if n in self.reached), len(possible)

    def to_dict(self) -> dict[str, Any]:
        possible = self.possible()
        reached = [n for n in possible if n in self.reached]
        return {
            "reached": reached,
            "reached_count": len(reached),
            "total": len(possible),
            "share": f"{100 * len(reached) / len(possible):.1f} %" if possible else "n/a",
            "never_reached": [n for n in possible if n not in self.reached],
            "out_of_reach": {
                s.name: f"needs {', '.join(c for c in s.needs if not self.capabilities.get(c, True))}"
                for s in SITUATIONS
                if s.name not in possible
            },
            "what": {s.name: s.what for s in SITUATIONS},
        }
