"""Agreement of the TLA+ spec with the Python model: TLC's state graph of an
agreement config equals the explorer's graph of its world, state for state
and labelled transition for transition (the label carrying the model's
return value); a perturbed model is caught."""

import collections
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refqueue.model.explorer import build_graph
from refqueue.model.actions import lease_state
from refqueue.model.state import ModelLease, Rec, State, lease_epoch
from refqueue.model.world import Consumer, Node, initial_node, make_world
from refqueue.spec_check.agreement import AgreementError, _unescape_dot, check, compare, node_of, read_dot
from refqueue.spec_check.manifest import mismatches
from refqueue.spec_check.values import parse_state

# TLC's initial state of MCAgreement (make_world(): one producer, two
# consumers), escaped as in its dot dump.
INIT_LABEL = (
    r"/\\ recs = <<>>\n/\\ paused = FALSE\n/\\ resident_count = 0\n/\\ now = 0\n/\\ faults = 0\n"
    r"/\\ producers = (0 :> NoSample)\n/\\ pending = <<>>\n"
    r"/\\ consumers = ( 0 :>\n      [ lease |-> NoLease,\n        holding |-> FALSE,\n        stopped |-> FALSE,\n"
    r"        kept |-> NoLease ] @@\n  1 :>\n      [ lease |-> NoLease,\n        holding |-> FALSE,\n"
    r"        stopped |-> FALSE,\n        kept |-> NoLease ] )\n"
    r"/\\ resident_bytes = 0\n/\\ parked = {}\n/\\ ids = <<>>\n/\\ dead = <<>>\n/\\ closed = FALSE\n/\\ produced = 0\n"
    r"/\\ intents = {}\n/\\ epoch = 0\n/\\ issued = {}"
)

# The bounds of MCAgreementWide (two producers, one consumer, a re-put of s0,
# crashes, retained copies).
WIDE = dict(
    producers=2, samples=("s0", "s1", "s0"), sample_bytes=(1, 3, 1), consumers=1, high=3, low=1,
    visibility_timeout=2, horizon=2, producer_crash=True, retain_copies=True,
)

# A state of that world as TLC prints it: s0 was put, acked (consumer 0 kept
# a copy of its lease) and is being put again by producer 1, which is parked
# and has paused the producers (effective residency 4 - 1 = 3 = High) while
# consumer 0 holds a live lease on the 3-byte s1.
PARKED_STATE = """/\\ recs = [ s0 |->
      [ incarnation |-> 1,
        redeliveries |-> 0,
        status |-> "stored",
        nbytes |-> 1,
        deadline |-> NoDeadline,
        deliveries |-> 0,
        resident |-> TRUE ],
  s1 |->
      [ incarnation |-> 1,
        redeliveries |-> 0,
        status |-> "leased",
        nbytes |-> 3,
        deadline |-> 2,
        deliveries |-> 1,
        resident |-> TRUE ] ]
/\\ paused = TRUE
/\\ resident_count = 2
/\\ now = 0
/\\ faults = 0
/\\ producers = (0 :> NoSample @@ 1 :> "s0")
/\\ pending = <<>>
/\\ consumers = ( 0 :>
      [ lease |-> [epoch |-> 0, sample_id |-> "s1", incarnation |-> 1, redelivery_count |-> 0],
        holding |-> FALSE,
        stopped |-> FALSE,
        kept |-> [epoch |-> 0, sample_id |-> "s0", incarnation |-> 1, redelivery_count |-> 0] ] )
/\\ resident_bytes = 4
/\\ parked = {"s0"}
/\\ ids = <<"s0", "s1">>
/\\ dead = <<>>
/\\ closed = FALSE
/\\ produced = 3
/\\ intents = {}
/\\ epoch = 0
/\\ issued = {}"""


