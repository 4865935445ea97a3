"""``Supervisor``: the run's producer and consumer processes, by slot.

A *slot* (``p0``, ``c1``, ...) is a role that one process fills at a time;
its processes are its *incarnations* (``c1.0``, ``c1.1``, ...).  When a
process dies (the nemesis killed it, or it crashed) the supervisor starts
the next incarnation, until the slot is retired (the end of the run).  A
process that lost the queue's state (exit status 3) is not replaced: the
run stops.  Every start and every exit is an operation in the history
(process ``supervisor``), with the exit status.

Processes are started with 'spawn' (never fork: a forked child would share
its parent's Redis connections and locks) and talk JSON over a pipe.

Threads: the main thread alone reaps processes (``reap``), waiting on their
sentinels; the nemesis thread kills by pid and waits on the incarnation's
``exited`` event, which ``reap`` sets.  ``_lock`` guards the slot table.
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from dataclasses import dataclass, field
from typing import Any

from refqueue.torture.history import Recorder
from refqueue.torture.workers import STATE_LOST_EXIT, consumer_main, producer_main

__all__ = ["Supervisor", "Incarnation"]

_SPAWN = multiprocessing.get_context("spawn")


@dataclass
class Incarnation:
    """One process of a slot."""

    name: str
    process: Any
    conn: Any
    exited: threading.Event = field(default_factory=threading.Event)
    exitcode: int | None = None
    ready: bool = False


class Supervisor:
    def __init__(self, spec: dict[str, Any], producers: int, consumers: int, recorder: Recorder) -> None:
        self._spec_json = json.dumps(spec)
        self.rec = recorder
        self._lock = threading.Lock()
        self.slots: dict[str, Incarnation | None] = {}
        self._next: dict[str, int] = {}
        self._retired: set[str] = set()
        self.state_lost = threading.Event()  # a process exited with STATE_LOST_EXIT
        self.deaths = 0
        for slot in [f"p{i}" for i in range(producers)] + [f"c{i}" for i in range(consumers)]:
            self._next[slot] = 0
            self.slots[slot] = None
            self.start(slot)

    def start(self, slot: str) -> Incarnation:
        with self._lock:
            name = f"{slot}.{self._next[slot]}"
            self._next[slot] += 1
        target = producer_main if slot.startswith("p") else consumer_main
        mine, theirs = _SPAWN.Pipe()
        process = _SPAWN.Process(target=target, args=(self._spec_json, name, theirs), name=name, daemon=True)
        seq = self.rec.invoke("spawn", {"process": name})
        process.start()
        theirs.close()
        self.rec.ok(seq, {"pid": process.pid})
        incarnation = Incarnation(name, process, mine)
        with self._lock:
            self.slots[slot] = incarnation
        return incarnation

    def live(self) -> list[Incarnation]:
        with self._lock:
            return [inc for inc in self.slots.values() if inc is not None and inc.exitcode is None]

    def current(self, slot: str) -> Incarnation | None:
        with self._lock:
            inc = self.slots.get(slot)
            return inc if inc is not None and inc.exitcode is None else None

    def wait_ready(self, timeout: float) -> list[str]:
        """Wait until every live process said it is ready; the names of those that did not in time."""
        late = []
        for inc in self.live():
            if not inc.ready:
                try:
                    if inc.conn.poll(timeout):
                        json.loads(inc.conn.recv_bytes())
                        inc.ready = True
                except (EOFError, OSError):
                    pass
                if not inc.ready:
                    late.append(inc.name)
        return late

    def _said_ready(self, inc: Incarnation) -> bool:
        """Whether ``inc`` said it is ready (reads its message if it came since)."""
        if not inc.ready:
            try:
                if inc.conn.poll(0):
                    json.loads(inc.conn.recv_bytes())
                    inc.ready = True
            except (EOFError, OSError):
                pass
        return inc.ready

    def reap(self, timeout: float) -> list[Incarnation]:
        """Wait up to ``timeout`` s for a process to exit; record and
        replace every one that did (main thread only).  Returns them."""
        live = {inc.process.sentinel: inc for inc in self.live()}
        if not live:
            return []
        done = multiprocessing.connection.wait(list(live), timeout)
        exited = []
        for sentinel in done:
            inc = live[sentinel]
            inc.process.join()
            code = inc.process.exitcode
            self.rec.ok(self.rec.invoke("exit", {"process": inc.name}), {"code": code})
            slot = inc.name.split(".")[0]
            with self._lock:
                inc.exitcode = code
                retired = slot in self._retired
            inc.exited.set()
            inc.conn.close()
            exited.append(inc)
            if code == STATE_LOST_EXIT:
                self.state_lost.set()
            elif not retired and code != 0:
                self.deaths += 1
                self.start(slot)
        return exited

    def order(self, slot: str, order: str) -> str | None:
        """Send ``order`` to the slot's live process; its name, or None if there is none."""
        inc = self.current(slot)
        if inc is None:
            return None
        try:
            inc.conn.send_bytes(json.dumps({"order": order}).encode())
        except OSError:
            return None
        return inc.name

    def kill(self, inc: Incarnation) -> bool:
        """SIGKILL ``inc`` (the reaper records and replaces it); False if it was already gone."""
        try:
            os.kill(inc.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
        return inc.exitcode is None

    def retire(self, slots: list[str], timeout: float) -> list[str]:
        """Order ``slots`` to stop, never replace them again, and wait (up
        to ``timeout`` s) for them to exit; SIGKILL the late ones, and at once
        those still starting (not ready yet).  Returns the names of the
        processes killed for being late."""
        import time

        with self._lock:
            self._retired.update(slots)
        for slot in slots:
            self.order(slot, "stop")
        for inc in self.live():
            if inc.name.split(".")[0] in slots and not self._said_ready(inc):
                self.kill(inc)  # still starting (importing torch): it has done nothing, do not wait for it
        deadline = time.monotonic() + timeout
        waiting = lambda: [inc for inc in self.live() if inc.name.split(".")[0] in slots]  # noqa: E731
        while waiting() and time.monotonic() < deadline:
            self.reap(min(0.5, max(0.0, deadline - time.monotonic())))
        killed = []
        for inc in waiting():
            killed.append(inc.name)
            self.kill(inc)
        while waiting():
            self.reap(1.0)
        return killed

    def shutdown(self) -> None:
        """Retire every slot and SIGKILL every live process (a run that failed
        or was interrupted): nothing is replaced, nothing outlives the run."""
        with self._lock:
            self._retired.update(self.slots)
        while self.live():
            for inc in self.live():
                self.kill(inc)
            self.reap(1.0)
