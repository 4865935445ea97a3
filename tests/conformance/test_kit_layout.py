"""The kit's layout is stated where a reader starts: every module of
``refqueue.conformance`` is named in the package docstring, and the phases
are listed there in the order ``phases.PHASES`` runs them."""

from __future__ import annotations

import pkgutil

import refqueue.conformance as kit
from refqueue.conformance import phases


def test_every_module_of_the_kit_is_named_in_the_package_docstring():
    doc = kit.__doc__ or ""
    missing = [m.name for m in pkgutil.iter_modules(kit.__path__) if f"``{m.name}``" not in doc]
    assert not missing, f"refqueue.conformance's docstring does not name {missing}: say what each holds and imports"


def test_every_phase_is_listed_in_the_order_it_runs():
    doc = kit.__doc__ or ""
    names = list(phases.PHASES)
    where = [doc.index(f"``{name}`` ") for name in names]
    assert where == sorted(where), f"the docstring lists the phases out of the order they run ({names})"
