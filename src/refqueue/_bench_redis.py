"""The measurements of ``refqueue bench redis`` (see ``refqueue.bench``).

All on one machine, in one run, against a throwaway ``redis-server`` on a
loopback port (no persistence):

* ``fenced_lease_ack_per_s_1_client``: ``acquire_nowait`` + ``ack`` of
  ``RedisSampleRefQueue`` (server time, no injected clock) in one loop;
* ``raw_xreadgroup_xack_per_s_1_client``: the same loop written directly
  with redis-py on a stream: ``XREADGROUP COUNT 1`` + ``XACK`` (unfenced:
  the baseline, not an alternative);
* ``fenced_lease_ack_per_s_8_processes``: 8 consumer processes ('spawn'),
  each looping ``acquire_nowait`` + ``ack`` until the queue is empty,
  started together on an event; total leases over the wall time from the
  start to the last one done;
* shared-dir ``put``/``get`` MB/s of ``SharedDirFeatureStore`` (with and
  without fsync) against ``safetensors.torch.save_file``/``load_file`` of
  the same tensors.  Both ``get`` and ``load_file`` map the file (nothing is
  read until a tensor is touched), so each is measured twice: as returned
  (lazy), and with every byte read (each tensor cloned); the ratio the
  target names is the second.

Each figure is the median of ``repeats`` runs.  The store of the queue runs
is ``CounterStore`` (sizes only): the numbers are the control plane's.
"""

from __future__ import annotations

import json
import multiprocessing
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

__all__ = ["measure", "TARGETS"]

TARGETS = {
    "fenced_vs_raw_1_client": ">= 0.7",
    "8_processes_vs_1_client": ">= 4",
    "shared_dir_put_vs_save_file": ">= 0.8",
    "shared_dir_get_vs_load_file": ">= 0.8",
}


def _queue(url: str, name: str, store: Any = None) -> Any:
    from refqueue._bench_queue import CounterStore
    from refqueue.backends.redis import RedisSampleRefQueue
    from refqueue.queue import VisibilityTimeout

    return RedisSampleRefQueue(store or CounterStore(), VisibilityTimeout(300.0), url=url, name=name)


def _fenced_one_client(url: str, ops: int) -> float:
    from refqueue._bench_queue import CounterStore, clone_refs

    store = CounterStore()
    name = f"bench-{uuid.uuid4().hex}"
    q = _queue(url, name, store)
    producer = _queue(url, name)  # another client puts: the consumer parses every ref it leases
    for ref in clone_refs(ops):
        store.hold(ref)
        producer.put(ref)
    started = time.perf_counter()
    for _ in range(ops):
        q.ack(q.acquire_nowait())
    elapsed = time.perf_counter() - started
    q.delete()
    return ops / elapsed


def _raw_one_client(url: str, ops: int) -> float:
    import redis

    r = redis.Redis.from_url(url, decode_responses=True)
    stream, group = f"bench-raw-{uuid.uuid4().hex}", "g"
    pipe = r.pipeline(transaction=False)
    for i in range(ops):
        pipe.xadd(stream, {"ref": f"s{i}"})
    pipe.execute()
    r.xgroup_create(stream, group, id="0")
    started = time.perf_counter()
    for _ in range(ops):
        [(_, [(entry_id, _fields)])] = r.xreadgroup(group, "c", {stream: ">"}, count=1)
        r.xack(stream, group, entry_id)
    elapsed = time.perf_counter() - started
    r.delete(stream)
    r.close()
    return ops / elapsed


def _consumer(url: str, name: str, start: Any, conn: Any) -> None:
    """One of the 8 consumer processes: lease and ack until nothing is pending."""
    from refqueue._parent import exit_with_parent

    exit_with_parent()
    q = _queue(url, name)
    conn.send_bytes(b"ready")
    start.wait(600)
    done = 0
    while (lease := q.acquire_nowait()) is not None:
        q.ack(lease)
        done += 1
    conn.send_bytes(json.dumps({"done": done, "end": time.time()}).encode())


def _fenced_processes(url: str, ops: int, processes: int) -> float:
    from refqueue._bench_queue import clone_refs

    spawn = multiprocessing.get_context("spawn")
    name = f"bench-{uuid.uuid4().hex}"
    q = _queue(url, name)
    for ref in clone_refs(ops):
        q.put(ref)
    start = spawn.Event()
    pipes, workers = [], []
    for _ in range(processes):
        mine, theirs = spawn.Pipe()
        worker = spawn.Process(target=_consumer, args=(url, name, start, theirs))
        worker.start()
        pipes.append(mine)
        workers.append(worker)
    for conn in pipes:  # every worker has imported and opened the queue before the clock starts
        if not conn.poll(600) or conn.recv_bytes() != b"ready":
            raise RuntimeError("a consumer process did not start within 600 s")
    t0 = time.time()
    start.set()
    results = []
    for conn in pipes:
        if not conn.poll(600):
            raise RuntimeError("a consumer process did not finish within 600 s")
        results.append(json.loads(conn.recv_bytes()))
    for worker in workers:
        worker.join(60)
    total = sum(r["done"] for r in results)
    if total != ops:
        raise RuntimeError(f"the consumers acked {total} leases of {ops}")
    q.delete()
    return total / (max(r["end"] for r in results) - t0)


