"""What a long-lived process keeps open: the Redis backend's connections end
with the queues and threads that used them, and a throwaway server starts in
a process whose descriptors are numbered past 1024.

A process that opens and drops queues for hours (a trainer, the conformance
kit, a test session) must not run out of descriptors: before these tests, a
thread that lived on (the main thread) kept every dropped queue's pool, and
its socket, open for ever, and a server started past descriptor 1024 failed
in ``select``."""

from __future__ import annotations

import gc
import os
import resource
import threading

import pytest

from refqueue.backends._redis_server import RedisServer

from redis_helpers import queue, ref

pytestmark = [
    pytest.mark.redis,
    pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc/self/fd (Linux)"),
]


def _sockets() -> int:
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{name}").startswith("socket:")
        except OSError:  # the listing's own descriptor, gone already
            pass
    return count


def _use(q, sample_id: str) -> None:
    q.put(ref(sample_id))
    lease = q.acquire_nowait()
    assert q.ack(lease) is True


def test_dropped_queues_on_their_own_clients_leave_no_socket_open(redis_server, queue_name):
    gc.collect()
    before = _sockets()
    for i in range(40):  # each with its own redis.Redis (url=): its own pool
        q = queue(redis_server.url, f"{queue_name}-{i}")
        _use(q, f"s{i}")
        q.close()
        del q
    gc.collect()
    assert _sockets() - before <= 2, f"{_sockets() - before} sockets left open by 40 dropped queues"


def test_a_thread_that_ends_closes_its_connection(redis_server, queue_name):
    q = queue(redis_server.url, queue_name)
    _use(q, "main")
    gc.collect()
    before = _sockets()
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            _use(q, f"t{i}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    for wave in range(3):
        threads = [threading.Thread(target=work, args=(wave * 10 + i,)) for i in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    gc.collect()
    # the queue lives on; its 30 ended threads' script connections do not
    assert _sockets() - before <= 3, f"{_sockets() - before} sockets left open by 30 ended threads"
    _use(q, "main-again")  # this thread's own connection still serves


def test_a_server_starts_when_descriptors_are_numbered_past_1024():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1300
    if soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            pytest.skip(f"the descriptor limit ({hard}) is below {want}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    held: list[int] = []
    server = RedisServer()
    try:
        while not held or held[-1] < 1100:
            held.append(os.open(os.devnull, os.O_RDONLY))
        server.start()  # its log pipe is numbered past 1100
        import redis

        client = redis.Redis(host="127.0.0.1", port=server.port)
        try:
            assert client.ping() is True
        finally:
            client.close()
    finally:
        server.stop()
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
