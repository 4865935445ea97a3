"""Bounded stress test of the production queue with real threads and time.

4 producers put 20,000 samples (data in the store first, then
``put_blocks_until_below`` against the store's watermarks); 4 consumers
lease, ``get``, and then ack, fail (10 %) or stall (2 %); a background
reclaimer runs every 2 ms against a 10 ms visibility timeout.

A stalled consumer holds its lease and its data until the sample has been
*redelivered* to another consumer (an ``Event`` set by whoever acquires the
redelivery: no sleep stands in for that), then releases its handle and acks
the stale lease, which must say False.  At most two consumers stall at once,
so two always make progress.

Checked at the end: every sample was completed by exactly one True ack, none
lost, none dead; a ``get`` under a *live* lease never missed its data (a
``get`` under a lease already reclaimed may, and then its ack must be
False); the store holds nothing; pause and resume callbacks alternated.

Runs on the test ``BytesStore`` and, where torch is installed, on
``LocalFeatureStore`` with tiny CPU tensors.
"""

from __future__ import annotations

import collections
import random
import threading
import traceback

import pytest
from bytes_store import BytesStore, features

from refqueue.errors import SampleMissing
from refqueue.queue import SampleRefQueue, VisibilityTimeout

pytestmark = pytest.mark.timeout(300)

SAMPLES = 20_000
PRODUCERS = 4
CONSUMERS = 4
FAIL_RATE = 0.10
STALL_RATE = 0.02
PAYLOAD = 8  # bytes per sample
HIGH, LOW = 400 * PAYLOAD, 200 * PAYLOAD


def payload(k: int) -> bytes:
    return k.to_bytes(PAYLOAD, "little")


class BytesData:
    """How the test puts and checks data in a ``BytesStore``."""

    def make_store(self):
        return BytesStore(high_watermark_bytes=HIGH, low_watermark_bytes=LOW)

    def put(self, store, sample_id, k):
        return store.put(sample_id, features(payload(k)))

    def check(self, tensors, k) -> bool:
        return tensors["aux_hidden_states"] == payload(k)


class TensorData:
    """How the test puts and checks tiny CPU tensors in a ``LocalFeatureStore``."""

    def __init__(self) -> None:
        self.torch = pytest.importorskip("torch")
        from refqueue.stores.local import LocalFeatureStore

        self.store_class = LocalFeatureStore

    def make_store(self):
        # bounded by the byte watermarks only: no sample-count cap (the default caps at 64)
        return self.store_class(device="cpu", max_samples=None, high_watermark_bytes=HIGH, low_watermark_bytes=LOW)

    def put(self, store, sample_id, k):
        torch = self.torch
        tensors = {
            "aux_hidden_states": torch.frombuffer(bytearray(payload(k)), dtype=torch.uint8),
            "input_ids": torch.zeros(0, dtype=torch.uint8),
            "attention_mask": torch.zeros(0, dtype=torch.uint8),
            "loss_mask": torch.zeros(0, dtype=torch.uint8),
        }
        return store.put(
            sample_id, tensors, run_id="stress", algorithm="eagle3", schema_version=1,
            target_model_version="t", draft_weight_version=0, num_tokens=0,
        )

    def check(self, tensors, k) -> bool:
        return bytes(tensors["aux_hidden_states"].tolist()) == payload(k)


