"""The spec, its configs, the manifest and the Python model share names and
bounds (static checks, no TLC)."""

import functools
import re
from pathlib import Path

import pytest

from refqueue.model.explorer import build_graph, explore
from refqueue.model.invariants import (
    STATE_INVARIANTS,
    TRANSITION_INVARIANTS,
    WORLD_INVARIANTS,
    WORLD_TRANSITION_INVARIANTS,
    effective_residency,
)
from refqueue.model.state import LEASED
from refqueue.model.world import make_world
from refqueue.spec_check.agreement import spec_label
from refqueue.spec_check.manifest import load_manifest
from refqueue.spec_check.mutants import load_mutants
from refqueue.spec_check.simulate import SIMULATION_MODULE
from refqueue.spec_check.tlc import cfg_sections

SPEC_DIR = Path(__file__).resolve().parents[2] / "spec"

# The disjuncts of Next, in order: (the set quantified over, the action).  A
# call that answers something is split by its answer (AckLive / AckStale,
# TryPutPause, ...: refqueue.spec_check.agreement.spec_label names a model
# transition the same way).
NEXT = [
    ("Producers", "StorePut"),
    ("Producers", "TryPutEnqueue"),
    ("Producers", "TryPutPark"),
    ("Producers", "TryPutPause"),
    ("Producers", "TryPutPauseEnqueue"),
    ("Producers", "TryPutResume"),
    ("Producers", "TryPutLost"),
    ("Producers", "PutRetry"),
    ("Producers", "ProducerCrash"),
    ("SampleSet", "CollectOrphan"),
    ("SampleSet", "ScrubIntent"),
    (None, "ReclaimExpired"),
    (None, "Close"),
    (None, "Tick"),
    (None, "RestartLossy"),
    ("SampleSet", "Recover"),
    ("Consumers", "AckCopyLive"),
    ("Consumers", "AckCopyStale"),
    ("Consumers", "FailCopyLive"),
    ("Consumers", "FailCopyStale"),
    ("Consumers", "Acquire"),
    ("Consumers", "AcquireLost"),
    ("Consumers", "Get"),
    ("Consumers", "Release"),
    ("Consumers", "AckLive"),
    ("Consumers", "AckStale"),
    ("Consumers", "AckLost"),
    ("Consumers", "FailLive"),
    ("Consumers", "FailStale"),
    ("Consumers", "FailLost"),
    ("Consumers", "Extend"),
    ("Consumers", "Crash"),
    ("Consumers", "Stop"),
]
NEXT_NAMES = [name for _, name in NEXT]

# Each split disjunct and the world's action (the model's label) it refines.
SPLIT = {
    "TryPutEnqueue": "TryPut", "TryPutPark": "TryPut", "TryPutPause": "TryPut", "TryPutPauseEnqueue": "TryPut",
    "TryPutResume": "TryPut",
    "AckCopyLive": "AckCopy", "AckCopyStale": "AckCopy", "FailCopyLive": "FailCopy", "FailCopyStale": "FailCopy",
    "AckLive": "Ack", "AckStale": "Ack", "FailLive": "Fail", "FailStale": "Fail",
}

# The world's action labels (world.successors()), each defined once in the spec.
ACTIONS = list(dict.fromkeys(SPLIT.get(name, name) for name in NEXT_NAMES))

# A copy a consumer kept of a lease it gave back is stale for good (D1: a
# lease id is live once), so these disjuncts are never enabled; they are in
# Next so that a model whose copy acked or failed live would disagree.
NEVER_ENABLED = {"AckCopyLive", "FailCopyLive"}

# Whose move each action is: a producer's, a consumer's (by index), or the environment's.
PRODUCER_ACTIONS = {"StorePut", "TryPut", "TryPutLost", "PutRetry", "ProducerCrash"}
ENVIRONMENT_ACTIONS = {"CollectOrphan", "ScrubIntent", "ReclaimExpired", "Close", "Tick", "RestartLossy", "Recover"}

