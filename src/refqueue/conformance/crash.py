"""Whose exception is it: the backend's (a failure of the phase it escaped) or
the kit's own (a bug to report)?

A phase drives the backend through its factory, its queue, its leases and the
store it runs on.  An exception that escapes a phase is *the backend's* when

- below the deepest frame of the kit (``refqueue.conformance``) the traceback
  passes through code that is neither the kit, nor the standard library, nor
  what the kit itself computes with (torch, Hypothesis, numpy, pytest, the
  reference model, ``refqueue.refs``/``clock``/``errors``): the backend's
  modules, ``refqueue.queue``, a store (the kit's ``LocalFeatureStore``
  included: the store is part of the run, and its ``StoreFull`` says the run
  did not fit it or the backend left data resident);
- or it was raised at the kit's own line, looking up an attribute the
  backend's object lacks (``AttributeError`` whose ``obj`` is not the kit's),
  or calling a method of the public API with arguments the backend's
  signature does not take (``TypeError: put_blocks_until_below() got an
  unexpected keyword argument 'abort_when'``).

Anything else is the kit's: ``KitBug`` carries it out of ``certify``, and
``refqueue certify`` exits 2 asking for a report, never 1 (a divergence).

``blame(exc)`` answers with a ``Crash`` (what raised, where, from which line
of the kit, and what to fix) or ``None`` for the kit's own.
"""

from __future__ import annotations

import linecache
import re
import sys
import traceback
from dataclasses import dataclass
from types import TracebackType
from typing import Any

__all__ = ["CAPABILITY_OF", "Crash", "KitBug", "blame"]

# The calls a capability declared absent spares the backend (docs/CERTIFYING.md, Capabilities).
CAPABILITY_OF = {
    "start_reclaimer": "reclaimer",
    "stop_reclaimer": "reclaimer",
    "extend": "extend",
    "dead_letter": "dead_letter",
    "acquire_nowait": "acquire_nowait",
    "to_json": "lease_json",
    "from_json": "lease_json",
    "abort_when": "abort_when",
}

# The methods of docs/API.md and docs/CERTIFYING.md the kit calls on a backend's objects.
_API = frozenset({
    "put", "put_blocks_until_below", "acquire", "acquire_nowait", "ack", "fail", "extend", "dead_letter",
    "dead_letters", "reclaim_expired", "close", "start_reclaimer", "stop_reclaimer", "pending_count",
    "outstanding_count", "to_json", "from_json", "make", "make_store", "__init__", "__enter__", "__exit__", "scrub",
    "health", "get", "release", "gc",
})  # fmt: skip
_SIGNATURE = re.compile(
    r"^(?P<name>[\w.<>]+)\(\) (got an unexpected keyword argument|got multiple values|missing \d+ required|takes )"
)
# What the kit computes with besides itself and the standard library (module names, by prefix).
_KIT_USES = ("torch", "hypothesis", "numpy", "_pytest", "pytest", "pluggy", "refqueue.model", "refqueue.refs",
             "refqueue.clock", "refqueue.errors", "refqueue._redact")  # fmt: skip


class KitBug(Exception):
    """An exception of the kit itself escaped a phase: not the backend's fault."""

    def __init__(self, phase: str, error: BaseException) -> None:
        self.phase = phase
        self.error = error
        super().__init__(
            f"the conformance kit itself failed in the {phase} phase ({type(error).__name__}: {error}); this is a bug "
            f"in the kit, not a verdict on the backend: please report it to the refqueue maintainers "
            f"with this message, the traceback below, the command line and the kit's version"
        )

    def details(self) -> str:
        """The traceback of the kit's exception, for the report."""
        return "".join(traceback.format_exception(type(self.error), self.error, self.error.__traceback__))


