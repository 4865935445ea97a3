"""``refqueue bench gpu``: the data plane against the copy limits of the same run.

Every figure is a median over ``repeats`` timed runs after one warm-up.  A
byte rate counts each byte once for a host-to-device copy and twice (read
and write) for a device-to-device one, the way the limits are counted.

* limits: a large ``copy_`` device to device; a host-to-device copy from
  pinned memory and from pageable memory; at each size.
* ``put``: ``LocalFeatureStore(device="cuda").put`` of one EAGLE-3 sample
  whose ``aux_hidden_states`` (bf16) is the size, from pinned host memory,
  from pageable host memory and from the device, timed from the call to the
  end of its copies (``torch.cuda.synchronize``), the sample scrubbed
  between runs.
* ``get``: ``get(copy=True)`` (clone on the caller's stream, timed to its
  end) and ``get(copy=False)`` (views: the call's wall time, no wait).
* ``_device`` figures time the same call on the GPU's timeline (a sleep
  kernel queued first, events around the call): the copy's cost to a
  pipeline whose host runs ahead, without the host's per-call overhead.
* loader: ``steps`` training steps of about ``step_ms`` of GPU work each
  (bf16 matrix products of the sample's hidden states, each about 0.1 ms on
  an H200, so the step is bound by the GPU, not by kernel launches), through a
  ``FeatureDataLoader`` with ``prefetch`` over a CUDA store, against the
  same steps on tensors already resident; overhead = the difference per
  step, and its share of a step.

Progress goes to ``progress``; the result is one JSON-ready dict.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

__all__ = ["measure", "ratios"]

MiB = 1024 * 1024
SIZES_MIB = (16, 100, 512)
HIDDEN = 4096


def measure(
    sizes_mib: tuple[int, ...] = SIZES_MIB, repeats: int = 5, steps: int = 200, step_ms: float = 5.0,
    prefetch: int = 2, progress: Callable[[str], None] = lambda text: None,
) -> dict[str, Any]:
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("refqueue bench gpu: needs a CUDA device; this machine has none")
    device = torch.device("cuda", torch.cuda.current_device())
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device), "torch": torch.__version__, "repeats": repeats, "sizes": {},
    }
    for mib in sizes_mib:
        progress(f"{mib} MiB: limits, put, get")
        result["sizes"][str(mib)] = _size(torch, device, mib, repeats)
    progress(f"loader: {steps} steps of about {step_ms} ms, prefetch {prefetch}")
    result["loader"] = _loader(torch, device, steps, step_ms, prefetch)
    result["ratios"] = ratios(result)
    return result


def ratios(result: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets as ratios to the limits of the same run."""
    out: dict[str, Any] = {}
    for mib, row in result["sizes"].items():
        out[mib] = {
            "put_pinned/pinned_limit": row["put_pinned_GBps"] / row["limit_h2d_pinned_GBps"],
            "put_pageable/pinned_limit": row["put_pageable_GBps"] / row["limit_h2d_pinned_GBps"],
            "put_device/d2d_limit": row["put_device_GBps"] / row["limit_d2d_GBps"],
            "get_copy/d2d_limit": row["get_copy_GBps"] / row["limit_d2d_GBps"],
            "get_copy/d2d_limit_device": row["get_copy_device_GBps"] / row["limit_d2d_device_GBps"],
            "get_view_us": row["get_view_us"],
        }
    loader = result.get("loader")
    if loader:
        out["loader_overhead/step"] = loader["overhead_fraction"]
    return out


