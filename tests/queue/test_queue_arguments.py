"""Both queue constructors check the arguments they share with one helper
(``refqueue._checks.check_queue_arguments``): the same bounds, the same
errors, each naming its own class.  A rejected ``RedisSampleRefQueue`` never
reaches a server: the URL below names a port nothing listens on, so a
construction that got as far as connecting would raise ``RedisUnavailable``
instead of the argument's error.  (The Redis half needs redis-py, an
optional dependency.)"""

from __future__ import annotations

import re

import pytest
from bytes_store import BytesStore

from refqueue.queue import SampleRefQueue

NOWHERE = "redis://127.0.0.1:1/0"

# (arguments, error, the message's text after "<owner>(")
BAD = [
    (dict(store=None), TypeError,
     "store) needs a refqueue.store.FeatureStore, got None (NoneType); pass the store the producers put into"),
    (dict(visibility_timeout=5), TypeError,
     "visibility_timeout) must be a VisibilityTimeout or None, got 5 (int); wrap the seconds: "
     "VisibilityTimeout(seconds)"),
    (dict(high_watermark_bytes=-1, low_watermark_bytes=0), ValueError,
     "high_watermark_bytes) must be >= 1, got -1; pass a positive byte count (a store always holds >= 0 bytes, "
     "so a high of 0 would pause for ever), or None to use the store's"),
    (dict(high_watermark_bytes=10, low_watermark_bytes="5"), TypeError,
     "low_watermark_bytes) must be an int or None, got '5' (str); pass a non-negative byte count, or None to use "
     "the store's"),
    (dict(on_pause=1), TypeError,
     "on_pause) must be callable or None, got 1 (int); pass a function taking a StoreHealth"),
    (dict(on_resume="x"), TypeError,
     "on_resume) must be callable or None, got 'x' (str); pass a function taking a StoreHealth"),
    (dict(max_deliveries=0), ValueError,
     "max_deliveries) must be >= 1, got 0; pass None for no limit or a count >= 1"),
    (dict(max_deliveries=True), TypeError,
     "max_deliveries) must be an int or None, got True (bool); pass None for no limit or a count >= 1"),
    (dict(dedup_window=-1), ValueError,
     "dedup_window) must be >= 0, got -1; pass 0 to turn deduplication off"),
    (dict(dead_letter_limit=-1), ValueError,
     "dead_letter_limit) must be >= 0, got -1; pass how many dead letters to keep (the oldest are dropped "
     "first), e.g. 10000"),
    (dict(dead_letter_limit=1.5), TypeError,
     "dead_letter_limit) must be an int, got 1.5 (float); pass how many dead letters to keep (the oldest are "
     "dropped first), e.g. 10000"),
    # the first bad argument in the shared order is the one named
    (dict(on_pause=1, max_deliveries=0), TypeError,
     "on_pause) must be callable or None, got 1 (int); pass a function taking a StoreHealth"),
]


def redis_queue_class() -> type:
    pytest.importorskip("redis")
    from refqueue.backends.redis import RedisSampleRefQueue

    return RedisSampleRefQueue


def _arguments(kwargs: dict) -> tuple[object, dict]:
    kwargs = dict(kwargs)
    return kwargs.pop("store", "default"), kwargs


@pytest.mark.parametrize("kwargs, error, tail", BAD)
def test_the_in_process_queue_names_itself(kwargs, error, tail):
    store, rest = _arguments(kwargs)
    store = BytesStore() if store == "default" else store
    with pytest.raises(error, match="^" + re.escape("SampleRefQueue(" + tail) + "$"):
        SampleRefQueue(store, **rest)


@pytest.mark.parametrize("kwargs, error, tail", BAD)
def test_the_redis_queue_makes_the_same_checks_before_it_connects(kwargs, error, tail):
    RedisSampleRefQueue = redis_queue_class()
    store, rest = _arguments(kwargs)
    store = BytesStore() if store == "default" else store
    if tail.startswith("store)"):
        tail += " (SharedDirFeatureStore across machines)"
    with pytest.raises(error, match="^" + re.escape("RedisSampleRefQueue(" + tail) + "$"):
        RedisSampleRefQueue(store, url=NOWHERE, name="never-made", **rest)


@pytest.mark.parametrize("kind", ["in-process", "redis"])
def test_a_rejected_construction_leaves_the_store_untouched(kind):
    store = BytesStore()
    before = store.health()
    if kind == "redis":
        RedisSampleRefQueue = redis_queue_class()
        with pytest.raises(ValueError, match="max_deliveries"):
            RedisSampleRefQueue(store, url=NOWHERE, name="never-made", max_deliveries=0)
    else:
        with pytest.raises(ValueError, match="max_deliveries"):
            SampleRefQueue(store, max_deliveries=0)
    assert store.health() == before
    assert store.scrubs == []