# The liveness properties every liveness config checks, and the one that
# needs bounded failures and prompt consumers (PromptConsumers, a FaultBudget).
LIVENESS = [
    "EverySampleEventuallyAckedOrDead", "PausedProducerEventuallyResumes", "ClosedLeadsToDrained",
    "EveryConsumerEventuallyStops",
]
BOUNDED_FAULT_LIVENESS = "EverySampleEventuallyAcked"
# ... and the one every liveness config of the deployment (TwoStepAck) checks.
TWO_STEP_LIVENESS = "CompletedDataEventuallyScrubbed"
# ... and the put-level one, where no put's reply is lost (LostReplies: nothing forces the retry).
PUT_LIVENESS = "PutEventuallyReturns"

# Properties the spec states that have no twin in the model: the lease
# history (LeaseHistory, the variable issued) exists only in the spec.
SPEC_ONLY_PROPERTIES = ["NoLeaseIssuedTwice"]

# Model properties the spec states inside another definition, not by name:
# name -> (the definition, a text it contains).
STATED_INSIDE = {"ParkedRefsArePut": ("TypeOK", r"\cap Range(producers)")}

# What configs deliberately leave out, and why.
#   MCAnchorLiveness, MCOldBackpressureLiveness: a liveness counterexample
#     checks its one property (so TLC names it) and leaves out the invariant
#     that its behaviour violates first (TLC would stop there).
#   MCOldBackpressure: the rule before D8, checked against the invariants
#     only (NoStuckProducer is what it must violate).
LEFT_OUT_INVARIANTS = {
    "MCAnchorLiveness": {"TerminalNoneMeansDrained"},
    "MCOldBackpressureLiveness": {"NoStuckProducer"},
    "MCOldBackpressurePuts": {"NoStuckProducer"},
}
ONLY_THE_EXPECTED_PROPERTY = {"MCAnchorLiveness", "MCOldBackpressureLiveness", "MCOldBackpressurePuts"}
# Left out where they would be vacuous (refqueue check-spec's coverage check refuses a property
# whose antecedent never happens in a config that lists it; each cfg says why in a comment).
_BACKPRESSURE = {"BackpressureBound", "NoStuckProducer", "PauseOnlyAtHigh", "ResumeOnlyAtLow", "NoFlapping",
                 "PauseFollowsHysteresis", "BlockedPutIsParked"}
VACUOUS = {
    "MCDeployment": _BACKPRESSURE,
    "MCDeploymentLeases": _BACKPRESSURE,
    "MCDeploymentLiveness": _BACKPRESSURE | {"PausedProducerEventuallyResumes"},
    "MCAckLiveness": {"StaleOpsChangeNothing"},
}
NO_PROPERTIES = {"MCOldBackpressure"}


def _spec(spec_dir) -> str:
    return (spec_dir / "SampleRefQueue.tla").read_text()


def _defines(spec: str, name: str) -> bool:
    return re.search(rf"^{name}(\(\w+\))? ==", spec, flags=re.MULTILINE) is not None


def _body(spec: str, name: str) -> str:
    """The text of a definition, up to the next blank line."""
    return spec.split(f"\n{name} ==", 1)[1].split("\n\n", 1)[0]


def _safety_invariants(spec: str) -> list[str]:
    """The model's state and world invariants that the spec states by name."""
    return [n for n in (*STATE_INVARIANTS, *WORLD_INVARIANTS) if n not in STATED_INSIDE or _defines(spec, n)]


@functools.lru_cache(maxsize=None)
def _graph(name: str):
    entry = {e.name: e for e in load_manifest(SPEC_DIR)}[name]
    return build_graph(make_world(**entry.agreement["world"]))


AGREEMENT = [e.name for e in load_manifest(SPEC_DIR) if e.agreement is not None]


def test_every_config_in_spec_dir_is_in_the_manifest(spec_dir, manifest):
    # MCSimulate is run by check-spec after the manifest's configs (TLC
    # -simulate, refqueue.spec_check.simulate); the MCMut* configs only by
    # check-spec --mutants, which names them in mutants.json.
    assert SIMULATION_MODULE == "MCSimulate"
    assert "MCSimulate" not in manifest
    mutants, _ = load_mutants(spec_dir)
    killers = {kill.config for m in mutants for kill in m.tlc} - set(manifest)
    assert killers and all(k.startswith("MCMut") for k in killers), killers
    expected = {e.config for e in manifest.values()} | {"MCSimulate.cfg"} | {f"{k}.cfg" for k in killers}
    assert sorted(p.name for p in spec_dir.glob("MC*.cfg")) == sorted(expected)
    assert sorted(p.name for p in spec_dir.glob("MC*.tla")) == sorted(c.replace(".cfg", ".tla") for c in expected)
    assert {e.module for e in manifest.values()} == {e.config.replace(".cfg", ".tla") for e in manifest.values()}