class Redeliveries:
    """Which delivery of each sample has been handed out; lets a stalled
    consumer wait until its sample was redelivered to someone else."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[str, int] = {}  # sample_id -> highest redelivery_count acquired
        self._waiters: dict[str, list[tuple[int, threading.Event]]] = collections.defaultdict(list)

    def delivered(self, sample_id: str, redelivery_count: int) -> None:
        with self._lock:
            if redelivery_count > self._latest.get(sample_id, -1):
                self._latest[sample_id] = redelivery_count
            for count, event in self._waiters.get(sample_id, ()):
                if redelivery_count > count:
                    event.set()  # the stalled holder of delivery `count` may go on

    def wait_until_redelivered(self, sample_id: str, redelivery_count: int, timeout: float) -> bool:
        event = threading.Event()
        with self._lock:
            if self._latest.get(sample_id, -1) > redelivery_count:
                return True
            self._waiters[sample_id].append((redelivery_count, event))
        try:
            return event.wait(timeout)
        finally:
            with self._lock:
                self._waiters[sample_id].remove((redelivery_count, event))


@pytest.mark.parametrize(
    "data", [BytesData, pytest.param(TensorData, marks=pytest.mark.torch)], ids=["bytes_store", "local_store"]
)
def test_every_sample_completes_exactly_once_under_stress(data):
    data = data()
    store = data.make_store()
    callbacks: list[str] = []
    q = SampleRefQueue(
        store,
        VisibilityTimeout(0.010),
        on_pause=lambda h: callbacks.append("pause"),
        on_resume=lambda h: callbacks.append("resume"),
    )
    q.start_reclaimer(0.002)
    errors: list[str] = []
    acked: list[list[str]] = [[] for _ in range(CONSUMERS)]
    counts = collections.Counter()  # updated under counts_lock
    counts_lock = threading.Lock()
    stall_slots = threading.BoundedSemaphore(2)
    redeliveries = Redeliveries()

    def count(what: str) -> None:
        with counts_lock:
            counts[what] += 1

    def produce(p: int) -> None:
        for k in range(p, SAMPLES, PRODUCERS):
            q.put_blocks_until_below(data.put(store, f"s{k}", k))

    def consume(c: int, rng: random.Random) -> None:
        while True:
            lease = q.acquire(poll_interval=0.05)
            if lease is None:
                if q.is_drained:
                    return
                continue
            sample_id = lease.ref.sample_id
            k = int(sample_id[1:])
            redeliveries.delivered(sample_id, lease.redelivery_count)
            try:
                tensors, handle = store.get(lease.ref)
            except SampleMissing:
                # Legitimate only for a lease already reclaimed and completed by another.
                if q.ack(lease):
                    errors.append(f"get({sample_id}) missed its data under a live lease")
                count("missing_under_stale_lease")
                continue
            if not data.check(tensors, k):
                errors.append(f"get({sample_id}) returned the wrong data")
            roll = rng.random()
            if roll < STALL_RATE and stall_slots.acquire(blocking=False):
                try:
                    count("stalls")
                    if not redeliveries.wait_until_redelivered(sample_id, lease.redelivery_count, 60.0):
                        errors.append(f"{sample_id}: a stalled lease was never reclaimed and redelivered")
                    if not data.check(tensors, k):
                        errors.append(f"{sample_id}: a stalled holder's data changed under it")
                    store.release(handle)
                    if q.ack(lease):
                        errors.append(f"{sample_id}: the stale ack of a redelivered lease said True")
                finally:
                    stall_slots.release()
                continue
            store.release(handle)
            if roll < STALL_RATE + FAIL_RATE:
                if q.fail(lease):
                    count("fails")
                continue
            if q.ack(lease):
                acked[c].append(sample_id)
            else:
                count("stale_acks")

    def guarded(fn, *args):
        def run():
            try:
                fn(*args)
            except BaseException:
                errors.append(traceback.format_exc())
        return threading.Thread(target=run, daemon=True)

    consumers = [guarded(consume, c, random.Random(1000 + c)) for c in range(CONSUMERS)]
    producers = [guarded(produce, p) for p in range(PRODUCERS)]
    for t in consumers + producers:
        t.start()
    for t in producers:
        t.join()
    q.close()
    for t in consumers:
        t.join()
    q.stop_reclaimer()

    assert errors == []
    completions = collections.Counter(sid for done in acked for sid in done)
    assert len(completions) == SAMPLES, f"{SAMPLES - len(completions)} samples lost"
    assert set(completions.values()) == {1}, "a sample was completed by two live acks"
    assert q.is_drained and q.pending_count() == q.outstanding_count() == 0
    assert q.dead_letters() == []
    health = store.health()
    assert (health.resident_bytes, health.sample_count) == (0, 0)
    assert counts["stalls"] > 0 and counts["fails"] > 0
    assert callbacks[::2] == ["pause"] * len(callbacks[::2])
    assert callbacks[1::2] == ["resume"] * len(callbacks[1::2])
    assert len(callbacks) % 2 == 0 and not q.is_paused
    print(f"stress counts: {dict(counts)}, pause/resume transitions: {len(callbacks)}")