def _dot(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "states.dot"
    path.write_text(
        'strict digraph DiskGraph {\nnodesep=0.35;\nsubgraph cluster_graph {\ncolor="white";\n'
        + body
        + "{rank = same; 1;}\n}\n}"
    )
    return path


def _unescape(label: str) -> str:
    return label.replace(r"\n", "\n").replace("\\\\", "\\")


@given(st.text(alphabet="\\n\"a/ ", max_size=40))
def test_dot_labels_are_unescaped_as_an_escape_at_a_time_reads_them(label):
    # the reference: each backslash and the character after it, left to right
    reference = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), label)
    assert _unescape_dot(label) == reference


def test_initial_state_maps_to_the_models_initial_node():
    world = make_world()
    assert node_of(parse_state(_unescape(INIT_LABEL)), world) == initial_node(world)


def test_producers_parked_refs_and_kept_copies_map_onto_the_node_the_model_reaches():
    world = make_world(**WIDE)
    epoch = world.cfg.epoch
    node = node_of(parse_state(PARKED_STATE), world)
    assert node == Node(
        State(
            now=0, closed=False, paused=True, pending=(), ids=("s0", "s1"),
            recs=(Rec("stored", 1, 0, 0, None, True, 1), Rec("leased", 1, 1, 0, 2, True, 3)),
            resident_bytes=4, resident_count=2, dead=(), completed=(), parked=(("s0", 1),),
        ),
        (Consumer(ModelLease(epoch, "s1", 1, 0), False, False, ModelLease(epoch, "s0", 1, 0)),),
        (None, "s0"),
        3,
    )
    assert node in build_graph(world).index  # a state of the world, not only a well-formed one


def test_a_graph_missing_transitions_is_reported_at_the_first_state(tmp_path):
    dot = read_dot(_dot(tmp_path, f'1 [label="{INIT_LABEL}",style = filled]\n'))
    result = compare(make_world(samples=1), dot)  # MCAgreement's initial state, and a small graph
    assert not result.ok
    assert result.message == "first difference after 0 steps (shortest Python trace: Init)"
    assert result.details == [
        "at: now=0 closed=False paused=False pending=[] resident_bytes=0 c0:- c1:- p0:- produced=0",
        "only Python: Close: closed False -> True",
        "only Python: StorePut(0): ids [] -> ['s0'], resident_bytes 0 -> 1, resident_count 0 -> 1, "
        "s0 new Rec(status='stored', incarnation=0, deliveries=0, redeliveries=0, deadline=None, resident=True, "
        "nbytes=1), p0 - -> s0",
        "only Python: Tick: now 0 -> 1",
    ]


def test_two_tlc_states_mapping_to_one_node_is_an_error(tmp_path):
    dot = read_dot(_dot(tmp_path, f'1 [label="{INIT_LABEL}",style = filled]\n2 [label="{INIT_LABEL}"];\n1 -> 2 [label="Tick"];\n'))
    with pytest.raises(AgreementError, match=r"^TLC states 1 and 2 both map to the model node now=0 .*; the mapping drops"):
        compare(make_world(samples=1), dot)


def test_a_state_with_other_variables_is_not_mapped():
    with pytest.raises(
        AgreementError,
        match=r"^TLC's state has variables \['now'\], the mapping expects \['closed', 'consumers', 'dead', 'epoch', "
        r"'faults', 'ids', 'intents', 'issued', 'now', 'parked', 'paused', 'pending', 'produced', 'producers', 'recs', "
        r"'resident_bytes', 'resident_count'\]; update refqueue\.spec_check\.agreement with the spec$",
    ):
        node_of({"now": 0}, make_world())


def test_consumers_must_be_the_worlds_indices():
    state = parse_state(_unescape(INIT_LABEL))
    with pytest.raises(AgreementError, match=r"^cannot map TLC's consumers \(a function on 0\.\.2, the world's consumer indices\): got \[0, 1\]$"):
        node_of(state, make_world(consumers=3))


