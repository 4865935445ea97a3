"""``Nemesis``: carries out the schedule (``refqueue.torture.schedule``) on
the live run, and records each fault as an operation of process
``nemesis`` (Jepsen's nemesis: its faults sit in the same history as the
clients' calls, so the checker shows an anomaly next to the faults that
explain it).

One thread, one fault at a time, in the schedule's order; a fault whose
time came while another was still running (a pause lasts seconds) starts
late, and its record says when it really ran.  ``stop`` interrupts the wait
between faults and the middle of a pause or a restart, and ``heal`` puts
everything back: the server continued and running, the proxy disarmed.

The first record, ``start``, is the run's time zero: the schedule's ``at``
and the excerpts' ``+seconds`` count from it.

What each fault records as its result:

* ``kill``: ``{"killed": process, "how": "anywhere" | "mid-ack" | "fallback"}``
  (``fallback``: ordered to die mid-ack but no ack came within 5 s, so killed
  where it was), or ``{"killed": null}`` when the slot had no live process;
* ``drop``: ``{"dropped": true, "client_port", "sha"}`` or ``{"dropped":
  false}`` (no script call within 3 s);
* ``restart``: ``{"pid_before", "pid_after", "down_s"}``;
* ``pause``: ``{"paused_s"}``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from refqueue.torture.history import Recorder
from refqueue.torture.processes import Supervisor
from refqueue.torture.schedule import FaultStep

__all__ = ["Nemesis"]

_MID_ACK_WAIT = 5.0  # seconds a consumer ordered to die mid-ack has to reach an ack
_DROP_WAIT = 3.0  # seconds for the armed proxy to see a script call


class Nemesis:
    def __init__(self, steps: tuple[FaultStep, ...], recorder: Recorder, supervisor: Supervisor,
                 server: Any, proxy: Any, args: dict[str, Any]) -> None:
        self.steps = steps
        self.rec = recorder
        self.supervisor = supervisor
        self.server = server
        self.proxy = proxy
        self._args = args
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="refqueue-torture-nemesis", daemon=True)
        self.injected: dict[str, int] = {}  # faults that took effect, by kind (the nemesis thread writes)
        self.start_ns = 0
        self.error: BaseException | None = None

    def start(self) -> None:
        """Record time zero (``start``, with the schedule) and begin."""
        seq = self.rec.invoke("start", self._args)
        self.start_ns = time.monotonic_ns()
        self.rec.ok(seq, {"steps": len(self.steps)})
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            for step in self.steps:
                due = self.start_ns / 1e9 + step.at
                if self._stop.wait(max(0.0, due - time.monotonic_ns() / 1e9)):
                    return
                seq = self.rec.invoke(step.fault, step.to_dict())
                try:
                    result = getattr(self, f"_{step.fault}")(step)
                except Exception as exc:
                    self.rec.error(seq, exc)
                    raise
                self.rec.ok(seq, result)
                if result.get("killed") or result.get("dropped") or step.fault in ("restart", "pause"):
                    self.injected[step.fault] = self.injected.get(step.fault, 0) + 1
        except BaseException as exc:  # kept for the run, which reports it
            self.error = exc
        finally:
            self.heal()

    def heal(self) -> None:
        """The server running and continued, the proxy disarmed."""
        if self.proxy is not None:
            self.proxy.disarm()
        if hasattr(self.server, "resume"):
            self.server.resume()
            if self.server.process is None:
                seq = self.rec.invoke("heal", {"start": "server"})
                self.server.start()
                self.rec.ok(seq, {"pid": self.server.pid})

    # -- the faults ---------------------------------------------------------------

    def _kill(self, step: FaultStep) -> dict[str, Any]:
        inc = self.supervisor.current(step.target)
        if inc is None:
            return {"killed": None, "why": f"{step.target} has no live process now"}
        how = "anywhere"
        if step.mode == "mid-ack":
            self.supervisor.order(step.target, "die-mid-ack")
            if inc.exited.wait(_MID_ACK_WAIT):
                return {"killed": inc.name, "how": "mid-ack", "code": inc.exitcode}
            how = "fallback"
        self.supervisor.kill(inc)
        return {"killed": inc.name, "how": how, "pid": inc.process.pid}

    def _drop(self, step: FaultStep) -> dict[str, Any]:
        seen = self.proxy.drop_next_reply()
        drop = self.proxy.wait_drop(seen, _DROP_WAIT)
        if drop is None:
            return {"dropped": False}
        return {"dropped": True, "client_port": drop.client_port, "sha": drop.sha}

    def _restart(self, step: FaultStep) -> dict[str, Any]:
        before = self.server.pid
        self.server.kill()
        down = time.monotonic()
        self._stop.wait(step.seconds)  # how long the server stays down (the fault's length)
        self.server.start()
        return {"pid_before": before, "pid_after": self.server.pid, "down_s": round(time.monotonic() - down, 3)}

    def _pause(self, step: FaultStep) -> dict[str, Any]:
        self.server.pause()
        paused = time.monotonic()
        try:
            self._stop.wait(step.seconds)  # how long the server stays stopped (the fault's length)
        finally:
            self.server.resume()
        return {"paused_s": round(time.monotonic() - paused, 3)}
