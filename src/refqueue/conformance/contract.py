"""What a backend hands the conformance kit: a factory, its capabilities, and
optionally a store factory.

A *backend* is a callable ``make(store, clock, **config) -> queue`` that
returns an object with the public ``SampleRefQueue`` API of ``docs/API.md``,
bound to ``store`` (a ``FeatureStore``) and reading "now" from ``clock``.
The kit passes only these ``config`` keys, and only those the backend's
capabilities allow:

``visibility_timeout``
    seconds (a number; the factory wraps it in its ``VisibilityTimeout``)
``high_watermark_bytes`` / ``low_watermark_bytes``
    the queue's watermark overrides (either may be absent: the store's own
    watermark applies then, D4)
``max_deliveries`` / ``dedup_window``
    D7 / D5, only when declared
``dead_letter_limit``
    how many dead letters ``dead_letters()`` keeps (the oldest dropped
    first), only when declared (``Capabilities.dead_letter_limit``)
``on_pause`` / ``on_resume``
    callbacks taking a ``StoreHealth``; always passed

The factory may carry two attributes:

``capabilities``
    a ``Capabilities`` (default: everything ``docs/API.md`` specifies, strict
    FIFO, honouring the injected clock)
``make_store``
    a zero-argument callable returning the ``FeatureStore`` to run against
    (default: the kit's ``LocalFeatureStore(device="cpu")`` with the caps and
    watermarks each run asks for, all others off)
``faults``
    the ``FaultHooks`` of a backend that declares ``Capabilities(faults=True)``:
    what the ``faults`` phase uses to lose replies, kill a client between its
    commit and its scrub, restart the server and open more clients
``open_client``
    ``open_client(queue, store, clock) -> queue``: another client of the same
    queue, as a process on another machine opens it (the same configuration
    and callbacks, bound to ``store``); ``clock`` is that machine's clock,
    ``CLIENT_SKEW`` seconds off the factory's.  A backend that offers it is
    driven through two clients at once by the walks, lockstep, threads and
    blocking phases (``CLIENTS``)

The kit drives a backend only through that public API, never through private
attributes, and maps a rejected call to the model's rejection kind with
``rejection_kind``.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "CLIENTS", "CLIENT_SKEW", "CONFIG_KEYS", "Backend", "Capabilities", "ClientCrashed", "FaultHooks", "backend_of", "load_backend",
    "rejection_kind",
]

# How many clients of one queue the kit drives when the backend can open more
# (``open_client``), and how far the clock of the i-th opened client is off the
# factory's: +0.5 s, then -0.5 s, ... (a machine ahead, one behind).  Half a
# second: never a whole number of the worlds' ticks, so a deadline or a reclaim
# computed on a client's own clock differs from the queue's.
CLIENTS = 2
CLIENT_SKEW = 0.5

# The keyword arguments a factory may receive, in the order docs/API.md lists them.
CONFIG_KEYS = (
    "visibility_timeout",
    "high_watermark_bytes",
    "low_watermark_bytes",
    "on_pause",
    "on_resume",
    "max_deliveries",
    "dedup_window",
    "dead_letter_limit",
)


@dataclass(frozen=True)
class Capabilities:
    """What a backend implements of ``docs/API.md``; every flag defaults to yes.

    ``fifo``
        strict FIFO delivery; ``False``: ``acquire`` may return any pending
        ref (the kit checks it against ``refqueue.model.allowed_acquires``)
    ``extend`` / ``dead_letter``
        the ``extend`` and ``dead_letter`` calls exist (D7)
    ``max_deliveries`` / ``dedup_window``
        the constructor keywords of the same name are honoured (D7, D5)
    ``injected_clock``
        deadlines are read from the ``clock`` handed to the factory; without
        it the kit never lets time pass and compares no deadline
    ``acquire_nowait``
        ``acquire_nowait()`` exists; without it the kit calls ``acquire`` only
        where the model says it returns at once (something pending, or drained)
    ``abort_when``
        ``put_blocks_until_below`` takes ``abort_when``; without it the kit
        makes a blocking put only where the model says it enqueues at once
    ``lease_json``
        ``Lease.to_json()``/``Lease.from_json()`` exist (copies are still checked)
    ``reclaimer``
        ``start_reclaimer(interval)``/``stop_reclaimer()`` exist (the blocking
        phase's reclaimer checks run only with it)
    ``faults``
        the factory carries ``FaultHooks`` as its ``faults`` attribute, and the
        backend keeps D9 under the faults they inject (the ``faults`` phase).
        Defaults to no: a backend opts in
    ``dead_letter_limit``
        the constructor keyword ``dead_letter_limit`` is honoured: the queue
        keeps the newest that many dead letters, dropping the oldest (and
        counting them in ``dead_letters_dropped``, where it has it).  Defaults
        to no, as the kit began to pass the keyword after factories were
        written that forward every keyword they get to a constructor without
        it: a backend opts in, and the calls phase's ``dead-letter-limit``
        check runs

    A capability declared absent shrinks the world the kit drives (the walks
    and ``--exhaustive`` run on the world graph without those actions); the
    certificate lists each check that did not run and why.
    """

    fifo: bool = True
    extend: bool = True
    max_deliveries: bool = True
    dedup_window: bool = True
    dead_letter: bool = True
    injected_clock: bool = True
    acquire_nowait: bool = True
    abort_when: bool = True
    lease_json: bool = True
    reclaimer: bool = True
    faults: bool = False
    dead_letter_limit: bool = False

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if type(value) is not bool:
                raise TypeError(
                    f"Capabilities.{f.name} must be a bool, got {value!r} ({type(value).__name__}); "
                    f"pass True or False"
                )

    def to_dict(self) -> dict[str, bool]:
        return dataclasses.asdict(self)

    def lacking(self) -> list[str]:
        """Names of the capabilities declared absent (what the run did not check)."""
        return [name for name, value in self.to_dict().items() if not value]

    def left_out(self) -> list[dict[str, str]]:
        """What the phases that drive the model (walks, lockstep, threads) leave
        out for each capability declared absent: ``{"check", "why"}`` entries
        of the certificate's list of checks not run."""
        return [{"check": what, "why": f"{name}=False declared"} for name, what in LEFT_OUT.items() if not getattr(self, name)]


# What the model-driven phases leave out for each absent capability.
LEFT_OUT = {
    "fifo": "FIFO order (acquire is checked against every pending ref instead)",
    "extend": "extend: lease heartbeats (D7)",
    "max_deliveries": "max_deliveries: dead-lettering at the delivery cap (D7)",
    "dedup_window": "dedup_window: replayed ids refused (D5)",
    "dead_letter": "dead_letter: explicit dead-lettering (D7)",
    "injected_clock": "deadlines and reclaims of expired leases (no time passes)",
    "acquire_nowait": "acquire_nowait: acquire is made only where it returns at once",
    "abort_when": "put_blocks_until_below(abort_when=): blocking puts that would wait",
    "lease_json": "Lease.to_json/from_json round trips",
}


class ClientCrashed(BaseException):
    """What a fault hook raises when it kills a client in the middle of a call
    (``FaultHooks.crash_after_commit``): the client is gone, and the kit never
    uses it again.  A ``BaseException``, so a backend's own ``except
    Exception`` does not swallow it."""


@runtime_checkable
class FaultHooks(Protocol):
    """What a backend with ``Capabilities(faults=True)`` gives the ``faults``
    phase (the factory's ``faults`` attribute); docs/CERTIFYING.md has the
    contract of each.

    ``intent_timeout``
        seconds of the queue's clock after which a dead client's scrub intent
        is collectable: ``reclaim_expired`` (and the background reclaimer)
        collects it then
    ``lose_next_reply(queue)``
        the next call of that client that changes state runs on the server,
        then its reply is lost: the call raises an error of kind ``"unavailable"``
    ``crash_after_commit(queue)``
        the next completion of that client (ack, dead_letter, a fail or reclaim
        that dead-letters) commits, then the client dies: ``ClientCrashed``
    ``restart(queue, durable=..., down_for=...)``
        the server restarts keeping every acknowledged write (durable) or
        empty, unreachable for at least ``down_for`` seconds in between (the
        kit passes it only to a hook whose signature names it: a hook without
        it restarts as fast as it can); ``None`` when done, or why it cannot
        (the check is not run)
    ``open_client(queue, store)``
        another client of the same queue in this process
    ``refuse_writes(queue, refuse)`` (optional, looked up by name)
        the server refuses (``refuse=True``) or takes again every call that
        changes state; ``None`` when done, or why it cannot
    ``checkpoint(queue)`` / ``rewind(queue)`` (optional, not in the protocol's
    methods: looked up by name)
        remember the server's state; bring the server back with it, every
        write since lost; ``None`` when done, or why it cannot
    ``client_spec(queue)`` / ``open_from_spec(spec, store, clock)``
        JSON naming the queue, and a client of it opened from that JSON in
        another (spawned) process
    """

    intent_timeout: float

    def lose_next_reply(self, queue: Any) -> None: ...

    def crash_after_commit(self, queue: Any) -> None: ...

    def restart(self, queue: Any, *, durable: bool, down_for: float = 0.0) -> str | None: ...

    def open_client(self, queue: Any, store: Any) -> Any: ...

    def client_spec(self, queue: Any) -> dict[str, Any]: ...

    def open_from_spec(self, spec: dict[str, Any], store: Any, clock: Any) -> Any: ...


@dataclass(frozen=True)
class Backend:
    """A backend as the kit sees it (build one with ``backend_of`` or ``load_backend``)."""

    target: str  # "module:factory", or the factory's qualified name
    factory: Callable[..., Any]
    capabilities: Capabilities
    make_store: Callable[[], Any] | None = None
    faults: FaultHooks | None = None
    open_client: Callable[[Any, Any, Any], Any] | None = None
    client_count: int = CLIENTS  # clients driven at once where open_client opens more (certify(clients=))

    @property
    def clients(self) -> int:
        """How many clients of one queue the kit drives at once."""
        return self.client_count if self.open_client is not None else 1


def backend_of(factory: Callable[..., Any], target: str | None = None) -> Backend:
    """The ``Backend`` of ``factory``, reading its ``capabilities`` and
    ``make_store`` attributes (both optional)."""
    if not callable(factory):
        what = f"backend target {target!r} names" if target else "got"
        raise TypeError(
            f"{what} a {type(factory).__name__}, not a callable make(store, clock, **config); "
            f"pass the factory function itself"
        )
    name = target or f"{getattr(factory, '__module__', '?')}:{getattr(factory, '__qualname__', repr(factory))}"
    capabilities = getattr(factory, "capabilities", None)
    if capabilities is None:
        capabilities = Capabilities()
    elif not isinstance(capabilities, Capabilities):
        raise TypeError(
            f"{name}.capabilities must be a refqueue.conformance.Capabilities, got "
            f"{capabilities!r} ({type(capabilities).__name__}); build it with Capabilities(...)"
        )
    make_store = getattr(factory, "make_store", None)
    if make_store is not None and not callable(make_store):
        raise TypeError(
            f"{name}.make_store must be a zero-argument callable returning a FeatureStore, got "
            f"{make_store!r}; remove it to use the kit's LocalFeatureStore"
        )
    open_client = getattr(factory, "open_client", None)
    if open_client is not None and not callable(open_client):
        raise TypeError(
            f"{name}.open_client must be a callable open_client(queue, store, clock) returning another client of "
            f"queue, got {open_client!r}; remove it to drive one client"
        )
    faults = getattr(factory, "faults", None)
    if capabilities.faults:
        if faults is None:
            raise TypeError(
                f"{name} declares Capabilities(faults=True) but has no faults attribute; give the factory its "
                f"FaultHooks (factory.faults = ...), or declare faults=False"
            )
        missing = [
            attr for attr in ("intent_timeout", "lose_next_reply", "crash_after_commit", "restart", "open_client",
                              "client_spec", "open_from_spec")
            if not hasattr(faults, attr)
        ]
        if missing:
            raise TypeError(
                f"{name}.faults is {faults!r}, which lacks {', '.join(missing)} of refqueue.conformance.FaultHooks; "
                f"implement them (docs/CERTIFYING.md, the faults phase)"
            )
        timeout = faults.intent_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < 3600:
            raise TypeError(
                f"{name}.faults.intent_timeout must be a number of seconds in (0, 3600), got {timeout!r}; "
                f"state after how long a dead client's scrub intent is collectable"
            )
    else:
        faults = None  # not declared: the faults phase does not run, whatever the factory carries
    return Backend(name, factory, capabilities, make_store, faults, open_client)


def load_backend(target: str) -> Backend:
    """Import ``"module:factory"`` (``factory`` may be dotted: ``"mod:Class.make"``).

    A module that is not importable from ``sys.path`` is looked up again from
    the current directory, as ``python -m`` would.  Raises ``ValueError``
    naming the target and the fix for a malformed target, a module that does
    not import or an attribute that is not there.
    """
    if not isinstance(target, str):
        raise TypeError(f"a backend target must be a 'module:factory' str, got {target!r} ({type(target).__name__})")
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr or ":" in attr:
        raise ValueError(
            f"backend target {target!r} is not of the form 'module:factory'; "
            f"pass e.g. 'refqueue.conformance.backends:inprocess'"
        )
    module = _import(target, module_name)
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(
                f"backend target {target!r}: module {module_name!r} has no attribute {attr!r}; "
                f"name a factory make(store, clock, **config) defined there"
            ) from None
    return backend_of(obj, target)


def _import(target: str, module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        missing = exc.name or ""
        ours = module_name == missing or module_name.startswith(missing + ".")
        if missing and ours and cwd not in sys.path:
            sys.path.insert(0, cwd)
            try:
                return importlib.import_module(module_name)
            except ModuleNotFoundError:
                sys.path.remove(cwd)
            except (Exception, SystemExit) as again:  # found there, but it does not import
                raise _import_error(target, module_name, again) from again
        raise ValueError(
            f"backend target {target!r}: cannot import module {module_name!r} ({exc}); "
            f"install it or run from the directory that contains it"
        ) from exc
    except (Exception, SystemExit) as exc:  # it exists but raises on import (sys.exit() too), or does not compile
        raise _import_error(target, module_name, exc) from exc


def _import_error(target: str, module_name: str, exc: BaseException) -> ValueError:
    return ValueError(
        f"backend target {target!r}: importing module {module_name!r} raised {type(exc).__name__}: {exc}; "
        f"fix the module"
    )


def rejection_kind(exc: BaseException) -> str | None:
    """The model's rejection kind for an exception a backend raised, or None
    for one that is no rejection at all (a crash of the backend).

    An exception class carrying ``KIND`` (every ``refqueue.errors`` class
    does) answers with it; a plain ``TypeError``/``ValueError`` is an argument
    error, kind ``"invalid"``.
    """
    kind = getattr(type(exc), "KIND", None)
    if isinstance(kind, str):
        return kind
    if isinstance(exc, (TypeError, ValueError)):
        return "invalid"
    return None
