"""No function in refqueue takes ``sys.stdout`` or ``sys.stderr`` as a default argument.

A default is evaluated once, when the module is imported, so such a function
keeps writing to the stream of that moment: a redirect made since
(``contextlib.redirect_stderr``, pytest's capture) is ignored, and a stream
closed since makes the call fail with "I/O operation on closed file".  That
is how ``refqueue torture`` once failed in CI, printing no report: its runner
had been imported under another test's capture.  The rule: default to None
and read ``sys.stderr`` when the call runs.
"""

from __future__ import annotations

import ast
import pathlib

import refqueue

PACKAGE = pathlib.Path(refqueue.__file__).resolve().parent
STREAMS = {"stdout", "stderr", "stdin"}


def _stream_defaults(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            defaults = list(node.args.defaults) + [d for d in node.args.kw_defaults if d is not None]
            for default in defaults:
                for sub in ast.walk(default):
                    if (isinstance(sub, ast.Attribute) and sub.attr in STREAMS
                            and isinstance(sub.value, ast.Name) and sub.value.id == "sys"):
                        found.append((default.lineno, ast.unparse(default)))
    return found


def test_the_rule_finds_a_stream_bound_at_import():
    tree = ast.parse("import sys\ndef f(x, out=sys.stderr): pass\ng = lambda *, s=(sys.stdout,): s\n")
    assert _stream_defaults(tree) == [(2, "sys.stderr"), (3, "(sys.stdout,)")]


def test_no_default_argument_is_a_standard_stream():
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, text in _stream_defaults(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: default {text}")
    assert bad == [], "\n".join(bad)
