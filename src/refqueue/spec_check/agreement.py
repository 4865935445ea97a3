"""Agreement: the TLA+ spec and the Python model have the same state graph.

At the same bounds, TLC's reachable states and the Python explorer's must be
the same set, and so must the labelled transitions ``(source, action name,
target)``, where a call that answers is named by its answer (``spec_label``:
``AckLive``/``AckStale``, ``TryPutPause``, ...), so the model's return values
are compared too.  TLC writes its graph with ``-dump dot,actionlabels FILE``;
``read_dot`` reads it, ``node_of`` maps each TLC state to the model's
``refqueue.model.world.Node`` (strictly: an unexpected variable, key or shape
is an error, never skipped), and ``compare`` checks the two graphs.

How the spec's variables map to the model (spec/SampleRefQueue.tla):

* ``now closed paused pending ids resident_bytes resident_count dead``: the
  ``State`` fields of the same names (sequences become tuples);
* ``recs`` (a function from the ids seen) becomes the tuple of ``Rec`` in
  ``ids`` order, ``NoDeadline`` becoming ``None``;
* ``consumers`` (a function on ``0 .. n-1``) becomes the tuple of
  ``Consumer``; a lease record (held or kept) becomes ``ModelLease``, its
  epoch ``n`` the model's name for it (``lease_epoch(cfg, n)``), ``NoLease``
  becomes ``None``;
* ``intents`` (a set of ids) becomes the state's sorted tuple, ``epoch`` the
  state's ``epoch``; ``issued`` (a history variable, recorded only with
  ``LeaseHistory``) must be empty: the agreement configs do not record it;
* ``producers`` (a function on ``0 .. n-1``) becomes the tuple of the ids
  they put (``NoSample`` becoming ``None``), ``produced`` the node's
  ``produced``, and ``parked`` (a set of ids) the state's sorted ``(id,
  nbytes)`` pairs; ``faults`` must be 0 (no fault budget in agreement);
* ``completed`` (the dedup window) is not in the spec: the closed world has
  no dedup window, so the model's stays ``()`` (checked: ``dedup_window``
  must be 0).

Self-loops are ignored on both sides (neither side should have any).  On a
difference ``compare`` reports the first one in the Python graph's
breadth-first order: the shortest trace from the initial state to a state
whose outgoing transitions differ, and the transitions only one side has.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from refqueue.model.explorer import StateGraph, build_graph
from refqueue.model.state import ModelLease, Rec, State, epoch_generation, lease_epoch
from refqueue.model.world import Consumer, Node, World, initial_node
from refqueue.spec_check.values import ModelValue, TlaValueError, parse_state

__all__ = ["AgreementError", "AgreementResult", "DotGraph", "read_dot", "node_of", "spec_label", "compare", "check"]

SPEC_VARIABLES = frozenset(
    {
        "now", "closed", "paused", "pending", "ids", "recs", "resident_bytes", "resident_count", "dead",
        "parked", "consumers", "producers", "produced", "faults", "intents", "epoch", "issued",
    }
)
REC_FIELDS = ("status", "incarnation", "deliveries", "redeliveries", "deadline", "resident", "nbytes")
LEASE_FIELDS = frozenset({"epoch", "sample_id", "incarnation", "redelivery_count"})
CONSUMER_FIELDS = frozenset({"lease", "holding", "stopped", "kept"})
NO_LEASE = ModelValue("NoLease")
NO_SAMPLE = ModelValue("NoSample")
NO_DEADLINE = ModelValue("NoDeadline")


class AgreementError(ValueError):
    """TLC's dump cannot be read or mapped onto the model (a malformed file,
    or a state the mapping does not cover)."""


@dataclass
class DotGraph:
    """TLC's state graph as dumped: states by fingerprint, labelled edges."""

    labels: dict[str, str]  # fingerprint -> the state as TLC printed it
    initial: list[str]  # fingerprints of the initial states
    edges: list[tuple[str, str, str]]  # (source fp, action name, target fp)


