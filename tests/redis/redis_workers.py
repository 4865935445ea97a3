"""Consumer processes of the fault tests, started with the 'spawn' method.
They talk to the test over a pipe in JSON (``send_bytes``), never pickle."""

from __future__ import annotations

import json

from redis_helpers import queue


def hold_one_lease(url: str, name: str, conn) -> None:
    """Lease one sample, say which (the lease as JSON), then wait until killed."""
    q = queue(url, name)
    lease = q.acquire(poll_interval=30)
    conn.send_bytes(lease.to_json().encode())
    conn.recv_bytes()  # the test SIGKILLs this process mid-lease


def consume_until_drained(url: str, name: str, conn) -> None:
    """Lease and ack until the queue is drained; report ``[sample_id,
    redelivery_count, ack's answer]`` for every lease, as JSON."""
    q = queue(url, name)
    seen = []
    while not q.is_drained:
        lease = q.acquire(poll_interval=0.5)
        if lease is not None:
            seen.append([lease.ref.sample_id, lease.redelivery_count, q.ack(lease)])
    conn.send_bytes(json.dumps(seen).encode())


def wait_for_one(url: str, name: str, conn) -> None:
    """Say "ready", block in acquire(poll_interval=30), ack what came, and
    report it (the sample id, or None) as JSON."""
    q = queue(url, name)
    conn.send_bytes(b"ready")
    lease = q.acquire(poll_interval=30)
    if lease is not None:
        q.ack(lease)
    conn.send_bytes(json.dumps(None if lease is None else lease.ref.sample_id).encode())


def park_and_wait(url: str, name: str, conn) -> None:
    """A producer that parks its ref in put_blocks_until_below (the store it
    sees is above the queue's high watermark) and waits there until killed.
    Its registration lives 0.5 s unless renewed (the default is 10 s), and
    it renews it every 0.1 s (each wait slice)."""
    import torch

    import refqueue.backends.redis as redis_backend
    from redis_helpers import store

    redis_backend._PRODUCER_TTL_MS = 500
    redis_backend.BLOCK_SLICE = 0.1
    own = store()
    meta = dict(run_id="run", algorithm="eagle3", schema_version=1, target_model_version="target",
                draft_weight_version=0, num_tokens=4)
    tensors = {
        "aux_hidden_states": torch.zeros(3, 4, 8),
        "input_ids": torch.zeros(4, dtype=torch.int64),
        "attention_mask": torch.ones(4, dtype=torch.bool),
        "loss_mask": torch.ones(4),
    }
    own.put("resident", tensors, **meta)  # data a consumer has not freed yet
    ref = own.put("parked", tensors, **meta)
    q = queue(url, name, store=own, high_watermark_bytes=100, low_watermark_bytes=50)
    conn.send_bytes(json.dumps(ref.estimated_bytes).encode())
    q.put_blocks_until_below(ref, poll_interval=30)


def _shared_queue(url: str, name: str, root: str, seconds: float = 30.0):
    from refqueue.backends.redis import RedisSampleRefQueue
    from refqueue.queue import VisibilityTimeout
    from refqueue.stores.shared_dir import SharedDirFeatureStore

    store = SharedDirFeatureStore(root, fsync=False)
    return store, RedisSampleRefQueue(store, VisibilityTimeout(seconds), url=url, name=name)  # server time


def produce_to_shared_dir(url: str, name: str, root: str, count: int, conn) -> None:
    """Write ``count`` samples (input_ids = arange(4) + i) to the shared
    directory and put their refs; say "done"."""
    import torch

    store, q = _shared_queue(url, name, root)
    for i in range(count):
        tensors = {
            "aux_hidden_states": torch.full((3, 4, 8), float(i)),
            "input_ids": torch.arange(4, dtype=torch.int64) + i,
            "attention_mask": torch.ones(4, dtype=torch.bool),
            "loss_mask": torch.ones(4),
        }
        ref = store.put(f"s{i}", tensors, run_id="run", algorithm="eagle3", schema_version=1,
                        target_model_version="target", draft_weight_version=0, num_tokens=4)
        q.put(ref)
    conn.send_bytes(b"done")


def consume_from_shared_dir(url: str, name: str, root: str, conn) -> None:
    """Lease, read the tensors (memory-mapped), ack, until drained; report
    ``[sample_id, sum of input_ids]`` for each, as JSON."""
    store, q = _shared_queue(url, name, root)
    seen = []
    while not q.is_drained:
        lease = q.acquire(poll_interval=0.5)
        if lease is None:
            continue
        tensors, handle = store.get(lease.ref)
        seen.append([lease.ref.sample_id, int(tensors["input_ids"].sum())])
        store.release(handle)
        assert q.ack(lease)
    conn.send_bytes(json.dumps(seen).encode())


def ack_and_stop_before_scrub(url: str, name: str, root: str, conn) -> None:
    """Lease the one pending sample and ack it; the store's scrub says
    "committed" (the ack's script has run) and then never returns, so the
    parent kills this process between the commit and the scrub (D9)."""
    import threading

    store, q = _shared_queue(url, name, root, seconds=1.0)

    def scrub_never(ref):
        conn.send_bytes(json.dumps(ref.sample_id).encode())
        threading.Event().wait()  # killed here

    store.scrub = scrub_never
    lease = q.acquire(poll_interval=10)
    q.ack(lease)