def test_next_has_the_worlds_actions_in_order(spec_dir):
    spec = _spec(spec_dir)
    body = _body(spec, "Next")
    assert [(dom, name) if dom else (None, name) for dom, name in
            re.findall(r"\\/ (?:\\E \w+ \\in (\w+) : )?(\w+)", body)] == NEXT
    for action in ACTIONS:
        assert len(re.findall(rf"^{action}(\(\w+\))? ==$", spec, flags=re.MULTILINE)) == 1, action
    for label, action in SPLIT.items():
        assert re.search(rf"^{label}\((\w)\) == {action}\(\1\) /\\ ", spec, flags=re.MULTILINE), label


@pytest.mark.parametrize("name", AGREEMENT)
def test_python_world_takes_exactly_these_actions(name):
    graph = _graph(name)
    assert {action for _, action, _, _, _ in graph.edges} <= set(ACTIONS)
    labels = {spec_label(action, value) for _, action, _, _, value in graph.edges}
    assert labels <= set(NEXT_NAMES) - NEVER_ENABLED


def test_the_agreement_worlds_together_take_every_action_of_next():
    labels = {spec_label(action, value) for name in AGREEMENT for _, action, _, _, value in _graph(name).edges}
    assert labels == set(NEXT_NAMES) - NEVER_ENABLED


@pytest.mark.parametrize("name", AGREEMENT)
def test_the_world_yields_each_actors_moves_in_the_order_of_next(name):
    # world.successors() interleaves the actors (producer 0's moves, then
    # producer 1's, ..., each consumer's); each actor's own moves come in
    # the order of Next.
    graph = _graph(name)
    position = {label: i for i, label in enumerate(NEXT_NAMES)}
    last: dict[tuple[int, object], int] = {}
    for src, action, arg, _, value in graph.edges:
        if action in ENVIRONMENT_ACTIONS:
            actor: object = "environment"
        else:
            actor = ("producer" if action in PRODUCER_ACTIONS else "consumer", arg)
        at = position[spec_label(action, value)]
        key = (src, actor)
        assert last.get(key, -1) <= at, (graph.nodes[src], action, arg)
        last[key] = at


def test_spec_states_every_model_property_by_name(spec_dir):
    spec = _spec(spec_dir)
    for name in [*STATE_INVARIANTS, *TRANSITION_INVARIANTS, *WORLD_INVARIANTS, *WORLD_TRANSITION_INVARIANTS,
                 *SPEC_ONLY_PROPERTIES, *LIVENESS, BOUNDED_FAULT_LIVENESS, TWO_STEP_LIVENESS, PUT_LIVENESS, "FairSpec"]:
        if name in STATED_INSIDE and not _defines(spec, name):
            where, text = STATED_INSIDE[name]
            assert text in _body(spec, where), name
        else:
            assert _defines(spec, name), name


def _expected_sections(spec: str, entry_name: str, mode: str, expected: str, sections: dict) -> tuple[list, list]:
    if mode == "witness":  # only the negated witness, which TLC must find violated
        return [expected], []
    left_out = LEFT_OUT_INVARIANTS.get(entry_name, set()) | VACUOUS.get(entry_name, set())
    invariants = [n for n in _safety_invariants(spec) if n not in left_out]
    if entry_name in ONLY_THE_EXPECTED_PROPERTY:
        return invariants, [expected]
    if entry_name in NO_PROPERTIES:
        return invariants, []
    properties = [*TRANSITION_INVARIANTS, *WORLD_TRANSITION_INVARIANTS, *SPEC_ONLY_PROPERTIES]
    if mode == "liveness":
        properties += LIVENESS
        constants = sections["CONSTANT"]
        if constants[constants.index("PromptConsumers") + 2] == "TRUE":
            properties.append(BOUNDED_FAULT_LIVENESS)
        if constants[constants.index("TwoStepAck") + 2] == "TRUE":
            properties.append(TWO_STEP_LIVENESS)
        if constants[constants.index("LostReplies") + 2] == "FALSE":
            properties.append(PUT_LIVENESS)
    return invariants, [p for p in properties if p not in VACUOUS.get(entry_name, set())]