# (possessive: a label of a thousand characters is read run by run, not character by character)
_NODE_LINE = re.compile(r'^(-?\d+) \[label="((?:[^"\\]++|\\.)*+)"(,style = filled)?\];?$')
_EDGE_LINE = re.compile(r'^(-?\d+) -> (-?\d+) \[label="([A-Za-z_][A-Za-z0-9_]*)"[^\]]*\];$')
_DOT_ESCAPE = re.compile(r"\\(.)")
_IGNORED = re.compile(r"^(strict digraph|digraph|subgraph|nodesep|color|rankdir|node \[|edge \[|\}|\{|$)")


def _unescape_dot(label: str) -> str:
    """The label's text: ``\\n`` a newline, a backslash before any other character that character."""
    if "\\" not in label:
        return label
    # Escapes are read left to right, two characters each, so the escaped
    # backslashes are the pairs str.split finds; what lies between them holds
    # TLC's newlines and quotes, and rarely anything else.
    parts = label.split("\\\\")
    for i, part in enumerate(parts):
        if "\\" in part:
            part = part.replace("\\n", "\n").replace('\\"', '"')
            if "\\" in part:
                part = _DOT_ESCAPE.sub(_escaped, part)
            parts[i] = part
    return "\\".join(parts)


def _escaped(m: re.Match[str]) -> str:
    return "\n" if m.group(1) == "n" else m.group(1)


def read_dot(path: str | Path) -> DotGraph:
    """Read a file written by TLC's ``-dump dot,actionlabels``.  Lines of the
    legend TLC appends (a subgraph of action names) are skipped; any other
    line that is neither a state nor an edge is an error."""
    path = Path(path)
    if not path.is_file():
        raise AgreementError(f"TLC's state dump {path} does not exist; run TLC with -dump dot,actionlabels {path}")
    labels: dict[str, str] = {}
    initial: list[str] = []
    edges: list[tuple[str, str, str]] = []
    in_legend = False
    with path.open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.rstrip("\n")
            m = _EDGE_LINE.match(line)
            if m is not None:
                if not in_legend:
                    edges.append((m.group(1), m.group(3), m.group(2)))
                continue
            m = _NODE_LINE.match(line)
            if m is not None:
                labels[m.group(1)] = _unescape_dot(m.group(2))
                if m.group(3):
                    initial.append(m.group(1))
                continue
            if line.startswith("subgraph cluster_legend"):
                in_legend = True
                continue
            if in_legend or _IGNORED.match(line):
                continue
            raise AgreementError(
                f"{path}:{lineno}: not a state or an edge of TLC's dot dump: {line[:120]!r}; "
                f"dump with -dump dot,actionlabels"
            )
    if not initial:
        raise AgreementError(f"{path} has no initial state (a state drawn filled); is it a complete TLC dump?")
    missing = {dst for _, _, dst in edges if dst not in labels} | {src for src, _, _ in edges if src not in labels}
    if missing:
        raise AgreementError(
            f"{path} has edges to {len(missing)} states it never labels (e.g. {sorted(missing)[0]}); "
            f"the dump is truncated: rerun TLC to completion"
        )
    return DotGraph(labels, initial, edges)


# -- mapping a TLC state onto the model ----------------------------------------


def _want(cond: bool, what: str, value: object) -> None:
    if not cond:
        raise AgreementError(f"cannot map TLC's {what}: got {value!r}")


def _nat(value: object, what: str) -> int:
    _want(type(value) is int and value >= 0, f"{what} (a natural number)", value)  # type: ignore[operator]
    return value  # type: ignore[return-value]


def _bool(value: object, what: str) -> bool:
    _want(type(value) is bool, f"{what} (a boolean)", value)
    return value  # type: ignore[return-value]


def _str_seq(value: object, what: str) -> tuple[str, ...]:
    _want(isinstance(value, tuple) and all(type(x) is str for x in value), f"{what} (a sequence of strings)", value)
    return value  # type: ignore[return-value]


def _function(value: object, what: str) -> dict:
    # TLC prints the function with the empty domain as <<>>.
    if value == ():
        return {}
    _want(isinstance(value, dict), f"{what} (a function)", value)
    return value  # type: ignore[return-value]