def _tensors(megabytes: int) -> dict[str, Any]:
    import torch

    seq = max(1, megabytes * 1024 * 1024 // (3 * 1024 * 4))
    gen = torch.Generator().manual_seed(0)
    return {
        "aux_hidden_states": torch.randn(3, seq, 1024, generator=gen),
        "input_ids": torch.randint(0, 1000, (seq,), generator=gen),
        "attention_mask": torch.ones(seq, dtype=torch.bool),
        "loss_mask": torch.ones(seq, dtype=torch.float32),
    }


def _shared_dir(megabytes: int, samples: int, repeats: int) -> dict[str, float]:
    from safetensors.torch import load_file, save_file

    from refqueue.stores.shared_dir import SharedDirFeatureStore

    tensors = _tensors(megabytes)
    nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
    mb = nbytes * samples / 1e6
    meta = dict(run_id="bench", algorithm="eagle3", schema_version=1, target_model_version="t",
                draft_weight_version=0, num_tokens=tensors["input_ids"].shape[0])
    runs: dict[str, list[float]] = {k: [] for k in (
        "save_file_mb_s", "load_file_lazy_mb_s", "load_file_read_mb_s", "put_mb_s", "put_fsync_mb_s",
        "get_lazy_mb_s", "get_read_mb_s")}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="refqueue-bench-") as root:
            plain = Path(root) / "plain"
            plain.mkdir()
            started = time.perf_counter()
            for i in range(samples):
                save_file(tensors, str(plain / f"s{i}.safetensors"))
            runs["save_file_mb_s"].append(mb / (time.perf_counter() - started))
            started = time.perf_counter()
            for i in range(samples):
                load_file(str(plain / f"s{i}.safetensors"))
            runs["load_file_lazy_mb_s"].append(mb / (time.perf_counter() - started))
            started = time.perf_counter()
            for i in range(samples):
                for t in load_file(str(plain / f"s{i}.safetensors")).values():
                    t.clone()
            runs["load_file_read_mb_s"].append(mb / (time.perf_counter() - started))

            for fsync, key in ((False, "put_mb_s"), (True, "put_fsync_mb_s")):
                store = SharedDirFeatureStore(Path(root) / key, fsync=fsync)
                started = time.perf_counter()
                refs = [store.put(f"s{i}", tensors, **meta) for i in range(samples)]
                runs[key].append(mb / (time.perf_counter() - started))
            started = time.perf_counter()
            for ref in refs:
                store.release(store.get(ref)[1])
            runs["get_lazy_mb_s"].append(mb / (time.perf_counter() - started))
            started = time.perf_counter()
            for ref in refs:
                got, handle = store.get(ref)
                for t in got.values():
                    t.clone()
                store.release(handle)
            runs["get_read_mb_s"].append(mb / (time.perf_counter() - started))
            store.close()
    out = {k: round(statistics.median(v), 1) for k, v in runs.items()}
    out["sample_mb"] = round(nbytes / 1e6, 2)
    out["samples"] = samples
    return out


def measure(*, ops: int, repeats: int, processes: int = 8, sample_mb: int = 64, samples: int = 8,
            progress: Any = None) -> dict[str, Any]:
    from refqueue.backends._redis_server import RedisServer

    say = progress or (lambda text: None)
    server = RedisServer().start()
    try:
        url = server.url
        say("fenced, 1 client")
        fenced = [_fenced_one_client(url, ops) for _ in range(repeats)]
        say("raw XREADGROUP + XACK, 1 client")
        raw = [_raw_one_client(url, ops) for _ in range(repeats)]
        say(f"fenced, {processes} processes")
        parallel = [_fenced_processes(url, ops * processes // 2, processes) for _ in range(repeats)]
    finally:
        server.stop()
    say("shared dir")
    shared = _shared_dir(sample_mb, samples, repeats)
    result: dict[str, Any] = {
        "fenced_lease_ack_per_s_1_client": round(statistics.median(fenced)),
        "raw_xreadgroup_xack_per_s_1_client": round(statistics.median(raw)),
        f"fenced_lease_ack_per_s_{processes}_processes": round(statistics.median(parallel)),
    }
    result["fenced_vs_raw_1_client"] = round(result["fenced_lease_ack_per_s_1_client"] / result["raw_xreadgroup_xack_per_s_1_client"], 3)
    result[f"{processes}_processes_vs_1_client"] = round(
        result[f"fenced_lease_ack_per_s_{processes}_processes"] / result["fenced_lease_ack_per_s_1_client"], 3
    )
    result.update({f"shared_dir_{k}": v for k, v in shared.items()})
    result["shared_dir_put_vs_save_file"] = round(shared["put_mb_s"] / shared["save_file_mb_s"], 3)
    result["shared_dir_put_fsync_vs_save_file"] = round(shared["put_fsync_mb_s"] / shared["save_file_mb_s"], 3)
    result["shared_dir_get_vs_load_file"] = round(shared["get_read_mb_s"] / shared["load_file_read_mb_s"], 3)
    result["shared_dir_get_lazy_vs_load_file_lazy"] = round(shared["get_lazy_mb_s"] / shared["load_file_lazy_mb_s"], 3)
    result["ops_per_run"] = ops
    result["repeats"] = repeats
    result["cpus"] = multiprocessing.cpu_count()
    result["targets"] = TARGETS
    return result
