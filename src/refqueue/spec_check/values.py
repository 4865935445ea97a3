"""Read the TLA+ values TLC prints (in traces and in ``-dump dot`` labels).

``parse_value(text)`` turns one printed value into Python data:

=========================  ==========================================
TLC prints                 Python
=========================  ==========================================
``42``, ``-1``             ``int``
``"s0"``                   ``str`` (escapes ``\\"``, ``\\\\``, ``\\n``, ``\\t``)
``TRUE`` / ``FALSE``       ``bool``
``NoLease``                ``ModelValue("NoLease")`` (a model value)
``<<a, b>>``               ``tuple`` (a sequence; ``<<>>`` is also the
                           function with the empty domain)
``{a, b}``                 ``frozenset``
``[f |-> a, g |-> b]``     ``dict`` keyed by field name (a record, or a
                           function on identifier-like strings)
``(k :> a @@ j :> b)``     ``dict`` keyed by the parsed ``k``, ``j``
=========================  ==========================================

``parse_state(text)`` reads a whole state, ``/\\ var = value`` per variable,
into a ``dict``.  Anything else is rejected with ``TlaValueError`` naming
the offending text and its position: the agreement check must never guess.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["ModelValue", "TlaValueError", "parse_value", "parse_state"]


class ModelValue(NamedTuple):
    """An uninterpreted constant of a TLC model (``NoLease``, ``c1``)."""

    name: str


class TlaValueError(ValueError):
    """Text that is not a TLA+ value as TLC prints it."""


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<str>"(?:[^"\\]|\\.)*")
      | (?P<int>-?\d+)
      | (?P<op><<|>>|\|->|:>|@@|[\[\]{}(),])
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<bad>\S)
    )""",
    re.VERBOSE,
)
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "f": "\f"}
_MISSING = object()
_VAR_HEAD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*) = ")


def _unescape(body: str, text: str) -> str:
    if "\\" not in body:
        return body
    out: list[str] = []
    chars = iter(body)
    for ch in chars:
        if ch != "\\":
            out.append(ch)
            continue
        esc = next(chars)
        if esc not in _ESCAPES:
            raise TlaValueError(f"unknown string escape \\{esc} in {text!r}; TLC prints only \\\" \\\\ \\n \\t \\r \\f")
        out.append(_ESCAPES[esc])
    return "".join(out)


def _tokenize(text: str) -> list[tuple[str, object, int]]:
    """``(kind, value, position)`` for each token; kind is ``int``, ``str``,
    ``name`` or the operator itself."""
    tokens: list[tuple[str, object, int]] = []
    pos, end = 0, len(text)
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None:  # only trailing whitespace is left
            break
        kind = m.lastgroup
        tok = m.group(kind)  # type: ignore[arg-type]
        if kind == "bad":
            raise TlaValueError(f"unexpected character {tok!r} at position {m.start(kind)} of {_clip(text)!r}")
        if kind == "int":
            tokens.append(("int", int(tok), m.start(kind)))
        elif kind == "str":
            tokens.append(("str", _unescape(tok[1:-1], text), m.start(kind)))
        elif kind == "op":
            tokens.append((tok, tok, m.start(kind)))
        else:
            tokens.append(("name", tok, m.start(kind)))
        pos = m.end()
    return tokens


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


