"""Histories recorded from several processes: clients of one queue in the
kit's process and in spawned children, over a store they share.

``record_processes(backend, seed=...)`` makes the queue with the factory on a
``SharedDirFeatureStore`` in a temporary directory and writes the data of
every sample any thread will put; then the parent runs a controller thread
(reads, reclaims, and closes the queue 80 % of the way through its calls)
and a worker thread on that client, and each child (``python -m
refqueue.conformance.processes``, a fresh interpreter: spawned, never
forked) opens its own client with ``FaultHooks.open_from_spec`` from the
JSON of ``FaultHooks.client_spec`` and runs one worker
(``refqueue.conformance.history``'s workers: puts, acquires, acks, fails,
extends, dead-letters, stale hand-backs, reads).  Everything crosses the
process boundary as JSON (on the child's stdin and stdout; refs and leases
by their JSON), never pickle.

Every call is stamped before and after from ``time.monotonic_ns()``, one
clock for all processes on Linux (CLOCK_MONOTONIC is system-wide): a call
that responded before another was invoked, in any process, comes first in
real time.  A stamp never equals an earlier one of its process (a respond
is at least its invoke + 1 ns); a bumped stamp only widens an interval, so it
can never make the checker demand an order that did not happen.

A child serves one history after another when the caller passes a
``Children`` pool (the faults phase does, for the histories of its check):
each history it opens a fresh client and store from that history's header,
and a child that failed, hung or was not read to the end of its history is
killed, never reused.  A spawned child costs about 1.8 s of CPU (its store
imports torch), so five histories of two children spend 3.6 s instead of 18.

Time does not pass: each process reads its own ``ManualClock``, all at
100.0 and never moved, so every deadline is the same in every process and
``reclaim_expired`` takes nothing back; the histories are plain (no
watermarks, the data written before the threads start).  The result is an
ordinary ``History`` (its threads numbered across the processes) that
``refqueue.conformance.linearizability.check`` decides.
"""

from __future__ import annotations

import json
import os
import queue as queue_module
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from typing import Any

from refqueue.conformance.contract import Backend, load_backend
from refqueue.conformance.history import (
    _CONTROLLER_KINDS,
    _WORKER_KINDS,
    FORMAT,
    History,
    RecordingHung,
    _plan,
    _Recorder,
    _recording_threads,
    _worker,
    history_config,
)
from refqueue.conformance.samples import STORE_META, sample_tensors
from refqueue.conformance.session import CLOCK_START

__all__ = ["CHILD_MARK", "Children", "plan_processes", "record_processes"]

CHILD_MARK = "refqueue-child: "  # the prefix of every line of the child protocol on its stdout
_CLOSE_AT = 0.8  # the controller closes the queue this far through its calls
_START_WITHIN = 120.0  # seconds a child may take to import the kit and open its client


def plan_processes(seed: int, *, threads: int, operations: int) -> dict[int, list[str]]:
    """The programs of a multi-process history: thread 0 is the controller
    (reads and reclaims, and the close), the others workers; no thread moves
    time (each process has its own clock)."""
    kinds = {k: w for k, w in _CONTROLLER_KINDS.items() if k != "tick"}
    per_thread = operations // threads
    programs = {}
    for t in range(threads):
        rng = random.Random(seed * 1009 + t)
        plan = _plan(rng, kinds if t == 0 else _WORKER_KINDS, per_thread)
        if t == 0:
            plan.insert(int(len(plan) * _CLOSE_AT), "close")
        programs[t] = plan
    return programs


class _Stamped(_Recorder):
    """A recorder whose stamps are ``time.monotonic_ns()``, strictly increasing in this process."""

    def __init__(self, client: Any, store: Any, clock: Any, refs: dict[str, Any]) -> None:
        super().__init__(_Client(client, store, clock), refs)
        self._last = 0

    def stamp(self) -> int:
        with self._stamp_lock:
            self._last = max(time.monotonic_ns(), self._last + 1)
            return self._last


class _Client:
    """What a recorder reads of a session: the queue, its store and clock."""

    def __init__(self, queue: Any, store: Any, clock: Any) -> None:
        self.queue = queue
        self.store = store
        self.clock = clock


def _fresh(programs: Mapping[int, list[str]]) -> dict[int, list[str]]:
    return {t: [f"t{t}-{k}" for k in range(sum(1 for kind in plan if kind in ("put", "put_blocks")))] for t, plan in programs.items()}