def test_safety_configs_check_every_property(spec_dir, manifest):
    spec = _spec(spec_dir)
    checked = [(e.name, e.config, e.mode, e.expected) for e in manifest.values()]
    checked.append(("MCSimulate", "MCSimulate.cfg", "simulation", "ok"))  # every safety property, on random behaviours
    for name, config, mode, expected in checked:
        sections = cfg_sections(spec_dir / config)
        invariants, properties = _expected_sections(spec, name, mode, expected, sections)
        assert len(set(sections["INVARIANT"])) == len(sections["INVARIANT"]), name
        assert sorted(sections["INVARIANT"]) == sorted(invariants), name
        assert sorted(sections.get("PROPERTY", [])) == sorted(properties), name
        assert len(set(sections.get("PROPERTY", []))) == len(sections.get("PROPERTY", [])), name


def test_properties_are_left_out_only_where_the_coverage_check_finds_them_vacuous(spec_dir, manifest):
    from refqueue.spec_check.coverage import ANTECEDENTS

    for name, props in VACUOUS.items():
        assert manifest[name].mode in ("safety", "liveness"), name
        assert props <= set(ANTECEDENTS), name
        assert "vacuous here" in (spec_dir / manifest[name].config).read_text(), name


def test_the_configs_that_leave_properties_out_still_exist(manifest):
    # the exceptions above name real configs, of the kind they say
    for name in [*LEFT_OUT_INVARIANTS, *ONLY_THE_EXPECTED_PROPERTY, *NO_PROPERTIES]:
        assert manifest[name].mode == "counterexample", name
    for name in ONLY_THE_EXPECTED_PROPERTY:
        assert cfg_sections(SPEC_DIR / manifest[name].config)["SPECIFICATION"] == ["FairSpec"], name


def test_symmetry_only_where_sound(spec_dir, manifest):
    for entry in manifest.values():
        sections = cfg_sections(spec_dir / entry.config)
        liveness = sections["SPECIFICATION"] == ["FairSpec"]
        if liveness or entry.agreement is not None:
            assert "SYMMETRY" not in sections, entry.name
    assert "SYMMETRY" in cfg_sections(spec_dir / manifest["MCSymmetry"].config)


def _tla_bool(value: bool) -> str:
    return "TRUE" if value else "FALSE"


@pytest.mark.parametrize("name", AGREEMENT)
def test_agreement_config_has_the_bounds_of_its_world(spec_dir, manifest, name):
    entry = manifest[name]
    world = make_world(**entry.agreement["world"])
    sections = cfg_sections(spec_dir / entry.config)
    words = sections["CONSTANT"]
    constants = {words[i]: (words[i + 1], words[i + 2]) for i in range(0, len(words), 3)}
    assert constants == {
        "Samples": ("<-", "MCSamples"),
        "Sizes": ("<-", "MCSizes"),
        "Producers": ("<-", "MCProducers"),
        "Consumers": ("<-", "MCConsumers"),
        "MaxDeliveries": ("=", str(world.cfg.max_deliveries)),
        "VisibilityTimeout": ("=", str(world.cfg.visibility_timeout)),
        "Horizon": ("=", str(world.horizon)),
        "High": ("=", str(world.cfg.high)),
        "Low": ("=", str(world.cfg.low)),
        "Capacity": ("=", str(world.cfg.capacity_bytes)),
        "ProducerCrashes": ("=", _tla_bool(world.producer_crash)),
        "RetainCopies": ("=", _tla_bool(world.retain_copies)),
        "AnchorConsumer": ("=", _tla_bool(world.anchor_consumer)),
        "ReleaseScrubs": ("=", "FALSE"),
        "OldBackpressure": ("=", "FALSE"),
        "TimeNeverStops": ("=", "FALSE"),
        "FaultBudget": ("<-", "NoFaultBudget"),
        "PromptConsumers": ("=", "FALSE"),
        "TwoStepAck": ("=", _tla_bool(world.cfg.two_step_ack)),
        "LostReplies": ("=", _tla_bool(world.lost_replies)),
        "MaxRestarts": ("=", str(world.max_restarts)),
        "LeaseHistory": ("=", "FALSE"),
        "NoLease": ("=", "NoLease"),
        "NoDeadline": ("=", "NoDeadline"),
        "NoSample": ("=", "NoSample"),
    }
    assert sections["SPECIFICATION"] == ["Spec"]
    module = (spec_dir / entry.module).read_text()
    samples = ", ".join(f'"{s}"' for s in world.samples)
    assert f"MCSamples == <<{samples}>>" in module
    sizes = ", ".join(str(n) for n in world.sizes)
    assert f"MCSizes == <<{sizes}>>" in module
    producers = ", ".join(str(p) for p in range(world.producers))
    assert f"MCProducers == {{{producers}}}" in module
    consumers = ", ".join(str(c) for c in range(world.consumers))
    assert f"MCConsumers == {{{consumers}}}" in module