def test_producers_must_be_the_worlds_indices():
    state = parse_state(_unescape(INIT_LABEL))
    with pytest.raises(AgreementError, match=r"^cannot map TLC's producers \(a function on 0\.\.1, the world's producer indices\): got \[0\]$"):
        node_of(state, make_world(producers=2))


def test_a_state_that_spent_faults_is_not_mapped():
    state = parse_state(_unescape(INIT_LABEL))
    state["faults"] = 1
    with pytest.raises(AgreementError, match=r"^cannot map TLC's faults \(0: the agreement configs have no fault budget\): got 1$"):
        node_of(state, make_world())


def test_a_state_with_a_lease_history_is_not_mapped():
    state = parse_state(_unescape(INIT_LABEL))
    state["issued"] = frozenset({"x"})
    with pytest.raises(AgreementError, match=r"^cannot map TLC's issued \(empty: the agreement configs record no lease history\)"):
        node_of(state, make_world())


def test_an_intent_without_a_record_is_not_mapped():
    state = parse_state(_unescape(INIT_LABEL))
    state["intents"] = frozenset({"s0"})
    with pytest.raises(AgreementError, match=r"^cannot map TLC's intents \(a set of ids\): got frozenset\(\{'s0'\}\)$"):
        node_of(state, make_world())


# A state of MCDeploymentLeases as TLC prints it: s0 was leased by consumer 0
# in epoch 0, the queue lost its state (epoch 1), the operator recovered s0,
# consumer 1 acquired it and acked it (its data to scrub: an intent), and
# consumer 0 still holds its lease of epoch 0.
RESTARTED_STATE = """/\\ recs = [ s0 |->
      [ incarnation |-> 1, redeliveries |-> 0, status |-> "acked", nbytes |-> 1,
        deadline |-> NoDeadline, deliveries |-> 1, resident |-> TRUE ] ]
/\\ paused = FALSE
/\\ resident_count = 1
/\\ now = 0
/\\ faults = 0
/\\ producers = (0 :> NoSample)
/\\ pending = <<>>
/\\ consumers = ( 0 :>
      [ lease |-> [epoch |-> 0, sample_id |-> "s0", incarnation |-> 1, redelivery_count |-> 0],
        holding |-> FALSE, stopped |-> FALSE, kept |-> NoLease ] @@
  1 :> [ lease |-> NoLease, holding |-> FALSE, stopped |-> FALSE, kept |-> NoLease ] )
/\\ resident_bytes = 1
/\\ parked = {}
/\\ ids = <<"s0">>
/\\ dead = <<>>
/\\ closed = FALSE
/\\ produced = 1
/\\ intents = {"s0"}
/\\ epoch = 1
/\\ issued = {}"""


def test_epochs_and_intents_map_onto_the_node_the_model_reaches():
    world = make_world(samples=1, consumers=2, horizon=1, two_step_ack=True, lost_replies=True, max_restarts=1)
    node = node_of(parse_state(RESTARTED_STATE), world)
    assert node.state.intents == ("s0",) and node.state.epoch == 1
    assert node.consumers[0].lease == ModelLease(lease_epoch(world.cfg, 0), "s0", 1, 0)
    graph = build_graph(world)
    assert node in graph.index  # reached: Init, StorePut, TryPut, Acquire(0), RestartLossy, Recover, Acquire(1), Ack(1)
    stale = node.consumers[0].lease
    assert lease_state(node.state, stale) == "gone"  # of the old epoch


def test_a_parked_id_without_a_record_is_not_mapped():
    state = parse_state(_unescape(INIT_LABEL))
    state["parked"] = frozenset({"s0"})
    with pytest.raises(AgreementError, match=r"^cannot map TLC's parked \(a set of ids\): got frozenset\(\{'s0'\}\)$"):
        node_of(state, make_world())


