"""The legal variants (``conformance/legal``) use a freedom the contract gives
them; the ci profile certifies each, and lists what it did not check.

The default run certifies each variant with every phase's short pass (the
ci profile's ``short()``: what ``--fail-fast`` runs first, every check of every
phase on fewer walks, examples and histories), about a fifth of the time, and
the tests of what seed_api lists and walks read its certificate; the tests
marked slow certify each with the whole ci profile."""

import pytest

from conformance.legal import LEGAL
from refqueue.conformance.certify import PHASES, PROFILES, certify

pytestmark = pytest.mark.torch


def _certified(target, profile):
    cert = certify(target, profile=profile, phases=PHASES)
    _assert_certified(cert)
    return cert


def _assert_certified(cert):
    assert cert.passed, f"{cert.failure}\n{cert.counterexample}"
    lacking = [name for name, value in cert.capabilities.items() if not value]
    assert len(cert.not_checked) >= len(lacking)


@pytest.fixture(scope="module")
def short_passes():
    """Each variant's certificate of every phase's short pass, made once in this
    module (per worker) for the tests that only read it."""
    return {}


def _short_pass(target, short_passes):
    if target not in short_passes:
        short_passes[target] = _certified(target, PROFILES["ci"].short())
    return short_passes[target]


@pytest.mark.parametrize("target", LEGAL)
def test_every_phase_short_pass_certifies_legal_variant(target, short_passes):
    _assert_certified(_short_pass(target, short_passes))


@pytest.mark.slow
@pytest.mark.parametrize("target", LEGAL)
def test_ci_profile_certifies_legal_variant(target):
    _certified(target, "ci")


# The two tests below read seed_api's short pass (the parametrized test above): what they
# assert is what it lists and which world it walks, not how long it walks; its whole ci
# certification is test_ci_profile_certifies_legal_variant (slow), as every variant's is.
SEED_API = "conformance.legal.seed_api:make"


def test_seed_api_lists_the_checks_it_cannot_take(short_passes):
    # the two phases whose checks it cannot take
    cert = _short_pass(SEED_API, short_passes)
    assert cert.phases["producers"]["skipped"]
    checks = " ".join(str(n) for n in cert.not_checked)
    for name in (
        "put-abort-when", "callbacks-outside-locks", "callbacks-in-order", "callback-errors-propagate", "callbacks-after-an-error"
    ):
        assert name in checks, checks


def test_seed_api_walks_its_reduced_world(short_passes):
    cert = _short_pass(SEED_API, short_passes)
    walks = cert.phases["walks"]
    assert walks["steps"] > 0 and "skipped" not in walks
    assert "no extend" in walks["reduced_world"] and "no max_deliveries" in walks["reduced_world"]
    checks = [n["check"] for n in cert.not_checked]
    assert "producers phase" in checks and any("extend" in c for c in checks)


@pytest.mark.slow  # every transition of the reduced world graph: about 70 s alone on 2 cores
def test_seed_api_is_certified_exhaustively_on_its_reduced_world():
    cert = certify("conformance.legal.seed_api:make", profile="ci", exhaustive=True, phases=("construction", "walks"))
    assert cert.passed, f"{cert.failure}\n{cert.counterexample}"
    assert "walks" not in cert.phases and "skipped" not in cert.phases["exhaustive"]
    exhaustive = cert.phases["exhaustive"]
    assert exhaustive["steps"] > 0
    assert "no extend" in exhaustive["reduced_world"] and "no max_deliveries" in exhaustive["reduced_world"]
    graph = cert.coverage["world_graph"]
    assert graph["transitions"] == graph["transitions_total"] > 0  # every transition of the reduced world taken
    checks = [n["check"] for n in cert.not_checked]
    for what in ("extend", "max_deliveries", "dedup_window", "dead_letter", "acquire_nowait", "Lease.to_json"):
        assert any(c.startswith(what) for c in checks), (what, checks)
    markdown = cert.to_markdown()
    assert "## Not checked" in markdown and "extend=False declared" in markdown
