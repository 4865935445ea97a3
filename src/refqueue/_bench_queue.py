"""The measurements of ``refqueue bench queue`` (see ``refqueue.bench``).

Every figure is a median over ``repeats`` runs.  Timed loops run with the
cyclic garbage collector paused (as ``timeit`` does), so a collection that
happens to start inside a loop does not decide the number.

Refs: building a million validated ``SampleRef``s takes tens of seconds, so
the backlog refs are clones of one validated template that differ only in
``sample_id`` (the queue reads nothing else but ``store_uri``).  They are
built once and reused by every measurement.

The store is ``CounterStore``: it keeps each sample's size, not its bytes, so
``ack``'s scrub is a dict pop and the numbers are the queue's own cost.  The
convoy measurement alone uses ``LocalFeatureStore`` with real tensors.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import statistics
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from refqueue.clock import ManualClock
from refqueue.errors import DuplicateSample, SampleMissing, StoreClosed
from refqueue.queue import SampleRefQueue, VisibilityTimeout
from refqueue.refs import FeatureSpec, SampleRef
from refqueue.store import FeatureStore, StoreHandle, StoreHealth

__all__ = ["CounterStore", "measure", "TARGETS"]

URI = "mem://bench"
TARGETS = {
    "put_us": "<= 1.0 at every backlog",
    "acquire_ack_us": "<= 2.5 at every backlog; 1000000 within 1.5x of 1000",
    "reclaim_idle_us_100000": "<= 20",
    "wake_latency_ms_p99": "<= 1",
    "convoy_acquire_ack_p99_ms": "<= 2",
    "events_ring_vs_off": "<= 2.0 (events on with a RingSink, acquire+ack)",
    "events_off_acquire_ack_us": "within 3 % of the same figure before events existed (run the bench on that commit)",
    "trace_check_events_per_s_backlog_100": ">= 200000",
}


class CounterStore(FeatureStore):
    """A store that records sizes, not data: the control-plane cost alone.

    ``put`` sizes the features (anything with ``shape`` and ``dtype``) and
    keeps only the sizes; ``hold(ref)`` registers a ref made elsewhere; ``get``
    hands out zero bytes of each feature's size; ``scrub`` drops the entry.
    Single-lock, O(1) everything.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the fields below; held across no wait
        self._sizes: dict[str, int] = {}
        self._resident_bytes = 0
        self._handles = itertools.count(1)
        self._closed = False

    @property
    def uri(self) -> str:
        return URI

    def put(self, sample_id: str, tensors: Mapping[str, Any], *, run_id: str, algorithm: Any,
            schema_version: int, target_model_version: str | int, draft_weight_version: str | int,
            num_tokens: int) -> SampleRef:
        specs = {name: FeatureSpec.of(t) for name, t in tensors.items()}
        ref = SampleRef.build(sample_id, specs, algorithm=algorithm, store_uri=URI, run_id=run_id,
                              schema_version=schema_version, num_tokens=num_tokens,
                              target_model_version=target_model_version,
                              draft_weight_version=draft_weight_version)
        self.hold(ref)
        return ref

    def hold(self, ref: SampleRef) -> None:
        with self._lock:
            self._check_open("hold")
            if ref.sample_id in self._sizes:
                raise DuplicateSample(f"CounterStore: {ref.sample_id!r} is already resident")
            self._sizes[ref.sample_id] = ref.estimated_bytes
            self._resident_bytes += ref.estimated_bytes

    def get(self, ref: SampleRef, device: Any = None) -> tuple[dict[str, bytes], StoreHandle]:
        with self._lock:
            self._check_open("get")
            if ref.sample_id not in self._sizes:
                raise SampleMissing(f"CounterStore.get({ref.sample_id!r}): not resident")
        data = {name: bytes(spec.nbytes) for name, spec in ref.feature_specs.items()}
        return data, StoreHandle(URI, ref.sample_id, next(self._handles))

    def release(self, handle: StoreHandle) -> None:
        self._check_open("release")

    def scrub(self, ref: SampleRef) -> bool:
        with self._lock:
            if self._closed:
                self._check_open("scrub")
            size = self._sizes.pop(ref.sample_id, None)
            if size is None:
                return False
            self._resident_bytes -= size
            return True

    def gc(self) -> int:
        return 0

    def health(self) -> StoreHealth:
        resident, count = self._resident_bytes, len(self._sizes)
        return StoreHealth(resident, None, count, False, False)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._sizes.clear()
            self._resident_bytes = 0

    def _check_open(self, call: str) -> None:
        if self._closed:
            raise StoreClosed(f"CounterStore.{call} after close()")