def _timed(torch: Any, run: Callable[[], Any], repeats: int, reset: Callable[[], None] = lambda: None) -> float:
    """Median seconds of ``run`` from its call to the end of its GPU work."""
    times = []
    for i in range(repeats + 1):
        reset()
        torch.cuda.synchronize()
        start = time.perf_counter()
        run()
        torch.cuda.synchronize()
        if i:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def _device_timed(torch: Any, run: Callable[[], Any], repeats: int, reset: Callable[[], None] = lambda: None) -> float:
    """Median seconds of ``run``'s work on the GPU's timeline: a sleep kernel
    queued first keeps the GPU busy while the host issues ``run``, so the
    time between the events recorded around it is the GPU's work alone, not
    the host's overhead (what an asynchronous copy costs a pipeline)."""
    times = []
    for i in range(repeats + 1):
        reset()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        if i:
            times.append(start.elapsed_time(end) / 1e3)
    return float(statistics.median(times))


SLEEP_CYCLES = 4_000_000  # about 2 ms: longer than the host takes to issue any measured call


def _sample(torch: Any, mib: int, where: str) -> dict[str, Any]:
    seq = max(1, mib * MiB // (HIDDEN * 2))
    tensors = {
        "aux_hidden_states": torch.full((seq, HIDDEN), 0.5, dtype=torch.bfloat16),
        "input_ids": torch.randint(0, 32000, (seq,)),
        "attention_mask": torch.ones(seq, dtype=torch.bool),
        "loss_mask": torch.ones(seq, dtype=torch.float32),
    }
    if where == "cuda":
        return {k: t.cuda() for k, t in tensors.items()}
    if where == "pinned":
        return {k: t.pin_memory() for k, t in tensors.items()}
    return tensors


def _nbytes(tensors: dict[str, Any]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors.values())


def _size(torch: Any, device: Any, mib: int, repeats: int) -> dict[str, Any]:
    from refqueue.stores import LocalFeatureStore

    nbytes = mib * MiB
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    pageable = torch.empty(nbytes, dtype=torch.uint8)
    pageable.fill_(1)
    staging = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    row: dict[str, Any] = {
        "limit_d2d_GBps": 2 * nbytes / _timed(torch, lambda: dst.copy_(src), repeats) / 1e9,
        "limit_d2d_device_GBps": 2 * nbytes / _device_timed(torch, lambda: dst.copy_(src), repeats) / 1e9,
        "limit_h2d_pinned_GBps": nbytes / _timed(torch, lambda: dst.copy_(pinned, non_blocking=True), repeats) / 1e9,
        "limit_h2d_pageable_GBps": nbytes / _timed(torch, lambda: dst.copy_(pageable), repeats) / 1e9,
        "limit_host_memcpy_GBps": nbytes / _timed(torch, lambda: staging.copy_(pageable), repeats) / 1e9,
    }
    del src, dst, pinned, pageable, staging
    store = LocalFeatureStore(
        max_samples=None, max_bytes=None, high_watermark_bytes=None, low_watermark_bytes=None, device=device
    )
    fields: dict[str, Any] = dict(run_id="bench", algorithm="eagle3", schema_version=2, target_model_version="t",
                  draft_weight_version=0)
    for where in ("pinned", "pageable", "cuda"):
        tensors = _sample(torch, mib, where)
        size = _nbytes(tensors)
        seq = tensors["input_ids"].shape[0]
        refs: list[Any] = []

        def put() -> None:
            refs.append(store.put("s", tensors, num_tokens=seq, **fields))

        def scrub() -> None:
            while refs:
                store.scrub(refs.pop())

        seconds = _timed(torch, put, repeats, reset=scrub)
        rate = (2 if where == "cuda" else 1) * size / seconds / 1e9
        row[{"pinned": "put_pinned_GBps", "pageable": "put_pageable_GBps", "cuda": "put_device_GBps"}[where]] = rate
        if where == "cuda":
            row["put_device_device_GBps"] = 2 * size / _device_timed(torch, put, repeats, reset=scrub) / 1e9
        scrub()
        del tensors
    tensors = _sample(torch, mib, "cuda")
    size = _nbytes(tensors)
    ref = store.put("g", tensors, num_tokens=tensors["input_ids"].shape[0], **fields)
    del tensors
    held: list[Any] = []

    def get_copy() -> None:
        held.append(store.get(ref))

    def drop() -> None:
        while held:
            store.release(held.pop()[1])

    row["get_copy_GBps"] = 2 * size / _timed(torch, get_copy, repeats, reset=drop) / 1e9
    drop()
    row["get_copy_device_GBps"] = 2 * size / _device_timed(torch, get_copy, repeats, reset=drop) / 1e9
    drop()
    views = []
    for _ in range(200 + 20):
        torch.cuda.synchronize()
        start = time.perf_counter()
        got, handle = store.get(ref, copy=False)
        views.append(time.perf_counter() - start)
        store.release(handle)
    row["get_view_us"] = statistics.median(views[20:]) * 1e6
    row["get_view_us_p99"] = sorted(views[20:])[int(0.99 * 200)] * 1e6
    row["sample_bytes"] = size
    store.close()
    torch.cuda.empty_cache()
    return row


def _loader(torch: Any, device: Any, steps: int, step_ms: float, prefetch: int) -> dict[str, Any]:
    from refqueue.loader import FeatureDataLoader
    from refqueue.queue import SampleRefQueue
    from refqueue.stores import LocalFeatureStore

    mib = 16
    weight = torch.randn(HIDDEN, HIDDEN, dtype=torch.bfloat16, device=device) / HIDDEN**0.5
    rows = mib * MiB // (HIDDEN * 2)  # the sample's tokens: each product reads all of it
    probe = torch.randn(rows, HIDDEN, dtype=torch.bfloat16, device=device)

    def matmuls(n: int) -> None:
        x = probe
        for _ in range(n):
            x = x @ weight

    # calibrate: how many products make step_ms
    n = 16
    while True:
        seconds = _timed(torch, lambda: matmuls(n), 3)
        if seconds * 1e3 >= step_ms / 2 or n > 1 << 16:
            break
        n *= 2
    per_step = max(1, round(n * step_ms / (seconds * 1e3)))

    def step(aux: Any) -> Any:
        x = aux @ weight  # reads the sample
        for _ in range(per_step - 1):
            x = x @ weight
        return x

    samples = [_sample(torch, mib, "cuda") for _ in range(4)]

    def resident() -> None:
        for i in range(steps):
            step(samples[i % 4]["aux_hidden_states"])

    base = _timed(torch, resident, 3)
    fields: dict[str, Any] = dict(run_id="bench", algorithm="eagle3", schema_version=2, target_model_version="t",
                  draft_weight_version=0)
    results = {}
    for copy in (True, False):
        times = []
        for _ in range(3):
            store = LocalFeatureStore(
                max_samples=None, max_bytes=None, high_watermark_bytes=None, low_watermark_bytes=None, device=device
            )
            queue = SampleRefQueue(store)
            for i in range(steps):
                tensors = samples[i % 4]
                queue.put(store.put(f"s{i}", tensors, num_tokens=tensors["input_ids"].shape[0], **fields))
            queue.close()
            torch.cuda.synchronize()
            start = time.perf_counter()
            with FeatureDataLoader(queue, algorithm="eagle3", schema_version=2, prefetch=prefetch, copy=copy) as it:
                for batch in it:
                    step(batch.aux_hidden_states)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
            store.close()
        results[copy] = statistics.median(times)
    overhead = {copy: (t - base) / steps for copy, t in results.items()}
    step_s = base / steps
    return {
        "steps": steps, "prefetch": prefetch, "sample_mib": mib, "matmuls_per_step": per_step,
        "step_ms_resident": step_s * 1e3,
        "step_ms_loader_copy": results[True] / steps * 1e3,
        "step_ms_loader_views": results[False] / steps * 1e3,
        "overhead_ms_copy": overhead[True] * 1e3,
        "overhead_ms_views": overhead[False] * 1e3,
        "overhead_fraction": overhead[True] / step_s,
        "overhead_fraction_views": overhead[False] / step_s,
    }
