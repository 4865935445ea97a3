"""Real multi-threaded histories of a backend: recording, and their JSON form.

A *history* is what several threads did to one queue, as the threads saw it:
for each call, which thread made it, its arguments, its answer (a value, or
the rejection kind of the exception it raised) and two timestamps, taken
just before the call was made (``invoke``) and just after it answered
(``respond``), from one counter all threads share.  ``a.respond <
b.invoke`` therefore means that ``a`` finished before ``b`` began; calls
whose intervals overlap ran concurrently and may have taken effect in either
order.  ``refqueue.conformance.linearizability`` decides whether some order
that respects the first relation explains every answer by the model.

``record(backend, seed=...)`` makes one: ``threads - 1`` workers put fresh
refs (and re-put their own older ones), acquire, ack, fail, extend and
dead-letter the leases they hold and the stale ones they held, reclaim, and
read the counters; thread 0 is the *controller*, the only one that moves
time (``tick``: ``ManualClock.advance``, recorded like any call, so the model
sees time move at a point of the order), reclaims, reads, and closes the
queue near its end.  Each thread's sequence of call *kinds* is drawn from
the seed before the threads start (``plan_programs``; ``record(...,
programs=)`` runs given programs, e.g. shrunk ones); which lease a call uses
depends on what the thread holds at that moment.  In a plain history the
data of every ref a worker may put is written to the store before the
threads start (``History.stored``).  A *rich* history (``rich_history``: two
seeds in three) runs on a store with watermarks: each worker writes its
sample's data itself (``store_put``, concurrent with the other calls) before
it puts the ref, makes one-step blocking puts that pause and resume, scrubs
the data of a put the queue refused, and every thread reads
``store.health()`` and ``is_paused``; each run of ``on_pause``/``on_resume``
is a ``callback`` event of the thread that ran it (``History.sizes`` lists
the ids the store puts write).

To make threads interleave inside the backend's calls, not only between
them, recording lowers the interpreter's thread switch interval
(``sys.setswitchinterval``) and restores it afterwards.

A history serialises to JSON (``to_json``/``from_json``, ``save``/``load``),
never pickle, so a failing one can be kept and checked again.  Its format:

    {"format": "refqueue-history/1", "backend": ..., "seed": ...,
     "config": {"visibility_timeout": 2.0, "max_deliveries": 3, "dedup_window": null},
     "store": {"capacity": null, "max_samples": null, "high": null, "low": null},
     "fifo": true, "deadlines": true, "clock_start": 100.0, "epoch": "<queue epoch>",
     "stored": {"t1-0": 1, ...},          # sample id -> size in units, written first
     "sizes": {"t1-0": 1, ...},           # optional: ids its store_put events write -> size in units
     "events": [{"id": 0, "thread": 1, "call": "put", "args": ["t1-0"],
                 "invoke": 3, "respond": 4, "returned": null}, ...]}

An event has either ``"returned"`` (``null``, a bool, an int, a lease, a
list of dead letters) or ``"raised"`` (the model's rejection kind, or
``null`` for an exception that is no rejection) with ``"error"`` (its text).
A lease argument is ``[epoch, lease_id]``; an acquire returns a lease as
``{"sample_id", "redelivery_count", "deadline", "epoch", "lease_id",
"ref_ok"}`` (``ref_ok``: the lease carries the very ref that was put).
"""

from __future__ import annotations

import itertools
import json
import math
import random
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from refqueue.conformance.contract import Backend, load_backend, rejection_kind

__all__ = [
    "CALLS",
    "plan_programs",
    "FORMAT",
    "Event",
    "History",
    "RecordingHung",
    "history_config",
    "record",
]

FORMAT = "refqueue-history/1"

# Every call a history may hold, with the kinds of its arguments:
# "sample" a sample id, "lease" a lease [epoch, lease_id], "seconds" a duration
# (null: the queue's visibility timeout, for extend), "reason" a dead-letter
# reason, "interval" acquire's poll interval.
CALLS: Mapping[str, tuple[str, ...]] = {
    "put": ("sample",),
    "put_blocks": ("sample",),  # put_blocks_until_below(ref, abort_when=lambda: True): one step
    "acquire_nowait": (),
    "acquire": ("interval",),
    "ack": ("lease",),
    "fail": ("lease",),
    "dead_letter": ("lease", "reason"),
    "extend": ("lease", "seconds"),
    "reclaim_expired": (),
    "close": (),
    "tick": ("seconds",),  # clock.advance(seconds): time passes
    "pending_count": (),
    "outstanding_count": (),
    "is_drained": (),
    "is_closed": (),
    "dead_letters": (),
    "store_put": ("sample",),  # store.put of the sample's data (its size: the history's sizes)
    "health": (),  # store.health(), in units: {"resident", "count", "high", "low"}
    "is_paused": (),
    "scrub": ("sample",),  # store.scrub(ref) by the producer of a put the queue refused (it owns the data)
    # on_pause/on_resume ran in this thread: "pause"/"resume".  A backend may
    # deliver a callback in another call than the step that caused it (in
    # order, outside its locks): the event is the delivery, not a call.
    "callback": ("event",),
}
CALLBACKS = ("pause", "resume")

