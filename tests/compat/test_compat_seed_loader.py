"""The seed's loader shape, run unchanged over refqueue's queue and store.

``SeedShapedLoader`` drives only the public queue and store API the seed
documents.  With refqueue underneath, every sample a producer puts (with the
seed's blocking put and the store's own watermarks switched on) is consumed
exactly once, the store ends empty, and no producer is left blocked.
"""

from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")

from compat_helpers import GUARD_S, put  # noqa: E402
from seed_shaped_loader import SeedShapedLoader  # noqa: E402

from refqueue.queue import SampleRefQueue, VisibilityTimeout  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.timeout(120)]

SAMPLE_BYTES = 4096


def seed_store() -> LocalFeatureStore:
    """The seed's constructor, positionally: 64 samples, 64 KiB, watermarks at 48 KiB / 16 KiB."""
    return LocalFeatureStore(64, 64 * 1024, 48 * 1024, 16 * 1024)


def produce(store, queue, prefix: str, n: int) -> None:
    for i in range(n):
        ref = put(store, f"{prefix}{i}", i, nbytes=SAMPLE_BYTES)
        queue.put_blocks_until_below(ref, poll_interval=0.01)


def run(consumers: int, producers: int, per_producer: int) -> tuple[list[str], LocalFeatureStore, SampleRefQueue]:
    store = seed_store()
    pauses = []
    queue = SampleRefQueue(store, VisibilityTimeout(60.0), on_pause=pauses.append)
    seen: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def consume() -> None:
        loader = SeedShapedLoader(queue, store, algorithm="eagle3", acquire_poll_interval=0.01)
        try:
            for batch in loader:
                assert batch.aux_hidden_states.numel() == SAMPLE_BYTES
                with lock:
                    seen.append(int(batch.aux_hidden_states[0]))
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            loader.close()

    def produce_all() -> None:
        threads = [threading.Thread(target=produce, args=(store, queue, f"p{p}-", per_producer))
                   for p in range(producers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(GUARD_S)
        queue.close()

    workers = [threading.Thread(target=consume) for _ in range(consumers)]
    workers.append(threading.Thread(target=produce_all))
    for t in workers:
        t.start()
    for t in workers:
        t.join(GUARD_S)
        assert not t.is_alive(), "a producer or consumer is stuck"
    assert errors == []
    return seen, store, queue


def test_one_seed_shaped_consumer_drains_every_sample_once():
    seen, store, queue = run(consumers=1, producers=1, per_producer=60)
    assert sorted(seen) == sorted(i % 256 for i in range(60)) and len(seen) == 60
    assert store.health().resident_bytes == 0 and store.health().sample_count == 0
    assert queue.is_drained


def test_several_seed_shaped_consumers_and_producers_finish_together():
    # Consumers stop the seed's way (None and is_closed); one that stops while
    # another still holds a lease leaves the rest to the others.
    seen, store, queue = run(consumers=3, producers=2, per_producer=40)
    assert len(seen) == 80
    assert store.health().resident_bytes == 0
    assert queue.is_drained


def test_a_seed_shaped_consumer_sees_the_tensors_the_producer_put():
    store = seed_store()
    queue = SampleRefQueue(store)
    for i in range(5):
        queue.put(put(store, f"s{i}", i, nbytes=8))
    queue.close()
    loader = SeedShapedLoader(queue, store)
    batches = list(loader)
    assert [int(b.aux_hidden_states[0]) for b in batches] == [0, 1, 2, 3, 4]
    assert all(b.aux_hidden_states.dtype == torch.uint8 for b in batches)
    assert queue.is_drained and store.health().sample_count == 0
