"""Random simulation of the spec at production-like constants.

``spec/MCSimulate.tla`` is far too large to enumerate (3 producers, 6
consumers, 12 samples of mixed sizes, a visibility timeout of 5), so TLC walks
random behaviours of it (``-simulate``) for a bounded time and checks every
safety property on every state and step it meets.  The verdict is

``ok``         TLC walked ``states`` states in the time given and found no
               violation: evidence, *not* a proof (say so when reporting it);
``violation``  a property failed; ``run.trace`` is the behaviour TLC printed;
``unknown``    TLC failed, or walked no state at all.

``refqueue check-spec`` runs it after the manifest configs, about a minute by
default and ten with ``--deep``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from refqueue.spec_check.tlc import TlcRun, run_tlc

__all__ = ["SIMULATION_MODULE", "SimulationResult", "simulate"]

SIMULATION_MODULE = "MCSimulate"
_CHECKED = re.compile(r"^Progress: ([\d,]+) states checked")
_FINISHED = re.compile(r"^Finished in ")


@dataclass
class SimulationResult:
    run: TlcRun
    seconds_asked: float
    depth: int
    seed: int
    states: int  # states TLC checked

    @property
    def outcome(self) -> str:
        return self.run.outcome

    def summary(self) -> str:
        what = {
            "ok": f"no violation in {self.states:,} states (random behaviours up to depth {self.depth}, seed "
            f"{self.seed}; bounded evidence, not a proof)",
            "violation": f"{self.run.violated} violated after {self.states:,} states (seed {self.seed})",
        }.get(self.outcome, f"unknown: {self.run.error}")
        return f"simulation {SIMULATION_MODULE} for {self.seconds_asked:g} s: {what}"


def simulate(
    spec_dir: Path,
    workdir: Path,
    *,
    seconds: float,
    depth: int = 200,
    seed: int = 1,
    workers: int = 2,
    java: str | None = None,
    jar: Path | None = None,
    on_line=None,
) -> SimulationResult:
    """Simulate ``MCSimulate`` for about ``seconds`` (TLC stops itself then;
    a watchdog stops it at twice that plus a minute)."""
    if not seconds > 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    run = run_tlc(
        spec_dir,
        f"{SIMULATION_MODULE}.tla",
        f"{SIMULATION_MODULE}.cfg",
        workdir,
        workers=workers,
        timeout=2 * seconds + 60,
        on_line=on_line,
        java=java,
        jar=jar,
        jvm_args=[f"-Dtlc2.TLC.stopAfter={max(1, round(seconds))}"],
        tlc_args=["-simulate", "-depth", str(depth), "-seed", str(seed)],
    )
    states = 0
    finished = False
    for line in run.output.splitlines():
        m = _CHECKED.match(line)
        if m:
            states = int(m.group(1).replace(",", ""))
        if _FINISHED.match(line):
            finished = True
    if run.outcome == "unknown" and run.error == "TLC printed no verdict (it was stopped, or crashed)":
        # a simulation ends without "No error has been found": finishing after
        # checking states, with no error printed, is its clean end
        if finished and states > 0 and run.returncode == 0:
            run.outcome, run.error = "ok", None
        elif states == 0:
            run.error = "TLC checked no state"
    return SimulationResult(run, seconds, depth, seed, states)