LeaseKey = tuple[str, int]  # (epoch, lease_id): a lease's identity (D1)


class RecordingHung(AssertionError):
    """A thread did not finish its calls in time (a deadlock or a lost wakeup
    in the backend); the message names the thread and the call it was in."""


@dataclass(frozen=True)
class Event:
    """One call of a history: ``returned`` is its answer when ``error`` is None;
    otherwise it raised, ``raised`` being the rejection kind (None for an
    exception that is no rejection) and ``error`` the exception's text."""

    id: int
    thread: int
    call: str
    args: tuple[Any, ...]
    invoke: float  # a recording's stamps are ints; a hand-built history may use any numbers
    respond: float
    returned: Any = None
    raised: str | None = None
    error: str | None = None  # the exception's text; None when the call returned

    @property
    def did_raise(self) -> bool:
        return self.error is not None

    def lease_arg(self) -> LeaseKey | None:
        """The lease this call hands back to the queue, if any."""
        kinds = CALLS[self.call]
        return _key(self.args[0]) if kinds and kinds[0] == "lease" else None

    def minted(self) -> LeaseKey | None:
        """The lease an acquire returned, if any."""
        if self.call in ("acquire", "acquire_nowait") and not self.did_raise and isinstance(self.returned, dict):
            return (self.returned["epoch"], self.returned["lease_id"])
        return None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "thread": self.thread,
            "call": self.call,
            "args": [list(a) if isinstance(a, tuple) else a for a in self.args],
            "invoke": self.invoke,
            "respond": self.respond,
        }
        if self.did_raise:
            d["raised"], d["error"] = self.raised, self.error
        else:
            d["returned"] = self.returned
        return d

    def text(self, epoch: str | None = None) -> str:
        """``t2 #41 acquire_nowait() -> lease 7 of 't1-3' (redelivery 0, deadline 102.0)  [invoke 90, respond 95]``."""
        args = ", ".join(_arg_text(kind, a, epoch) for kind, a in zip(CALLS[self.call], self.args))
        if self.did_raise:
            answer = f"raised {self.error}" + (f" (kind {self.raised!r})" if self.raised else " (no rejection: a crash)")
        else:
            answer = "-> " + answer_text(self.call, self.returned, epoch)
        return f"t{self.thread} #{self.id} {self.call}({args}) {answer}  [invoke {self.invoke}, respond {self.respond}]"


def _arg_text(kind: str, value: Any, epoch: str | None) -> str:
    if kind == "lease":
        return lease_text(_key(value), epoch)
    return repr(value)


def lease_text(key: LeaseKey, epoch: str | None) -> str:
    """``lease 7``, or ``lease 7 of epoch 'x'`` when it is not the history's."""
    return f"lease {key[1]}" if key[0] == epoch else f"lease {key[1]} of epoch {key[0]!r}"


def answer_text(call: str, value: Any, epoch: str | None) -> str:
    """An answer as a reader wants it: a lease's sample, count and deadline."""
    if call in ("acquire", "acquire_nowait") and isinstance(value, dict):
        ref = "" if value.get("ref_ok", True) else ", NOT the ref that was put"
        lease = lease_text((value["epoch"], value["lease_id"]), epoch) + " of " if "lease_id" in value else "a lease of "
        return (
            f"{lease}{value['sample_id']!r} (redelivery {value['redelivery_count']}, "
            f"deadline {value['deadline']!r}{ref})"
        )
    return repr(value)


def _key(value: Any) -> LeaseKey:
    return (value[0], value[1])


@dataclass(frozen=True)
class History:
    """A recorded (or hand-built) history and the setting it ran in.

    ``config`` is the queue's configuration (``visibility_timeout``,
    ``max_deliveries``, ``dedup_window``; None where not passed); ``store`` the
    store's caps and watermarks in the model's units; ``fifo`` whether the
    backend promised strict FIFO; ``deadlines`` whether it honours the
    injected clock (only then are lease deadlines compared); ``epoch`` the
    queue's epoch; ``stored`` the sample ids (and sizes in units) whose data
    was written before the first event; ``sizes`` those (and their sizes)
    whose data its ``store_put`` events write, concurrently with the rest.  ``scrub_window``: the backend
    completes in two steps (D9: an ack or dead letter commits with a scrub intent, its call scrubs the data
    before it returns), so a put of the id while a committed completion's call is still running may be
    refused as a duplicate (``ScrubPending``).  A recorded history lists its events in ``invoke`` order (the
    checker does not rely on it).
    """

    backend: str
    seed: int | None
    config: Mapping[str, Any]
    store: Mapping[str, int | None]
    fifo: bool
    deadlines: bool
    clock_start: float
    epoch: str
    stored: Mapping[str, int]
    events: tuple[Event, ...]
    threads: int = field(default=0)
    sizes: Mapping[str, int] = field(default_factory=dict)  # ids its store_put events write -> size in units
    scrub_window: bool = False  # a two-step completion (D9): see above

    def __post_init__(self) -> None:
        if not self.threads:
            object.__setattr__(self, "threads", len({e.thread for e in self.events}))

    def __len__(self) -> int:
        return len(self.events)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "backend": self.backend,
            "seed": self.seed,
            "config": dict(self.config),
            "store": dict(self.store),
            "fifo": self.fifo,
            "deadlines": self.deadlines,
            "clock_start": self.clock_start,
            "epoch": self.epoch,
            "stored": dict(self.stored),
            **({"sizes": dict(self.sizes)} if self.sizes else {}),
            **({"scrub_window": True} if self.scrub_window else {}),
            "events": [e.to_dict() for e in self.events],
        }

    def to_json(self) -> str:
        """One event per line, so a saved history reads (and diffs) well."""
        head = self.to_dict()
        events = head.pop("events")
        lines = ["{", *(f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()), ' "events": [']
        lines.append(",\n".join("  " + json.dumps(e) for e in events))
        return "\n".join([*lines, " ]", "}"]) + "\n"

    @classmethod
    def from_json(cls, text: str) -> History:
        """Parse and validate (``ValueError`` naming what is wrong and the fix)."""
        if not isinstance(text, str):
            raise TypeError(f"History.from_json needs the JSON text as a str, got {type(text).__name__}")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"a history must be JSON; this text is not ({exc})") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> History:
        return _parse(data)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_json())
        return path

    @classmethod
    def load(cls, path: str | Path) -> History:
        return cls.from_json(Path(path).read_text())