def _rec(value: object, sid: str) -> Rec:
    _want(isinstance(value, dict) and set(value) == set(REC_FIELDS), f"recs[{sid!r}] (a record of {REC_FIELDS})", value)
    status = value["status"]  # type: ignore[index]
    _want(type(status) is str, f"recs[{sid!r}].status", status)
    deadline = value["deadline"]  # type: ignore[index]
    if deadline == NO_DEADLINE:
        deadline = None
    else:
        deadline = _nat(deadline, f"recs[{sid!r}].deadline")
    return Rec(
        status,
        _nat(value["incarnation"], f"recs[{sid!r}].incarnation"),  # type: ignore[index]
        _nat(value["deliveries"], f"recs[{sid!r}].deliveries"),  # type: ignore[index]
        _nat(value["redeliveries"], f"recs[{sid!r}].redeliveries"),  # type: ignore[index]
        deadline,
        _bool(value["resident"], f"recs[{sid!r}].resident"),  # type: ignore[index]
        _nat(value["nbytes"], f"recs[{sid!r}].nbytes"),  # type: ignore[index]
    )


def _lease(lease: object, what: str, world: World) -> ModelLease | None:
    if lease == NO_LEASE:
        return None
    _want(isinstance(lease, dict) and set(lease) == LEASE_FIELDS, what, lease)
    _want(type(lease["sample_id"]) is str, f"{what}.sample_id", lease)  # type: ignore[index]
    return ModelLease(
        lease_epoch(world.cfg, _nat(lease["epoch"], f"{what}.epoch")),  # type: ignore[index]
        lease["sample_id"],  # type: ignore[index]
        _nat(lease["incarnation"], f"{what}.incarnation"),  # type: ignore[index]
        _nat(lease["redelivery_count"], f"{what}.redelivery_count"),  # type: ignore[index]
    )


def _consumer(value: object, c: int, world: World) -> Consumer:
    _want(isinstance(value, dict) and set(value) == CONSUMER_FIELDS, f"consumers[{c}] (a record)", value)
    return Consumer(
        _lease(value["lease"], f"consumers[{c}].lease", world),  # type: ignore[index]
        _bool(value["holding"], f"consumers[{c}].holding"),  # type: ignore[index]
        _bool(value["stopped"], f"consumers[{c}].stopped"),  # type: ignore[index]
        _lease(value["kept"], f"consumers[{c}].kept", world),  # type: ignore[index]
    )


def node_of(state: dict[str, object], world: World) -> Node:
    """The model's ``Node`` for one TLC state (parsed by ``parse_state``)."""
    if set(state) != SPEC_VARIABLES:
        raise AgreementError(
            f"TLC's state has variables {sorted(state)}, the mapping expects {sorted(SPEC_VARIABLES)}; "
            f"update refqueue.spec_check.agreement with the spec"
        )
    ids = _str_seq(state["ids"], "ids")
    recs = _function(state["recs"], "recs")
    _want(set(recs) == set(ids), f"recs (domain {sorted(ids)})", sorted(recs, key=str))
    dead = state["dead"]
    _want(
        isinstance(dead, tuple)
        and all(isinstance(d, tuple) and len(d) == 2 and all(type(x) is str for x in d) for d in dead),
        "dead (a sequence of <<id, reason>>)",
        dead,
    )
    model_state = State(
        now=_nat(state["now"], "now"),
        closed=_bool(state["closed"], "closed"),
        paused=_bool(state["paused"], "paused"),
        pending=_str_seq(state["pending"], "pending"),
        ids=ids,
        recs=tuple(_rec(recs[sid], sid) for sid in ids),
        resident_bytes=_nat(state["resident_bytes"], "resident_bytes"),
        resident_count=_nat(state["resident_count"], "resident_count"),
        dead=dead,  # type: ignore[arg-type]
        completed=(),
        parked=_parked(state["parked"], recs),
        intents=_intents(state["intents"], recs),
        epoch=_nat(state["epoch"], "epoch"),
    )
    consumers = _function(state["consumers"], "consumers")
    _want(
        set(consumers) == set(range(world.consumers)),
        f"consumers (a function on 0..{world.consumers - 1}, the world's consumer indices)",
        sorted(consumers, key=str),
    )
    producers = _function(state["producers"], "producers")
    _want(
        set(producers) == set(range(world.producers)),
        f"producers (a function on 0..{world.producers - 1}, the world's producer indices)",
        sorted(producers, key=str),
    )
    held = []
    for p in range(world.producers):
        sid = producers[p]
        _want(sid == NO_SAMPLE or type(sid) is str, f"producers[{p}] (an id or NoSample)", sid)
        held.append(None if sid == NO_SAMPLE else sid)
    _want(state["faults"] == 0, "faults (0: the agreement configs have no fault budget)", state["faults"])
    _want(state["issued"] == frozenset(), "issued (empty: the agreement configs record no lease history)",
          state["issued"])
    return Node(
        model_state,
        tuple(_consumer(consumers[c], c, world) for c in range(world.consumers)),
        tuple(held),
        _nat(state["produced"], "produced"),
    )