def _tlc_branches(world, state, sample_id: str, action: str = "TryPut") -> int:
    """How many successors TLC computes for one TryPut step (all equal): TLC
    evaluates a disjunction in an action by trying each disjunct, and
    TryPut's enabling condition ``Admits(s) \\/ PausedAfter(s) # paused \\/ s
    \\notin parked``, with ``Admits(s) == ~PausedAfter(s) \\/ (~OldBackpressure
    /\\ ~HasWork)``, has one branch per true disjunct; TryPutLost's,
    ``Admits(s)``, one per true disjunct of Admits."""
    cfg = world.cfg
    effective = effective_residency(state, sample_id)
    paused_after = (not effective <= cfg.low) if state.paused else effective >= cfg.high
    has_work = bool(state.pending) or any(r.status == LEASED for r in state.recs)
    parked = any(s == sample_id for s, _ in state.parked)
    if action == "TryPutLost":
        return sum([not paused_after, not has_work])
    return sum([not paused_after, not has_work, paused_after != state.paused, not parked])


@pytest.mark.parametrize("name", AGREEMENT)
def test_python_explorer_counts_match_the_agreement_entry(manifest, name):
    entry = manifest[name]
    world = make_world(**entry.agreement["world"])
    result = explore(world)
    assert result.verdict == "ok", result.violations
    assert result.distinct_states == entry.distinct_states
    # TLC counts its depth in states, not steps.
    assert result.depth + 1 == entry.depth
    # TLC counts the initial state as generated, and a TryPut step once per
    # branch it took to reach it (test_spec_agreement checks this against
    # TLC's dump).
    graph = _graph(name)
    assert len(graph.edges) == result.transitions
    generated = 1 + sum(
        _tlc_branches(world, graph.nodes[src].state, graph.nodes[src].producers[arg], action)
        if action in ("TryPut", "TryPutLost") else 1
        for src, action, arg, _, _ in graph.edges
    )
    assert generated == entry.total_states


def test_the_parked_agreement_world_reaches_what_d8s_measure_is_about(manifest):
    # Two producers parked at once, an effective residency inside the band while paused, an orphan
    # while paused: MCAgreementParked's graph equals this world's, so TLC reaches them too.
    from refqueue.model.explorer import explore
    from refqueue.model.state import STORED
    from refqueue.model.world import make_world

    world = make_world(**manifest["MCAgreementParked"].agreement["world"])

    def effective(state):
        return state.resident_bytes - sum(b for _, b in state.parked)

    goals = {
        "two parked": lambda w, n: len(n.state.parked) >= 2,
        "in band while paused": lambda w, n: n.state.paused and w.cfg.low < effective(n.state) < w.cfg.high,
        "orphan while paused": lambda w, n: n.state.paused and any(
            r.status == STORED and sid not in n.producers for sid, r in zip(n.state.ids, n.state.recs)
        ),
    }
    result = explore(world, goals=goals, stop_on_violation=False)
    assert result.verdict == "ok" and set(result.goals) == set(goals)
    for name in ("MCAgreement", "MCAgreementWide", "MCCapacity"):  # none of the others reaches two parked refs
        other = explore(make_world(**manifest[name].agreement["world"]), goals={"two parked": goals["two parked"]},
                        stop_on_violation=False)
        assert "two parked" not in other.goals, name