# -- validation of a history's JSON form ---------------------------------------------------

_HEAD = ("backend", "seed", "config", "store", "fifo", "deadlines", "clock_start", "epoch", "stored", "events")
_CONFIG_KEYS = ("visibility_timeout", "max_deliveries", "dedup_window")
_STORE_KEYS = ("capacity", "max_samples", "high", "low")


def _bad(message: str) -> ValueError:
    return ValueError(message)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _parse(data: Any) -> History:
    if not isinstance(data, dict):
        raise _bad(f"a history is a JSON object, got {type(data).__name__}; see refqueue.conformance.history for the format")
    if data.get("format") != FORMAT:
        raise _bad(f"history format is {data.get('format')!r}, expected {FORMAT!r}; record it again with this kit")
    missing = [k for k in _HEAD if k not in data]
    if missing:
        raise _bad(f"a history needs the fields {', '.join(missing)}; add them (see refqueue.conformance.history)")
    config, store, stored = data["config"], data["store"], data["stored"]
    if not isinstance(config, dict) or set(config) - set(_CONFIG_KEYS) or "visibility_timeout" not in config:
        raise _bad(
            f"history config {config!r} must be an object with visibility_timeout and optionally "
            f"max_deliveries, dedup_window"
        )
    if not isinstance(store, dict) or set(store) - set(_STORE_KEYS):
        raise _bad(f"history store {store!r} must be an object with only {', '.join(_STORE_KEYS)}")
    if not isinstance(stored, dict) or not all(isinstance(k, str) and k and _is_int(v) and v >= 0 for k, v in stored.items()):
        raise _bad("history stored must map sample ids to sizes in units (ints >= 0)")
    sizes = data.get("sizes", {})
    if not isinstance(sizes, dict) or not all(isinstance(k, str) and k and _is_int(v) and v >= 0 for k, v in sizes.items()):
        raise _bad("history sizes must map the sample ids its store_put events write to sizes in units (ints >= 0)")
    for name in ("fifo", "deadlines"):
        if not isinstance(data[name], bool):
            raise _bad(f"history {name} must be true or false, got {data[name]!r}")
    if not isinstance(data.get("scrub_window", False), bool):
        raise _bad(f"history scrub_window must be true or false (or left out: false), got {data['scrub_window']!r}")
    if not _is_number(data["clock_start"]) or data["clock_start"] < 0:
        raise _bad(f"history clock_start must be a finite number >= 0, got {data['clock_start']!r}")
    if not isinstance(data["epoch"], str) or not data["epoch"]:
        raise _bad(f"history epoch must be a non-empty str (the queue's epoch), got {data['epoch']!r}")
    if not isinstance(data["events"], list):
        raise _bad("history events must be a list of events")
    events = tuple(_parse_event(k, e) for k, e in enumerate(data["events"]))
    minted = {}
    for e in events:
        key = e.minted()
        if key is not None:
            minted.setdefault(key, e)
    for e in events:
        if e.call == "store_put" and e.args[0] not in sizes:
            raise _bad(
                f"event #{e.id} (store_put) writes {e.args[0]!r}, which the history's sizes do not list; add its size"
            )
        key = e.lease_arg()
        if key is not None and (key not in minted or minted[key].invoke > e.invoke):
            raise _bad(
                f"event #{e.id} ({e.call}) hands back {lease_text(key, data['epoch'])}, which no acquire invoked "
                f"before it returned; a history may only use leases its acquires returned"
            )
    return History(
        backend=str(data["backend"]),
        seed=data["seed"],
        config=config,
        store=store,
        fifo=data["fifo"],
        deadlines=data["deadlines"],
        clock_start=float(data["clock_start"]),
        epoch=data["epoch"],
        stored=stored,
        events=events,
        sizes=sizes,
        scrub_window=data.get("scrub_window", False),
    )


