"""The conformance kit: certify any queue backend against the reference model.

A backend is a factory ``make(store, clock, **config) -> queue`` (see
``refqueue.conformance.contract``); certify it with

    refqueue certify MODULE:FACTORY            # the command
    pytest --refqueue-backend=MODULE:FACTORY   # inside a pytest run
    refqueue.conformance.certify("module:factory")

The pieces: ``harness`` (one backend in lockstep with the model, every
observable compared), ``lockstep`` (the Hypothesis state machine over it),
``walks`` (random walks on, and an exhaustive cover of, the explorer's world
graph), ``history`` and ``linearizability`` (real multi-threaded histories
and their Wing & Gong check against the model), ``producers`` (several
producers blocked at once, with real threads: D8), ``render`` (a failing run as
a pytest function), ``certify`` (all of it, and the certificate).  Importing this package needs neither torch nor
Hypothesis; running a certification needs both.
"""

from refqueue.conformance.contract import CONFIG_KEYS, Backend, Capabilities, backend_of, load_backend, rejection_kind

__all__ = [
    "CONFIG_KEYS",
    "Backend",
    "Capabilities",
    "backend_of",
    "certify",
    "load_backend",
    "rejection_kind",
]


def certify(backend, **options):  # type: ignore[no-untyped-def]
    """``refqueue.conformance.certify.certify`` (imported on first use)."""
    from refqueue.conformance.certify import certify as run

    return run(backend, **options)
