"""Fuzz: ``FeatureDataLoader`` with hostile arguments, and faults while it runs.

A rejected constructor leases nothing and starts no thread.  Faults injected
into the store's ``get``, the queue's scrub (an ack that raises) and the
consumer's ``collate``, at any call, never lose a sample and never destroy
one: with ``max_deliveries=1`` every sample is still trained on exactly once
and nothing is dead-lettered.
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_helpers import hostile, names, put, snapshot, world

from refqueue.loader import FeatureDataLoader
from refqueue.queue import SampleRefQueue, VisibilityTimeout
from refqueue.stores import LocalFeatureStore

pytestmark = pytest.mark.timeout(300)
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)

ARGS = ("algorithm", "acquire_poll_interval", "schema_version", "batch_size", "prefetch", "device",
        "poll_interval", "reclaim", "on_mismatch", "close_queue", "collate", "store")


@SETTINGS
@given(arg=st.sampled_from(ARGS), value=hostile)
def test_a_hostile_constructor_argument_is_rejected_and_leases_nothing(arg, value):
    store, queue, _, _ = world(2, leased=0)
    before = snapshot(store, queue)
    threads = threading.active_count()
    try:
        loader = FeatureDataLoader(queue, **{arg: value})
    except (TypeError, ValueError) as exc:
        assert f"FeatureDataLoader({arg})" in str(exc) or arg in str(exc) or names(str(exc), value), str(exc)
    else:
        assert snapshot(store, queue) == before  # constructing leases nothing
        loader.close(ack=False)
        return
    assert snapshot(store, queue) == before and threading.active_count() == threads


@SETTINGS
@given(queue=hostile)
def test_a_queue_that_is_not_a_queue_is_a_type_error(queue):
    with pytest.raises(TypeError, match=r"^FeatureDataLoader\(queue\) needs a SampleRefQueue"):
        FeatureDataLoader(queue)


class FaultyStore(LocalFeatureStore):
    """A real store whose get and scrub raise when a drawn schedule says so."""

    def __init__(self, faults) -> None:
        super().__init__(None, None, None, None)
        self.faults = faults  # an iterator of bools, one per call
        self.injected = 0

    def _maybe_raise(self, what: str) -> None:
        if next(self.faults, False):
            self.injected += 1
            raise RuntimeError(f"{what} failed (injected)")

    def get(self, ref, device=None):
        self._maybe_raise("get")
        return super().get(ref, device)

    def scrub(self, ref):
        self._maybe_raise("scrub")
        return super().scrub(ref)


@SETTINGS
@given(
    n=st.integers(1, 5),
    schedule=st.lists(st.booleans(), max_size=40),
    collate_faults=st.lists(st.booleans(), max_size=10),
    batch_size=st.integers(1, 3),
    prefetch=st.sampled_from([0, 3]),
)
def test_faults_at_any_call_never_lose_or_destroy_a_sample(n, schedule, collate_faults, batch_size, prefetch):
    store = FaultyStore(iter(schedule))
    queue = SampleRefQueue(store, VisibilityTimeout(60.0), max_deliveries=1)
    for i in range(n):
        queue.put(put(store, f"s{i}", i))
    queue.close()
    faults = iter(collate_faults)
    collate_injected = []

    def collate(batch):
        if next(faults, False):
            collate_injected.append(1)
            raise ValueError("collate failed (injected)")
        return [int(s.tensors["input_ids"][0].item()) for s in batch]

    trained: list[int] = []
    loader = FeatureDataLoader(queue, algorithm="eagle3", schema_version=1, batch_size=batch_size,
                               prefetch=max(prefetch, batch_size) if prefetch else 0, collate=collate)
    errors = 0
    for _ in range(200):  # bounded: each fault costs one extra pull
        try:
            trained.extend(next(loader))
        except StopIteration:
            break
        except (RuntimeError, ValueError):
            errors += 1
    else:
        pytest.fail(f"the loader did not finish: trained {trained}, held {loader.held}")
    loader.close()
    assert sorted(trained) == list(range(n))  # each sample exactly once
    assert queue.dead_letters() == [] and queue.is_drained
    assert store.health().sample_count == 0 and store.handle_count == 0 and loader.held == []
    injected = store.injected + len(collate_injected)
    # every fault surfaced (faults of one batch's acks surface as the first of them)
    assert (errors > 0) == (injected > 0) and errors <= injected


@SETTINGS
@given(method=st.sampled_from(["extend", "close"]), value=hostile, in_hand=st.booleans())
def test_loader_methods_reject_hostile_arguments_with_or_without_a_batch_in_hand(method, value, in_hand):
    store, queue, _, _ = world(2, leased=0)
    queue.close()
    loader = FeatureDataLoader(queue, algorithm="eagle3", schema_version=1)
    if in_hand:
        next(loader)
    before = snapshot(store, queue)
    keyword = {"extend": "seconds", "close": "ack"}[method]
    valid = value is None or (isinstance(value, bool) if method == "close" else (
        not isinstance(value, bool) and isinstance(value, (int, float)) and 0 < value <= threading.TIMEOUT_MAX))
    if valid:
        return
    with pytest.raises((TypeError, ValueError)) as info:
        getattr(loader, method)(**{keyword: value})
    assert names(str(info.value), value) or type(value).__name__ in str(info.value), str(info.value)
    assert snapshot(store, queue) == before
    assert (loader.current is not None) == in_hand  # the batch in hand is untouched
    loader.close(ack=False)