def _parse_event(k: int, e: Any) -> Event:
    where = f"event {k}"
    if not isinstance(e, dict):
        raise _bad(f"{where} must be a JSON object, got {type(e).__name__}")
    if e.get("id") != k:
        raise _bad(f"{where} has id {e.get('id')!r}; events are numbered 0, 1, 2, ... in order")
    call = e.get("call")
    if call not in CALLS:
        raise _bad(f"{where} has call {call!r}; use one of {', '.join(CALLS)}")
    args = e.get("args")
    kinds = CALLS[call]
    if not isinstance(args, list) or len(args) != len(kinds):
        raise _bad(f"{where} ({call}) needs args {list(kinds)}, got {args!r}")
    for kind, a in zip(kinds, args):
        ok = {
            "sample": isinstance(a, str) and bool(a),
            "lease": isinstance(a, list) and len(a) == 2 and isinstance(a[0], str) and _is_int(a[1]),
            "seconds": a is None or _is_number(a),
            "reason": isinstance(a, str),
            "interval": _is_number(a),
            "event": a in CALLBACKS,
        }[kind]
        if not ok:
            raise _bad(f"{where} ({call}): argument {a!r} is not a {kind}")
    if not _is_int(e.get("thread")) or e["thread"] < 0:
        raise _bad(f"{where} needs a thread number >= 0, got {e.get('thread')!r}")
    invoke, respond = e.get("invoke"), e.get("respond")
    if not (_is_number(invoke) and _is_number(respond)) or not invoke < respond:
        raise _bad(f"{where} needs timestamps with invoke < respond, got invoke={invoke!r}, respond={respond!r}")
    if ("returned" in e) == ("raised" in e):
        raise _bad(f"{where} needs exactly one of 'returned' and 'raised'")
    if "raised" in e:
        raised = e["raised"]
        if raised is not None and not isinstance(raised, str):
            raise _bad(f"{where}: raised must be a rejection kind or null, got {raised!r}")
        error = e.get("error")
        if not isinstance(error, str) or not error:
            raise _bad(f"{where} raised, so it needs the exception's text in 'error'")
        return Event(k, e["thread"], call, tuple(_tup(a) for a in args), invoke, respond, None, raised, error)
    returned = e["returned"]
    if call in ("acquire", "acquire_nowait") and returned is not None:
        _check_lease_value(where, returned)
    return Event(k, e["thread"], call, tuple(_tup(a) for a in args), invoke, respond, returned)


def _tup(a: Any) -> Any:
    return tuple(a) if isinstance(a, list) else a


def _check_lease_value(where: str, value: Any) -> None:
    ok = (
        isinstance(value, dict)
        and isinstance(value.get("sample_id"), str)
        and _is_int(value.get("redelivery_count"))
        and "deadline" in value
        and (value["deadline"] is None or _is_number(value["deadline"]))
        and isinstance(value.get("epoch"), str)
        and _is_int(value.get("lease_id"))
        and isinstance(value.get("ref_ok"), bool)
    )
    if not ok:
        raise _bad(
            f"{where}: an acquire returns null or a lease object with sample_id, redelivery_count, deadline "
            f"(a number or null), epoch, lease_id and ref_ok; got {value!r}"
        )


# -- recording -------------------------------------------------------------------------------

# How often a worker draws each kind of call (weights), and the controller.
_WORKER_KINDS: Mapping[str, int] = {
    "put": 20,
    "put_blocks": 3,
    "reput": 4,
    "acquire_nowait": 22,
    "acquire": 2,
    "ack": 14,
    "fail": 6,
    "extend": 4,
    "dead_letter": 2,
    "stale": 6,
    "reclaim_expired": 4,
    "pending_count": 2,
    "outstanding_count": 2,
    "is_drained": 2,
    "is_closed": 1,
    "dead_letters": 2,
}
_CONTROLLER_KINDS: Mapping[str, int] = {
    "tick": 40,
    "reclaim_expired": 25,
    "pending_count": 9,
    "outstanding_count": 9,
    "is_drained": 9,
    "is_closed": 8,
}
# A *rich* history (``rich_history(seed)``) runs on a store with watermarks and
# a capacity; its workers write each sample's data themselves (a recorded
# store_put, concurrent with the other threads' calls) before putting the ref,
# and every thread also reads store.health() and is_paused.
_RICH_WORKER_KINDS: Mapping[str, int] = {**_WORKER_KINDS, "put": 10, "put_blocks": 12, "ack": 22, "health": 6, "is_paused": 2}
_RICH_CONTROLLER_KINDS: Mapping[str, int] = {**_CONTROLLER_KINDS, "health": 30, "is_paused": 4}
# No capacity: LocalFeatureStore reserves a put's room before it copies, so a
# concurrent put may be refused (StoreFull) while health() still shows that
# room free, which the model's atomic store_put does not explain.
RICH_STORE: Mapping[str, int | None] = {"capacity": None, "max_samples": None, "high": 4, "low": 2}  # in units
_CLOSE_AT = 0.8  # the controller closes the queue this far through its calls (rich: the workers' calls)
_CLOSE_WAIT = 20.0  # seconds a rich history's controller waits for the workers before it closes anyway
_POLL = 0.001  # acquire's poll interval: short, so an empty queue costs little time
_TICK = 1.0


