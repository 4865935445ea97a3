"""Build hook (all metadata is in pyproject.toml): ship the TLA+ spec inside
the package.

The spec lives at the repository's top (``spec/``: SampleRefQueue.tla, the MC
modules and configs, manifest.json, mutants.json), outside ``src/``; the wheel
gets a copy at ``refqueue/spec/`` so that ``refqueue check-spec`` works from an
installed package (``refqueue.spec_check.manifest.default_spec_dir`` looks
there first).  An editable install needs no copy: it finds the checkout's
``spec/``.  MANIFEST.in puts ``spec/`` in the sdist, so a wheel built from the
sdist has it too.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SPEC = Path(__file__).resolve().parent / "spec"
SPEC_FILES = ("*.tla", "*.cfg", "manifest.json", "mutants.json", "README.md")


def spec_files() -> list[Path]:
    found = sorted({p for pattern in SPEC_FILES for p in SPEC.glob(pattern) if p.is_file()})
    for needed in ("SampleRefQueue.tla", "manifest.json", "mutants.json"):
        if not (SPEC / needed).is_file():
            raise SystemExit(f"setup.py: {SPEC / needed} is missing; the wheel must ship the whole spec")
    return found


class BuildPyWithSpec(build_py):
    """build_py, then copy ``spec/`` to ``<build_lib>/refqueue/spec/``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = Path(self.build_lib) / "refqueue" / "spec"
        self.mkpath(str(dest))
        for path in spec_files():
            self.copy_file(str(path), str(dest / path.name))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            dest = Path(self.build_lib) / "refqueue" / "spec"
            outputs += [str(dest / p.name) for p in spec_files()]
        return outputs


setup(cmdclass={"build_py": BuildPyWithSpec})
