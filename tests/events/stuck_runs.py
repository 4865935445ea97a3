"""The two stuck pipelines of issue 22, and a healthy one, rebuilt with real threads.

Each builder runs a real ``SampleRefQueue`` over a real ``LocalFeatureStore``
(CPU tensors of about 1 MB a sample), both recording into one ``EventLog``
(a ``Metrics`` sink, a ``JsonlSink`` for the report, and ``Signals``, which
lets the test wait for what the threads did).  The queue's clock is a
``ManualClock``: the test moves time, the threads never race it.  Nothing
waits by sleeping: the threads and the test meet on events, channels and
the log's records.

``run_a``: a consumer dies holding a lease; another holds one and never
acks, extending it on each heartbeat (a hung step); the reclaimer runs; two
producers block on backpressure.  ``run_b``: no reclaimer was started; a
consumer dies holding two leases and the clock runs 22 s past their 8 s
timeout while the pipeline goes on.  ``run_healthy``: producers and
consumers to the end, reclaimer on.

Each returns a ``Run``: the metrics read at each step (``steps``), the log's
path, and ``finish()``, which unblocks and joins every thread.
``tests/events/test_stuck_runs.py`` asserts on them; the screenshots of the
notes come from the same builders.
"""

from __future__ import annotations

import math
import queue as channels
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from refqueue.clock import ManualClock
from refqueue.errors import QueueClosed
from refqueue.events import EventLog, JsonlSink
from refqueue.metrics import Metrics
from refqueue.queue import SampleRefQueue, VisibilityTimeout
from refqueue.stores import LocalFeatureStore

GUARD_S = 30  # bounds a hang only; never reached when the code is right
VT = 8.0  # the visibility timeout of the runs


