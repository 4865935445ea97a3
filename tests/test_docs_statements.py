"""The statements README.md, docs/API.md and docs/CERTIFYING.md all make are
made in the same words (issue 26: API.md gave D8's effective residency without
the stepping ref, and reclaim ties by sample_id, where the kit accepts any
order), and the contradicting short forms are gone."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/API.md", "docs/CERTIFYING.md")

D8 = (
    "`effective = max(0, resident_bytes - parked_bytes - own)`, where `own` is the stepping ref's `estimated_bytes` "
    "while it is not parked yet (a step counts its own ref as parked, once)"
)
TIES = (
    "Leases due at the same instant (a tie) are taken back in any order; the reference model lists them by "
    "`sample_id`, one of the orders the kit accepts."
)
GONE = ("`resident − parked_bytes`", "parked_bytes)` (D8", "ties by `sample_id`")
NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def _text(name):
    return re.sub(r"\s+", " ", (ROOT / name).read_text())


@pytest.mark.parametrize("doc", DOCS)
@pytest.mark.parametrize("statement", [D8, TIES], ids=["D8", "ties"])
def test_each_doc_makes_the_statement_in_the_same_words(doc, statement):
    assert statement in _text(doc)


@pytest.mark.parametrize("doc", DOCS)
def test_no_doc_keeps_a_contradicting_short_form(doc):
    text = _text(doc)
    assert [short for short in GONE if short in text] == []


def test_the_readme_counts_the_mutants_and_legal_variants_there_are():
    # the README's table said 54 and 4 long after there were more; the counts come from the folders
    import sys

    sys.path.insert(0, str(ROOT))
    try:
        from conformance.legal import LEGAL
        from conformance.mutants import MUTANTS
    finally:
        sys.path.remove(str(ROOT))
    said = f"rejects {len(MUTANTS)} deliberately broken ones (`conformance/mutants/`) and accepts {len(LEGAL)} legal variants"
    assert said in _text("README.md")


def test_certifying_counts_the_checks_of_each_phase_made_of_checks():
    # docs/CERTIFYING.md said the calls phase had 17 checks when it had 18; the counts come from the kit
    # (a phase whose row gives no count is left alone)
    from refqueue.conformance import blocking, calls, faults, producers

    text = _text("docs/CERTIFYING.md")
    for phase, module in (("calls", calls), ("blocking", blocking), ("faults", faults), ("producers", producers)):
        counts = re.findall(rf"\| `{phase}` \| (\d+) checks ", text)
        assert counts in ([], [str(len(module.CHECKS))]), (phase, counts, len(module.CHECKS))
    assert re.findall(r"\| `calls` \| (\d+) checks ", text) == [str(len(calls.CHECKS))]


def test_the_readme_counts_the_agreement_worlds_there_are():
    # the README said the agreement ran "at three sizes" when the manifest had six; the count comes from it
    from refqueue.spec_check.manifest import load_manifest

    worlds = sum(entry.agreement is not None for entry in load_manifest(ROOT / "spec"))
    said = f"compared with the explorer's in each config with an `agreement` entry ({NUMBERS[worlds]} worlds)"
    assert said in _text("README.md")