def history_config(backend: Backend, seed: int) -> dict[str, Any]:
    """The queue configuration of the history of ``seed``: a short visibility
    timeout (two ticks) so leases expire during the run; ``max_deliveries=3``
    on even seeds and ``dedup_window=4`` on odd ones, as the backend declares."""
    caps = backend.capabilities
    config: dict[str, Any] = {"visibility_timeout": 2.0 if caps.injected_clock else 3600.0}
    if seed % 2 == 0 and caps.max_deliveries:
        config["max_deliveries"] = 3
    if seed % 2 == 1 and caps.dedup_window:
        config["dedup_window"] = 4
    return config


def _plan(rng: random.Random, kinds: Mapping[str, int], n: int) -> list[str]:
    names = list(kinds)
    return rng.choices(names, weights=[kinds[k] for k in names], k=n)


def rich_history(seed: int) -> bool:
    """Whether the history of ``seed`` is rich: two seeds in three (1, 2, 4,
    5, 7, 8, ...: both queue configurations of ``history_config``)."""
    return seed % 3 != 0


def plan_programs(seed: int, *, threads: int = 4, operations: int = 300) -> dict[int, list[str]]:
    """The programs of the history of ``seed``: for each thread the kinds of
    call it makes, drawn from the seed (which lease or id a call uses is
    decided while it runs).  Thread 0 is the controller, whose ``close``
    stands ``_CLOSE_AT`` of the way through its calls; the others are
    workers.  ``record(..., programs=)`` runs a program (e.g. a shrunk one).
    """
    if not _is_int(seed):
        raise TypeError(f"seed must be an int, got {seed!r}")
    _check_positive_int("threads", threads, 2)
    _check_positive_int("operations", operations, threads)
    per_thread = operations // threads
    rich = rich_history(seed)
    programs = {}
    for t in range(threads):
        rng = random.Random(seed * 1009 + t)
        if t == 0:
            kinds = _RICH_CONTROLLER_KINDS if rich else _CONTROLLER_KINDS
        else:
            kinds = _RICH_WORKER_KINDS if rich else _WORKER_KINDS
        plan = _plan(rng, kinds, per_thread)
        if t == 0:
            plan.insert(int(len(plan) * _CLOSE_AT), "close")
        programs[t] = plan
    return programs


def _check_programs(programs: Any) -> dict[int, list[str]]:
    if not isinstance(programs, Mapping) or not programs:
        raise ValueError(
            f"programs must be a non-empty mapping of thread number -> list of call kinds, got {programs!r}; "
            f"start from plan_programs(seed)"
        )
    out = {}
    for t, plan in programs.items():
        if not _is_int(t) or t < 0:
            raise ValueError(f"programs: thread {t!r} must be an int >= 0 (0 is the controller)")
        allowed = (*_RICH_CONTROLLER_KINDS, "close") if t == 0 else tuple(_RICH_WORKER_KINDS)
        if isinstance(plan, (str, bytes)) or not isinstance(plan, Sequence) or any(k not in allowed for k in plan):
            raise ValueError(
                f"programs: thread {t}'s program {plan!r} must be a list of call kinds from "
                f"{', '.join(allowed)} ({'the controller' if t == 0 else 'a worker'})"
            )
        out[t] = list(plan)
    if not any(out.values()):
        raise ValueError("programs: every thread's program is empty; give at least one call")
    return out


def _encode_lease(lease: Any, refs: Mapping[str, Any]) -> dict[str, Any]:
    sample_id = lease.ref.sample_id
    return {
        "sample_id": sample_id,
        "redelivery_count": lease.redelivery_count,
        "deadline": lease.deadline,
        "epoch": lease.epoch,
        "lease_id": lease.lease_id,
        "ref_ok": sample_id in refs and lease.ref == refs[sample_id],
    }


