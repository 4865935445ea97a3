"""The pytest plugin (entry point ``refqueue`` in group ``pytest11``).

``pytest --refqueue-backend=MODULE:FACTORY`` adds the conformance kit's
phases to the run as six tests, ``refqueue-conformance[construction]``,
``[walks]``, ``[lockstep]``, ``[threads]``, ``[producers]`` and ``[blocking]``
(``[walks]`` is the exhaustive cover with ``--refqueue-exhaustive``);
``--refqueue-profile``, ``--refqueue-seed``, ``--refqueue-producer-bound`` and
``--refqueue-wake-bound`` choose as
``refqueue certify`` does.  A failing phase reports the shortest
failing run and the pytest function that replays it.  Without the option the
plugin adds nothing and imports nothing heavy.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["ConformanceItem"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("refqueue", "refqueue conformance kit")
    group.addoption(
        "--refqueue-backend",
        metavar="MODULE:FACTORY",
        default=None,
        help="certify this queue backend (a factory make(store, clock, **config)) against the reference model",
    )
    group.addoption("--refqueue-profile", choices=("ci", "deep"), default="ci", help="how much to run (default: ci)")
    group.addoption("--refqueue-seed", type=int, default=0, help="seed of the walks and of Hypothesis (default: 0)")
    group.addoption(
        "--refqueue-exhaustive", action="store_true", help="take every transition of the world graph instead of walks"
    )
    group.addoption(
        "--refqueue-producer-bound",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long a blocked producer may wait in the producers phase (default: the profile's, 1 s)",
    )
    group.addoption(
        "--refqueue-wake-bound",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how soon a woken call must return in the blocking phase (default: the profile's, 0.05 s)",
    )


class ConformanceFailure(AssertionError):
    """A phase found a divergence; ``certificate`` holds it and its replay."""

    def __init__(self, certificate: Any) -> None:
        super().__init__(certificate.failure["message"])
        self.certificate = certificate


class ConformanceItem(pytest.Item):
    """One phase of a certification of the backend named on the command line."""

    def __init__(self, *, target: str, phase: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.phase = phase

    def runtest(self) -> None:
        from refqueue.conformance.certify import certify

        config = self.config
        cert = certify(
            self.target,
            profile=config.getoption("refqueue_profile"),
            seed=config.getoption("refqueue_seed"),
            exhaustive=config.getoption("refqueue_exhaustive"),
            phases=(self.phase,),
            producer_bound=config.getoption("refqueue_producer_bound"),
            wake_bound=config.getoption("refqueue_wake_bound"),
        )
        for name, phase in cert.phases.items():
            self.user_properties.append((f"{name}_steps", phase.get("steps", 0)))
        if not cert.passed:
            raise ConformanceFailure(cert)
        skipped = [f"{name}: {p['skipped']}" for name, p in cert.phases.items() if "skipped" in p]
        if skipped:  # a check not run is never reported as passed
            pytest.skip("; ".join(skipped))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ConformanceFailure):
            cert = excinfo.value.certificate
            f = cert.failure
            return (
                f"{self.target} diverges from the reference model ({f['phase']}, caught after "
                f"{f['steps_to_failure']:,} steps; {'shortest ' if f.get('shrunk', True) else ''}failing run "
                f"{f['trace_steps']} steps{'' if f.get('shrunk', True) else ', not shrunk'}):\n"
                f"{f['message']}\n\nReplay it with this test:\n\n{cert.counterexample}"
            )
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"refqueue-conformance[{self.phase}] of {self.target}"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    target = config.getoption("refqueue_backend")
    if not target:
        return
    from refqueue.conformance.certify import PHASES
    from refqueue.conformance.contract import load_backend

    try:
        load_backend(target)
    except (TypeError, ValueError) as exc:
        raise pytest.UsageError(f"--refqueue-backend: {exc}") from None
    for phase in PHASES:
        items.append(
            ConformanceItem.from_parent(session, name=f"refqueue-conformance[{phase}]", target=target, phase=phase)
        )