def progress(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def clone_refs(count: int, prefix: str = "s") -> list[SampleRef]:
    """``count`` refs that differ from one validated template only in ``sample_id``."""
    template = SampleRef.build(
        "template",
        {name: FeatureSpec((16,), "bfloat16") for name in ("aux_hidden_states", "input_ids", "attention_mask",
                                                             "loss_mask")},
        algorithm="eagle3",
        store_uri=URI,
    )
    fields = [(name, getattr(template, name)) for name in SampleRef.__slots__ if name != "sample_id"]
    new = object.__new__
    setattr_ = object.__setattr__
    refs = []
    for i in range(count):
        ref = new(SampleRef)
        setattr_(ref, "sample_id", f"{prefix}{i}")
        for name, value in fields:
            setattr_(ref, name, value)
        refs.append(ref)
    return refs


def timed(fn: Callable[[], Any]) -> float:
    """Seconds ``fn()`` took, with the cyclic GC paused."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    finally:
        if enabled:
            gc.enable()


def filled_queue(refs: list[SampleRef], backlog: int, **kwargs: Any) -> tuple[SampleRefQueue, CounterStore]:
    store = CounterStore()
    q = SampleRefQueue(store, **kwargs)
    for ref in refs[:backlog]:
        store.hold(ref)
        q.put(ref)
    return q, store


def put_and_acquire_ack(
    refs: list[SampleRef], backlog: int, ops: int, repeats: int, **queue_kwargs: Any
) -> tuple[float, float]:
    """(put µs, acquire+ack µs), each with ``backlog`` refs pending.

    The refs form a ring of ``backlog + ops``: a put round adds the next
    ``ops`` refs behind the backlog, then (untimed) as many of the oldest are
    acked; an acquire+ack round takes ``ops`` from the head of ``backlog +
    ops`` pending, then (untimed) puts them back at the tail.
    """
    ring = refs[: backlog + ops]
    q, store = filled_queue(ring, backlog, **queue_kwargs)
    head = 0  # ring index of the oldest pending ref
    put_us: list[float] = []
    ack_us: list[float] = []
    put, acquire, ack, hold = q.put, q.acquire, q.ack, store.hold
    for _ in range(repeats):
        batch = [ring[(head + backlog + i) % len(ring)] for i in range(ops)]
        for ref in batch:
            hold(ref)

        def put_batch() -> None:
            for ref in batch:
                put(ref)

        put_us.append(timed(put_batch) / ops * 1e6)

        def acquire_ack_batch() -> None:
            for _ in range(ops):
                ack(acquire())

        ack_us.append(timed(acquire_ack_batch) / ops * 1e6)  # backlog + ops -> backlog pending
        head = (head + ops) % len(ring)
    assert q.pending_count() == backlog and q.outstanding_count() == 0
    return statistics.median(put_us), statistics.median(ack_us)


def reclaim_costs(refs: list[SampleRef], outstanding: int, calls: int, repeats: int) -> tuple[float, float]:
    """(µs per idle reclaim_expired, µs per lease of a reclaim of all) with
    ``outstanding`` leases out."""
    clock = ManualClock(0.0)
    q, _ = filled_queue(refs, outstanding, clock=clock, visibility_timeout=VisibilityTimeout(30.0))
    idle: list[float] = []
    full: list[float] = []
    reclaim = q.reclaim_expired
    for _ in range(repeats):
        for i in range(outstanding):
            if i % 64 == 0:
                clock.advance(0.001)  # spread the deadlines
            q.acquire_nowait()

        def idle_calls() -> None:
            for _ in range(calls):
                reclaim()

        idle.append(timed(idle_calls) / calls * 1e6)
        clock.advance(60.0)
        counted: list[int] = []
        full.append(timed(lambda: counted.append(reclaim())) / outstanding * 1e6)
        assert counted == [outstanding] and q.pending_count() == outstanding
    return statistics.median(idle), statistics.median(full)


def floor_acquire_ack(ops: int, repeats: int) -> float:
    """µs per acquire+ack of the same work on bare CPython structures: one
    lock, a deque of pending, a dict of live leases, a deadline heap, a tuple
    for the lease."""
    results = []
    for _ in range(repeats):
        lock = threading.Lock()
        pending = deque(f"s{i}" for i in range(ops))
        live: dict[str, int] = {}
        heap: list[tuple[float, str, int]] = []
        ids = itertools.count(1)
        now = time.monotonic

        def loop() -> None:
            for _ in range(ops):
                with lock:
                    sample_id = pending.popleft()
                    lease_id = next(ids)
                    deadline = now() + 30.0
                    live[sample_id] = lease_id
                    heapq.heappush(heap, (deadline, sample_id, lease_id))
                    lease = (sample_id, deadline, lease_id)
                with lock:
                    if live.get(lease[0]) == lease[2]:
                        del live[lease[0]]
                if len(heap) > 2048:
                    heap.clear()

        results.append(timed(loop) / ops * 1e6)
    return statistics.median(results)


def wake_latency(refs: list[SampleRef], wakes: int, repeats: int) -> tuple[float, float]:
    """(p50, p99) ms from a put to the return of an ``acquire(poll_interval=1.0)``
    blocked in another thread, medians over ``repeats`` runs of ``wakes``."""
    p50s, p99s = [], []
    for _ in range(repeats):
        store = CounterStore()
        q = SampleRefQueue(store)
        woke: list[float] = []
        put_at: list[float] = []
        acked = threading.Semaphore(0)  # released by the consumer after each ack

        def consumer() -> None:
            for _ in range(wakes):
                lease = None
                while lease is None:
                    lease = q.acquire(poll_interval=1.0)
                woke.append(time.perf_counter())
                q.ack(lease)
                acked.release()

        thread = threading.Thread(target=consumer, daemon=True)
        thread.start()
        for ref in refs[:wakes]:
            store.hold(ref)
            # The bench (not a test) peeks at the queue's count of blocked
            # consumers, so that every put finds the consumer waiting.
            while q._acquirers_waiting == 0:
                time.sleep(0.0001)
            put_at.append(time.perf_counter())
            q.put(ref)
            acked.acquire()
        thread.join()
        latencies = sorted((w - p) * 1e3 for w, p in zip(woke, put_at))
        p50s.append(latencies[len(latencies) // 2])
        p99s.append(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))])
    return statistics.median(p50s), statistics.median(p99s)


def convoy(megabytes: int, ops: int, repeats: int, min_gets: int = 3) -> float | None:
    """p99 ms of a consumer's acquire+ack while another thread ``get``s a
    ``megabytes`` sample from the same ``LocalFeatureStore`` in a loop; None
    when torch or the store is not available.

    The consumer keeps 256 small samples pending (each acked one is stored
    and put again, untimed) and runs at least ``ops`` acquire+acks and until
    the getter finished ``min_gets`` copies, so the timings span the copies.
    """
    try:
        import torch

        from refqueue.stores.local import LocalFeatureStore
    except ImportError as exc:
        progress(f"convoy skipped: {exc}")
        return None

    def put(store: Any, sample_id: str, n: int) -> SampleRef:
        tensors = {
            "aux_hidden_states": torch.ones(n, dtype=torch.float32),
            "input_ids": torch.zeros(1, dtype=torch.int64),
            "attention_mask": torch.ones(1, dtype=torch.bool),
            "loss_mask": torch.ones(1, dtype=torch.bool),
        }
        return store.put(sample_id, tensors, run_id="bench", algorithm="eagle3", schema_version=1,
                         target_model_version="t", draft_weight_version=0, num_tokens=n)

    p99s = []
    for r in range(repeats):
        store = LocalFeatureStore(  # unbounded: the bench measures the queue, not the caps
            max_samples=None, max_bytes=None, high_watermark_bytes=None, low_watermark_bytes=None, device="cpu"
        )
        big = put(store, "big", megabytes * 1024 * 1024 // 4)
        q = SampleRefQueue(store)
        for i in range(256):
            q.put(put(store, f"small{i}", 16))
        stop = threading.Event()  # set when the consumer is done: the getter leaves
        started = threading.Event()  # set when the getter starts its first copy
        gets = [0]

        def getter() -> None:
            while not stop.is_set():
                started.set()
                _, handle = store.get(big)
                store.release(handle)
                gets[0] += 1

        thread = threading.Thread(target=getter, daemon=True)
        thread.start()
        started.wait()
        samples: list[float] = []
        perf = time.perf_counter
        give_up = perf() + 60.0
        while (len(samples) < ops or gets[0] < min_gets) and perf() < give_up:
            t0 = perf()
            lease = q.acquire()
            q.ack(lease)
            samples.append(perf() - t0)
            q.put(put(store, lease.ref.sample_id, 16))
        stop.set()
        thread.join()
        samples.sort()
        p99s.append(samples[int(len(samples) * 0.99)] * 1e3)
        progress(f"convoy run {r + 1}: {len(samples)} acquire+ack during {gets[0]} gets of {megabytes} MB, "
                 f"p99 {p99s[-1]:.3f} ms")
        store.close()
    return statistics.median(p99s)


def events_cost(refs: list[SampleRef], backlog: int, ops: int, repeats: int) -> dict[str, float]:
    """acquire+ack µs with events off and on (an ``EventLog`` with one
    ``RingSink``), alternating runs so both see the same machine load; the
    median of ``repeats`` pairs each."""
    from refqueue.events import EventLog, RingSink

    off, on = [], []
    for _ in range(repeats):
        off.append(put_and_acquire_ack(refs, backlog, ops, 1)[1])
        on.append(put_and_acquire_ack(refs, backlog, ops, 1, events=EventLog(RingSink(4 * ops)))[1])
    return {"off": statistics.median(off), "on_ring": statistics.median(on)}


def recorded_workload(refs: list[SampleRef], operations: int, backlog: int) -> list[dict[str, Any]]:
    """The records of a queue run: ``backlog`` pending, then acquire and ack (every
    tenth a fail), the acked ref put again, a reclaim every 100 operations
    with every 500th lease left to expire (ManualClock)."""
    from refqueue.events import EventLog, RingSink

    ring = RingSink(4 * operations + 10_000)
    clock = ManualClock(0.0)
    q, store = filled_queue(refs[:backlog], backlog, clock=clock, visibility_timeout=VisibilityTimeout(1.0),
                            events=EventLog(ring))
    for i in range(operations):
        lease = q.acquire_nowait()
        if lease is None:
            continue
        if i % 500 == 499:
            pass  # left to expire: reclaimed below
        elif i % 10 == 9:
            q.fail(lease)
        else:
            q.ack(lease)
            store.hold(lease.ref)
            q.put(lease.ref)
        if i % 100 == 99:
            clock.advance(0.5)
            q.reclaim_expired()
    return ring.records()


def trace_check_rate(refs: list[SampleRef], operations: int, repeats: int, backlog: int) -> dict[str, Any]:
    """events/s of trace-check on a recorded workload written as JSONL:
    the check alone and reading + checking; medians of ``repeats``."""
    import json
    import os
    import tempfile

    from refqueue.events import read_jsonl
    from refqueue.trace_check import check_records

    records = recorded_workload(refs, operations, backlog)
    fd, path = tempfile.mkstemp(suffix=".jsonl", prefix="refqueue-bench-")
    try:
        with os.fdopen(fd, "w") as out:
            for r in records:
                out.write(json.dumps(r, separators=(",", ":")) + "\n")
        check_rates, total_rates, cpu_rates = [], [], []
        for _ in range(repeats):
            started = time.perf_counter()
            loaded = read_jsonl([path])
            read = time.perf_counter() - started
            cpu = time.process_time()
            result = check_records(loaded)
            cpu = time.process_time() - cpu
            total = time.perf_counter() - started
            assert result.ok, result.violation.render()  # type: ignore[union-attr]
            check_rates.append(len(loaded) / (total - read))
            total_rates.append(len(loaded) / total)
            cpu_rates.append(len(loaded) / cpu if cpu > 0 else 0.0)
    finally:
        os.unlink(path)
    return {"events": len(records), "check": statistics.median(check_rates),
            "read_and_check": statistics.median(total_rates), "check_cpu": statistics.median(cpu_rates)}


def measure(
    *,
    backlogs: list[int],
    ops: int,
    repeats: int,
    reclaim_outstanding: int,
    wakes: int,
    convoy_mb: int,
    convoy_ops: int,
) -> dict[str, Any]:
    """Run every measurement; returns the JSON-ready result."""
    started = time.perf_counter()
    progress(f"building {max(backlogs) + ops:,} refs")
    refs = clone_refs(max(max(backlogs), reclaim_outstanding) + ops)
    result: dict[str, Any] = {"put_us": {}, "acquire_ack_us": {}}
    for backlog in backlogs:
        put_us, ack_us = put_and_acquire_ack(refs, backlog, ops, repeats)
        result["put_us"][str(backlog)] = round(put_us, 3)
        result["acquire_ack_us"][str(backlog)] = round(ack_us, 3)
        progress(f"backlog {backlog:,}: put {put_us:.3f} us, acquire+ack {ack_us:.3f} us")
    idle, full = reclaim_costs(refs, reclaim_outstanding, 10_000, repeats)
    result[f"reclaim_idle_us_{reclaim_outstanding}"] = round(idle, 3)
    result[f"reclaim_all_us_per_lease_{reclaim_outstanding}"] = round(full, 3)
    progress(f"reclaim with {reclaim_outstanding:,} out: idle {idle:.3f} us, all {full:.3f} us/lease")
    p50, p99 = wake_latency(refs, wakes, repeats)
    result["wake_latency_ms_p50"] = round(p50, 4)
    result["wake_latency_ms_p99"] = round(p99, 4)
    progress(f"wake latency: p50 {p50:.4f} ms, p99 {p99:.4f} ms")
    convoy_p99 = convoy(convoy_mb, convoy_ops, repeats) if convoy_mb > 0 else None
    result["convoy_acquire_ack_p99_ms"] = None if convoy_p99 is None else round(convoy_p99, 4)
    result["convoy_sample_mb"] = convoy_mb
    result["floor_acquire_ack_us"] = round(floor_acquire_ack(ops, repeats), 3)
    cost = events_cost(refs, backlogs[0], ops, repeats)
    result[f"events_off_acquire_ack_us_{backlogs[0]}"] = round(cost["off"], 3)
    result[f"events_ring_acquire_ack_us_{backlogs[0]}"] = round(cost["on_ring"], 3)
    result["events_ring_vs_off"] = round(cost["on_ring"] / cost["off"], 3)
    progress(f"events: acquire+ack off {cost['off']:.3f} us, ring {cost['on_ring']:.3f} us")
    for pending in (100, 1000):  # the model's actions cost O(live samples): two backlogs
        rate = trace_check_rate(refs, ops * 5, repeats, pending)
        result[f"trace_check_events_backlog_{pending}"] = rate["events"]
        result[f"trace_check_events_per_s_backlog_{pending}"] = round(rate["check"])
        result[f"trace_check_read_and_check_events_per_s_backlog_{pending}"] = round(rate["read_and_check"])
        # per second of this process's CPU time: what a machine with a core to spare would see
        result[f"trace_check_cpu_events_per_s_backlog_{pending}"] = round(rate["check_cpu"])
        progress(f"trace-check, {pending} pending: {rate['check']:,.0f} events/s (read+check "
                 f"{rate['read_and_check']:,.0f}; per CPU second {rate['check_cpu']:,.0f}) on {rate['events']:,} events")
    first, last = str(backlogs[0]), str(backlogs[-1])
    result[f"acquire_ack_ratio_{last}_vs_{first}"] = round(
        result["acquire_ack_us"][last] / result["acquire_ack_us"][first], 3
    )
    result["repeats"] = repeats
    result["ops_per_run"] = ops
    result["targets"] = TARGETS
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result
