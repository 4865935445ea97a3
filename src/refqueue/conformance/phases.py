"""The phases of a certification, in the order they run (the cheap ones
first), and where each lives: phase ``NAME`` is the module
``refqueue.conformance.NAME``, whose ``PHASE`` implements
``refqueue.conformance.phase.Phase``.  A module of its own so that the
command line can offer the names without importing the kit; ``phase(name)``
imports a phase's module on first use."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["PHASES", "phase", "phase_of_entry"]

# calls and faults check fresh queues in a few dozen calls each; the walks take
# thousands of steps (minutes against a server), so a fault is found before them.
PHASES = ("construction", "calls", "faults", "walks", "producers", "blocking", "threads", "lockstep")


def phase(name: str) -> Any:
    """The ``PHASE`` object of phase ``name`` (one of ``PHASES``)."""
    if name not in PHASES:
        raise ValueError(f"unknown phase {name!r}; use one of {PHASES}")
    return importlib.import_module(f"refqueue.conformance.{name}").PHASE


def phase_of_entry(entry: str) -> Any:
    """The phase that writes the certificate entry ``entry`` (its name, or one of its ``keys``)."""
    for name in PHASES:
        found = phase(name)
        if entry == name or entry in found.keys:
            return found
    raise ValueError(f"no phase writes the certificate entry {entry!r}")