@dataclass(frozen=True)
class Crash:
    """A backend's exception that escaped a phase: what it was, the kit's line
    that made the call, where in the backend it was raised (None: at that
    call), and what to fix."""

    exception: str  # "AttributeError: 'Q' object has no attribute 'start_reclaimer'"
    call: str  # the kit's source line that made the call
    call_site: str  # where that line is: "refqueue/conformance/calls.py:105"
    raised_at: str | None  # "file:line in function" of the backend's frame, if any
    fix: str

    def describe(self) -> str:
        where = f", raised at {self.raised_at}" if self.raised_at else ""
        return f"the backend raised {self.exception} at the kit's call `{self.call}` ({self.call_site}){where}; {self.fix}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "exception": self.exception, "call": self.call, "call_site": self.call_site, "raised_at": self.raised_at,
            "fix": self.fix,
        }  # fmt: skip


def _module(frame: Any) -> str:
    return str(frame.f_globals.get("__name__", ""))


def _is_kit(name: str) -> bool:
    return name == "refqueue.conformance" or name.startswith("refqueue.conformance.")


def _is_neutral(name: str) -> bool:
    """Code the kit computes with: the standard library and ``_KIT_USES``."""
    top = name.split(".", 1)[0]
    if top in sys.stdlib_module_names or name.startswith("<") or not name:
        return True
    return any(name == p or name.startswith(p + ".") for p in _KIT_USES)


def _frames(tb: TracebackType | None) -> list[tuple[Any, int]]:
    out = []
    while tb is not None:
        out.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return out


def _where(frame: Any, lineno: int) -> str:
    return f"{frame.f_code.co_filename}:{lineno} in {frame.f_code.co_name}"


def blame(exc: BaseException) -> Crash | None:
    """The ``Crash`` of a backend's exception, or None when it is the kit's own."""
    frames = _frames(exc.__traceback__)
    kit = [k for k, (frame, _) in enumerate(frames) if _is_kit(_module(frame))]
    if not kit:
        return None
    deepest = kit[-1]
    frame, lineno = frames[deepest]
    path = frame.f_code.co_filename
    line = linecache.getline(path, lineno).strip()
    site = f"{'refqueue/' + path.rsplit('/refqueue/', 1)[1] if '/refqueue/' in path else path}:{lineno}"
    text = f"{type(exc).__name__}: {exc}"
    below = [(f, n) for f, n in frames[deepest + 1:] if not _is_neutral(_module(f))]
    if below:
        return Crash(text, line, site, _where(*below[0]), _fix(exc))
    if deepest != len(frames) - 1:
        return None  # raised in what the kit computes with, called by the kit: the kit's
    obj = getattr(exc, "obj", None) if isinstance(exc, AttributeError) else None
    if obj is not None and not _is_kit(type(obj).__module__) and not _is_neutral(type(obj).__module__):
        return Crash(text, line, site, None, _fix(exc))
    if isinstance(exc, TypeError):
        found = _SIGNATURE.match(str(exc))
        if found and found.group("name").rsplit(".", 1)[-1] in _API:
            return Crash(text, line, site, None, _fix(exc))
    return None


def _fix(exc: BaseException) -> str:
    """What the backend's author should do about ``exc``."""
    if isinstance(exc, AttributeError):
        name = getattr(exc, "name", None)
        owner = type(getattr(exc, "obj", None)).__name__
        cap = CAPABILITY_OF.get(str(name))
        also = f", or declare Capabilities({cap}=False) on the factory if it does not offer it" if cap else ""
        return (
            f"docs/CERTIFYING.md requires {name!r} of the backend's {owner}: implement it{also}"
            if name else f"implement the attribute docs/CERTIFYING.md requires{also}"
        )
    if isinstance(exc, TypeError) and _SIGNATURE.match(str(exc)):
        also = ", or declare Capabilities(abort_when=False)" if "abort_when" in str(exc) else ""
        return f"give the call the signature docs/API.md states{also}"
    from refqueue.conformance.contract import rejection_kind

    if rejection_kind(exc) == "capacity":
        return (
            "the store refused data the kit wrote: the store the backend runs on (make_store) is too small for this "
            "phase, or the backend left data resident that an ack or dead letter should have scrubbed (D2)"
        )
    return (
        "only the rejections of docs/CERTIFYING.md (Rejections) may escape a call, and this call must not be rejected "
        "at all: make it return as docs/API.md says (or declare the capability absent, if it is one the backend "
        "does not offer)"
    )
