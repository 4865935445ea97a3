"""Deliberately broken backends: each breaks one rule of docs/API.md in the
way a real implementation might, and the conformance kit must reject it.

``_base.py`` is a small, plainly correct backend the kit certifies; each
other module subclasses it (or, for ``release_scrubs`` and ``orphan_limit``,
breaks its store)
and exposes ``make``, so ``refqueue certify conformance.mutants.<name>:make``
exits 1.  ``MUTANTS`` lists them; ``python -m conformance.mutants`` certifies
each and writes the table of how many steps each took to be caught.
"""

from pathlib import Path

MUTANTS = tuple(sorted(p.stem for p in Path(__file__).parent.glob("*.py") if not p.stem.startswith("_")))
