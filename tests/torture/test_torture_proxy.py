"""The torture's proxy loses a reply for real: a script call goes through to
the server, and its connection is closed before the reply reaches the
client; plain commands pass while it is armed."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.redis


def test_an_armed_proxy_drops_the_reply_of_the_next_script_call_after_it_ran(redis_server, tmp_path):
    import redis

    from refqueue.backends.redis import RedisSampleRefQueue, RedisUnavailable
    from refqueue.queue import VisibilityTimeout
    from refqueue.stores.shared_dir import SharedDirFeatureStore
    from refqueue.torture.payload import PUT_FIELDS, tensors_for
    from refqueue.torture.proxy import DropProxy

    proxy = DropProxy("127.0.0.1", redis_server.port).start()
    try:
        store = SharedDirFeatureStore(tmp_path / "store", fsync=False)
        queue = RedisSampleRefQueue(store, VisibilityTimeout(30), url=proxy.url_for(redis_server.url), name="proxied")
        for sample_id in ("s0", "s1"):
            queue.put(store.put(sample_id, tensors_for(sample_id), **PUT_FIELDS))
        assert queue.ack(queue.acquire_nowait())  # the server now knows the ack's script (no NOSCRIPT reply)
        lease = queue.acquire_nowait()
        plain = redis.Redis.from_url(proxy.url_for(redis_server.url), decode_responses=True)
        seen = proxy.drop_next_reply()
        assert plain.ping() is True  # not a script: it passes
        with pytest.raises(RedisUnavailable):
            queue.ack(lease)
        drop = proxy.wait_drop(seen, 5.0)
        assert drop is not None and len(drop.sha) == 12
        assert queue.lease_state(lease) == "acked"  # the server ran it
        assert queue.outstanding_count() == 0
        assert proxy.wait_drop(seen + 1, 0.2) is None  # one order, one drop
        plain.close()
    finally:
        proxy.close()


def test_the_proxy_keeps_the_users_password_and_database_in_its_url():
    from refqueue.torture.proxy import DropProxy

    proxy = DropProxy("127.0.0.1", 1)  # never started: only its URL is read
    try:
        assert proxy.url_for("redis://u:pw@127.0.0.1:6379/3") == f"redis://u:pw@127.0.0.1:{proxy.port}/3"
    finally:
        proxy._listener.close()