class _Recorder:
    """The shared part of a recording: the queue, the clock, the stamp counter,
    and which thread is which (a callback is recorded in the thread it ran in)."""

    def __init__(self, session: Any, refs: dict[str, Any], rich: bool = False) -> None:
        self.session = session
        self.queue = session.queue
        # Thread t calls through client t % len(clients) of the queue (the
        # controller, thread 0, through the factory's): with several clients,
        # the history is made by all of them.
        self.clients: list[Any] = list(getattr(session, "clients", [session.queue]))
        self.refs = refs
        self.rich = rich
        self.thread_of: dict[int, int] = {}  # threading.get_ident() -> the history's thread number
        # Rich histories: the controller closes the queue once the workers made
        # _CLOSE_AT of their calls (the controller's own calls are much faster).
        self.progress = threading.Condition()
        self.worker_calls = 0
        self.close_after = 0
        self._stamps = itertools.count(1)
        self._stamp_lock = threading.Lock()  # makes each stamp one step all threads agree on
        self.events: dict[int, list[dict[str, Any]]] = {}
        self.current: dict[int, str] = {}  # thread -> the call it is in (for a hang report)
        self.errors: list[BaseException] = []

    def stamp(self) -> int:
        with self._stamp_lock:
            return next(self._stamps)

    def call(
        self,
        thread: int,
        name: str,
        args: list[Any],
        fn: Callable[[], Any],
        encode: Callable[[Any], Any] = lambda v: v,
    ) -> tuple[bool, Any]:
        """Make one call and record it; ``(True, value)`` or ``(False, exception)``."""
        self.current[thread] = f"{name}({', '.join(map(repr, args))})"
        invoke = self.stamp()
        try:
            value = fn()
        except Exception as exc:  # noqa: BLE001 - every answer is recorded and judged by the checker
            respond = self.stamp()
            self.events[thread].append(
                {"thread": thread, "call": name, "args": args, "invoke": invoke, "respond": respond,
                 "raised": rejection_kind(exc), "error": f"{type(exc).__name__}: {exc}"}
            )  # fmt: skip
            return False, exc
        respond = self.stamp()
        self.events[thread].append(
            {"thread": thread, "call": name, "args": args, "invoke": invoke, "respond": respond, "returned": encode(value)}
        )
        return True, value

    def client(self, thread: int) -> Any:
        """The client of the queue thread ``thread`` calls through."""
        return self.clients[thread % len(self.clients)]

    def worker_done(self) -> None:
        """A worker finished one kind of its program."""
        with self.progress:
            self.worker_calls += 1
            if self.worker_calls >= self.close_after:
                self.progress.notify_all()

    def wait_to_close(self, limit: float) -> None:
        """Until the workers made ``close_after`` calls, at most ``limit`` seconds."""
        with self.progress:
            self.progress.wait_for(lambda: self.worker_calls >= self.close_after, timeout=limit)
    def callback(self, kind: str) -> None:
        """``on_pause``/``on_resume`` ran in the calling thread: a ``callback``
        event, stamped as it ran (a thread that is none of the history's, a
        backend's own, is not recorded: the model then sees no delivery)."""
        thread = self.thread_of.get(threading.get_ident())
        if thread is None:
            return
        invoke = self.stamp()
        respond = self.stamp()
        self.events[thread].append(
            {"thread": thread, "call": "callback", "args": [kind], "invoke": invoke, "respond": respond, "returned": None}
        )


def _worker(rec: _Recorder, thread: int, plan: Sequence[str], fresh: list[str], rng: random.Random, caps: Any) -> None:
    q = rec.client(thread)
    held: list[Any] = []  # leases this thread believes it holds
    done: list[Any] = []  # leases it held and handed back (stale now, or soon)
    mine: list[str] = []  # sample ids it put
    fresh_ids = iter(fresh)

    def key(lease: Any) -> list[Any]:
        return [lease.epoch, lease.lease_id]

    def as_given(lease: Any) -> Any:
        # Sometimes hand back a JSON round trip: identity is (epoch, lease_id), not the object (D1).
        if caps.lease_json and rng.random() < 0.2 and hasattr(lease, "to_json"):
            return type(lease).from_json(lease.to_json())
        return lease

    def acquire(kind: str) -> None:
        encode = lambda v: None if v is None else _encode_lease(v, rec.refs)  # noqa: E731
        if kind == "acquire":
            ok, value = rec.call(thread, "acquire", [_POLL], lambda: q.acquire(poll_interval=_POLL), encode)
        else:
            ok, value = rec.call(thread, "acquire_nowait", [], q.acquire_nowait, encode)
        if ok and value is not None:
            held.append(value)

    def hand_back(kind: str, lease: Any) -> None:
        given = as_given(lease)
        if kind == "extend":
            seconds = rng.choice((None, 1.0, 4.0))
            # On a backend's own clock: far longer (REAL_CLOCK_SCALE); a process of the
            # faults phase's history records through a client that scales nothing.
            scale = getattr(rec.session, "seconds", None)
            longer = seconds if scale is None else scale(seconds)
            call = (lambda: q.extend(given)) if seconds is None else (lambda: q.extend(given, longer))
            rec.call(thread, "extend", [key(lease), seconds], call)
        elif kind == "dead_letter":
            rec.call(thread, "dead_letter", [key(lease), "poison"], lambda: q.dead_letter(given, "poison"))
        else:
            rec.call(thread, kind, [key(lease)], lambda: getattr(q, kind)(given))

    for kind in plan:
        if rec.rich:
            rec.worker_done()
        if kind in ("health", "is_paused") and not rec.rich:
            kind = "pending_count"
        if kind in ("extend", "dead_letter") and not getattr(caps, kind):
            kind = "ack"
        if kind == "dead_letters" and not (caps.dead_letter or caps.max_deliveries):
            kind = "pending_count"
        if kind == "acquire_nowait" and not caps.acquire_nowait:
            kind = "acquire"
        if kind == "put_blocks" and not caps.abort_when:
            kind = "put"  # without abort_when a blocking put may wait: not one model step
        if kind in ("put", "put_blocks"):
            sample_id = next(fresh_ids)
            if rec.rich:  # the worker writes the data itself, concurrently with the others
                stored, value = rec.call(
                    thread, "store_put", [sample_id], lambda: rec.session.store_put(sample_id), lambda v: None
                )
                if not stored:
                    continue
                rec.refs[sample_id] = value
            ref = rec.refs[sample_id]
            if kind == "put":
                enqueued, _ = rec.call(thread, "put", [sample_id], lambda: q.put(ref))
            else:
                enqueued, _ = rec.call(
                    thread, "put_blocks", [sample_id], lambda: q.put_blocks_until_below(ref, abort_when=lambda: True)
                )
            if rec.rich and not enqueued:  # refused: the producer owns the data it wrote, and scrubs it
                rec.call(thread, "scrub", [sample_id], lambda: rec.session.store.scrub(ref))
            mine.append(sample_id)
        elif kind == "reput":
            if not mine:
                _read(rec, thread, "pending_count")
                continue
            sample_id = rng.choice(mine)
            ref = rec.refs[sample_id]
            rec.call(thread, "put", [sample_id], lambda: q.put(ref))
        elif kind in ("acquire", "acquire_nowait"):
            acquire(kind)
        elif kind in ("ack", "fail", "extend", "dead_letter"):
            if not held:
                acquire("acquire_nowait" if caps.acquire_nowait else "acquire")
                continue
            lease = held[rng.randrange(len(held))]
            hand_back(kind, lease)
            if kind != "extend":
                held.remove(lease)
                done.append(lease)
        elif kind == "stale":
            if not done:
                _read(rec, thread, "pending_count")
                continue
            ops = ["ack", "fail"] + (["extend"] if caps.extend else [])
            hand_back(rng.choice(ops), done[rng.randrange(len(done))])
        elif kind == "reclaim_expired":
            rec.call(thread, "reclaim_expired", [], q.reclaim_expired)
        else:
            _read(rec, thread, kind)