def record_processes(
    backend: Backend | str,
    *,
    seed: int = 0,
    children: int = 2,
    operations: int = 200,
    hang_after: float = 60.0,
    pool: Children | None = None,
) -> History:
    """Record one history of the parent's controller and worker and ``children``
    spawned workers (see the module docstring).  Raises ``RecordingHung`` when
    a thread or a child has not finished ``hang_after`` seconds after the
    start (the children are killed), ``RuntimeError`` when a child fails to
    start or to open its client.  With ``pool``, the children come from it
    and those that finished their part go back to it; without, they are
    spawned for this history and ended after it."""
    from refqueue.clock import ManualClock
    from refqueue.stores.shared_dir import SharedDirFeatureStore

    if isinstance(backend, str):
        backend = load_backend(backend)
    hooks = backend.faults
    caps = backend.capabilities
    threads = 2 + children
    programs = plan_processes(seed, threads=threads, operations=operations)
    fresh = _fresh(programs)
    config = history_config(backend, seed)
    with tempfile.TemporaryDirectory(prefix="refqueue-processes-") as root:
        store = SharedDirFeatureStore(root, fsync=False)
        clock = ManualClock(CLOCK_START)
        queue = backend.factory(store, clock, on_pause=lambda h: None, on_resume=lambda h: None, **config)
        procs: list[_Child] = []
        try:
            sizes = {sample_id: 1 for ids in fresh.values() for sample_id in ids}
            refs = {
                sample_id: store.put(sample_id, sample_tensors(1, k + 1), num_tokens=1, **STORE_META)
                for k, sample_id in enumerate(sizes)
            }
            spec = hooks.client_spec(queue)
            for t in range(2, threads):
                procs.append((pool.take if pool is not None else _spawn)(t, {
                    "target": backend.target, "spec": spec, "store": {"root": root, "uri": store.uri},
                    "clock_start": CLOCK_START, "thread": t, "program": programs[t], "fresh": fresh[t],
                    "refs": {sid: ref.to_json() for sid, ref in refs.items()}, "seed": seed,
                }))  # fmt: skip
            for child in procs:
                child.ready(_START_WITHIN)
            rec = _Stamped(queue, store, clock, refs)  # every ref: a lease tells whether it carries the ref put
            # the kit's process runs programs 0 (the controller) and 1; the children the others
            workers = _recording_threads(rec, {t: programs[t] for t in (0, 1)}, fresh, seed, caps, "refqueue-processes")
            for child in procs:
                child.go()
            for w in workers:
                w.start()
            give_up = time.monotonic() + hang_after
            for t, w in zip((0, 1), workers):
                w.join(max(0.0, give_up - time.monotonic()))
                if w.is_alive():
                    raise RecordingHung(
                        f"thread {t} (in the kit's process) of a {threads}-thread, {children + 1}-process history "
                        f"(seed {seed}) of {backend.target} was still in {rec.current.get(t, 'a call')} {hang_after} s "
                        f"after the start; the backend deadlocked or lost a wakeup"
                    )
            if rec.errors:
                raise rec.errors[0]
            events = [e for t in (0, 1) for e in rec.events[t]]
            for child in procs:
                events += child.events(max(0.0, give_up - time.monotonic()), hang_after)
            epoch = queue.epoch
        finally:
            for child in procs:
                if pool is not None and child.finished:
                    pool.keep(child)  # its part read to the end: it waits for the next history's header
                else:
                    child.kill()
            for fn in (getattr(queue, "close", None), store.close):
                try:
                    if fn is not None:
                        fn()
                except Exception:  # noqa: BLE001 - winding down changes no verdict
                    pass
    raw = sorted(events, key=lambda e: e["invoke"])
    data = {
        "format": FORMAT, "backend": backend.target, "seed": seed,
        "config": {k: config.get(k) for k in ("visibility_timeout", "max_deliveries", "dedup_window")},
        "store": {"capacity": None, "max_samples": None, "high": None, "low": None},
        "fifo": caps.fifo, "deadlines": caps.injected_clock, "clock_start": CLOCK_START, "epoch": epoch,
        "stored": sizes, "scrub_window": True,  # a backend with faults completes in two steps (D9)
        "events": [{"id": k, **e} for k, e in enumerate(raw)],
    }  # fmt: skip
    return History.from_json(json.dumps(data))


class Children:
    """Spawned children kept between histories (see the module docstring):
    ``take`` hands one the header of its next history, spawning it when
    none waits; ``keep`` takes back one that reported its events; ``close``
    (or leaving the ``with`` block) ends the children that wait."""

    def __init__(self) -> None:
        self._idle: list[_Child] = []
        self.spawned = 0  # children started, over the pool's life

    def take(self, thread: int, header: dict[str, Any]) -> _Child:
        while self._idle:
            child = self._idle.pop()
            if child.proc.poll() is None:
                try:
                    child.start(thread, header)
                    return child
                except OSError:  # (its stdin closed: it died after the poll)
                    pass
            child.kill()  # (it died while it waited)
        self.spawned += 1
        return _spawn(thread, header)

    def keep(self, child: _Child) -> None:
        self._idle.append(child)

    def close(self) -> None:
        idle, self._idle = self._idle, []
        for child in idle:
            child.end()

    def __enter__(self) -> Children:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _spawn(thread: int, header: dict[str, Any]) -> _Child:
    """A new child, given the header of its first history."""
    child = _Child()
    child.start(thread, header)
    return child


