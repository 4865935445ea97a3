"""The nemesis's schedule: a pure function of the seed (FoundationDB style).

``plan(seed, faults, duration, producers, consumers, socket_timeout)``
returns every fault of the run, in time order, before the run starts: when
(seconds after the workers are up), which fault, whom, how.  Each fault kind
draws from its own random stream (seeded by ``"<seed>/<kind>"``), so the
kills of ``--faults kill`` and of ``--faults kill,drop,restart,pause`` are
the same kills at the same moments; a failing run is a command line anyone
can repeat.  What the processes do between faults is the operating
system's business and is not replayed; the faults are.

Kinds and their steps:

* ``kill``: ``target`` a process slot (``c0``.., ``p0``..); ``mode``
  ``"anywhere"`` (SIGKILL at the scheduled moment, whatever it is doing) or
  ``"mid-ack"`` (the consumer is told to SIGKILL itself at its next ack,
  after the ack committed and before its data is scrubbed: the window the
  two-system ack has).  About one every 4 s.
* ``drop``: the proxy forwards the next script call (``EVALSHA``) of any
  client and closes that connection before the reply reaches the client.
  About one every 1.5 s.
* ``restart``: SIGKILL the server, ``seconds`` later start it again on the
  same port and data directory.  About one every 15 s.
* ``pause``: SIGSTOP the server for ``seconds`` (longer than the clients'
  socket timeout), then SIGCONT.  About one every 15 s.

No fault is scheduled in the first second or the last second of the run.
Each kind asked for is scheduled at least once when that leaves room (a
run longer than two seconds): a kind whose random gaps all overrun the run
gets one step at a moment drawn from its own stream, so a short run with
``--faults restart`` does restart the server.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["FaultStep", "plan", "MEAN_INTERVAL", "QUIET"]

# Mean seconds between two faults of a kind (exponential gaps).
MEAN_INTERVAL = {"kill": 4.0, "drop": 1.5, "restart": 15.0, "pause": 15.0}
QUIET = 1.0  # no fault in the first and the last second


@dataclass(frozen=True)
class FaultStep:
    """One scheduled fault."""

    at: float  # seconds after the run's time zero
    fault: str  # kill | drop | restart | pause
    target: str  # a process slot (kill), "proxy" (drop), "server" (restart, pause)
    mode: str = ""  # kill: "anywhere" | "mid-ack"
    seconds: float = 0.0  # pause: how long stopped; restart: how long down

    def to_dict(self) -> dict[str, object]:
        return {"at": round(self.at, 3), "fault": self.fault, "target": self.target, "mode": self.mode,
                "seconds": round(self.seconds, 3)}


def plan(seed: int, faults: tuple[str, ...], duration: float, producers: int, consumers: int,
         socket_timeout: float) -> tuple[FaultStep, ...]:
    """Every fault of the run, in time order (ties by kind)."""
    steps: list[FaultStep] = []
    for kind in faults:
        rng = random.Random(f"{seed}/{kind}")
        at = QUIET
        drawn = 0
        while True:
            at += rng.expovariate(1.0 / MEAN_INTERVAL[kind])
            if at > duration - QUIET:
                break
            steps.append(_step(kind, at, rng, producers, consumers, socket_timeout))
            drawn += 1
        if drawn == 0 and duration > 2 * QUIET:  # at least one of each kind asked for
            steps.append(_step(kind, rng.uniform(QUIET, duration - QUIET), rng, producers, consumers,
                               socket_timeout))
    steps.sort(key=lambda step: (step.at, step.fault))
    return tuple(steps)


def _step(kind: str, at: float, rng: random.Random, producers: int, consumers: int,
          socket_timeout: float) -> FaultStep:
    if kind == "kill":
        if rng.random() < 0.75:  # consumers hold the leases and do the acks
            slot = f"c{rng.randrange(consumers)}"
            mode = "mid-ack" if rng.random() < 0.5 else "anywhere"
        else:
            slot, mode = f"p{rng.randrange(producers)}", "anywhere"
        return FaultStep(at, kind, slot, mode)
    if kind == "drop":
        return FaultStep(at, kind, "proxy", "reply")
    if kind == "restart":
        return FaultStep(at, kind, "server", "kill9", rng.uniform(0.2, 1.5))
    return FaultStep(at, kind, "server", "sigstop", socket_timeout + rng.uniform(0.5, 2.0))  # pause
