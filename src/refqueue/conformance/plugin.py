"""The pytest plugin (entry point ``refqueue`` in group ``pytest11``).

``pytest --refqueue-backend=MODULE:FACTORY`` adds the conformance kit to the
run as tests, one per check, so that a check that was not run shows as
SKIPPED (with why), never as PASSED:

* ``refqueue-conformance[construction]``, ``[walks]`` (the exhaustive cover
  with ``--refqueue-exhaustive``), ``[lockstep]`` and ``[threads]``: one test
  per phase; a phase the backend's capabilities rule out is skipped;
* ``refqueue-conformance[producers:CHECK]`` and ``[blocking:CHECK]``: one test
  per named check of the phases that say so (``split``).  The phase runs once (on the first of its
  tests) and each test reports its own check: passed, failed, skipped because
  a declared capability rules it out, or skipped because an earlier check of
  the phase failed and the phase stopped there;
* ``refqueue-conformance[not-checked:WHAT]``: one skipped test for each other
  check the certificate lists as not run (what the lockstep and threads
  phases leave out for an undeclared capability).

``--refqueue-profile``, ``--refqueue-seed``, ``--refqueue-producer-bound`` and
``--refqueue-wake-bound`` choose as ``refqueue certify`` does.  A failing test
reports the failing run (said to be the shortest only where it was shrunk)
and the pytest function that replays it.  Without the option the plugin adds
nothing and imports nothing heavy.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["ConformanceItem", "NotCheckedItem"]

def _checked(kind: str) -> Callable[[str], Any]:
    """The ``refqueue certify`` command line's check of an option of ``kind``
    ("seed", "seconds"), imported when the option is given: a bad value is one
    usage error naming it, not an error in every check."""

    def check(text: str) -> Any:
        from refqueue.conformance import cli

        argument: Callable[[str], Any] = {"seed": cli.seed_argument, "seconds": cli.seconds_argument}[kind]
        return argument(text)

    check.__name__ = kind  # (argparse names the type in its "invalid value" message)
    return check


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("refqueue", "refqueue conformance kit")
    group.addoption(
        "--refqueue-backend",
        metavar="MODULE:FACTORY",
        default=None,
        help="certify this queue backend (a factory make(store, clock, **config)) against the reference model",
    )
    group.addoption("--refqueue-profile", choices=("ci", "deep"), default="ci", help="how much to run (default: ci)")
    group.addoption("--refqueue-seed", type=_checked("seed"), default=0, help="seed of the walks and of Hypothesis (default: 0)")
    group.addoption(
        "--refqueue-exhaustive", action="store_true", help="take every transition of the world graph instead of walks"
    )
    group.addoption(
        "--refqueue-producer-bound",
        type=_checked("seconds"),
        default=None,
        metavar="SECONDS",
        help="how long a blocked producer may wait in the producers phase (default: the profile's, 1 s)",
    )
    group.addoption(
        "--refqueue-wake-bound",
        type=_checked("seconds"),
        default=None,
        metavar="SECONDS",
        help="how soon a woken call must return in the blocking phase (default: the profile's, 0.05 s)",
    )


class ConformanceFailure(AssertionError):
    """A phase found a divergence; ``certificate`` holds it and its replay."""

    def __init__(self, certificate: Any) -> None:
        super().__init__(certificate.failure["message"])
        self.certificate = certificate


_RUNS = pytest.StashKey[dict[str, Any]]()


def _certificate(config: pytest.Config, target: str, phase: str) -> Any:
    """The certificate of ``phase`` of ``target``, run once per session."""
    from refqueue.conformance.certify import certify

    runs = config.stash.setdefault(_RUNS, {})
    if phase not in runs:
        runs[phase] = certify(
            target,
            profile=config.getoption("refqueue_profile"),
            seed=config.getoption("refqueue_seed"),
            exhaustive=config.getoption("refqueue_exhaustive"),
            phases=(phase,),
            producer_bound=config.getoption("refqueue_producer_bound"),
            wake_bound=config.getoption("refqueue_wake_bound"),
        )
    return runs[phase]


class ConformanceItem(pytest.Item):
    """One phase of a certification of the backend named on the command line,
    or (``check`` given) one named check of a phase split into checks."""

    def __init__(self, *, target: str, phase: str, check: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.phase = phase
        self.check = check

    def runtest(self) -> None:
        cert = _certificate(self.config, self.target, self.phase)
        first = self.check is None or self.check == _first_check(self.phase)
        if first:  # the phase's steps are counted once
            for name, phase in cert.phases.items():
                self.user_properties.append((f"{name}_steps", phase.get("steps", 0)))
        if self.check is None:
            if not cert.passed:
                raise ConformanceFailure(cert)
            skipped = [f"{name}: {p['skipped']}" for name, p in cert.phases.items() if "skipped" in p]
            if skipped:  # a check not run is never reported as passed
                pytest.skip("; ".join(skipped))
            return
        self._run_check(cert)

    def _run_check(self, cert: Any) -> None:
        phase = cert.phases.get(self.phase, {})
        failure = cert.failure
        if failure is not None and failure.get("check") in (self.check, None):
            raise ConformanceFailure(cert)  # this check failed (or the phase failed outside any check)
        if "skipped" in phase:
            pytest.skip(f"{self.phase} phase not run: {phase['skipped']}")
        not_run = phase.get("not_run", {})
        if self.check in not_run:
            pytest.skip(f"{self.phase}: {self.check} not run: {not_run[self.check]}")
        if self.check in phase.get("checks", {}):
            return
        if failure is not None:
            pytest.skip(
                f"{self.phase}: {self.check} not run: the phase stopped at its failing check {failure['check']}"
            )
        raise AssertionError(
            f"the {self.phase} phase neither ran {self.check} nor listed it as not run; this is a bug of the kit"
        )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ConformanceFailure):
            from refqueue.conformance.certificate import failing_run_text

            cert = excinfo.value.certificate
            f = cert.failure
            kind = f.get("kind", "divergence")
            if kind != "divergence":
                said = "could not be certified" if kind == "unfit" else "raised where docs/API.md says it returns"
                return (
                    f"{self.target} {said} ({f['phase']}):\n{f['message']}\n\nReplay it with this test:\n\n"
                    f"{cert.counterexample}"
                )
            return (
                f"{self.target} diverges from the reference model ({f['phase']}, caught after "
                f"{f['steps_to_failure']:,} steps; {failing_run_text(f)}):\n"
                f"{f['message']}\n\nReplay it with this test:\n\n{cert.counterexample}"
            )
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        what = self.phase if self.check is None else f"{self.phase}:{self.check}"
        return self.path, None, f"refqueue-conformance[{what}] of {self.target}"


class NotCheckedItem(pytest.Item):
    """A check the certificate lists as not run for the backend's declared
    capabilities: always skipped, with why."""

    def __init__(self, *, target: str, check: str, why: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.check = check
        self.why = why

    def runtest(self) -> None:
        pytest.skip(f"not checked: {self.check} ({self.why})")

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.name} of {self.target}"


def _split(name: str) -> tuple[str, ...]:
    """The named checks of phase ``name``, one test each; empty for a phase that is one test."""
    from refqueue.conformance.phases import phase

    found = phase(name)
    return tuple(found.checks) if found.split else ()


def _first_check(phase: str) -> str | None:
    checks = _split(phase)
    return checks[0] if checks else None


def _slug(text: str) -> str:
    head = re.split(r"[:(]", text, maxsplit=1)[0].strip()
    return re.sub(r"[^A-Za-z0-9_.]+", "-", head).strip("-") or "check"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    target = config.getoption("refqueue_backend")
    if not target:
        return
    from refqueue._torch import TorchMissing, require_torch
    from refqueue.conformance.contract import load_backend
    from refqueue.conformance.phases import PHASES

    try:  # one clear error, not a failure per check
        require_torch(f"the conformance kit (--refqueue-backend {target}; its samples are torch tensors)")
    except TorchMissing as exc:
        raise pytest.UsageError(str(exc)) from None
    try:
        backend = load_backend(target)
    except (TypeError, ValueError) as exc:
        raise pytest.UsageError(f"--refqueue-backend: {exc}") from None
    for phase in PHASES:
        checks = _split(phase)
        if not checks:
            items.append(
                ConformanceItem.from_parent(session, name=f"refqueue-conformance[{phase}]", target=target, phase=phase)
            )
            continue
        for check in checks:
            items.append(
                ConformanceItem.from_parent(
                    session, name=f"refqueue-conformance[{phase}:{check}]", target=target, phase=phase, check=check
                )
            )
    # The split phases' items report their own checks not run; the phase items
    # report a skipped phase.  Every other check not run (what the model-driven
    # phases leave out for an absent capability) gets a skipped item.
    names: set[str] = set()
    for entry in backend.capabilities.left_out():
        check, why = entry["check"], entry["why"]
        declared = re.fullmatch(r"(\w+)=False declared", why)  # named by the capability it needs
        name = declared.group(1) if declared else _slug(check)
        while name in names:
            name += "+"
        names.add(name)
        items.append(
            NotCheckedItem.from_parent(
                session, name=f"refqueue-conformance[not-checked:{name}]", target=target, check=check, why=why
            )
        )