def _parked(value: object, recs: dict) -> tuple[tuple[str, int], ...]:
    """The spec's set of parked ids as the model's sorted (id, nbytes) pairs."""
    _want(isinstance(value, frozenset) and all(type(x) is str and x in recs for x in value), "parked (a set of ids)", value)
    return tuple(sorted((sid, _nat(recs[sid]["nbytes"], f"recs[{sid!r}].nbytes")) for sid in value))  # type: ignore[union-attr]


def _intents(value: object, recs: dict) -> tuple[str, ...]:
    """The spec's set of ids with a scrub intent as the model's sorted tuple."""
    _want(isinstance(value, frozenset) and all(type(x) is str and x in recs for x in value), "intents (a set of ids)", value)
    return tuple(sorted(value))  # type: ignore[arg-type]


# -- comparing the graphs -------------------------------------------------------


@dataclass
class AgreementResult:
    """``ok`` when the graphs are identical; otherwise ``message`` says where
    they first differ (a shortest trace in the Python graph to that state)."""

    ok: bool
    python_states: int
    python_transitions: int  # self-loops excluded
    tlc_states: int
    tlc_transitions: int  # self-loops excluded
    message: str = ""
    details: list[str] = field(default_factory=list)

    def summary(self) -> str:
        verdict = "agree" if self.ok else "DISAGREE"
        return (
            f"spec and model {verdict}: TLC {self.tlc_states} states / {self.tlc_transitions} transitions, "
            f"Python {self.python_states} states / {self.python_transitions} transitions"
        )


_ANSWERED = frozenset({"Ack", "Fail", "AckCopy", "FailCopy"})


def spec_label(action: str, value: object) -> str:
    """The spec's name for a model transition: calls that answer something
    are split by the answer the model gave (``Ack`` that returned True is
    ``AckLive``, False ``AckStale``; a put step is named by whether it
    enqueued and which callback it fired), so comparing labels compares the
    model's return values with the spec's classification of the step."""
    if action in _ANSWERED:
        return action + ("Live" if value is True else "Stale")
    if action == "TryPut":
        events = getattr(value, "events", ())
        enqueued = getattr(value, "enqueued", None)
        if "resume" in events:
            return "TryPutResume" if enqueued else "TryPutResumePark"
        if "pause" in events:
            return "TryPutPauseEnqueue" if enqueued else "TryPutPause"
        return "TryPutEnqueue" if enqueued else "TryPutPark"
    return action


def _one_lease(lease: ModelLease) -> str:
    """``s0#1.0``: sample s0, incarnation 1, redelivery count 0 (``@2``: of epoch 2)."""
    n = epoch_generation(lease.epoch)
    return f"{lease.sample_id}#{lease.incarnation}.{lease.redelivery_count}" + (f"@{n}" if n else "")


def _lease_text(me: Consumer) -> str:
    lease = "-" if me.lease is None else _one_lease(me.lease)
    kept = "" if me.kept is None else f" kept={_one_lease(me.kept)}"
    return lease + ("+data" if me.holding else "") + (" stopped" if me.stopped else "") + kept


