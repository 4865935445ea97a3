"""What a history says about each sample and lease: the facts the checker's
rules read (``refqueue.torture.checker``), derived once.

* a sample's **put committed** when a ``put`` answered, when a retried put
  answered ``DuplicateSample``/``ReplayedSample`` (the earlier attempt
  committed), or when any acquire delivered it;
* a lease's **ack committed** when an ``ack`` of it answered True, or when a
  ``lease_state`` of it answered ``"acked"`` (the reply of an ack was lost);
  an ack with no answer (its process died in it, or it raised and nothing
  said where its lease stood) is **uncertain**: it may have committed;
* a sample was **dead-lettered** when the end of the run lists it in
  ``dead_letters()``;
* a lease's **issue** is the acquire that returned it (``return_ns``).

Processes ``nemesis`` and ``supervisor`` make no calls on the queue; the
``final`` process is a client like the others.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from refqueue.torture.history import ERROR, OK, History, Op

__all__ = ["Facts", "SampleFacts", "derive"]

_DUPLICATES = ("DuplicateSample", "ReplayedSample")
_NOT_CLIENTS = ("nemesis", "supervisor")


@dataclass
class SampleFacts:
    sample: str
    store_put: Op | None = None
    checksum: str | None = None
    bytes: int = 0
    puts: list[Op] = field(default_factory=list)
    put_committed: bool = False
    leases: list[Op] = field(default_factory=list)  # acquires that returned a lease of it
    gets: list[Op] = field(default_factory=list)
    acks: list[Op] = field(default_factory=list)  # ack ops (every answer)
    committed_acks: dict[tuple[str, int], Op] = field(default_factory=dict)  # lease -> the op that shows it
    uncertain_acks: list[Op] = field(default_factory=list)  # acks with no answer, not known to have committed
    scrubs: list[Op] = field(default_factory=list)
    dead: bool = False


@dataclass
class Facts:
    samples: dict[str, SampleFacts]
    leases: dict[tuple[str, int], list[Op]]  # (epoch, lease_id) -> the acquires that returned it
    faults: list[Op]  # the nemesis's ops
    exits: dict[str, Op]  # process -> its exit op (supervisor)
    final: dict[str, Op]  # the final process's last op of each call
    final_ops: list[Op]


def lease_key(args_or_result: dict) -> tuple[str, int]:
    return (args_or_result["epoch"], args_or_result["lease_id"])


def derive(history: History) -> Facts:
    samples: dict[str, SampleFacts] = {}
    leases: dict[tuple[str, int], list[Op]] = defaultdict(list)
    faults, exits, final, final_ops = [], {}, {}, []

    def of(sample: str) -> SampleFacts:
        facts = samples.get(sample)
        if facts is None:
            facts = samples[sample] = SampleFacts(sample)
        return facts

    for op in history:
        if op.process == "nemesis":
            faults.append(op)
            continue
        if op.process == "supervisor":
            if op.call == "exit":
                exits[op.args["process"]] = op
            continue
        if op.process == "final":
            final[op.call] = op
            final_ops.append(op)
        call = op.call
        if call == "store.put":
            facts = of(op.args["sample"])
            facts.store_put, facts.checksum = op, op.args.get("checksum")
            if op.outcome == OK:
                facts.bytes = op.result.get("bytes", 0)
        elif call == "put":
            facts = of(op.args["sample"])
            facts.puts.append(op)
            if op.outcome == OK or (op.outcome == ERROR and op.error in _DUPLICATES and op.args.get("attempt")):
                facts.put_committed = True
        elif call == "acquire" and op.outcome == OK and op.result:
            facts = of(op.result["sample"])
            facts.leases.append(op)
            facts.put_committed = True
            leases[lease_key(op.result)].append(op)
        elif call == "get":
            of(op.args["sample"]).gets.append(op)
        elif call == "ack":
            facts = of(op.args["sample"])
            facts.acks.append(op)
            if op.outcome == OK and op.result is True:
                facts.committed_acks.setdefault(lease_key(op.args), op)
        elif call == "lease_state" and op.outcome == OK and op.result == "acked":
            of(op.args["sample"]).committed_acks.setdefault(lease_key(op.args), op)
        elif call == "store.scrub":
            of(op.args["sample"]).scrubs.append(op)
    dead = final.get("dead_letters")
    if dead is not None and dead.outcome == OK:
        for sample in dead.result:
            of(sample).dead = True
    for facts in samples.values():
        facts.uncertain_acks = [op for op in facts.acks if op.outcome != OK
                                and lease_key(op.args) not in facts.committed_acks]
    return Facts(samples, dict(leases), faults, exits, final, final_ops)
