"""``spec/manifest.json``: what TLC must find for each model config.

Like tlaplus/Examples' manifest, each config records its expected size, so a
spec change that silently shrinks (or grows) the state space is caught::

    {"configs": [
      {"name": "MCAgreement", "module": "MCAgreement.tla", "config": "MCAgreement.cfg",
       "mode": "safety", "expected": "ok",
       "distinct_states": 26308, "total_states": 141516, "depth": 25,
       "agreement": {"world": {}}},
      {"name": "MCFlapping", ..., "mode": "counterexample", "expected": "NoFlapping",
       "workers": 1, "distinct_states": 5, "total_states": 5, "depth": 3, "trace_states": 3}
    ]}

``mode`` is ``safety``, ``liveness``, ``counterexample`` or ``witness``;
``expected`` is ``ok`` for the first two and the name of the invariant or
property TLC must find violated for a counterexample.  A witness config asks
TLC to *reach* a state the protocol must allow (D5's re-put delivered): its
``expected`` is the negated witness invariant that TLC must find violated,
and its ``witness`` entry, ``{"goal": NAME, "world": {...}}``, names the
goal of ``refqueue.model.invariants.WITNESSES`` that the Python explorer
must reach on ``make_world(**world)`` too.  ``total_states`` is TLC's "states
generated", ``depth`` its "depth of the complete state graph search" (null
where TLC prints none).  A counterexample config runs on one worker
(``"workers": 1``): TLC's breadth-first search is then deterministic, so the
counts at the violation are reproducible and the trace is a shortest one.
``agreement.world`` holds the ``refqueue.model.world.make_world`` keyword
arguments whose Python graph must equal this config's TLC graph.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from refqueue.spec_check.tlc import TlcRun

__all__ = ["MODES", "ManifestError", "ConfigEntry", "default_spec_dir", "load_manifest", "mismatches", "spec_dir_of"]

MODES = ("safety", "liveness", "counterexample", "witness")
_KEYS = {
    "name", "module", "config", "mode", "expected", "workers", "distinct_states", "total_states",
    "depth", "trace_states", "agreement", "witness", "note",
}
_REQUIRED = ("name", "module", "config", "mode", "expected", "distinct_states", "total_states", "depth")


class ManifestError(ValueError):
    """``manifest.json`` is missing or malformed; the message names the entry and the fix."""


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    module: str
    config: str
    mode: str
    expected: str
    distinct_states: int
    total_states: int
    depth: int | None
    trace_states: int | None = None
    workers: int | None = None  # None: the command line's --workers
    agreement: dict[str, Any] | None = None  # {"world": make_world kwargs}
    note: str = ""
    witness: dict[str, Any] | None = None  # {"goal": WITNESSES name, "world": make_world kwargs}


def _count(where: str, key: str, value: object, *, nullable: bool) -> int | None:
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        allowed = "a positive int or null" if nullable else "a positive int"
        raise ManifestError(f"{where}: {key} must be {allowed}, got {value!r}; record what TLC reports")
    return value


def _entry(spec_dir: Path, where: str, raw: object) -> ConfigEntry:
    if not isinstance(raw, dict):
        raise ManifestError(f"{where} must be a JSON object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ManifestError(f"{where} has unknown keys {unknown}; the known keys are {sorted(_KEYS)}")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise ManifestError(f"{where} lacks {missing}; every config records {list(_REQUIRED)}")
    for key in ("name", "module", "config", "mode", "expected"):
        if not isinstance(raw[key], str) or not raw[key]:
            raise ManifestError(f"{where}: {key} must be a non-empty string, got {raw[key]!r}")
    where = f"{where} ({raw['name']})"
    for key, suffix in (("module", ".tla"), ("config", ".cfg")):
        if not raw[key].endswith(suffix) or "/" in raw[key]:
            raise ManifestError(f"{where}: {key} must be a file name ending in {suffix} in the spec directory, got {raw[key]!r}")
        if not (spec_dir / raw[key]).is_file():
            raise ManifestError(f"{where}: {key} {raw[key]!r} does not exist in {spec_dir}; add it or fix the name")
    mode = raw["mode"]
    if mode not in MODES:
        raise ManifestError(f"{where}: mode must be one of {list(MODES)}, got {mode!r}")
    workers = raw.get("workers")
    if workers is not None:
        workers = _count(where, "workers", workers, nullable=False)
    if mode in ("counterexample", "witness"):
        if raw["expected"] == "ok":
            raise ManifestError(f"{where}: a {mode} config expects a violated property, not 'ok'; name it")
        if workers != 1:
            raise ManifestError(
                f"{where}: a {mode} config must set \"workers\": 1, got {workers!r}; with more workers "
                f"the counts at the violation depend on thread timing"
            )
    elif raw["expected"] != "ok":
        raise ManifestError(
            f"{where}: a {mode} config expects 'ok', got {raw['expected']!r}; use mode 'counterexample' for a "
            f"config that must fail"
        )
    agreement = raw.get("agreement")
    if agreement is not None:
        if mode != "safety" or not isinstance(agreement, dict) or set(agreement) != {"world"} or not isinstance(
            agreement["world"], dict
        ):
            raise ManifestError(
                f"{where}: agreement must be {{\"world\": {{make_world keyword arguments}}}} on a safety config, "
                f"got {agreement!r}"
            )
    witness = raw.get("witness")
    if (witness is not None) != (mode == "witness"):
        raise ManifestError(f"{where}: a witness entry goes with mode 'witness' and only there (mode {mode!r})")
    if witness is not None:
        from refqueue.model.invariants import WITNESSES

        if (
            not isinstance(witness, dict) or set(witness) != {"goal", "world"}
            or not isinstance(witness["world"], dict) or witness["goal"] not in WITNESSES
        ):
            raise ManifestError(
                f"{where}: witness must be {{\"goal\": one of {sorted(WITNESSES)}, \"world\": {{make_world "
                f"keyword arguments}}}}, got {witness!r}"
            )
    note = raw.get("note", "")
    if not isinstance(note, str):
        raise ManifestError(f"{where}: note must be a string, got {note!r}")
    return ConfigEntry(
        name=raw["name"],
        module=raw["module"],
        config=raw["config"],
        mode=mode,
        expected=raw["expected"],
        distinct_states=_count(where, "distinct_states", raw["distinct_states"], nullable=False),  # type: ignore[arg-type]
        total_states=_count(where, "total_states", raw["total_states"], nullable=False),  # type: ignore[arg-type]
        depth=_count(where, "depth", raw["depth"], nullable=True),
        trace_states=_count(where, "trace_states", raw.get("trace_states"), nullable=True),
        workers=workers,
        agreement=agreement,
        note=note,
        witness=witness,
    )


def default_spec_dir() -> Path:
    """The spec this refqueue was built from, wherever refqueue is installed.

    A wheel ships it inside the package (``refqueue/spec/``, copied there by
    setup.py's build step); a source checkout (an editable install, a run
    from the repository) has it at ``spec/`` next to ``src/``.  The one with
    a ``manifest.json`` is used, the package's copy first; neither is a
    ``ManifestError`` naming both places.
    """
    package = Path(__file__).resolve().parents[1]  # .../refqueue
    shipped, checkout = package / "spec", package.parents[1] / "spec"
    for candidate in (shipped, checkout):
        if (candidate / "manifest.json").is_file():
            return candidate
    raise ManifestError(
        f"refqueue's spec was not found: neither {shipped} (where a wheel installs it) nor {checkout} (a source "
        f"checkout's spec/) holds manifest.json; install refqueue from a wheel built with `pip wheel .`, or pass "
        f"--spec-dir with the directory holding SampleRefQueue.tla and manifest.json"
    )


def spec_dir_of(args: Any) -> Path:
    """``--spec-dir`` when given, else ``default_spec_dir()``."""
    given = getattr(args, "spec_dir", None)
    return default_spec_dir() if given is None else Path(given)


def load_manifest(spec_dir: str | Path) -> list[ConfigEntry]:
    """The validated entries of ``spec_dir/manifest.json``, in file order."""
    spec_dir = Path(spec_dir)
    path = spec_dir / "manifest.json"
    if not path.is_file():
        raise ManifestError(
            f"{path} does not exist; pass --spec-dir with the directory holding SampleRefQueue.tla and "
            f"manifest.json (the repository's spec/)"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(
            f"{path} is not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8 JSON"
        ) from None
    except OSError as exc:
        raise ManifestError(f"{path} cannot be read ({exc.strerror or exc}); make it a readable file") from None
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("configs"), list) or not data["configs"]:
            raise ManifestError(f"{path} must be an object with a non-empty \"configs\" list")
        entries = [_entry(spec_dir, f"{path.name} configs[{i}]", raw) for i, raw in enumerate(data["configs"])]
    except json.JSONDecodeError as exc:
        raise ManifestError(f"{path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise ManifestError(
            f"{path} nests JSON too deeply to read; a manifest is an object holding a flat \"configs\" list "
            f"of config objects"
        ) from None
    names = [e.name for e in entries]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ManifestError(f"{path} lists {dupes} more than once; give every config one entry")
    return entries


def mismatches(entry: ConfigEntry, run: TlcRun) -> list[str]:
    """How ``run`` differs from what ``entry`` expects (empty: as expected)."""
    if run.outcome == "unknown":
        return [f"no verdict: {run.error} (unknown is not a pass)"]
    out: list[str] = []
    if run.result != entry.expected:
        if entry.expected == "ok":
            out.append(f"expected no violation, TLC found {run.result} violated")
        elif run.outcome == "ok":
            out.append(f"expected TLC to find {entry.expected} violated, it found no violation")
        else:
            out.append(f"expected TLC to find {entry.expected} violated, it found {run.result} violated")
    for label, want, got in (
        ("distinct states", entry.distinct_states, run.distinct_states),
        ("states generated", entry.total_states, run.total_states),
        ("depth", entry.depth, run.depth),
    ):
        if want != got:
            out.append(f"{label}: manifest {want}, TLC {got}")
    if entry.trace_states is not None and run.trace_states != entry.trace_states:
        out.append(f"trace length: manifest {entry.trace_states} states, TLC printed {run.trace_states}")
    return out