def _short(value: object) -> str:
    return repr(list(value)) if isinstance(value, tuple) else repr(value)


def _describe(node: Node) -> str:
    """One line: the state's fields, each sample's record, each consumer's lease
    (``s0#1.0``: sample s0, incarnation 1, redelivery count 0)."""
    s = node.state
    parts = [
        f"now={s.now}",
        f"closed={s.closed}",
        f"paused={s.paused}",
        f"pending={list(s.pending)}",
        f"resident_bytes={s.resident_bytes}",
    ]
    for sid, r in zip(s.ids, s.recs):
        parts.append(
            f"{sid}:{r.status}/inc{r.incarnation}/del{r.deliveries}/redel{r.redeliveries}"
            f"/deadline={r.deadline}/{'resident' if r.resident else 'scrubbed'}"
        )
    if s.dead:
        parts.append(f"dead={[list(d) for d in s.dead]}")
    if s.parked:
        parts.append(f"parked={[list(p) for p in s.parked]}")
    if s.intents:
        parts.append(f"intents={list(s.intents)}")
    if s.epoch:
        parts.append(f"epoch={s.epoch}")
    parts.extend(f"c{c}:{_lease_text(me)}" for c, me in enumerate(node.consumers))
    parts.extend(f"p{p}:{sid or '-'}" for p, sid in enumerate(node.producers))
    parts.append(f"produced={node.produced}")
    return " ".join(parts)


def _changes(src: Node, dst: Node) -> str:
    """What a transition changed, field by field (for the report)."""
    a, b = src.state, dst.state
    out: list[str] = []
    for name in State._fields:
        if name != "recs" and getattr(a, name) != getattr(b, name):
            out.append(f"{name} {_short(getattr(a, name))} -> {_short(getattr(b, name))}")
    before = dict(zip(a.ids, a.recs))
    for sid, rec in zip(b.ids, b.recs):
        old = before.get(sid)
        if old is None:
            out.append(f"{sid} new {rec!r}")
            continue
        out.extend(
            f"{sid}.{name} {getattr(old, name)!r} -> {getattr(rec, name)!r}"
            for name in Rec._fields
            if getattr(old, name) != getattr(rec, name)
        )
    for c, (x, y) in enumerate(zip(src.consumers, dst.consumers)):
        if x != y:
            out.append(f"c{c} {_lease_text(x)} -> {_lease_text(y)}")
    for p, (x, y) in enumerate(zip(src.producers, dst.producers)):
        if x != y:
            out.append(f"p{p} {x or '-'} -> {y or '-'}")
    return ", ".join(out) or "nothing"


def _python_trace(graph: StateGraph, k: int) -> list[str]:
    """The shortest path in the Python graph from the initial node to node ``k``."""
    parent: dict[int, tuple[int, str]] = {0: (-1, "Init")}
    frontier = deque([0])
    out_edges: dict[int, list[tuple[str, object, int]]] = {}
    for src, action, arg, dst, _ in graph.edges:
        out_edges.setdefault(src, []).append((action, arg, dst))
    while frontier and k not in parent:
        i = frontier.popleft()
        for action, arg, j in out_edges.get(i, ()):
            if j not in parent:
                parent[j] = (i, action if arg is None else f"{action}({arg})")
                frontier.append(j)
    steps: list[str] = []
    while k >= 0:
        k, label = parent[k][0], parent[k][1]
        steps.append(label)
    return steps[::-1]