class Signals:
    """An EventLog sink that counts records by kind, so a test can wait for
    them: ``wait_for(predicate)`` on the counts, under a condition notified
    after every record (the sink's write is quick and never calls back)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.parks = 0
        self.reclaimed: list[str] = []

    def write(self, record: dict[str, Any]) -> None:
        with self._cond:
            if record.get("ev") == "park":
                self.parks += 1
            elif record.get("ev") == "reclaim" and record.get("samples"):
                self.reclaimed.extend(record["samples"])
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[Signals], bool], what: str) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: predicate(self), GUARD_S), f"timed out waiting for {what}"


def tensors(i: int) -> dict[str, torch.Tensor]:
    """An eagle3 sample of 960,000 bytes of aux hidden states (plus a few)."""
    return {
        "aux_hidden_states": torch.full((3, 4, 20_000), float(i)),
        "input_ids": torch.arange(4) + i,
        "attention_mask": torch.ones(4, dtype=torch.bool),
        "loss_mask": torch.ones(4),
    }


def store_put(store: LocalFeatureStore, i: int):
    return store.put(f"s{i}", tensors(i), run_id="run", algorithm="eagle3", schema_version=2,
                     target_model_version="t", draft_weight_version=0, num_tokens=4)


@dataclass
class Run:
    queue: SampleRefQueue
    clock: ManualClock
    log_path: Path
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    threads: list[threading.Thread] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    _stop: Callable[[], None] = lambda: None
    _log: EventLog | None = None

    def finish(self) -> None:
        """Unblock and join every thread, stop the reclaimer, close the log."""
        self._stop()
        self.queue.close()
        for t in self.threads:
            t.join(GUARD_S)
            assert not t.is_alive(), f"{t.name} did not end"
        self.queue.stop_reclaimer()
        if self._log is not None:
            self._log.close()
        assert not self.errors, self.errors


UNIT = sum(t.numel() * t.element_size() for t in tensors(0).values())  # one sample's bytes


def _setup(run_path: Path, **queue_kwargs: Any):
    """(queue, store, clock, signals, log): high watermark 3 samples, low 1."""
    signals = Signals()
    log = EventLog(Metrics(), JsonlSink(run_path), signals)
    store = LocalFeatureStore(max_samples=None, max_bytes=64 * 10**6, events=log)
    clock = ManualClock(0.0)
    queue = SampleRefQueue(store, VisibilityTimeout(VT), high_watermark_bytes=3 * UNIT,
                           low_watermark_bytes=UNIT, clock=clock, events=log, **queue_kwargs)
    return queue, store, clock, signals, log


def _thread(run: Run, name: str, body: Callable[[], None]) -> threading.Thread:
    def guarded() -> None:
        try:
            body()
        except BaseException as exc:  # kept for finish() to report
            run.errors.append(exc)

    t = threading.Thread(target=guarded, name=name, daemon=True)
    run.threads.append(t)
    t.start()
    return t


def _producer(run: Run, store: LocalFeatureStore, i: int) -> Callable[[], None]:
    def body() -> None:
        ref = store_put(store, i)
        try:
            run.queue.put_blocks_until_below(ref, poll_interval=math.inf)
        except QueueClosed:
            pass  # finish() closed the queue on the blocked producer: the run is over

    return body


def _heartbeat_holder(run: Run, commands: channels.Queue, replies: channels.Queue) -> Callable[[], None]:
    """A consumer whose step hangs: it leases one sample and never acks it, but
    its heartbeat extends the lease each time the test says "beat"."""

    def body() -> None:
        lease = run.queue.acquire(poll_interval=GUARD_S)
        replies.put(lease.ref.sample_id if lease is not None else None)
        while commands.get(timeout=GUARD_S) == "beat":
            replies.put(run.queue.extend(lease))

    return body


def _dying_consumer(run: Run, leases: int) -> Callable[[], None]:
    """A consumer that leases ``leases`` samples and dies (its thread ends) without acking."""

    def body() -> None:
        for _ in range(leases):
            assert run.queue.acquire(poll_interval=GUARD_S) is not None

    return body


def run_a(log_path: Path) -> Run:
    """Run A: a consumer dies, another holds a lease and never acks (extending
    it), reclaimer on, two producers blocked.  Steps "blocked" (t=0, both
    producers just parked), "t5", "t10" (the dead consumer's lease reclaimed),
    "t15"."""
    queue, store, clock, signals, log = _setup(log_path)
    run = Run(queue, clock, log_path, _log=log)
    for i in range(4):  # 4 samples of work: residency 4 units, above the high watermark of 3
        queue.put(store_put(store, i))
    queue.start_reclaimer(interval=0.005)  # real-time ticks reading the manual clock
    dead = _thread(run, "consumer-dies", _dying_consumer(run, 1))
    dead.join(GUARD_S)
    assert not dead.is_alive()
    commands: channels.Queue = channels.Queue()
    replies: channels.Queue = channels.Queue()
    _thread(run, "consumer-hangs", _heartbeat_holder(run, commands, replies))
    assert replies.get(timeout=GUARD_S) == "s1"
    run._stop = lambda: commands.put("stop")
    for i in (4, 5):
        _thread(run, f"producer-{i}", _producer(run, store, i))
    signals.wait_for(lambda s: s.parks == 2, "both producers to park")
    run.steps["blocked"] = queue.metrics()

    def beat() -> None:
        commands.put("beat")
        assert replies.get(timeout=GUARD_S) is True  # the hung consumer's lease is still live

    clock.advance(5.0)
    beat()
    run.steps["t5"] = queue.metrics()
    clock.advance(5.0)  # t=10: the dead consumer's lease (deadline 8) is due
    signals.wait_for(lambda s: "s0" in s.reclaimed, "the reclaimer to take back the dead consumer's lease")
    beat()
    run.steps["t10"] = queue.metrics()
    clock.advance(5.0)
    beat()
    run.steps["t15"] = queue.metrics()
    return run


def run_b(log_path: Path) -> Run:
    """Run B: the reclaimer was never started.  A consumer dies holding two
    leases; the clock runs to t=30 (22 s past their 8 s timeout) while a
    healthy consumer goes on with new work.  Steps "t0" (after the death),
    "t30"."""
    queue, store, clock, signals, log = _setup(log_path)
    run = Run(queue, clock, log_path, _log=log)
    queue.put(store_put(store, 0))
    queue.put(store_put(store, 1))
    dead = _thread(run, "consumer-dies", _dying_consumer(run, 2))
    dead.join(GUARD_S)
    assert not dead.is_alive()
    run.steps["t0"] = queue.metrics()
    clock.advance(30.0)
    queue.put(store_put(store, 2))  # the pipeline goes on: the log runs to t=30

    def healthy_consumer() -> None:
        lease = queue.acquire(poll_interval=GUARD_S)
        assert lease is not None and lease.ref.sample_id == "s2"
        assert queue.ack(lease)

    t = _thread(run, "consumer-healthy", healthy_consumer)
    t.join(GUARD_S)
    assert not t.is_alive()
    run.steps["t30"] = queue.metrics()
    return run


def run_healthy(log_path: Path, samples: int = 40) -> Run:
    """Two blocking producers, two consumers that ack everything, the reclaimer
    on; the queue is closed once every sample is put.  Step "end" (drained)."""
    queue, store, clock, signals, log = _setup(log_path)
    run = Run(queue, clock, log_path, _log=log)
    queue.start_reclaimer(interval=0.005)

    def producer(first: int) -> Callable[[], None]:
        def body() -> None:
            for i in range(first, samples, 2):
                queue.put_blocks_until_below(store_put(store, i), poll_interval=math.inf)

        return body

    def consumer() -> None:
        while not queue.is_drained:
            lease = queue.acquire(poll_interval=GUARD_S)
            if lease is not None:
                assert queue.ack(lease)

    producers = [_thread(run, f"producer-{k}", producer(k)) for k in (0, 1)]
    consumers = [_thread(run, f"consumer-{k}", consumer) for k in (0, 1)]
    for t in producers:
        t.join(GUARD_S)
        assert not t.is_alive()
    queue.close()
    for t in consumers:
        t.join(GUARD_S)
        assert not t.is_alive()
    run.steps["end"] = queue.metrics()
    return run
