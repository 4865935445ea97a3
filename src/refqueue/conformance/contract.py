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
from typing import Any

__all__ = ["CONFIG_KEYS", "Backend", "Capabilities", "backend_of", "load_backend", "rejection_kind"]

# The keyword arguments a factory may receive, in the order docs/API.md lists them.
CONFIG_KEYS = (
    "visibility_timeout",
    "high_watermark_bytes",
    "low_watermark_bytes",
    "on_pause",
    "on_resume",
    "max_deliveries",
    "dedup_window",
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


@dataclass(frozen=True)
class Backend:
    """A backend as the kit sees it (build one with ``backend_of`` or ``load_backend``)."""

    target: str  # "module:factory", or the factory's qualified name
    factory: Callable[..., Any]
    capabilities: Capabilities
    make_store: Callable[[], Any] | None = None


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
    return Backend(name, factory, capabilities, make_store)


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
            except Exception as again:  # found there, but it does not import
                raise _import_error(target, module_name, again) from again
        raise ValueError(
            f"backend target {target!r}: cannot import module {module_name!r} ({exc}); "
            f"install it or run from the directory that contains it"
        ) from exc
    except Exception as exc:  # the module exists but raises on import, or does not compile
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