def compare(world: World, dot: DotGraph, graph: StateGraph | None = None) -> AgreementResult:
    """Compare TLC's dumped graph with the model's graph of ``world``."""
    if world.cfg.dedup_window != 0:
        raise AgreementError(
            f"the world has dedup_window={world.cfg.dedup_window}, but the spec has no dedup window; "
            f"compare a world built by make_world (dedup_window=0)"
        )
    if graph is None:
        graph = build_graph(world)
    # Map every TLC state; two states mapping to one node means the mapping lost a
    # difference.  Each node is then named by an int: its index in the Python graph,
    # or, for a state Python never reaches, -1, -2, ... (``extra``), so that the
    # transitions are compared as ints and not as nodes (each comparison of two equal
    # nodes built apart compares their states field by field).
    fp_by_node: dict[Node, str] = {}
    id_by_fp: dict[str, int] = {}
    extra: list[Node] = []
    index = graph.index
    cache: dict[str, object] = {}
    for fp, label in dot.labels.items():
        try:
            node = node_of(parse_state(label, cache), world)
        except TlaValueError as exc:
            raise AgreementError(f"TLC state {fp} is not readable: {exc}") from None
        other = fp_by_node.setdefault(node, fp)
        if other != fp:
            raise AgreementError(
                f"TLC states {other} and {fp} both map to the model node {_describe(node)}; "
                f"the mapping drops a variable the spec distinguishes"
            )
        k = index.get(node)
        if k is None:
            extra.append(node)
            k = -len(extra)
        id_by_fp[fp] = k

    def node_at(k: int) -> Node:
        return graph.nodes[k] if k >= 0 else extra[-1 - k]

    tlc_out: dict[int, set[tuple[str, int]]] = {}
    tlc_transitions = 0
    for src, action, dst in dot.edges:
        if src == dst:
            continue
        edge = (action, id_by_fp[dst])
        bucket = tlc_out.setdefault(id_by_fp[src], set())
        if edge not in bucket:
            bucket.add(edge)
            tlc_transitions += 1

    py_out: dict[int, dict[tuple[str, int], str]] = {}
    py_transitions = 0
    for src, action, arg, dst, value in graph.edges:
        if src == dst:
            continue
        bucket2 = py_out.setdefault(src, {})
        label = spec_label(action, value)
        key = (label, dst)
        if key not in bucket2:
            bucket2[key] = label if arg is None else f"{label}({arg})"
            py_transitions += 1

    result = AgreementResult(True, len(graph.nodes), py_transitions, len(id_by_fp), tlc_transitions)
    root = initial_node(world)
    tlc_initial = [node_at(id_by_fp[fp]) for fp in dot.initial]
    if tlc_initial != [root]:
        result.ok = False
        result.message = "the initial states differ"
        result.details = [f"Python: {_describe(root)}"] + [f"TLC:    {_describe(n)}" for n in tlc_initial]
        return result

    # Breadth-first over the Python graph: the first node whose outgoing
    # transitions differ is one of the nearest to the initial state.
    reached = set(id_by_fp.values())
    no_edges: set[tuple[str, int]] = set()
    for k, node in enumerate(graph.nodes):
        mine = py_out.get(k, {})
        theirs = tlc_out.get(k, no_edges)
        if k not in reached:
            only_tlc: Iterable = ()
            only_py = list(mine)
            missing_node = True
        else:
            only_py = [e for e in mine if e not in theirs]
            only_tlc = [e for e in theirs if e not in mine]
            missing_node = False
        if not only_py and not only_tlc and not missing_node:
            continue
        result.ok = False
        trace = _python_trace(graph, k)
        result.message = (
            f"first difference after {len(trace) - 1} steps (shortest Python trace: {' -> '.join(trace)})"
        )
        details = [f"at: {_describe(node)}"]
        if missing_node:
            details.append("TLC never reaches this state")
        for action, dst in sorted(only_py, key=lambda e: mine[e]):
            details.append(f"only Python: {mine[(action, dst)]}: {_changes(node, graph.nodes[dst])}")
        for action, dst in sorted(only_tlc, key=lambda e: (e[0], _describe(node_at(e[1])))):
            details.append(f"only TLC:    {action}: {_changes(node, node_at(dst))}")
        result.details = details
        return result

    if len(id_by_fp) != len(graph.nodes):  # unreachable when every edge agrees; kept as a guard
        result.ok = False
        result.message = f"TLC has {len(id_by_fp)} states, Python {len(graph.nodes)}"
        result.details = [f"a TLC state Python never reaches: {_describe(extra[0])}"]
    return result


def check(dot_path: str | Path, world: World) -> AgreementResult:
    """Read TLC's dump at ``dot_path`` and compare it with ``world``'s graph."""
    return compare(world, read_dot(dot_path))
