"""Mutation testing of the spec: ``refqueue check-spec --mutants``.

A property that no wrong protocol violates proves nothing.  ``spec/mutants.json``
lists deliberate mistakes, each a textual replacement in
``spec/SampleRefQueue.tla`` (``old`` must occur there exactly once) together
with the configs in which TLC must *kill* it: report the named invariant or
property violated.  For each mutant this module

1. writes the mutated spec into a scratch copy of ``spec/`` (never into
   ``spec/`` itself, and never from a hand-kept copy: the mutation is applied
   to the current spec on every run) and runs TLC on one worker, so the search
   is deterministic and a safety counterexample is a shortest one;
2. applies the same mistake to the Python reference model, as a monkeypatch
   of the function the closed world calls (``PY_PATCHES``, restored on exit),
   and runs ``refqueue.model.explorer.explore`` on the world that mirrors the
   config: it must report the named violation too.  A mutant whose only
   killer is a liveness property cannot be killed by the explorer (it checks
   safety only): its Python side is ``"liveness-only"``.

A mutant *survives* when TLC finds no violation, another property, or no
verdict in time (a timeout is never a kill).  Exit status: 0 when every mutant
is killed by its expected property on both sides, 1 when one survives, 2 when
the run cannot start (a bad ``mutants.json``, no java, an ``old`` text that no
longer occurs exactly once).

Configs named ``MCMut*`` exist only to kill mutants the other configs let
survive (their bounds are too small, or the spec lacks the property).  A
killer that fails on the unmutated spec kills nothing, so every ``MCMut*``
config a run uses is first checked on the unmutated spec and must come out
``ok``; configs of ``manifest.json`` are checked by plain ``refqueue
check-spec``, and a ``counterexample`` config is refused as a killer.  The
properties those configs first added (``DeadlineWithinVisibility``,
``PendingIsFifo``, a separately written D8 measure) now live in the spec and
the model; ``PY_EXTRA_PROPERTIES`` is where a future one would go,
registered with the explorer only for the mutants that name them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from refqueue.spec_check.manifest import ManifestError, spec_dir_of
from refqueue.spec_check.tlc import (
    SHORT_RUN_JVM_ARGS,
    TlcRun,
    TlcUnavailable,
    find_jar,
    find_java,
    jvm_args_for,
    run_tlc,
)

__all__ = [
    "MUTANTS_FILE",
    "SPEC_FILE",
    "LIVENESS_ONLY",
    "MutantError",
    "TlcKill",
    "PythonKill",
    "Mutant",
    "TlcResult",
    "PythonResult",
    "MutantReport",
    "load_mutants",
    "apply_mutation",
    "write_mutated_spec",
    "run_tlc_kill",
    "PY_PATCHES",
    "PY_EXTRA_PROPERTIES",
    "patched",
    "run_python_kill",
    "check_mutant",
    "run_mutants",
]

MUTANTS_FILE = "mutants.json"
SPEC_FILE = "SampleRefQueue.tla"
LIVENESS_ONLY = "liveness-only"
DEFAULT_TIMEOUT = 60.0  # seconds per TLC run and per exploration, unless mutants.json says otherwise
# The config a mutant's graph is compared on, unless mutants.json names one: the smallest
# in-process one (MCRePut's bounds: one producer putting s0 twice, one consumer; 660 states, a
# few seconds), or the deployment's for a mutant of the deployment (one whose killer config is an
# MCDeployment*).  A mutant that needs two producers to show (D8's) names MCAgreementWide.
DEFAULT_AGREEMENT = "MCRePut"
DEPLOYMENT_AGREEMENT = "MCDeployment"
GRAPH_TIMEOUT = 60.0  # seconds for TLC's whole graph of a mutated config (a kill stops early); past it: "not compared"


class MutantError(ValueError):
    """``mutants.json`` is malformed, or a mutation no longer applies; the message says which and how to fix it."""


@dataclass(frozen=True)
class TlcKill:
    """TLC must report ``expected`` violated on ``config`` (``config.tla`` with ``config.cfg``).

    On a witness config of ``manifest.json`` (``witness`` set: the goal it
    reaches, e.g. D5's re-put delivered) it is the other way round: the
    unmutated spec reaches the witness, and the mutant is killed when TLC no
    longer does (the witness invariant holds everywhere); ``expected`` is the
    witness's goal name."""

    config: str
    expected: str
    witness: str | None = None  # the config's negated witness invariant, for a witness config

    @property
    def module(self) -> str:
        return f"{self.config}.tla"

    @property
    def cfg(self) -> str:
        return f"{self.config}.cfg"


@dataclass(frozen=True)
class PythonKill:
    """``explore(make_world(**world))`` with the mutant's patch must report ``expected``
    (``extra``: names of ``PY_EXTRA_PROPERTIES`` to check as well).  ``expected``
    None records a known gap of the model's properties: the explorer is run and
    must find nothing, ``survives`` says why (a finding, reported in the table)."""

    world: dict[str, Any]
    expected: str | None  # None: a known gap, ``survives`` says why the explorer cannot kill it
    extra: tuple[str, ...] = ()
    survives: str = ""


@dataclass(frozen=True)
class Mutant:
    name: str
    what: str  # the mistake, in words
    old: str
    new: str
    tlc: tuple[TlcKill, ...]
    python: PythonKill | None  # None: liveness-only, the explorer cannot kill it
    finding: str = ""  # what the mutant showed about the spec's properties or bounds
    agreement: str = ""  # the agreement config whose graph the mutated spec is compared on

    @property
    def liveness_only(self) -> bool:
        return self.python is None


# -- mutants.json ------------------------------------------------------------------


def _text(where: str, raw: dict, key: str, *, empty: bool = False) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or (not value and not empty):
        raise MutantError(f"{where}: {key} must be a {'' if empty else 'non-empty '}string, got {value!r}")
    return value


def _mutant(
    where: str, raw: object, spec_text: str, spec_dir: Path, counterexamples: set[str],
    witnesses: dict[str, tuple[str, str]], agreements: dict[str, dict],
) -> Mutant:
    if not isinstance(raw, dict):
        raise MutantError(f"{where} must be a JSON object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - {"name", "what", "old", "new", "tlc", "python", "finding", "agreement"})
    if unknown:
        raise MutantError(
            f"{where} has unknown keys {unknown}; the known keys are name, what, old, new, tlc, python, finding, agreement"
        )
    name = _text(where, raw, "name")
    where = f"{where} ({name})"
    old, new = _text(where, raw, "old"), _text(where, raw, "new", empty=True)
    if old == new:
        raise MutantError(f"{where}: new equals old; a mutant must change the spec")
    count = spec_text.count(old)
    if count != 1:
        raise MutantError(
            f"{where}: its old text occurs {count} times in {SPEC_FILE}, not exactly once; the spec changed "
            f"under the mutant: update old/new in {MUTANTS_FILE} to the spec's current text"
        )
    kills = raw.get("tlc")
    if not isinstance(kills, list) or not kills:
        raise MutantError(f"{where}: tlc must be a non-empty list of {{\"config\": ..., \"expected\": ...}}")
    tlc: list[TlcKill] = []
    for i, k in enumerate(kills):
        if not isinstance(k, dict) or set(k) != {"config", "expected"}:
            raise MutantError(f"{where}: tlc[{i}] must be {{\"config\": NAME, \"expected\": PROPERTY}}, got {k!r}")
        kill = TlcKill(_text(f"{where} tlc[{i}]", k, "config"), _text(f"{where} tlc[{i}]", k, "expected"))
        if kill.config in witnesses:
            goal, invariant = witnesses[kill.config]
            if kill.expected != goal:
                raise MutantError(
                    f"{where}: tlc[{i}] names the witness config {kill.config!r}, which reaches {goal!r}; a mutant "
                    f"is killed there when the witness becomes unreachable, so expected must be {goal!r}"
                )
            kill = TlcKill(kill.config, kill.expected, invariant)
        for path in (spec_dir / kill.module, spec_dir / kill.cfg):
            if not path.is_file():
                raise MutantError(f"{where}: tlc[{i}] names config {kill.config!r}, but {path} does not exist")
        if kill.config in counterexamples:
            raise MutantError(
                f"{where}: tlc[{i}] names {kill.config!r}, a counterexample config of manifest.json: the unmutated "
                f"spec already violates a property there, so a violation kills nothing; pick a config that holds"
            )
        tlc.append(kill)
    py = raw.get("python")
    python: PythonKill | None
    if py == LIVENESS_ONLY:
        python = None
    elif isinstance(py, dict) and set(py) <= {"world", "expected", "extra", "survives"} and {"world", "expected"} <= set(py):
        extra = py.get("extra", [])
        if not isinstance(py["world"], dict) or not isinstance(extra, list):
            raise MutantError(f"{where}: python.world must be an object of make_world arguments and python.extra a list")
        missing = [e for e in extra if e not in PY_EXTRA_PROPERTIES]
        if missing:
            raise MutantError(f"{where}: python.extra names {missing}; known: {sorted(PY_EXTRA_PROPERTIES)}")
        if py["expected"] is None:
            survives = _text(f"{where} python", py, "survives")
            python = PythonKill(dict(py["world"]), None, tuple(extra), survives)
        elif "survives" in py:
            raise MutantError(f"{where}: python.survives is only for a known gap (\"expected\": null)")
        else:
            python = PythonKill(dict(py["world"]), _text(f"{where} python", py, "expected"), tuple(extra))
        if name not in PY_PATCHES:
            raise MutantError(f"{where}: no Python patch named {name!r} in refqueue.spec_check.mutants.PY_PATCHES")
    else:
        raise MutantError(
            f"{where}: python must be {{\"world\": {{...}}, \"expected\": NAME[, \"extra\": [...]]}}, "
            f"{{\"world\": {{...}}, \"expected\": null, \"survives\": WHY}} or {LIVENESS_ONLY!r}, got {py!r}"
        )
    finding = raw.get("finding", "")
    if not isinstance(finding, str):
        raise MutantError(f"{where}: finding must be a string, got {finding!r}")
    default = DEPLOYMENT_AGREEMENT if any(k.config.startswith("MCDeployment") for k in tlc) else DEFAULT_AGREEMENT
    agreement = raw.get("agreement", default)
    if agreement not in agreements:
        raise MutantError(
            f"{where}: agreement must name a config of manifest.json with an agreement entry "
            f"({sorted(agreements)}), got {agreement!r}"
        )
    return Mutant(name, _text(where, raw, "what"), old, new, tuple(tlc), python, finding, agreement)


def _manifest_configs(spec_dir: Path) -> list[dict]:
    """The manifest's config entries (read leniently: the manifest is checked elsewhere)."""
    try:
        data = json.loads((spec_dir / "manifest.json").read_text(encoding="utf-8"))
        return [c for c in data["configs"] if isinstance(c, dict) and isinstance(c.get("name"), str)]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _manifest_states(spec_dir: Path, name: str) -> int | None:
    """The distinct states the manifest records for config ``name`` (None: not there)."""
    for c in _manifest_configs(spec_dir):
        if c.get("name") == name and isinstance(c.get("distinct_states"), int):
            return c["distinct_states"]  # type: ignore[no-any-return]
    return None


def _counterexample_configs(spec_dir: Path) -> set[str]:
    """The manifest's counterexample configs."""
    return {c["name"] for c in _manifest_configs(spec_dir) if c.get("mode") == "counterexample"}


def _agreement_configs(spec_dir: Path) -> dict[str, dict]:
    """The manifest's configs whose graph a mutated spec can be compared on: name -> the
    make_world arguments of the Python world of the same bounds (an agreement config's, or a
    witness config's: its whole graph, its witness invariant left out, is that world's)."""
    out: dict[str, dict] = {}
    for c in _manifest_configs(spec_dir):
        for key in ("agreement", "witness"):
            a = c.get(key)
            if isinstance(a, dict) and isinstance(a.get("world"), dict):
                out[c["name"]] = a["world"]
    return out


def _witness_configs(spec_dir: Path) -> dict[str, tuple[str, str]]:
    """The manifest's witness configs: name -> (goal, the negated witness invariant TLC finds violated)."""
    out: dict[str, tuple[str, str]] = {}
    for c in _manifest_configs(spec_dir):
        w = c.get("witness")
        if c.get("mode") == "witness" and isinstance(w, dict) and isinstance(w.get("goal"), str):
            out[c["name"]] = (w["goal"], str(c.get("expected")))
    return out


def load_mutants(spec_dir: str | Path) -> tuple[list[Mutant], float]:
    """The validated mutants of ``spec_dir/mutants.json`` and the per-run timeout in seconds."""
    spec_dir = Path(spec_dir)
    path = spec_dir / MUTANTS_FILE
    spec = spec_dir / SPEC_FILE
    for p in (path, spec):
        if not p.is_file():
            raise MutantError(f"{p} does not exist; pass --spec-dir with the repository's spec/")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise MutantError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("mutants"), list) or not data["mutants"]:
        raise MutantError(f"{path} must be an object with a non-empty \"mutants\" list")
    timeout = data.get("timeout_s", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise MutantError(f"{path}: timeout_s must be a number of seconds > 0, got {timeout!r}")
    text = spec.read_text(encoding="utf-8")
    counterexamples = _counterexample_configs(spec_dir)
    witnesses = _witness_configs(spec_dir)
    agreements = _agreement_configs(spec_dir)
    mutants = [
        _mutant(f"{MUTANTS_FILE} mutants[{i}]", raw, text, spec_dir, counterexamples, witnesses, agreements)
        for i, raw in enumerate(data["mutants"])
    ]
    names = [m.name for m in mutants]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise MutantError(f"{path} names {dupes} more than once; give every mutant its own name")
    return mutants, float(timeout)


# -- the TLC side ---------------------------------------------------------------------


def apply_mutation(text: str, old: str, new: str) -> str:
    """``text`` with the one occurrence of ``old`` replaced by ``new``."""
    count = text.count(old)
    if count != 1:
        raise MutantError(f"the mutation's old text occurs {count} times, not exactly once: {old[:80]!r}")
    return text.replace(old, new, 1)


def write_mutated_spec(spec_dir: Path, mutant: Mutant | None, dest: Path) -> Path:
    """Copy the spec's ``.tla``/``.cfg`` files into ``dest`` (created) and apply
    ``mutant`` to the copy of ``SampleRefQueue.tla`` (``None``: leave it as it is)."""
    dest.mkdir(parents=True, exist_ok=False)
    for pattern in ("*.tla", "*.cfg"):
        for path in spec_dir.glob(pattern):
            shutil.copy2(path, dest / path.name)
    if mutant is not None:
        text = (spec_dir / SPEC_FILE).read_text(encoding="utf-8")
        (dest / SPEC_FILE).write_text(apply_mutation(text, mutant.old, mutant.new), encoding="utf-8")
    return dest


def run_tlc_kill(
    spec_dir: Path,
    mutant: Mutant | None,
    kill: TlcKill,
    *,
    timeout: float,
    java: str | None = None,
    jar: Path | None = None,
) -> TlcRun:
    """TLC on one worker on ``kill.config`` of the spec mutated by ``mutant``
    (``None``: the unmutated spec), in a scratch directory.  A mutant's run is
    to stop at its first violation, so it is a short run (``SHORT_RUN_JVM_ARGS``);
    the unmutated spec's goes through the whole config."""
    with tempfile.TemporaryDirectory(prefix="refqueue-mutant-") as tmp:
        scratch = write_mutated_spec(spec_dir, mutant, Path(tmp) / "spec")
        return run_tlc(scratch, kill.module, kill.cfg, Path(tmp) / "work", workers=1, timeout=timeout, java=java,
                       jar=jar, jvm_args=SHORT_RUN_JVM_ARGS if mutant is not None else ())


@dataclass
class GraphResult:
    """The mutated spec's state graph against the unmutated model's, on one agreement config."""

    config: str
    verdict: str  # "differs" | "same" | "unknown" (TLC gave no complete graph: never counted either way)
    detail: str = ""
    seconds: float = 0.0


# Held by whoever runs the Python model: a mutant's Python kill patches the model's module
# attributes for its duration, so no other mutant's exploration or graph may run meanwhile (TLC
# runs, in their own processes, go on in parallel: ``--jobs``).
MODEL_LOCK = threading.Lock()

_PROPERTY_SECTIONS = re.compile(r"^\s*(INVARIANTS?|PROPERT(?:Y|IES))\b", re.M)


def run_graph_agreement(
    spec_dir: Path,
    mutant: Mutant,
    world_kwargs: dict,
    *,
    timeout: float,
    graphs: dict[str, Any],
    java: str | None = None,
    jar: Path | None = None,
) -> GraphResult:
    """TLC's whole graph of the mutated spec on ``mutant.agreement`` (its
    invariants and properties left out, so nothing stops the search), compared
    with the unmutated Python model's graph of the same world (``graphs``:
    a cache of those, by config)."""
    from refqueue.model.explorer import build_graph
    from refqueue.model.world import make_world
    from refqueue.spec_check.agreement import AgreementError, compare, read_dot

    config = mutant.agreement
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="refqueue-mutant-graph-") as tmp:
        scratch = write_mutated_spec(spec_dir, mutant, Path(tmp) / "spec")
        text = (scratch / f"{config}.cfg").read_text(encoding="utf-8")
        cut = _PROPERTY_SECTIONS.search(text)
        graph_cfg = scratch / f"{config}Graph.cfg"
        graph_cfg.write_text(text[: cut.start()] if cut else text, encoding="utf-8")
        dot = Path(tmp) / "states.dot"
        run = run_tlc(scratch, f"{config}.tla", graph_cfg.name, Path(tmp) / "work", workers=1, dump=dot,
                      timeout=timeout, java=java, jar=jar, jvm_args=jvm_args_for(_manifest_states(spec_dir, config)))
        if run.outcome != "ok":
            detail = run.error or f"{run.result} violated"
            return GraphResult(config, "unknown", f"TLC gave no complete graph: {detail}", time.monotonic() - start)
        with MODEL_LOCK:  # the model is patched for other mutants' Python kills only under this lock
            world = make_world(**world_kwargs)
            if config not in graphs:
                graphs[config] = build_graph(world)
            try:
                result = compare(world, read_dot(dot), graphs[config])
            except AgreementError as exc:
                return GraphResult(config, "differs", f"a TLC state the model cannot hold: {exc}", time.monotonic() - start)
    seconds = time.monotonic() - start
    if result.ok:
        return GraphResult(config, "same", result.summary(), seconds)
    return GraphResult(config, "differs", "; ".join([result.message, *result.details[:3]]), seconds)


# -- the Python side --------------------------------------------------------------------
#
# Each patch returns the (module, attribute, replacement) triples that make the
# model commit the same mistake as the spec mutant of the same name.  They
# replace what the closed world actually calls: refqueue.model.world calls
# ``A.try_put``, ``A.store_put``, ``A.ack``, ``A.extend``, ``A.is_live``,
# ``A.expired``, ``A.put_retry``, ``A.scrub_intent``, ``A.restart_lossy``,
# ``A.recover`` through the module ``A`` (and its own ``_core_moves``,
# ``consumer_moves`` and ``_lease_moves`` as module globals; the explorer
# calls ``_core_moves`` and ``consumer_moves`` through the module), and the actions call ``_requeue``,
# ``_finish``, ``put``, ``_live_at`` and ``expired`` as module globals, so
# patching the module attribute reaches every caller (a patch of ``is_live``
# patches ``_live_at``, the index form the calls that take a lease use, with
# it: ``_live_patches``).  The invariants keep their own ``is_live`` (imported
# by name, and calling the real ``_live_index``), so they judge with the real
# definition.


def _actions() -> ModuleType:
    from refqueue.model import actions

    return actions


def _live_patches(A: ModuleType, is_live: Callable[[Any, Any], bool]) -> Patch:
    """The patches that make the model judge a lease live by ``is_live``:
    ``A.is_live`` itself and ``A._live_at`` (what ack, fail, dead_letter and
    extend ask), the sample's index where ``is_live`` says live, else -1."""

    def _live_at(state: Any, lease: Any) -> int:
        return A.index_of(state, lease.sample_id) if is_live(state, lease) else -1  # type: ignore[no-any-return]

    return [(A, "is_live", is_live), (A, "_live_at", _live_at)]


def _try_put_variant(
    *,
    plain_threshold: bool = False,
    pause_above_high: bool = False,
    whole_residency: bool = False,
    admit_when_idle: bool = True,
    always_admit: bool = False,
) -> Callable:
    """``actions.try_put`` with one of its rules changed (all defaults: the real rule).

    ``plain_threshold``: paused' = effective >= high, no hysteresis;
    ``pause_above_high``: pause at effective > high; ``whole_residency``: the
    store's residency, parked bytes included (the pre-D8 measure);
    ``admit_when_idle=False``: no admission on a queue that holds no work;
    ``always_admit``: no backpressure at all.
    """
    A = _actions()

    def try_put(cfg, state, sample_id, nbytes=0):
        bad = A._check_put(cfg, state, sample_id, "put_blocks_until_below")
        if bad is not None:
            return bad
        others = tuple(p for p in state.parked if p[0] != sample_id)
        paused = state.paused
        events: tuple[str, ...] = ()
        if cfg.high is not None:
            if whole_residency:
                measure = state.resident_bytes
            else:
                measure = max(0, state.resident_bytes - sum(b for _, b in others) - nbytes)
            over = measure > cfg.high if pause_above_high else measure >= cfg.high
            if plain_threshold or not paused:
                after = over
            else:
                after = not measure <= cfg.low
            if after != paused:
                paused, events = after, ("pause",) if after else ("resume",)
        admitted = always_admit or not paused or (admit_when_idle and not A._has_work(state))
        if not admitted:
            parked = tuple(sorted(others + ((sample_id, nbytes),)))
            if paused != state.paused or parked != state.parked:
                state = state._replace(paused=paused, parked=parked)
            return A.Outcome(state, A.TryPutResult(False, events), None)
        if paused != state.paused or others != state.parked:
            state = state._replace(paused=paused, parked=others)
        return A.Outcome(A.put(cfg, state, sample_id).state, A.TryPutResult(True, events), None)

    return try_put


Patch = list[tuple[ModuleType, str, Any]]


def _patch_try_put(**rules: bool) -> Callable[[], Patch]:
    return lambda: [(_actions(), "try_put", _try_put_variant(**rules))]


def _patch_expired_early() -> Patch:
    A = _actions()

    def expired(state):
        hits = [i for i, r in enumerate(state.recs) if r.deadline is not None and r.deadline <= state.now + 1]
        hits.sort(key=lambda i: (state.recs[i].deadline, state.ids[i]))
        return hits

    return [(A, "expired", expired)]


def _patch_store_put_no_capacity() -> Patch:
    A = _actions()
    real = A.store_put
    return [(A, "store_put", lambda cfg, state, sid, nbytes: real(cfg._replace(capacity_bytes=None), state, sid, nbytes))]


def _patch_store_put_over_resident() -> Patch:
    A = _actions()
    real = A.store_put

    def store_put(cfg, state, sid, nbytes):
        i = A.find(state, sid)
        if i < 0 or not state.recs[i].resident:
            return real(cfg, state, sid, nbytes)
        # the resident guard is gone: write the data again over what is there
        hidden = state._replace(recs=state.recs[:i] + (state.recs[i]._replace(resident=False),) + state.recs[i + 1 :])
        return real(cfg, hidden, sid, nbytes)

    return [(A, "store_put", store_put)]


def _patch_is_live_ignores_status() -> Patch:
    A = _actions()

    def is_live(state, lease):
        try:
            rec = state.recs[state.ids.index(lease.sample_id)]
        except ValueError:
            return False
        return (
            rec.incarnation == lease.incarnation
            and rec.redeliveries == lease.redelivery_count
            and A.epoch_generation(lease.epoch) == state.epoch
        )

    return _live_patches(A, is_live)


def _patch_extend_from_old_deadline() -> Patch:
    A = _actions()
    real = A.extend

    def extend(cfg, state, lease, seconds):
        out = real(cfg, state, lease, seconds)
        if out.value is not True:
            return out
        i = A.find(state, lease.sample_id)
        old = state.recs[i]
        return out._replace(state=A._with_rec(state, i, old._replace(deadline=old.deadline + seconds)))

    return [(A, "extend", extend)]


def _patch_extend_any_outstanding_lease() -> Patch:
    from refqueue.model import world as W

    A = _actions()
    real_moves = W._lease_moves

    def lease_moves(world, state, lease):
        moves = real_moves(world, state, lease)
        rec = A.rec_of(state, lease.sample_id)
        if moves.extend is None and rec is not None and rec.status == A.LEASED:
            deadline = state.now + world.cfg.visibility_timeout
            if rec.deadline != deadline:
                i = A.find(state, lease.sample_id)
                moved = A._with_rec(state, i, rec._replace(deadline=deadline))
                moves = moves._replace(extend=A.Outcome(moved, True, None))
        return moves

    return [(W, "_lease_moves", lease_moves)]


def _patch_ack_ignores_lease_identity() -> Patch:
    A = _actions()
    real = A.ack

    def ack(cfg, state, lease):
        rec = A.rec_of(state, lease.sample_id)
        if rec is None or rec.status != A.LEASED or A.is_live(state, lease):
            return real(cfg, state, lease)
        return A.Outcome(A._finish(cfg, state, A.find(state, lease.sample_id), A.ACKED, None), True, None)

    return [(A, "ack", ack)]


def _patch_requeue(*, count: bool = True, clear_deadline: bool = True, at_head: bool = False, early: bool = False) -> Callable[[], Patch]:
    def patch() -> Patch:
        A = _actions()
        real = A._requeue

        def _requeue(cfg, state, i):
            rec = state.recs[i]
            limit = cfg.max_deliveries
            if early and limit is not None:
                limit -= 1
            if limit is not None and rec.deliveries >= limit:
                return real(cfg._replace(max_deliveries=limit), state, i)
            new = A.Rec(
                A.PENDING, rec.incarnation, rec.deliveries, rec.redeliveries + (1 if count else 0),
                None if clear_deadline else rec.deadline, rec.resident, rec.nbytes,
            )
            sid = state.ids[i]
            pending = (sid,) + state.pending if at_head else state.pending + (sid,)
            return A._with_rec(state, i, new, pending=pending)

        return [(A, "_requeue", _requeue)]

    return patch


def _patch_ack_scrubs_nothing() -> Patch:
    A = _actions()
    real = A._finish

    def _finish(cfg, state, i, status, reason):
        if status != A.ACKED:
            return real(cfg, state, i, status, reason)
        rec = state.recs[i]
        return A._with_rec(state, i, rec._replace(status=A.ACKED, deadline=None), completed=A._completed(cfg, state, state.ids[i]))

    return [(A, "_finish", _finish)]


def _patch_finish_without_intent(status: str) -> Callable[[], Patch]:
    """A two-step completion to ``status`` that records no scrub intent (D9)."""

    def patch() -> Patch:
        A = _actions()
        real = A._finish

        def _finish(cfg, state, i, st, reason):
            out = real(cfg, state, i, st, reason)
            if st != status or not cfg.two_step_ack or state.ids[i] in state.intents:
                return out
            return out._replace(intents=state.intents)

        return [(A, "_finish", _finish)]

    return patch


def _patch_scrub_without_intent() -> Patch:
    from refqueue.model import world as W

    A = _actions()
    real = W._core_moves

    def core_moves(world, state, producers, produced):
        moves = real(world, state, producers, produced)
        for sid, rec in zip(state.ids, state.recs):
            if rec.resident and sid not in state.intents:  # the guard is gone: any resident data is scrubbed
                moves.append(("ScrubIntent", sid, A.scrub(world.cfg, state, sid).state, True, producers, produced))
        return moves

    return [(W, "_core_moves", core_moves)]


def _patch_scrub_keeps_intent() -> Patch:
    A = _actions()
    real = A.scrub_intent

    def scrub_intent(cfg, state, sid):
        out = real(cfg, state, sid)
        return out._replace(state=out.state._replace(intents=state.intents)) if out.value is True else out

    return [(A, "scrub_intent", scrub_intent)]


def _patch_loss_not_detected() -> Patch:
    A = _actions()
    real = A.restart_lossy
    return [(A, "restart_lossy", lambda cfg, state: A.Outcome(real(cfg, state).state._replace(epoch=state.epoch), None, None))]


def _patch_is_live_ignores_epoch() -> Patch:
    A = _actions()

    def is_live(state, lease):
        try:
            rec = state.recs[state.ids.index(lease.sample_id)]
        except ValueError:
            return False
        return rec.status == A.LEASED and rec.incarnation == lease.incarnation and rec.redeliveries == lease.redelivery_count

    return _live_patches(A, is_live)


def _patch_lease_identity_reused() -> Patch:
    A = _actions()
    patch = []
    for name in ("put", "recover"):  # the spec's Enqueue: both make the new incarnation
        real = getattr(A, name)

        def enqueue(cfg, state, sid, real=real):
            out = real(cfg, state, sid)
            old = A.rec_of(state, sid)
            if out.error is not None or old is None:
                return out
            i = A.find(out.state, sid)
            rec = out.state.recs[i]._replace(incarnation=old.incarnation)  # no new incarnation
            return out._replace(state=A._with_rec(out.state, i, rec))

        patch.append((A, name, enqueue))
    return patch


def _patch_put_retry_re_enqueues() -> Patch:
    A = _actions()
    real = A.put_retry

    def put_retry(cfg, state, sid):
        rec = A.rec_of(state, sid)
        if rec is None or rec.status in A.LIVE or rec.status == A.STORED:
            return real(cfg, state, sid)
        # taken for a new put: enqueued again (as the spec's Enqueue, whether closed or not)
        again = A.put(cfg, state._replace(closed=False), sid).state._replace(closed=state.closed)
        return A.Outcome(again, True, None)

    return [(A, "put_retry", put_retry)]


def _patch_ack_retry_commits_again() -> Patch:
    A = _actions()
    real = A.ack

    def ack(cfg, state, lease):
        out = real(cfg, state, lease)
        rec = A.rec_of(state, lease.sample_id)
        if (
            out.error is None and out.value is False and rec is not None and rec.status == A.ACKED
            and (rec.incarnation, rec.redeliveries) == (lease.incarnation, lease.redelivery_count)
            and A.epoch_generation(lease.epoch) == state.epoch
        ):
            return A.Outcome(A._finish(cfg, state, A.find(state, lease.sample_id), A.ACKED, None), True, None)
        return out

    return [(A, "ack", ack)]


def _patch_stop_without_drained() -> Patch:
    from refqueue.model import world as W

    real = W.consumer_moves
    # a consumer stops on "acquire is None and closed", leases outstanding or not
    return [(W, "consumer_moves", lambda world, *rest: real(world._replace(anchor_consumer=True), *rest))]


def _patch_producer_crash_stays_parked() -> Patch:
    A = _actions()
    return [(A, "abort_put", lambda cfg, state, sid: A.Outcome(state, None, None))]


def _patch_deadline_short(call: str) -> Callable[[], Patch]:
    """``acquire`` or ``extend`` setting the lease's deadline one tick early."""

    def patch() -> Patch:
        A = _actions()
        real = getattr(A, call)

        def short(cfg, state, *args):
            out = real(cfg, state, *args)
            lease = out.value if call == "acquire" else args[0]
            if out.error is not None or not (out.value is True or isinstance(out.value, A.ModelLease)):
                return out
            i = A.find(out.state, lease.sample_id)
            rec = out.state.recs[i]
            return out._replace(state=A._with_rec(out.state, i, rec._replace(deadline=rec.deadline - 1)))

        return [(A, call, short)]

    return patch


def _patch_dead_letter_not_listed() -> Patch:
    A = _actions()
    real = A._finish

    def _finish(cfg, state, i, status, reason):
        out = real(cfg, state, i, status, reason)
        return out._replace(dead=state.dead)

    return [(A, "_finish", _finish)]


def _patch_store_put_dedups_completed() -> Patch:
    A = _actions()
    real = A.store_put

    def store_put(cfg, state, sid, nbytes):
        i = A.find(state, sid)
        from refqueue.model.state import DONE

        if i >= 0 and state.recs[i].status in DONE:
            return A._reject(state, "duplicate", f"store_put({sid!r}): completed before (dedup for ever)")
        return real(cfg, state, sid, nbytes)

    return [(A, "store_put", store_put)]


def _patch_d8_subtracts_stored() -> Patch:
    A = _actions()
    real = A.try_put

    def try_put(cfg, state, sample_id, nbytes=0):
        # every stored-but-not-enqueued ref counted as if parked, not only the parked ones
        stored = tuple(sorted(
            (sid, r.nbytes) for sid, r in zip(state.ids, state.recs)
            if r.status == A.STORED and sid != sample_id and not any(p[0] == sid for p in state.parked)
        ))
        if not stored:
            return real(cfg, state, sample_id, nbytes)
        out = real(cfg, state._replace(parked=tuple(sorted(state.parked + stored))), sample_id, nbytes)
        parked = tuple(p for p in out.state.parked if p not in stored)
        return out._replace(state=out.state._replace(parked=parked))

    return [(A, "try_put", try_put)]


def _patch_blocked_step_never_parks() -> Patch:
    A = _actions()
    real = A.try_put

    def try_put(cfg, state, sample_id, nbytes=0):
        out = real(cfg, state, sample_id, nbytes)
        if out.error is not None or out.value.enqueued:
            return out
        return out._replace(state=out.state._replace(parked=tuple(p for p in out.state.parked if p[0] != sample_id)))

    return [(A, "try_put", try_put)]


PY_PATCHES: dict[str, Callable[[], Patch]] = {
    "hysteresis-plain-threshold": _patch_try_put(plain_threshold=True),
    "no-backpressure": _patch_try_put(always_admit=True),
    "reclaim-one-tick-early": _patch_expired_early,
    "store-put-ignores-capacity": _patch_store_put_no_capacity,
    "is-live-ignores-status": _patch_is_live_ignores_status,
    "extend-from-old-deadline": _patch_extend_from_old_deadline,
    "ack-ignores-lease-identity": _patch_ack_ignores_lease_identity,
    "fail-not-counted": _patch_requeue(count=False),
    "whole-residency": _patch_try_put(whole_residency=True),
    "no-admission-on-empty-queue": _patch_try_put(admit_when_idle=False),
    "store-put-over-resident": _patch_store_put_over_resident,
    "dead-letter-one-early": _patch_requeue(early=True),
    "pause-strictly-above-high": _patch_try_put(pause_above_high=True),
    "ack-scrubs-nothing": _patch_ack_scrubs_nothing,
    "requeue-at-head": _patch_requeue(at_head=True),
    "stop-without-drained": _patch_stop_without_drained,
    "requeue-keeps-deadline": _patch_requeue(clear_deadline=False),
    "extend-any-outstanding-lease": _patch_extend_any_outstanding_lease,
    "producer-crash-stays-parked": _patch_producer_crash_stays_parked,
    "ack-records-no-intent": _patch_finish_without_intent("acked"),
    "dead-letter-records-no-intent": _patch_finish_without_intent("dead"),
    "scrub-without-intent": _patch_scrub_without_intent,
    "scrub-keeps-intent": _patch_scrub_keeps_intent,
    "loss-not-detected": _patch_loss_not_detected,
    "is-live-ignores-epoch": _patch_is_live_ignores_epoch,
    "lease-identity-reused": _patch_lease_identity_reused,
    "put-retry-re-enqueues": _patch_put_retry_re_enqueues,
    "ack-retry-commits-again": _patch_ack_retry_commits_again,
    "acquire-lease-one-tick-short": _patch_deadline_short("acquire"),
    "extend-lease-one-tick-short": _patch_deadline_short("extend"),
    "dead-letter-not-listed": _patch_dead_letter_not_listed,
    "re-put-refused": _patch_store_put_dedups_completed,
    "d8-subtracts-stored-refs": _patch_d8_subtracts_stored,
    "blocked-step-never-parks": _patch_blocked_step_never_parks,
}


# Properties a mutant's world may add for the explorer, by name: (kind,
# predicate) with kind "world" (world, node) or "transition" (cfg, before,
# after, action, arg, value), as refqueue.model.invariants.  Empty today: the
# twins first written here for the MCMut configs (DeadlineWithinVisibility,
# PendingIsFifo, ParkedRefsArePut) now live in the model's invariants and
# the spec itself, so the explorer checks them on every world.
PY_EXTRA_PROPERTIES: dict[str, tuple[str, Callable[..., bool]]] = {}


@contextlib.contextmanager
def patched(name: str | None, extra: tuple[str, ...] = ()) -> Iterator[None]:
    """Inside: the model commits mutant ``name``'s mistake (``None``: none), and
    the explorer also checks the ``extra`` properties.  Everything is restored
    on exit."""
    from refqueue.model import invariants

    patch = PY_PATCHES[name]() if name is not None else []
    saved = [(module, attr, getattr(module, attr)) for module, attr, _ in patch]
    tables = {"world": invariants.WORLD_INVARIANTS, "transition": invariants.TRANSITION_INVARIANTS}
    added: list[tuple[dict, str]] = []
    try:
        for module, attr, replacement in patch:
            setattr(module, attr, replacement)
        for prop in extra:
            kind, pred = PY_EXTRA_PROPERTIES[prop]
            if prop not in tables[kind]:
                tables[kind][prop] = pred
                added.append((tables[kind], prop))
        yield
    finally:
        for table, prop in added:
            del table[prop]
        for module, attr, original in reversed(saved):
            setattr(module, attr, original)


@dataclass
class PythonResult:
    verdict: str  # explore's: "ok" | "violation" | "unknown"; "liveness-only" when not run
    violated: list[str] = field(default_factory=list)
    states: int | None = None
    seconds: float = 0.0
    trace: list[str] = field(default_factory=list)  # the first violation's trace labels
    error: str = ""


def _witnesses() -> dict[str, Callable[..., bool]]:
    from refqueue.model.invariants import WITNESSES

    return WITNESSES


def run_python_kill(mutant: Mutant, *, max_seconds: float) -> PythonResult:
    """``explore`` on the mutant's world with its patch in place (``liveness-only``: not run)."""
    if mutant.python is None:
        return PythonResult(LIVENESS_ONLY)
    from refqueue.model.explorer import explore
    from refqueue.model.world import make_world

    try:
        world = make_world(**mutant.python.world)
    except (TypeError, ValueError) as exc:
        return PythonResult("unknown", error=f"python.world is not valid for make_world: {exc}")
    start = time.monotonic()
    goal = mutant.python.expected if mutant.python.expected in _witnesses() else None
    with patched(mutant.name, mutant.python.extra):
        if goal is None:
            result = explore(world, max_seconds=max_seconds)
        else:  # a witness: killed when the explorer can no longer reach it
            result = explore(world, max_seconds=max_seconds, goals={goal: _witnesses()[goal]}, stop_on_violation=False)
    out = PythonResult(result.verdict, sorted(result.violations), result.distinct_states, time.monotonic() - start)
    if goal is not None and result.verdict != "unknown":
        out.verdict = "reached" if goal in result.goals else "unreachable"
    if result.verdict == "unknown":
        out.error = result.reason
    if mutant.python.expected is not None and mutant.python.expected in result.violations:
        out.trace = [s.label() for s in result.violations[mutant.python.expected]]
    return out


# -- one mutant, and the command ----------------------------------------------------------


@dataclass
class TlcResult:
    kill: TlcKill
    run: TlcRun

    @property
    def killed(self) -> bool:
        if self.kill.witness is not None:
            return self.run.outcome == "ok"
        return self.run.outcome == "violation" and self.run.violated == self.kill.expected

    @property
    def verdict(self) -> str:
        if self.kill.witness is not None:
            if self.run.outcome == "violation":
                return "reached" if self.run.violated == self.kill.witness else self.run.violated or "?"
            return "unreachable" if self.run.outcome == "ok" else "unknown"
        if self.run.outcome == "violation":
            return self.run.violated or "?"
        return "no error" if self.run.outcome == "ok" else "unknown"


@dataclass
class MutantReport:
    mutant: Mutant
    tlc: list[TlcResult]
    python: PythonResult
    graph: GraphResult | None = None  # None: not run (--mutants-without-graphs)

    @property
    def python_killed(self) -> bool | None:
        """None for a liveness-only mutant and for a known gap that still survives."""
        if self.mutant.python is None:
            return None
        if self.mutant.python.expected is None:
            return None if self.python.verdict == "ok" else False
        if self.python.verdict in ("reached", "unreachable"):  # a witness
            return self.python.verdict == "unreachable"
        return self.python.verdict == "violation" and self.mutant.python.expected in self.python.violated

    @property
    def killed(self) -> bool:
        """Killed as mutants.json says: by TLC's expected property in every config, and
        by the explorer's (a known gap must still survive exactly: if the explorer
        now finds something, mutants.json needs updating)."""
        return all(r.killed for r in self.tlc) and self.python_killed is not False


def check_mutant(
    spec_dir: Path,
    mutant: Mutant,
    *,
    timeout: float,
    java: str | None = None,
    jar: Path | None = None,
    graphs: dict[str, Any] | None = None,
) -> MutantReport:
    """TLC's and the explorer's kills; with ``graphs`` (a cache of the model's
    graphs, by config) also the mutated spec's graph against the model's."""
    tlc = [TlcResult(k, run_tlc_kill(spec_dir, mutant, k, timeout=timeout, java=java, jar=jar)) for k in mutant.tlc]
    with MODEL_LOCK:
        python = run_python_kill(mutant, max_seconds=timeout)
    report = MutantReport(mutant, tlc, python)
    if graphs is not None:
        world = _agreement_configs(spec_dir)[mutant.agreement]
        report.graph = run_graph_agreement(
            spec_dir, mutant, world, timeout=max(timeout, GRAPH_TIMEOUT), graphs=graphs, java=java, jar=jar
        )
    return report


def _expected(kill: TlcKill) -> str:
    return f"{kill.expected} unreachable" if kill.witness is not None else kill.expected


def _python_cell(r: MutantReport) -> tuple[str, str, str, str]:
    if r.mutant.python is None:
        return ("liveness-only (TLC)", "-", "-", "-")
    p = r.python
    if p.verdict == "violation":
        verdict = r.mutant.python.expected if r.python_killed else ",".join(p.violated)
    elif p.verdict in ("reached", "unreachable"):
        verdict = p.verdict
    else:
        verdict = "no error" if p.verdict == "ok" else "unknown"
    if r.mutant.python.expected is None:
        return ("- (known gap)", verdict, f"{p.seconds:.1f}", "gap" if r.python_killed is None else "UPDATE")
    expected = r.mutant.python.expected
    if p.verdict in ("reached", "unreachable"):
        expected += " unreachable"
    return (expected, verdict, f"{p.seconds:.1f}", "yes" if r.python_killed else "NO")


def _table(reports: list[MutantReport]) -> list[str]:
    head = ("mutant", "config", "expected", "TLC verdict", "states", "seconds", "killed",
            "python expected", "python verdict", "py s", "py killed", "graph vs model")
    rows = [head]
    for r in reports:
        py = _python_cell(r)
        for j, t in enumerate(r.tlc):
            states = "-" if t.run.distinct_states is None else f"{t.run.distinct_states:,}"
            cells = (r.mutant.name if j == 0 else "", t.kill.config, _expected(t.kill), t.verdict, states,
                     f"{t.run.seconds:.1f}", "yes" if t.killed else "NO")
            graph = "-" if r.graph is None else f"{r.graph.verdict} ({r.graph.config})"
            rows.append(cells + (py + (graph,) if j == 0 else ("",) * 5))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def _select(mutants: list[Mutant], names: list[str]) -> list[Mutant]:
    if not names:
        return mutants
    known = {m.name: m for m in mutants}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise MutantError(f"unknown mutant {unknown}; {MUTANTS_FILE} lists {sorted(known)}")
    return [known[n] for n in dict.fromkeys(names)]


def _print_report(i: int, n: int, report: MutantReport, out: TextIO) -> None:
    mutant = report.mutant
    print(f"[{i}/{n}] {mutant.name}: {mutant.what}", file=out, flush=True)
    for t in report.tlc:
        print(f"    TLC {t.kill.config}: {t.verdict} ({t.run.distinct_states} states, {t.run.seconds:.1f} s), "
              f"expected {_expected(t.kill)}: {'killed' if t.killed else 'SURVIVED'}", file=out, flush=True)
        if t.run.outcome == "unknown":
            print(f"        {t.run.error}", file=out)
    if mutant.python is None:
        print("    Python: liveness-only (the explorer checks safety only)", file=out, flush=True)
    else:
        p = report.python
        found = p.verdict if p.verdict in ("reached", "unreachable") else ", ".join(p.violated) if p.violated else p.verdict
        if mutant.python.expected is None:
            verdict = ("survives, a known gap: " + mutant.python.survives if report.python_killed is None
                       else "the known gap is gone: update python in mutants.json")
            expected = "nothing"
        else:
            verdict = "killed" if report.python_killed else "SURVIVED"
            expected = mutant.python.expected + (" unreachable" if p.verdict in ("reached", "unreachable") else "")
        print(f"    Python explore({mutant.python.world}): {found} ({p.states} states, {p.seconds:.1f} s), "
              f"expected {expected}: {verdict}", file=out, flush=True)
        if p.error:
            print(f"        {p.error}", file=out)
    if report.graph is not None:
        g = report.graph
        says = {"differs": "the graph DIFFERS from the model's", "same": "the same graph as the model's",
                "unknown": "not compared"}[g.verdict]
        print(f"    agreement {g.config}: {says} ({g.seconds:.1f} s): {g.detail}", file=out, flush=True)


def run_mutants(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``refqueue check-spec --mutants [NAME ...]``: see the module docstring."""
    out = out or sys.stdout
    try:
        spec_dir = spec_dir_of(args)
        mutants, timeout = load_mutants(spec_dir)
        mutants = _select(mutants, list(args.mutants or []))
        java, jar = find_java(), find_jar()
    except (MutantError, ManifestError, TlcUnavailable) as exc:
        print(f"refqueue check-spec: {exc}", file=sys.stderr)
        return 2
    timeout = min(timeout, float(getattr(args, "timeout", timeout)))
    start = time.monotonic()
    print(f"check-spec --mutants: {len(mutants)} mutant(s) of {spec_dir / SPEC_FILE}; TLC {jar}, one worker, "
          f"{timeout:g} s per run", file=out, flush=True)
    # A killer config that fails on the unmutated spec kills nothing.
    baseline = sorted({k.config for m in mutants for k in m.tlc if k.config.startswith("MCMut")})
    bad: list[str] = []
    for config in baseline:
        run = run_tlc_kill(spec_dir, None, TlcKill(config, "ok"), timeout=timeout, java=java, jar=jar)
        print(f"baseline {config}: unmutated spec {run.result} ({run.distinct_states} states, {run.seconds:.1f} s)",
              file=out, flush=True)
        if run.outcome != "ok":
            bad.append(f"{config}: {run.error or run.result + ' violated'}")
    if bad:
        print(f"check-spec --mutants: mutant-killing config(s) fail on the unmutated spec, so they prove nothing: "
              f"{'; '.join(bad)}", file=out)
        return 1
    graphs: dict[str, Any] | None = None if getattr(args, "mutants_without_graphs", False) else {}
    jobs = max(1, int(getattr(args, "workers", 1) or 1))  # TLC runs one worker per mutant: --workers mutants at once
    print(f"{len(mutants)} mutant(s), {jobs} at a time (TLC runs in parallel, the Python model one at a time)",
          file=out, flush=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [
            pool.submit(check_mutant, spec_dir, mutant, timeout=timeout, java=java, jar=jar, graphs=graphs)
            for mutant in mutants
        ]
        reports: list[MutantReport] = []
        for i, future in enumerate(futures, 1):
            report = future.result()
            _print_report(i, len(mutants), report, out)
            reports.append(report)
    print(file=out)
    for line in _table(reports):
        print(line, file=out)
    print(f"total {time.monotonic() - start:.1f} s", file=out)
    findings = [r.mutant for r in reports if r.mutant.finding or (r.mutant.python and r.mutant.python.survives)]
    if findings:
        print(file=out)
        print("what the mutants showed about the spec's properties and bounds:", file=out)
        for m in findings:
            if m.finding:
                print(f"    {m.name}: {m.finding}", file=out)
            if m.python is not None and m.python.survives:
                print(f"    {m.name} (Python model): {m.python.survives}", file=out)
    survivors = [r.mutant.name for r in reports if not r.killed]
    if survivors:
        print(f"check-spec --mutants: {len(survivors)} of {len(reports)} mutant(s) SURVIVED: {', '.join(survivors)}",
              file=out)
        return 1
    print(f"check-spec --mutants: all {len(reports)} mutant(s) killed by their expected properties", file=out)
    return 0
