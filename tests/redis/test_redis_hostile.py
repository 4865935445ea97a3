"""Issue 21, defects 7, 9-13: the Redis client under hostile URLs, servers and
values planted in its keys by another client.

On 7655507:

7. a password given as ``?password=`` showed in ``repr``, ``.url`` and every
   ``RedisUnavailable`` message;
9. ``delete()`` (and ``delete_queue``) also deleted another queue whose key
   prefix starts with this queue's;
10. ``drain_dead_letters()`` deleted the server's list before parsing it: one
    bad entry lost every dead letter;
11. a script that failed part-way kept its earlier writes: with the lease
    counter (``meta``'s ``seq``) corrupted, each ``acquire`` removed a
    sample from pending and then failed;
12. (built by issue 18: 088a480, 7655507) a server restarted without
    persistence went unnoticed, and a stale lease acked another consumer's
    delivery; this file keeps its regression test;
13. a URL naming something that is not Redis gave a raw ``InvalidResponse`` /
    ``AttributeError`` / ``TypeError`` (7655507: ``AttributeError``,
    ``TypeError``, ``ValueError``, or ``RedisRefused`` saying "report it")
    with no hint.

Real ``redis-server`` processes; the hostile values are planted with a plain
redis-py client, as another program sharing the server would.
"""

from __future__ import annotations

import contextlib
import socket
import threading

import pytest
import redis as redis_py

from redis_helpers import queue, ref, store
from refqueue.backends._redis_server import RedisServer
from refqueue.backends.redis import (
    QueueStateCorrupt,
    RedisRefused,
    RedisSampleRefQueue,
    RedisUnavailable,
    delete_queue,
)
from refqueue.errors import ForeignLease, QueueStateLost
from refqueue.queue import VisibilityTimeout

pytestmark = [pytest.mark.redis, pytest.mark.timeout(120)]

SECRET = "s3cret-PW-7f"


@pytest.fixture
def admin(redis_server):
    client = redis_py.Redis.from_url(redis_server.url)
    yield client
    client.close()


def snapshot(admin, prefix: str) -> dict:
    """Every key of the queue, serialized (``DUMP``): equal iff nothing changed."""
    return {key: admin.dump(key) for key in sorted(admin.scan_iter(match=prefix.replace("{", "\\{").replace("}", "\\}") + "*"))}


# -- 7. a password in the query -------------------------------------------------------------


def test_a_password_given_as_a_query_parameter_never_shows(queue_name):
    server = RedisServer().start()
    try:
        setup = redis_py.Redis(port=server.port)
        setup.config_set("requirepass", SECRET)
        setup.close()
        url = f"redis://127.0.0.1:{server.port}/0?password={SECRET}&socket_keepalive=true"
        q = RedisSampleRefQueue(store(), url=url, name=queue_name, socket_timeout=1.5)
        q.put(ref("a"))
        assert SECRET not in repr(q) and SECRET not in q.url
        assert q.url == f"redis://127.0.0.1:{server.port}/0?password=***&socket_keepalive=true"
        server.kill()
        with pytest.raises(RedisUnavailable) as raised:
            q.pending_count()
        assert SECRET not in str(raised.value) and "password=***" in str(raised.value)
    finally:
        server.stop()
    for bad in (f"redis://:{SECRET}@127.0.0.1:1/0?password={SECRET}", f"redis://u:{SECRET}@127.0.0.1:1/0",
                f"redis://127.0.0.1:1/0?PassWord={SECRET}", f"redis://:{SECRET}@[::1/0"):
        with pytest.raises((RedisUnavailable, ValueError)) as raised:
            RedisSampleRefQueue(store(), url=bad, name=queue_name)
        assert SECRET not in str(raised.value), str(raised.value)
        with pytest.raises((RedisUnavailable, ValueError)) as raised:
            delete_queue(bad, queue_name)
        assert SECRET not in str(raised.value), str(raised.value)