class _Parser:
    __slots__ = ("text", "tokens", "i")

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    def fail(self, what: str) -> TlaValueError:
        if self.i < len(self.tokens):
            kind, value, pos = self.tokens[self.i]
            where = f"{value!r} at position {pos}"
        else:
            where = "the end of the text"
        return TlaValueError(f"expected {what} but found {where} in {_clip(self.text)!r}")

    def peek(self) -> str | None:
        return self.tokens[self.i][0] if self.i < len(self.tokens) else None

    def expect(self, kind: str) -> object:
        if self.peek() != kind:
            raise self.fail(repr(kind))
        value = self.tokens[self.i][1]
        self.i += 1
        return value

    def value(self) -> object:
        kind = self.peek()
        if kind is None:
            raise self.fail("a value")
        if kind in ("int", "str"):
            value = self.tokens[self.i][1]
            self.i += 1
            return value
        if kind == "name":
            name = self.tokens[self.i][1]
            self.i += 1
            if name == "TRUE":
                return True
            if name == "FALSE":
                return False
            return ModelValue(name)  # type: ignore[arg-type]
        if kind == "<<":
            self.i += 1
            return tuple(self.items(">>"))
        if kind == "{":
            self.i += 1
            items = self.items("}")
            try:
                return frozenset(items)
            except TypeError:
                raise TlaValueError(
                    f"a set of records or functions is not supported in {_clip(self.text)!r}; "
                    f"the refqueue spec's variables hold none"
                ) from None
        if kind == "[":
            self.i += 1
            return self.record()
        if kind == "(":
            self.i += 1
            return self.function()
        raise self.fail("a value")

    def items(self, close: str) -> list[object]:
        out: list[object] = []
        if self.peek() == close:
            self.i += 1
            return out
        while True:
            out.append(self.value())
            if self.peek() == ",":
                self.i += 1
                continue
            self.expect(close)
            return out

    def record(self) -> dict[object, object]:
        out: dict[object, object] = {}
        while True:
            field = self.expect("name")
            self.expect("|->")
            if field in out:
                raise TlaValueError(f"field {field!r} appears twice in {_clip(self.text)!r}")
            out[field] = self.value()
            if self.peek() == ",":
                self.i += 1
                continue
            self.expect("]")
            return out

    def function(self) -> dict[object, object]:
        out: dict[object, object] = {}
        while True:
            key = self.value()
            self.expect(":>")
            value = self.value()
            try:
                if key in out:
                    raise TlaValueError(f"key {key!r} appears twice in {_clip(self.text)!r}")
                out[key] = value
            except TypeError:
                raise TlaValueError(
                    f"a function whose domain holds records or functions is not supported in "
                    f"{_clip(self.text)!r}"
                ) from None
            if self.peek() == "@@":
                self.i += 1
                continue
            self.expect(")")
            return out

    def done(self) -> None:
        if self.i != len(self.tokens):
            raise self.fail("the end of the value")


def parse_value(text: str) -> object:
    """One TLA+ value as TLC prints it (see the module docstring)."""
    if not isinstance(text, str):
        raise TypeError(f"parse_value needs the printed value as a str, got {type(text).__name__}")
    parser = _Parser(text)
    value = parser.value()
    parser.done()
    return value


def _variables(stripped: str) -> list[tuple[str, str]]:
    """(name, printed value) of each variable of a state, in order: each line
    that starts with ``/\\ name = `` starts one (found by splitting at the line
    starts, not by a pattern tried at every character); a line that starts
    with ``/\\ `` but names no variable belongs to the value before it."""
    out: list[tuple[str, str]] = []
    chunks = stripped.split("\n/\\ ")
    for k, chunk in enumerate(chunks):
        if k == 0:
            m = _VAR_HEAD.match(chunk, 3) if chunk.startswith("/\\ ") else None
        else:
            m = _VAR_HEAD.match(chunk)
        if m is not None:
            out.append((m.group(1), chunk[m.end():]))
        elif out:
            name, value = out[-1]
            out[-1] = (name, value + "\n/\\ " + chunk)
        else:
            raise TlaValueError(f"expected '/\\ var = value' lines, got {_clip(stripped)!r}")
    return out


def parse_state(text: str, cache: dict[str, object] | None = None) -> dict[str, object]:
    """A state as TLC prints it: ``/\\ var = value`` for each variable (or a
    bare ``var = value`` when the spec has only one).

    ``cache`` (printed value -> parsed value) saves re-parsing the values many
    states share (a state graph repeats most of them); the parsed values are
    then shared between states, so callers must not mutate them."""
    if not isinstance(text, str):
        raise TypeError(f"parse_state needs the printed state as a str, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped.startswith("/\\"):
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*) = ", stripped)
        if m is None:
            raise TlaValueError(f"expected '/\\ var = value' lines, got {_clip(stripped)!r}")
        return {m.group(1): parse_value(stripped[m.end():])}
    state: dict[str, object] = {}
    for name, piece in _variables(stripped):
        if name in state:
            raise TlaValueError(f"variable {name!r} appears twice in {_clip(stripped)!r}")
        if cache is None:
            state[name] = parse_value(piece)
            continue
        value = cache.get(piece, _MISSING)
        if value is _MISSING:
            value = cache[piece] = parse_value(piece)
        state[name] = value
    return state
