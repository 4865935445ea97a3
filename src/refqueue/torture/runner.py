"""``run_torture(config)``: one torture run, from the server's start to the
checked history.

Layout of the run's folder (``--dir``, or a temporary one)::

    store/      the SharedDirFeatureStore every process opens
    history/    one JSONL history file per process (refqueue.torture.history)
    logs/       each process's stdout and stderr
    redis/      the throwaway server's data directory (its append-only file)
    run.json    the configuration, the schedule and the summary

Order of events: the server (and, with ``drop``, the proxy) starts; the
run's own client creates the queue; the producer and consumer processes
start and say they are ready; the nemesis records time zero and follows the
schedule for ``duration`` seconds while the supervisor replaces every
process that dies; then the nemesis stops and heals, and the end of the run
(``refqueue.torture.final``) closes, drains and measures the residency.
The history is then loaded and checked.
"""

from __future__ import annotations

import json
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from refqueue.torture.config import TortureConfig
from refqueue.torture.history import History, Recorder, load
from refqueue.torture.schedule import FaultStep, plan

__all__ = ["run_torture", "RunResult"]

_READY_S = 180.0  # the first processes import torch: on a loaded machine, tens of seconds
_DEDUP_WINDOW = 100_000  # a put retried after its sample completed answers ReplayedSample
_PROGRESS_S = 2.0


@dataclass
class RunResult:
    config: TortureConfig
    directory: Path
    steps: tuple[FaultStep, ...]
    history: History
    summary: dict[str, Any]
    persistence: str  # the server's, as read from it
    started_ns: int = 0
    elapsed_s: float = 0.0  # the faulted part of the run, time zero to the nemesis's stop
    notes: list[str] = field(default_factory=list)


def _say(stream: Any, text: str) -> None:
    print(text, file=stream, flush=True)