def test_a_url_whose_port_is_not_a_number_is_refused_without_its_password(queue_name):
    with pytest.raises(ValueError, match=r"^RedisSampleRefQueue\(url='redis://:\*\*\*@127.0.0.1:notaport/0'\) cannot be "
                                         r"parsed \(.*\); pass e.g. 'redis://user:password@host:6379/0'$"):
        RedisSampleRefQueue(store(), url=f"redis://:{SECRET}@127.0.0.1:notaport/0", name=queue_name)


# -- 9. delete touches only this queue ----------------------------------------------------------


def test_delete_leaves_a_queue_whose_prefix_starts_with_this_queues_prefix(redis_server, admin, queue_name):
    mine = queue(redis_server.url, queue_name)
    nested = queue(redis_server.url, "b", prefix=f"refqueue:{{{queue_name}}}:")  # keys refqueue:{name}:{b}:...
    lookalike = queue(redis_server.url, "c", prefix=f"refqueue:{{{queue_name}}}:room:")
    for q, sample_id in ((mine, "a"), (nested, "b"), (lookalike, "c")):
        q.put(ref(sample_id))
    admin.rpush(mine._prefix + "room:" + "0" * 32, "1")  # a waiting producer's list
    assert mine.delete() > 0
    assert nested.pending_count() == 1 and lookalike.pending_count() == 1
    assert not admin.exists(mine._prefix + "room:" + "0" * 32)
    with pytest.raises(QueueStateLost):
        mine.pending_count()
    other = queue(redis_server.url, queue_name)
    other.put(ref("a"))
    assert delete_queue(redis_server.url, queue_name) > 0
    assert nested.pending_count() == 1 and lookalike.pending_count() == 1


# -- 10. draining dead letters --------------------------------------------------------------------


def test_drain_dead_letters_with_a_bad_entry_raises_naming_it_and_keeps_every_letter(redis_server, admin, queue_name):
    q = queue(redis_server.url, queue_name, max_deliveries=1)
    for sample_id in ("a", "b"):
        q.put(ref(sample_id))
        assert q.dead_letter(q.acquire_nowait(), "poison")
    admin.rpush(q._prefix + "dead", "garbage")
    before = snapshot(admin, q._prefix)
    for call in (q.drain_dead_letters, q.dead_letters):
        with pytest.raises(QueueStateCorrupt, match=r"dead letter 3 of 3 .*'garbage'.* the call changed nothing"):
            call()
        assert snapshot(admin, q._prefix) == before
    admin.lrem(q._prefix + "dead", 0, "garbage")
    assert [d.ref.sample_id for d in q.drain_dead_letters()] == ["a", "b"]
    assert q.dead_letters() == []


def test_drain_dead_letters_takes_exactly_what_it_read(redis_server, queue_name):
    q = queue(redis_server.url, queue_name, max_deliveries=1)
    other = queue(redis_server.url, queue_name, max_deliveries=1)
    q.put(ref("a"))
    assert q.dead_letter(q.acquire_nowait(), "poison")
    letters = q.dead_letters()
    other.put(ref("b"))
    assert other.dead_letter(other.acquire_nowait(), "poison")  # lands between a read and a drain
    drained = q.drain_dead_letters()
    assert [d.ref.sample_id for d in drained] == ["a", "b"] and drained[:1] == letters
    assert q.dead_letters() == []


# -- 11. a failing script changes nothing -----------------------------------------------------------


def test_a_corrupted_lease_counter_makes_acquire_fail_and_change_nothing(redis_server, admin, queue_name):
    q = queue(redis_server.url, queue_name)
    for sample_id in ("a", "b", "c"):
        q.put(ref(sample_id))
    admin.hset(q._prefix + "meta", "seq", "abc")
    before = snapshot(admin, q._prefix)
    for _ in range(3):
        with pytest.raises(QueueStateCorrupt, match=r"^acquire_nowait: queue .* holds a value refqueue never writes: "
                                                    r"key .*meta field seq holds \"abc\", not a count; the call changed "
                                                    r"nothing\."):
            q.acquire_nowait()
        assert snapshot(admin, q._prefix) == before
    admin.hset(q._prefix + "meta", "seq", "0")
    assert q.pending_count() == 3 and q.acquire_nowait().ref.sample_id == "a"