_END_WITHIN = 10.0  # seconds a waiting child may take to exit once its stdin closes


class _Child:
    """One spawned child: its process, and the protocol lines it wrote (read by a thread)."""

    def __init__(self) -> None:
        self.thread = -1  # the thread of the history it runs now
        self.finished = False  # its events of that history were read
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # it imports what the kit's process imports
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "refqueue.conformance.processes"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        self.lines: queue_module.Queue[dict[str, Any] | None] = queue_module.Queue()
        self.err: list[str] = []
        threading.Thread(target=self._read, name=f"refqueue-child-{self.proc.pid}-out", daemon=True).start()
        threading.Thread(target=self._drain_err, name=f"refqueue-child-{self.proc.pid}-err", daemon=True).start()

    def start(self, thread: int, header: dict[str, Any]) -> None:
        """Send the header of the child's next history."""
        self.thread = thread
        self.finished = False
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(header) + "\n")
        self.proc.stdin.flush()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(CHILD_MARK):
                self.lines.put(json.loads(line[len(CHILD_MARK):]))
        self.lines.put(None)  # the child's stdout closed

    def _drain_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err.append(line)
            del self.err[:-40]

    def _next(self, within: float, waiting_for: str) -> dict[str, Any]:
        try:
            message = self.lines.get(timeout=within)
        except queue_module.Empty:
            raise RecordingHung(f"the child process of thread {self.thread} did not report {waiting_for} within {within:.0f} s") from None
        if message is None or "error" in message:
            why = "its output ended" if message is None else message["error"]
            raise RuntimeError(
                f"the child process of thread {self.thread} failed before {waiting_for}: {why}; its stderr ends with:\n"
                + "".join(self.err[-20:])
            )
        return message

    def ready(self, within: float) -> None:
        self._next(within, "that its client is open")

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def events(self, within: float, hang_after: float) -> list[dict[str, Any]]:
        try:
            message = self._next(within, "its calls")
        except RecordingHung:
            raise RecordingHung(
                f"thread {self.thread} (a child process) had not finished its calls {hang_after} s after the start; "
                f"the backend deadlocked or lost a wakeup"
            ) from None
        self.finished = True
        return list(message["events"])

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def end(self) -> None:
        """A waiting child exits when its stdin closes (killed if it does not)."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(_END_WITHIN)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()


def _say(message: Mapping[str, Any]) -> None:
    sys.stdout.write(CHILD_MARK + json.dumps(message) + "\n")
    sys.stdout.flush()


def _child() -> int:
    """The child: one history after another, each from its header line, until stdin ends."""
    while True:
        line = sys.stdin.readline()
        if not line:
            return 0
        code = _one_history(line)
        if code:
            return code


def _one_history(header_line: str) -> int:
    """Read the header, open the client, wait for ``go``, run the worker, report its events."""
    from refqueue.clock import ManualClock
    from refqueue.refs import SampleRef
    from refqueue.stores.shared_dir import SharedDirFeatureStore

    try:
        header = json.loads(header_line)
        backend = load_backend(header["target"])
        store = SharedDirFeatureStore(header["store"]["root"], uri=header["store"]["uri"], fsync=False)
        clock = ManualClock(header["clock_start"])
        client = backend.faults.open_from_spec(header["spec"], store, clock)
        refs = {sid: SampleRef.from_json(text) for sid, text in header["refs"].items()}
        t = header["thread"]
        rec = _Stamped(client, store, clock, refs)
        rec.events[t] = []
        rec.thread_of[threading.get_ident()] = t
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        _say({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    _say({"ready": True})
    if sys.stdin.readline().strip() != "go":
        return 1
    try:
        rng = random.Random(header["seed"] * 1009 + t + 7919)
        _worker(rec, t, header["program"], header["fresh"], rng, backend.capabilities)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        _say({"error": f"{type(exc).__name__}: {exc} (in {rec.current.get(t, 'a call')})"})
        return 1
    _say({"events": rec.events[t]})
    # The client is not closed (close() would close the queue for everyone): it
    # is dropped with this history; the store is this process's to close.
    try:
        store.close()
    except Exception:  # noqa: BLE001 - winding down changes no verdict; the child serves the next history
        pass
    return 0


if __name__ == "__main__":
    sys.exit(_child())
