"""FeatureDataLoader: constructor arguments are checked with messages that name the fix."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from loader_helpers import exact, make_queue  # noqa: E402

from refqueue.loader import FeatureDataLoader  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            dict(algorithm="medusa"),
            ValueError,
            "FeatureDataLoader(algorithm) got 'medusa', which is not a FeatureAlgorithm; "
            "use one of eagle3, dflash, dspark, or None to take it from the first ref",
        ),
        (
            dict(schema_version=True),
            TypeError,
            "FeatureDataLoader(schema_version) must be an int, got True (bool); pass the schema version the "
            "consumer reads, or None to take it from the first ref",
        ),
        (
            dict(batch_size=0),
            ValueError,
            "FeatureDataLoader(batch_size) must be >= 1, got 0; pass how many samples each batch holds",
        ),
        (
            dict(prefetch=-1),
            ValueError,
            "FeatureDataLoader(prefetch) must be >= 0, got -1; pass 0 for no prefetch or a sample count",
        ),
        (
            dict(batch_size=4, prefetch=2),
            ValueError,
            "FeatureDataLoader(prefetch=2) is smaller than batch_size=4, so the buffer could never hold a full "
            "batch; pass prefetch=0 or prefetch >= 4",
        ),
        (
            dict(poll_interval=0),
            ValueError,
            "FeatureDataLoader(poll_interval) must be finite and > 0, got 0; pass a positive number of seconds",
        ),
        (
            dict(acquire_poll_interval=-1),
            ValueError,
            "FeatureDataLoader(acquire_poll_interval) must be finite and > 0, got -1; pass a positive number of "
            "seconds",
        ),
        (
            dict(poll_interval=0.1, acquire_poll_interval=0.2),
            ValueError,
            "FeatureDataLoader got poll_interval=0.1 and acquire_poll_interval=0.2; they are one setting "
            "(acquire_poll_interval is the seed's name), pass one of them",
        ),
        (
            dict(on_mismatch="ignore"),
            ValueError,
            "FeatureDataLoader(on_mismatch) got 'ignore'; pass 'raise' (next() raises SchemaMismatch) or 'skip' "
            "(a warning and stats.refused)",
        ),
        (
            dict(close_queue=None),
            TypeError,
            "FeatureDataLoader(close_queue) must be a bool, got None (NoneType); pass True or False",
        ),
        (
            dict(collate=3),
            TypeError,
            "FeatureDataLoader(collate) must be callable or None, got 3 (int); pass a function taking a Batch",
        ),
        (
            dict(reclaim=1),
            TypeError,
            "FeatureDataLoader(reclaim) must be a bool, got 1 (int); pass True or False",
        ),
        (
            dict(device=1),
            TypeError,
            "FeatureDataLoader(device) must be None, a str or a torch.device, got 1 (int); pass e.g. 'cpu' or "
            "'cuda:0'",
        ),
        (
            dict(device="gpu"),
            ValueError,
            "FeatureDataLoader(device) got 'gpu', which torch does not know as a device; pass e.g. 'cpu' or "
            "'cuda:0'",
        ),
        (
            dict(store=object()),
            TypeError,
            "FeatureDataLoader(store) needs a refqueue.store.FeatureStore, got <object object at ADDR> (object); "
            "pass the store the producers put into",
        ),
    ],
)
def test_constructor_rejects_bad_arguments(kwargs, error, message):
    _, queue = make_queue(0)
    args = dict(algorithm="eagle3", schema_version=2)
    args.update(kwargs)
    if "store" in kwargs:
        message = message.replace("ADDR", hex(id(kwargs["store"])))
    with pytest.raises(error, match=exact(message)):
        FeatureDataLoader(queue, **args)


def test_constructor_rejects_what_is_not_a_queue():
    with pytest.raises(TypeError, match=exact(
        "FeatureDataLoader(queue) needs a SampleRefQueue, got 'queue' (str), which lacks ['acquire', "
        "'acquire_nowait', 'ack', 'fail', 'dead_letter', 'extend', 'reclaim_expired', 'is_drained']; pass a "
        "refqueue.queue.SampleRefQueue or a backend with the same API"
    )):
        FeatureDataLoader("queue", LocalFeatureStore(), algorithm="eagle3", schema_version=2)


def test_the_store_defaults_to_the_queues():
    store, queue = make_queue(0)
    loader = FeatureDataLoader(queue, algorithm="dspark", schema_version=0)
    assert loader._store is store


def test_a_store_other_than_the_queues_is_rejected():
    _, queue = make_queue(0)
    other = LocalFeatureStore(uri="mem://other")
    with pytest.raises(ValueError, match=exact(
        f"FeatureDataLoader(store) is 'mem://other' but the queue is bound to {queue.store.uri!r}; pass the "
        f"queue's store (or leave store=None)"
    )):
        FeatureDataLoader(queue, other, algorithm="eagle3", schema_version=2)


def test_close_rejects_an_ack_that_is_not_a_bool_and_changes_nothing():
    _, queue = make_queue(1)
    loader = FeatureDataLoader(queue, algorithm="eagle3", schema_version=2)
    next(loader)
    with pytest.raises(TypeError, match=exact(
        "FeatureDataLoader.close(ack) must be None or a bool, got 1 (int); pass True to ack the batch in hand, "
        "False to fail it, or None to fail it only while an exception is in flight"
    )):
        loader.close(ack=1)
    assert queue.outstanding_count() == 1 and not loader.stats.acked  # still open, the batch still in hand
    loader.close()
    assert loader.stats.acked == 1
