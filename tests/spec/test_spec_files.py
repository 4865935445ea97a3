"""The spec, its configs, the manifest and the Python model share names and
bounds (static checks, no TLC)."""

import re

from refqueue.model.explorer import build_graph, explore
from refqueue.model.invariants import STATE_INVARIANTS, TRANSITION_INVARIANTS
from refqueue.model.world import make_world
from refqueue.spec_check.tlc import cfg_sections

# The world's action labels, in the order of world.successors() / the task.
ACTIONS = [
    "StorePut", "TryPut", "Acquire", "Get", "Release", "Ack", "Fail", "Extend",
    "ReclaimExpired", "Close", "Tick", "Crash", "Stop",
]


def _spec(spec_dir) -> str:
    return (spec_dir / "SampleRefQueue.tla").read_text()


def test_every_config_in_spec_dir_is_in_the_manifest(spec_dir, manifest):
    on_disk = sorted(p.name for p in spec_dir.glob("MC*.cfg"))
    assert on_disk == sorted(e.config for e in manifest.values())


def test_next_has_the_worlds_actions_in_order(spec_dir):
    spec = _spec(spec_dir)
    body = spec.split("\nNext ==", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"\\/ (?:\\E \w+ \\in \w+ : )?(\w+)", body) == ACTIONS
    defined = re.findall(r"^(\w+)(?:\(\w+\))? ==$", spec, flags=re.MULTILINE)
    assert [a for a in defined if a in ACTIONS] == ACTIONS


def test_python_world_takes_exactly_these_actions():
    world = make_world(samples=2)

    assert {action for _, action, _, _, _ in build_graph(world).edges} == set(ACTIONS)


def test_spec_states_every_model_property_by_name(spec_dir):
    spec = _spec(spec_dir)
    for name in [*STATE_INVARIANTS, *TRANSITION_INVARIANTS,
                 "EverySampleEventuallyAckedOrDead", "PausedProducerEventuallyResumes", "FairSpec"]:
        assert re.search(rf"^{name} ==", spec, flags=re.MULTILINE), name


def test_safety_configs_check_every_property(spec_dir, manifest):
    for entry in manifest.values():
        if entry.mode == "counterexample" and entry.expected == "EverySampleEventuallyAckedOrDead":
            continue  # a liveness counterexample leaves out the invariant that would stop TLC first
        sections = cfg_sections(spec_dir / entry.config)
        assert sections["INVARIANT"] == list(STATE_INVARIANTS), entry.name
        assert sections["PROPERTY"][:4] == list(TRANSITION_INVARIANTS), entry.name


def test_symmetry_only_where_sound(spec_dir, manifest):
    for entry in manifest.values():
        sections = cfg_sections(spec_dir / entry.config)
        liveness = sections["SPECIFICATION"] == ["FairSpec"]
        if liveness or entry.agreement is not None:
            assert "SYMMETRY" not in sections, entry.name
    assert "SYMMETRY" in cfg_sections(spec_dir / manifest["MCSymmetry"].config)


def test_agreement_config_has_the_bounds_of_its_world(spec_dir, manifest):
    entry = manifest["MCAgreement"]
    world = make_world(**entry.agreement["world"])
    words = cfg_sections(spec_dir / entry.config)["CONSTANT"]
    constants = {words[i]: words[i + 2] for i in range(0, len(words), 3)}
    assert constants == {
        "Samples": "MCSamples",
        "SampleBytes": str(world.sizes[0]),
        "Consumers": "MCConsumers",
        "MaxDeliveries": str(world.cfg.max_deliveries),
        "VisibilityTimeout": str(world.cfg.visibility_timeout),
        "Horizon": str(world.horizon),
        "High": str(world.cfg.high),
        "Low": str(world.cfg.low),
        "Capacity": str(world.cfg.capacity_bytes),
        "AnchorConsumer": "FALSE",
        "ReleaseScrubs": "FALSE",
        "TimeNeverStops": "FALSE",
        "NoLease": "NoLease",
        "NoDeadline": "NoDeadline",
    }
    module = (spec_dir / entry.module).read_text()
    samples = ", ".join(f'"{s}"' for s in world.samples)
    assert f"MCSamples == <<{samples}>>" in module
    consumers = ", ".join(str(c) for c in range(world.consumers))
    assert f"MCConsumers == {{{consumers}}}" in module


def test_python_explorer_counts_match_the_agreement_entry(manifest):
    entry = manifest["MCAgreement"]
    result = explore(make_world(**entry.agreement["world"]))
    assert result.verdict == "ok"
    assert result.distinct_states == entry.distinct_states
    # TLC counts the initial state as generated, and its depth in states, not steps.
    assert result.transitions + 1 == entry.total_states
    assert result.depth + 1 == entry.depth
