"""The conformance kit: certify any queue backend against the reference model.

A backend is a factory ``make(store, clock, **config) -> queue`` (see
``refqueue.conformance.contract``); certify it with

    refqueue certify MODULE:FACTORY            # the command
    pytest --refqueue-backend=MODULE:FACTORY   # inside a pytest run
    refqueue.conformance.certify("module:factory")

Importing this package needs neither torch nor Hypothesis; running a
certification needs both.

Layout
------
A certification is a list of *phases* composed into one certificate.  A
phase is one module with one small interface (``phase``: its name, the
capabilities it needs, ``run(context) -> PhaseResult`` with its verdict,
counts, coverage, checks not run, failure and the source of its replay).
``certify`` runs them in the order of ``phases.PHASES`` and merges their
results; it knows nothing else of them, and adding a phase touches no other.

The phases, in the order they run (each module ``refqueue.conformance.NAME``):

``construction``  configurations the model rejects must make the factory
                  raise, those it accepts must construct.  Imports
                  ``harness`` (ModelConfig), ``session``, ``render``.
``calls``         the values and calls no walk makes (infinite poll interval,
                  the reclaimer twice, ``with queue:``, altered epochs, two
                  queues on one store, a failing scrub, JSON round trips, a
                  1,200-lease soak, dead letters drained while others are
                  made, bad arguments, one id put by four threads at once),
                  each a named check.  Imports ``calls_leases`` (a lease's
                  epoch, id, fields and JSON), ``calls_inputs`` (durations,
                  reasons and store URIs a queue must refuse; reasons, ids
                  and ref metadata of every shape kept exactly), ``calls_many``
                  (hundreds of dead letters; the oldest dropped past
                  ``dead_letter_limit``; a dedup window of hundreds of ids;
                  concurrent puts of one id),
                  ``calls_state`` (state handed out or kept long: callbacks'
                  health, returned lists, the deadline index, orphans),
                  ``calls_failures`` (an ack's or dead-letter's scrub
                  against the dedup window and kept dead letters, a
                  reclaim's dead-letter scrub, the clock under acquire,
                  extend and reclaim, and the background reclaimer's
                  reclaim, raising),
                  ``calls_reclaimer`` (when the reclaimer's thread ends),
                  ``calls_puts`` (the steps of a blocking put: a one-step
                  call parks nothing, every step validates the ref),
                  ``calls_clock`` (deadlines under a millisecond apart, a
                  clock reading NaN) and ``calls_scale`` (5,000 refs
                  pending and reclaimed at once; leases past 2**16) for
                  some of the checks, ``probe`` (one queue, its calls
                  judged), ``harness`` (the soak).
``faults``        for a backend that declares it (``Capabilities(faults=True)``
                  and ``FaultHooks``): lost replies at every state-changing
                  call, a client killed between commit and scrub, the
                  reclaimer under faults, durable and lossy server restarts,
                  and histories of clients in three processes checked for
                  linearizability, each a named check.  Imports
                  ``fault_replies`` and ``fault_crashes`` (the checks),
                  ``fault_run`` (a check's clients, model and history),
                  ``processes`` (the multi-process recording),
                  ``linearizability``, ``probe``.
``walks``         seeded random walks on (``--exhaustive``: a cover of every
                  transition of) the kit's world graphs, every step compared
                  with the model; coverage of the graphs and of the
                  interesting situations.  Imports ``worlds`` (the graphs and
                  what capabilities leave out), ``walker`` (the drivers),
                  ``coverage``, ``harness``.
``producers``     several producers blocked at once with real threads (D8:
                  the pre-D8 deadlock, an orphan, a stress run), each a named
                  check.  Imports ``producer_threads`` (threads and
                  bookkeeping), ``session``.
``blocking``      wakeups with real threads and bounded waits, backpressure,
                  callbacks, the reclaimer, each a named check.  Imports
                  ``blocking_checks`` (the catalogue: each check's name, what
                  it checks, its function, what it needs), which imports
                  ``blocking_consumers``, ``blocking_producers`` and
                  ``blocking_callbacks`` (the checks); ``wakeups`` (threads,
                  bounded waits, measured wakeups), ``timing`` (random
                  offsets of the waking calls, the escape probability of a
                  poller).
``threads``       real multi-threaded histories checked for linearizability;
                  an illegal one shrunk.  Imports ``history`` (recording),
                  ``linearizability`` (the Wing & Gong checker), ``shrink``.
``lockstep``      the Hypothesis state machine run in lockstep with the
                  model, a failure shrunk by deleting rules.  Imports
                  ``harness``, ``shrink``.

The shared pieces: ``backends`` (the in-repo backends' factories: ``inprocess``), ``contract`` (the factory, ``Capabilities``,
``FaultHooks``, ``ClientCrashed``, ``load_backend``), ``phase`` (the interface, ``Check``/``ChecksReport`` for
the phases made of named checks), ``phases`` (their names and modules, light
enough for the command line), ``profiles`` (``ci``, ``deep``), ``certify``
(the composition), ``crash`` (whose exception escaped a phase: the
backend's, a failure of the phase, or the kit's own, a ``KitBug``),
``certificate`` (the merged verdicts as JSON and Markdown), ``parallel`` (the
walks phase on ``-j`` worker processes, each loading the backend by name), ``harness`` (one backend in lockstep with the model, every
observable compared), ``session`` and ``samples`` (the kit's queues, stores
and tensors), ``render`` (a failing run as a pytest module), ``progress``,
``cli`` (``refqueue certify``) and ``plugin`` (``pytest --refqueue-backend``:
one test per phase, or per named check of a phase that is ``split``).
"""

from refqueue.conformance.contract import (
    CONFIG_KEYS,
    Backend,
    Capabilities,
    ClientCrashed,
    FaultHooks,
    backend_of,
    load_backend,
    rejection_kind,
)

__all__ = [
    "CONFIG_KEYS",
    "Backend",
    "Capabilities",
    "ClientCrashed",
    "FaultHooks",
    "backend_of",
    "certify",
    "load_backend",
    "rejection_kind",
]


def certify(backend, **options):  # type: ignore[no-untyped-def]
    """``refqueue.conformance.certify.certify`` (imported on first use)."""
    from refqueue.conformance.certify import certify as run

    return run(backend, **options)
