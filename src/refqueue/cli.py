"""The ``refqueue`` command: one subcommand per job, each in its own module.

Each module named in ``COMMANDS`` defines ``add_arguments(parser)`` and
``run(args) -> int``; it is imported only when its subcommand runs, so
``refqueue explore`` works without torch, redis or java.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# subcommand -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "explore": ("refqueue.model.explore_cli", "exhaustively explore the reference model at small bounds"),
    "check-spec": ("refqueue.spec_check", "model-check the TLA+ spec with TLC against spec/manifest.json"),
    "certify": ("refqueue.conformance.cli", "certify a queue backend against the reference model"),
    "bench": ("refqueue.bench", "benchmark the production queue and stores (prints JSON)"),
    "trace-check": ("refqueue.trace_check.cli", "check recorded event logs against the reference model"),
    "report": ("refqueue.report", "draw an HTML report (inline SVG) of a recorded event log"),
    "top": ("refqueue.top", "a live terminal view of a queue's metrics, from the event log it writes"),
    "torture": ("refqueue.torture.cli", "producer and consumer processes over Redis under faults, checked"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s module is imported (for its arguments)."""
    parser = argparse.ArgumentParser(prog="refqueue", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
        if name == command:
            importlib.import_module(module).add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    parser = build_parser(command)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    from refqueue._torch import TorchMissing, missing

    try:
        return int(importlib.import_module(args._module).run(args) or 0)
    except KeyboardInterrupt:  # Ctrl-C: the command's own cleanup (finally clauses) has run; one line, no traceback
        sys.stdout.flush()
        print(f"\nrefqueue {args.command}: interrupted; nothing after this point was checked or written", file=sys.stderr)
        return 130
    except TorchMissing as exc:  # a subcommand that needs torch, without it: what to install, no traceback
        print(f"refqueue {args.command}: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # the same for an `import torch` not behind require_torch
        if exc.name not in ("torch", "safetensors"):
            raise
        print(f"refqueue {args.command}: {missing(f'refqueue {args.command}', exc.name)}", file=sys.stderr)
        return 2


def entry() -> None:
    """The ``refqueue`` command: ``main`` and its status.  A run that
    ``certify --timeout`` left behind may be stuck in a backend's native code,
    and a daemon thread there makes the interpreter's shutdown abort (status
    134, not 2); then the process ends at once, its output flushed."""
    code = main()
    certify_cli = sys.modules.get("refqueue.conformance.cli")
    if certify_cli is not None and certify_cli.left_running():
        multiprocessing = sys.modules.get("multiprocessing")
        if multiprocessing is not None:  # (the walks' workers: what the skipped shutdown would stop)
            for child in multiprocessing.active_children():
                child.terminate()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