PLANTED = {
    "version not an integer": lambda a, p: a.hset(p + "meta", "version", "x1"),
    "seq past 18 digits": lambda a, p: a.hset(p + "meta", "seq", "9" * 19),
    "pending a hash": lambda a, p: (a.delete(p + "pending"), a.hset(p + "pending", "x", "y")),
    "deadlines a list": lambda a, p: (a.delete(p + "deadlines"), a.rpush(p + "deadlines", "x")),
    "intents a list": lambda a, p: (a.delete(p + "intents"), a.rpush(p + "intents", "x")),
    "wake a hash": lambda a, p: (a.delete(p + "wake"), a.hset(p + "wake", "x", "y")),
    "deliveries not a count": lambda a, p: a.hset(p + "deliv", "b", "many"),
    "redeliveries negative": lambda a, p: a.hset(p + "redeliv", "a", "-1"),
    "tips a string": lambda a, p: (a.delete(p + "tips"), a.set(p + "tips", "x")),
    "pending id without a ref": lambda a, p: a.hdel(p + "refs", "b"),
}


def _calls(q, lease):
    yield "put", lambda: q.put(ref("n"))
    yield "acquire", lambda: q.acquire_nowait()
    yield "ack", lambda: q.ack(lease)
    yield "fail", lambda: q.fail(lease)
    yield "extend", lambda: q.extend(lease)
    yield "dead_letter", lambda: q.dead_letter(lease, "poison")
    yield "reclaim", lambda: q.reclaim_expired()
    yield "close", lambda: q.close()


@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_every_state_change_over_a_corrupted_key_fails_whole(redis_server, admin, queue_name, planted):
    for call_index, (call, _) in enumerate(_calls(None, None)):
        name = f"{queue_name}-{call_index}"
        q = queue(redis_server.url, name, seconds=5.0)
        for sample_id in ("a", "b"):
            q.put(ref(sample_id))
        lease = q.acquire_nowait()
        q._clock.advance(10.0)  # the lease is due: reclaim has work
        PLANTED[planted](admin, q._prefix)
        before = snapshot(admin, q._prefix)
        do = dict(_calls(q, lease))[call]
        try:
            do()
        except (QueueStateCorrupt, RedisRefused) as exc:
            assert snapshot(admin, q._prefix) == before, (planted, call, exc)
        assert not admin.hexists(q._prefix + "meta", "lost")


def test_a_wake_up_that_fails_after_a_commit_never_fails_the_call(redis_server, admin, queue_name):
    # found by tests/fuzz/test_fuzz_redis.py: an ack committed, then the wake-up of
    # the waiting producers (another script) met a planted value and the ack raised
    q = queue(redis_server.url, queue_name)
    q.put(ref("a"))
    lease = q.acquire_nowait()
    admin.zadd(q._prefix + "producers", {"f" * 32: 2**50})  # a producer waits
    admin.rpush(q._prefix + "parked", "x")  # and a list where a hash should be
    assert q.ack(lease) is True
    assert q.lease_state(lease) == "acked" and q.outstanding_count() == 0


# -- 12. a restart without persistence ---------------------------------------------------------------


def test_a_stale_lease_from_before_a_lossy_restart_never_acks_another_consumers_delivery(queue_name):
    server = RedisServer().start()  # no persistence
    try:
        shared_store = store()
        consumer_a = RedisSampleRefQueue(shared_store, VisibilityTimeout(30), url=server.url, name=queue_name)
        consumer_a.put(ref("a"))
        stale = consumer_a.acquire_nowait()
        server.kill()
        server.start()  # empty: ids would restart at 1
        delete_queue(server.url, queue_name)
        recovered = RedisSampleRefQueue(shared_store, VisibilityTimeout(30), url=server.url, name=queue_name)
        recovered.put(ref("a"))  # the operator puts again what the store holds
        consumer_b = RedisSampleRefQueue(shared_store, VisibilityTimeout(30), url=server.url, name=queue_name)
        live = consumer_b.acquire_nowait()
        assert (live.ref.sample_id, live.lease_id) == (stale.ref.sample_id, stale.lease_id)  # same id, new epoch
        with contextlib.suppress(RedisUnavailable, QueueStateLost):  # its connection died with the server
            consumer_a.ack(stale)
        with pytest.raises(QueueStateLost):  # its epoch is gone from the server
            consumer_a.ack(stale)
        with pytest.raises(ForeignLease):
            consumer_b.ack(stale)  # a client of the new epoch refuses it too
        assert consumer_b.lease_state(live) == "live"
        assert consumer_b.ack(live) is True
    finally:
        server.stop()


