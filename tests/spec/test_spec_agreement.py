"""Agreement of the TLA+ spec with the Python model: TLC's state graph of
MCAgreement equals the explorer's graph of make_world(), state for state and
labelled transition for transition; a perturbed model is caught."""

import re
from pathlib import Path

import pytest

from refqueue.model.world import initial_node, make_world
from refqueue.spec_check.agreement import AgreementError, check, compare, node_of, read_dot
from refqueue.spec_check.manifest import mismatches
from refqueue.spec_check.values import parse_state

# TLC's initial state of MCAgreement, escaped as in its dot dump.
INIT_LABEL = (
    r"/\\ recs = <<>>\n/\\ paused = FALSE\n/\\ resident_count = 0\n/\\ now = 0\n/\\ pending = <<>>\n"
    r"/\\ consumers = ( 0 :> [lease |-> NoLease, holding |-> FALSE, stopped |-> FALSE] @@\n"
    r"  1 :> [lease |-> NoLease, holding |-> FALSE, stopped |-> FALSE] )\n"
    r"/\\ resident_bytes = 0\n/\\ ids = <<>>\n/\\ dead = <<>>\n/\\ closed = FALSE"
)


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


def test_initial_state_maps_to_the_models_initial_node():
    world = make_world()
    assert node_of(parse_state(_unescape(INIT_LABEL)), world) == initial_node(world)


def test_a_graph_missing_transitions_is_reported_at_the_first_state(tmp_path):
    dot = read_dot(_dot(tmp_path, f'1 [label="{INIT_LABEL}",style = filled]\n'))
    result = compare(make_world(), dot)
    assert not result.ok
    assert result.message == "first difference after 0 steps (shortest Python trace: Init)"
    assert result.details == [
        "at: now=0 closed=False paused=False pending=[] resident_bytes=0 c0:- c1:-",
        "only Python: Close: closed False -> True",
        "only Python: StorePut(s0): ids [] -> ['s0'], resident_bytes 0 -> 1, resident_count 0 -> 1, "
        "s0 new Rec(status='stored', incarnation=0, deliveries=0, redeliveries=0, deadline=None, resident=True, nbytes=1)",
        "only Python: Tick: now 0 -> 1",
    ]


def test_two_tlc_states_mapping_to_one_node_is_an_error(tmp_path):
    dot = read_dot(_dot(tmp_path, f'1 [label="{INIT_LABEL}",style = filled]\n2 [label="{INIT_LABEL}"];\n1 -> 2 [label="Tick"];\n'))
    with pytest.raises(AgreementError, match=r"^TLC states 1 and 2 both map to the model node now=0 .*; the mapping drops"):
        compare(make_world(), dot)


def test_a_state_with_other_variables_is_not_mapped():
    with pytest.raises(
        AgreementError,
        match=r"^TLC's state has variables \['now'\], the mapping expects \['closed', 'consumers', 'dead', 'ids', "
        r"'now', 'paused', 'pending', 'recs', 'resident_bytes', 'resident_count'\]; update refqueue\.spec_check\.agreement "
        r"with the spec$",
    ):
        node_of({"now": 0}, make_world())


def test_consumers_must_be_the_worlds_indices():
    state = parse_state(_unescape(INIT_LABEL))
    with pytest.raises(AgreementError, match=r"^cannot map TLC's consumers \(a function on 0\.\.2, the world's consumer indices\): got \[0, 1\]$"):
        node_of(state, make_world(consumers=3))


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
    assert mismatches(entry, run) == []
    result = check(dump, make_world(**entry.agreement["world"]))
    assert result.ok, (result.message, result.details)
    assert (result.tlc_states, result.python_states) == (entry.distinct_states, entry.distinct_states)
    assert result.tlc_transitions == result.python_transitions == entry.total_states - 1


@pytest.mark.tlc
def test_a_model_whose_fail_does_not_count_redeliveries_disagrees(agreement_dump, fail_without_redelivery):
    entry, _, dump = agreement_dump
    result = check(dump, make_world(**entry.agreement["world"]))
    assert not result.ok
    assert result.message == (
        "first difference after 3 steps (shortest Python trace: Init -> StorePut(s0) -> TryPut(s0) -> Acquire(0))"
    )
    assert result.details == [
        "at: now=0 closed=False paused=False pending=[] resident_bytes=1 "
        "s0:leased/inc1/del1/redel0/deadline=1/resident c0:s0#1.0 c1:-",
        "only Python: Fail(0): pending [] -> ['s0'], s0.status 'leased' -> 'pending', s0.deadline 1 -> None, c0 s0#1.0 -> -",
        "only TLC:    Fail: pending [] -> ['s0'], s0.status 'leased' -> 'pending', s0.redeliveries 0 -> 1, "
        "s0.deadline 1 -> None, c0 s0#1.0 -> -",
    ]


@pytest.mark.tlc
def test_a_world_whose_clock_stops_earlier_disagrees(agreement_dump):
    _, _, dump = agreement_dump
    result = check(dump, make_world(horizon=2))
    assert not result.ok
    assert result.message == "first difference after 2 steps (shortest Python trace: Init -> Tick -> Tick)"
    assert result.details == [
        "at: now=2 closed=False paused=False pending=[] resident_bytes=0 c0:- c1:-",
        "only TLC:    Tick: now 2 -> 3",
    ]
    assert re.match(r"^spec and model DISAGREE: TLC 26308 states / 141515 transitions, Python \d+ states", result.summary())