def _health(h: Any) -> dict[str, Any]:
    """``store.health()`` in units (a byte count that is no whole number of units stays a fraction)."""
    from refqueue.conformance.samples import UNIT_BYTES

    units = h.resident_bytes / UNIT_BYTES
    return {
        "resident": int(units) if units == int(units) else units,
        "count": h.sample_count,
        "high": h.high_watermark_hit,
        "low": h.low_watermark_hit,
    }


def _read(rec: _Recorder, thread: int, name: str) -> None:
    q = rec.client(thread)
    if name == "health":
        rec.call(thread, name, [], rec.session.store.health, _health)
    elif name in ("is_drained", "is_closed", "is_paused"):
        rec.call(thread, name, [], lambda: getattr(q, name))
    elif name == "dead_letters":
        rec.call(thread, name, [], q.dead_letters, lambda v: [[d.ref.sample_id, d.reason, d.deliveries] for d in v])
    else:
        rec.call(thread, name, [], getattr(q, name))


def _recording_threads(
    rec: Any, plans: Mapping[int, Any], fresh: Mapping[int, Any], seed: int, caps: Any, name: str
) -> list[threading.Thread]:
    """One daemon thread per program, not started: thread 0 runs the
    controller's, every other a worker's (seeded from ``seed`` and its
    number); they pass one barrier together, and an error of one is kept in
    ``rec.errors`` (re-raised by the recording thread) and breaks the barrier."""
    for t in plans:
        rec.events[t] = []
    start = threading.Barrier(len(plans))

    def run(t: int) -> None:
        rng = random.Random(seed * 1009 + t + 7919)
        rec.thread_of[threading.get_ident()] = t
        try:
            start.wait()
            if t == 0:
                _controller(rec, t, plans[t], caps)
            else:
                _worker(rec, t, plans[t], fresh[t], rng, caps)
        except BaseException as exc:  # noqa: BLE001 - re-raised by the recording thread
            rec.errors.append(exc)
            start.abort()
        finally:
            rec.current.pop(t, None)

    return [threading.Thread(target=run, args=(t,), name=f"{name}-{t}", daemon=True) for t in plans]


def _controller(rec: _Recorder, thread: int, plan: Sequence[str], caps: Any) -> None:
    q = rec.client(thread)
    clock = rec.session.clock
    for kind in plan:
        if kind == "close":
            if rec.rich:
                rec.wait_to_close(_CLOSE_WAIT)
            rec.call(thread, "close", [], q.close)
        elif kind == "tick" and caps.injected_clock:
            rec.call(thread, "tick", [_TICK], lambda: clock.advance(_TICK), lambda v: None)
        elif kind == "reclaim_expired":
            rec.call(thread, "reclaim_expired", [], q.reclaim_expired)
        elif kind in ("health", "is_paused") and not rec.rich:
            _read(rec, thread, "pending_count")
        else:
            _read(rec, thread, "pending_count" if kind == "tick" else kind)