# -- 13. a URL that names something else ---------------------------------------------------------------


class FakeServer:
    """A TCP server on a free loopback port answering every request with ``reply``
    (``None``: close at once)."""

    def __init__(self, reply: bytes | None) -> None:
        self.reply = reply
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        # One reply per command, not per recv: a client may send several
        # commands in one segment (a pipelined handshake) and wait for a
        # reply to each.
        pending = b""
        with conn, contextlib.suppress(OSError):
            while self.reply is not None:
                data = conn.recv(65536)
                if not data:
                    return
                pending += data
                count, pending = _complete_commands(pending)
                if count:
                    conn.sendall(self.reply * count)

    def close(self) -> None:
        self.sock.close()


def _complete_commands(data: bytes) -> tuple[int, bytes]:
    """How many whole RESP commands ``data`` begins with, and the rest.

    A command is an array of bulk strings (``*N`` then N times ``$len`` and
    the bytes) or, failing that, one inline line; a byte stream neither
    parses as counts as one command per line."""
    count = 0
    while True:
        if data.startswith(b"*"):
            end = _array_end(data)
            if end is None:
                return count, data
        else:
            line_end = data.find(b"\r\n")
            if line_end < 0:
                return count, data
            end = line_end + 2
        count += 1
        data = data[end:]


def _array_end(data: bytes) -> int | None:
    """Where the RESP array at the start of ``data`` ends; None if incomplete."""
    line_end = data.find(b"\r\n")
    if line_end < 0:
        return None
    try:
        items = int(data[1:line_end])
    except ValueError:
        return line_end + 2  # not an array after all: a line
    pos = line_end + 2
    for _ in range(items):
        header_end = data.find(b"\r\n", pos)
        if header_end < 0:
            return None
        try:
            length = int(data[pos + 1:header_end])
        except ValueError:
            return header_end + 2
        pos = header_end + 2 + length + 2
        if pos > len(data):
            return None
    return pos


NOT_REDIS = {
    "an HTTP server": b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
    "binary garbage": b"\x00\xff\xfe garbage\r\n",
    "an integer to everything": b":1\r\n",
    "OK to everything": b"+OK\r\n",
    "an array to everything": b"*1\r\n$1\r\nx\r\n",
    "five integers to everything": b"*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n",
    "a string to everything": b"$3\r\nabc\r\n",
    "a server that hangs up": None,
}


@pytest.mark.parametrize("what", sorted(NOT_REDIS))
@pytest.mark.parametrize("password", ["", f"?password={SECRET}"])
def test_a_url_naming_something_that_is_not_redis_says_so(what, password, queue_name):
    fake = FakeServer(NOT_REDIS[what])
    url = f"redis://127.0.0.1:{fake.port}/0{password}"
    try:
        with pytest.raises(RedisUnavailable) as raised:
            RedisSampleRefQueue(store(), url=url, name=queue_name, socket_timeout=2.0)
    finally:
        fake.close()
    message = str(raised.value)
    assert message.startswith("RedisSampleRefQueue(): ") and f"127.0.0.1:{fake.port}" in message, message
    assert "Redis" in message and "that the URL names a Redis 7 server" in message, message
    assert SECRET not in message


def test_a_server_that_knows_no_scripts_is_refused_with_a_hint(queue_name):
    fake = FakeServer(b"-ERR unknown command\r\n")
    try:
        with pytest.raises(RedisRefused, match=r"^RedisSampleRefQueue\(\): the Redis server at redis://127.0.0.1:\d+/0 "
                                               r"does not know a command refqueue needs \(unknown command\); .*Redis 7"):
            RedisSampleRefQueue(store(), url=f"redis://127.0.0.1:{fake.port}/0", name=queue_name)
    finally:
        fake.close()