def run_torture(config: TortureConfig, progress: Any = None) -> RunResult:
    """Run ``config`` and return its history and summary (``check`` the history next).

    Progress lines go to ``progress`` (a text stream), by default to ``sys.stderr`` as it is when the run
    starts (not when this module was imported: a redirect made since, or a capture closed since, must not
    break the run)."""
    if progress is None:
        progress = sys.stderr
    from refqueue.torture.final import finish_run
    from refqueue.torture.nemesis import Nemesis
    from refqueue.torture.processes import Supervisor
    from refqueue.torture.proxy import DropProxy
    from refqueue.torture.server import ThrowawayServer
    from refqueue.torture.payload import tensors_for

    external = _reach(config.url) if config.url is not None else None  # (before a folder is made for the run)
    root = Path(config.directory or tempfile.mkdtemp(prefix="refqueue-torture-"))
    for sub in ("store", "history", "logs", "redis"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    if any((root / "history").iterdir()):
        raise ValueError(f"--dir {str(root)!r} already holds a run's history; pass an empty or new folder")
    server: Any = None
    queue: Any = None
    proxy: Any = None
    supervisor: Any = None
    nemesis: Any = None
    try:
        server = ThrowawayServer(config.persistence, str(root / "redis")).start() if external is None else external
        if config.uses_proxy:
            proxy = DropProxy(server.host, server.port).start()
        client_url = proxy.url_for(server.url) if proxy is not None else server.url
        name = f"torture-{config.seed}-{secrets.token_hex(4)}"
        sample_bytes = sum(t.numel() * t.element_size() for t in tensors_for("size").values())
        spec = {
            "url": client_url, "name": name, "root": str(root / "store"), "history": str(root / "history"),
            "logs": str(root / "logs"), "seed": config.seed, "visibility_timeout": config.visibility_timeout,
            "socket_timeout": config.socket_timeout, "max_deliveries": config.max_deliveries,
            "dedup_window": _DEDUP_WINDOW, "fail_rate": config.fail_rate, "stall_every": config.stall_every,
            "high_bytes": config.high_watermark_samples * sample_bytes,
            "low_bytes": config.low_watermark_samples * sample_bytes,
        }
        steps = plan(config.seed, config.faults, config.duration, config.producers, config.consumers,
                     config.socket_timeout)
        final_rec = Recorder(root / "history" / "final.jsonl", "final")
        store, queue = _open_own(spec, server.url, final_rec)
        _say(progress, f"[torture {config.label}] seed {config.seed}, {len(steps)} faults scheduled, server "
                       f"{server.url} (persistence {server.persistence}), folder {root}")
        supervisor = Supervisor(spec, config.producers, config.consumers,
                                Recorder(root / "history" / "supervisor.jsonl", "supervisor"))
        late = supervisor.wait_ready(_READY_S)
        if late:
            raise RuntimeError(f"processes {late} did not start within {_READY_S:.0f} s; see {root / 'logs'}")
        nemesis = Nemesis(steps, Recorder(root / "history" / "nemesis.jsonl", "nemesis"), supervisor, server,
                          proxy, {"seed": config.seed, "faults": list(config.faults), "duration": config.duration,
                                  "schedule": [step.to_dict() for step in steps]})
        nemesis.start()
        started = time.monotonic()
        ticker = _Progress(root / "history", config.label, config.duration)
        next_tick = started + _PROGRESS_S
        while time.monotonic() - started < config.duration and not supervisor.state_lost.is_set():
            supervisor.reap(min(0.5, max(0.0, started + config.duration - time.monotonic())))
            if time.monotonic() >= next_tick:
                next_tick += _PROGRESS_S
                _say(progress, ticker.line(time.monotonic() - started, nemesis.injected, len(supervisor.live())))
        nemesis.stop()
        elapsed = time.monotonic() - started
        if nemesis.error is not None:
            raise RuntimeError(f"the nemesis failed: {nemesis.error!r}") from nemesis.error
        if supervisor.state_lost.is_set():
            _say(progress, "a process saw QueueStateLost: the queue's state was lost; stopping the run")
        _say(progress, f"[torture {config.label}] faults over after {elapsed:.1f} s: closing and draining")
        slots = list(supervisor.slots)
        summary = finish_run(final_rec, supervisor, queue, store, spec,
                             [s for s in slots if s.startswith("p")], [s for s in slots if s.startswith("c")],
                             lambda text: _say(progress, text), faults_over=time.monotonic())
        summary["injected"] = dict(nemesis.injected)
        summary["deaths"] = supervisor.deaths
        final_rec.close()
        history = load(root / "history")
        result = RunResult(config, root, steps, history, summary, server.persistence,
                           started_ns=nemesis.start_ns, elapsed_s=elapsed)
        (root / "run.json").write_text(json.dumps({
            "config": {k: v for k, v in vars(config).items()}, "schedule": [s.to_dict() for s in steps],
            "summary": summary, "persistence": server.persistence, "elapsed_s": elapsed}, indent=1, default=str))
        return result
    finally:
        if nemesis is not None and nemesis._thread.is_alive():
            nemesis.stop()
        if supervisor is not None:
            supervisor.shutdown()
        if config.url is not None and queue is not None:
            _forget(queue)  # the run's keys leave the user's server, the run finished or not (Ctrl-C)
        if proxy is not None:
            proxy.close()
        if server is not None:
            server.stop()


def _reach(url: str) -> Any:
    """The user's server at ``url``, or ``ValueError`` saying it cannot be reached (nothing made yet)."""
    import redis

    from refqueue._redact import redacted, redacted_text
    from refqueue.torture.server import ExternalServer

    try:
        return ExternalServer(url)
    except (redis.exceptions.RedisError, OSError) as exc:
        why = redacted_text(f"{type(exc).__name__}: {exc}")
        raise ValueError(f"--url {redacted(url)!r}: no Redis server answers there ({why}); start one (redis-server "
                         f"--port N) or pass another --url, or leave --url out for a throwaway server") from None


def _open_own(spec: dict[str, Any], direct_url: str, rec: Recorder) -> tuple[Any, Any]:
    """The run's own store and client (straight to the server, never through the proxy)."""
    from refqueue.torture.workers import open_queue
    from refqueue.stores.shared_dir import SharedDirFeatureStore

    store = SharedDirFeatureStore(spec["root"], high_watermark_bytes=spec["high_bytes"],
                                  low_watermark_bytes=spec["low_bytes"], fsync=False)
    own = dict(spec, url=direct_url)
    queue = rec.call("open", {"url": direct_url, "name": spec["name"]}, lambda: open_queue(own, store),
                     encode=lambda q: {"epoch": q.epoch})
    return store, queue


def _forget(queue: Any) -> None:
    """Remove the run's keys from the user's server."""
    try:
        queue.delete()
    except Exception:  # noqa: BLE001 (the server may be unreachable; the keys are the run's only)
        pass


class _Progress:
    """Counts puts and acks in the history files as they grow (for the progress line)."""

    def __init__(self, directory: Path, label: str, duration: float) -> None:
        self.directory = directory
        self.label = label
        self.duration = duration
        self._offsets: dict[Path, int] = {}
        self.puts = self.acks = self.errors = 0

    def _scan(self) -> None:
        for path in self.directory.glob("[pc]*.jsonl"):
            with open(path, "rb") as f:
                f.seek(self._offsets.get(path, 0))
                data = f.read()
            end = data.rfind(b"\n") + 1
            self._offsets[path] = self._offsets.get(path, 0) + end
            for line in data[:end].splitlines():
                if b'"type":"ok","call":"ack","result":true' in line:
                    self.acks += 1
                elif b'"type":"ok","call":"put"' in line:
                    self.puts += 1
                elif b'"type":"error"' in line:
                    self.errors += 1

    def line(self, elapsed: float, injected: dict[str, int], live: int) -> str:
        self._scan()
        faults = " ".join(f"{k}={v}" for k, v in sorted(injected.items())) or "-"
        return (f"[torture {self.label}] {elapsed:5.1f}/{self.duration:.0f} s  puts {self.puts}  "
                f"acks {self.acks}  errors {self.errors}  faults {faults}  processes {live}")
