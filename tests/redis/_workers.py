"""Consumer processes of the fault tests, started with the 'spawn' method.
They talk to the test over a pipe in JSON (``send_bytes``), never pickle."""

from __future__ import annotations

import json

from helpers import queue


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