def test_a_line_that_is_not_part_of_a_dump_is_rejected(tmp_path):
    path = _dot(tmp_path, f'1 [label="{INIT_LABEL}",style = filled]\nState 1: <Initial predicate>\n')
    with pytest.raises(AgreementError, match=r"states\.dot:6: not a state or an edge of TLC's dot dump: 'State 1: <Initial predicate>'; dump with -dump dot,actionlabels$"):
        read_dot(path)


def test_a_truncated_dump_is_rejected(tmp_path):
    path = _dot(tmp_path, f'1 [label="{INIT_LABEL}",style = filled]\n1 -> 7 [label="Tick"];\n')
    with pytest.raises(AgreementError, match=r"has edges to 1 states it never labels \(e\.g\. 7\); the dump is truncated"):
        read_dot(path)


# -- against TLC ---------------------------------------------------------------


@pytest.mark.tlc
def test_tlc_and_python_graphs_are_identical(agreement_dump):
    entry, run, dump = agreement_dump
    assert entry.agreement["world"] == {**WIDE, "samples": list(WIDE["samples"]), "sample_bytes": list(WIDE["sample_bytes"])}
    assert mismatches(entry, run) == []
    result = check(dump, make_world(**entry.agreement["world"]))
    assert result.ok, (result.message, result.details)
    assert (result.tlc_states, result.python_states) == (entry.distinct_states, entry.distinct_states)
    assert result.tlc_transitions == result.python_transitions
    # TLC's "states generated" counts every successor it computed: the dump
    # holds each one, so its edges (with the initial state) are that count.
    # A successor is computed once per true disjunct of TryPut's enabling
    # condition (TLC branches on a disjunction in an action), so TryPut steps
    # can appear more than once; no other step does.
    dot = read_dot(dump)
    assert len(dot.edges) + 1 == entry.total_states
    assert len(set(dot.edges)) == result.tlc_transitions
    repeated = collections.Counter(e for e, n in collections.Counter(dot.edges).items() if n > 1)
    assert {action for _, action, _ in repeated} <= {
        "TryPutEnqueue", "TryPutPark", "TryPutPause", "TryPutPauseEnqueue", "TryPutResume",
    }


@pytest.mark.tlc
def test_a_model_whose_fail_does_not_count_redeliveries_disagrees(agreement_dump, fail_without_redelivery):
    # the consumer keeps a copy of the lease it failed (retain_copies): "kept="
    entry, _, dump = agreement_dump
    result = check(dump, make_world(**entry.agreement["world"]))
    assert not result.ok
    assert result.message == (
        "first difference after 3 steps (shortest Python trace: Init -> StorePut(0) -> TryPut(0) -> Acquire(0))"
    )
    assert result.details == [
        "at: now=0 closed=False paused=False pending=[] resident_bytes=1 "
        "s0:leased/inc1/del1/redel0/deadline=2/resident c0:s0#1.0 p0:- p1:- produced=1",
        "only Python: FailLive(0): pending [] -> ['s0'], s0.status 'leased' -> 'pending', s0.deadline 2 -> None, "
        "c0 s0#1.0 -> - kept=s0#1.0",
        "only TLC:    FailLive: pending [] -> ['s0'], s0.status 'leased' -> 'pending', s0.redeliveries 0 -> 1, "
        "s0.deadline 2 -> None, c0 s0#1.0 -> - kept=s0#1.0",
    ]


@pytest.mark.tlc
def test_a_world_whose_clock_stops_earlier_disagrees(agreement_dump):
    entry, _, dump = agreement_dump
    result = check(dump, make_world(**{**entry.agreement["world"], "horizon": 1}))
    assert not result.ok
    assert result.message == "first difference after 1 steps (shortest Python trace: Init -> Tick)"
    assert result.details == [
        "at: now=1 closed=False paused=False pending=[] resident_bytes=0 c0:- p0:- p1:- produced=0",
        "only TLC:    Tick: now 1 -> 2",
    ]
    assert re.match(
        rf"^spec and model DISAGREE: TLC {entry.distinct_states} states / \d+ transitions, Python \d+ states",
        result.summary(),
    )