def _session_class() -> type:
    from refqueue.conformance.session import Session

    class HistorySession(Session):
        """A session whose callbacks also tell the recorder which thread ran them."""

        recorder: _Recorder | None = None

        def _on_pause(self, health: Any) -> None:
            super()._on_pause(health)
            if self.recorder is not None:
                self.recorder.callback("pause")

        def _on_resume(self, health: Any) -> None:
            super()._on_resume(health)
            if self.recorder is not None:
                self.recorder.callback("resume")

    return HistorySession


def _Session(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - builds the session class on first use
    return _session_class()(*args, **kwargs)


def _check_positive_int(name: str, value: Any, minimum: int) -> None:
    if not _is_int(value) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def record(
    backend: Backend | str,
    *,
    seed: int = 0,
    threads: int = 4,
    operations: int = 300,
    config: Mapping[str, Any] | None = None,
    switch_interval: float = 1e-5,
    hang_after: float = 60.0,
    programs: Mapping[int, Sequence[str]] | None = None,
) -> History:
    """Record one history on a fresh queue of ``backend``: ``threads`` threads
    (thread 0 the controller) of ``operations // threads`` calls each, and
    the controller's ``close``; or, with ``programs`` (thread -> call kinds,
    as ``plan_programs`` makes them), those threads running those programs.

    ``config`` is the queue's configuration (default: ``history_config``).
    Raises ``RecordingHung`` when a thread has not finished ``hang_after``
    seconds after the start (its threads are daemons and are left behind).
    """
    if isinstance(backend, str):
        backend = load_backend(backend)
    if not isinstance(backend, Backend):
        raise TypeError(f"record needs a Backend or a 'module:factory' str, got {type(backend).__name__}")
    if not _is_int(seed):
        raise TypeError(f"seed must be an int, got {seed!r}")
    _check_positive_int("threads", threads, 2)
    _check_positive_int("operations", operations, threads)
    for name, value in (("switch_interval", switch_interval), ("hang_after", hang_after)):
        if not _is_number(value) or value <= 0:
            raise ValueError(f"{name} must be a finite number of seconds > 0, got {value!r}")
    from refqueue.conformance.session import CLOCK_START

    caps = backend.capabilities
    config = dict(history_config(backend, seed) if config is None else config)
    unknown = set(config) - set(_CONFIG_KEYS)
    if unknown or "visibility_timeout" not in config:
        raise ValueError(
            f"config {config!r} must give visibility_timeout and may give only max_deliveries and dedup_window"
        )
    plans = plan_programs(seed, threads=threads, operations=operations) if programs is None else _check_programs(programs)
    threads = len(plans)
    rich = rich_history(seed)
    fresh: dict[int, list[str]] = {}
    for t in plans:
        fresh[t] = [f"t{t}-{k}" for k in range(sum(1 for kind in plans[t] if kind in ("put", "put_blocks")))]
    sizes = {sample_id: 1 for ids in fresh.values() for sample_id in ids}
    session = _Session(backend, config, sizes=sizes, store=dict(RICH_STORE) if rich else {}, clock_start=CLOCK_START)
    try:
        if rich:
            from refqueue.conformance.samples import model_limits

            limits = model_limits(session.store)
            store_limits = {
                "capacity": limits["capacity_bytes"], "max_samples": limits["max_samples"],
                "high": limits["store_high_watermark_bytes"], "low": limits["store_low_watermark_bytes"],
            }  # fmt: skip
        else:
            store_limits = {k: None for k in _STORE_KEYS}
        refs = {} if rich else {sample_id: session.store_put(sample_id) for sample_id in sizes}
        rec = _Recorder(session, refs, rich)
        rec.close_after = int(_CLOSE_AT * sum(len(p) for t, p in plans.items() if t != 0))
        session.recorder = rec
        workers = _recording_threads(rec, plans, fresh, seed, caps, "refqueue-history")
        previous = sys.getswitchinterval()
        sys.setswitchinterval(switch_interval)
        try:
            for w in workers:
                w.start()
            give_up = time.monotonic() + hang_after
            for t, w in zip(plans, workers):
                w.join(max(0.0, give_up - time.monotonic()))
                if w.is_alive():
                    raise RecordingHung(
                        f"thread {t} of a {threads}-thread history (seed {seed}) of {backend.target} was still in "
                        f"{rec.current.get(t, 'a call')} {hang_after} s after the start; the backend deadlocked "
                        f"or lost a wakeup"
                    )
        finally:
            sys.setswitchinterval(previous)
        if rec.errors:
            raise rec.errors[0]
        epoch = session.queue.epoch
    finally:
        session.close()
    raw = sorted((e for t in plans for e in rec.events[t]), key=lambda e: e["invoke"])
    data = {
        "format": FORMAT,
        "backend": backend.target,
        "seed": seed,
        "config": {k: config.get(k) for k in _CONFIG_KEYS},
        "store": store_limits,
        "fifo": caps.fifo,
        "deadlines": caps.injected_clock,
        "clock_start": CLOCK_START,
        "epoch": epoch,
        "stored": {} if rich else sizes,
        "sizes": sizes if rich else {},
        "events": [{"id": k, **e} for k, e in enumerate(raw)],
    }
    # Through JSON and back: what is checked is exactly what would be saved.
    return History.from_json(json.dumps(data))
