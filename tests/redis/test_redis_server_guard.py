"""The throwaway ``redis-server`` dies with the process that started it: a
real child process starts one (from a thread that then ends, as the kit's
factories do), is SIGKILLed, and the server and its folder are gone; a server
stopped, killed or restarted on purpose leaves its guard behind neither."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import redis

from process_helpers import dead as _dead
from process_helpers import gone as _gone
from refqueue.backends._redis_server import RedisServer

_CHILD = """
import json, sys, threading
from refqueue.backends._redis_server import RedisServer
servers = []
directory = sys.argv[1] or None
thread = threading.Thread(target=lambda: servers.append(RedisServer(directory=directory).start()))
thread.start(); thread.join()  # the thread that started it has ended
server = servers[0]
print(json.dumps({"pid": server.process.pid, "guard": server._guard.process.pid,
                  "directory": server.directory, "port": server.port}), flush=True)
sys.stdin.read()  # until the test kills this process
"""


@pytest.mark.parametrize("own_folder", [True, False])
def test_a_server_dies_with_the_process_that_started_it(tmp_path, own_folder):
    import json

    given = "" if own_folder else str(tmp_path / "given")
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, given], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    facts = {}
    try:
        facts = json.loads(child.stdout.readline())
        assert os.path.isdir(facts["directory"])
        assert not _dead(facts["pid"]) and not _dead(facts["guard"])  # alive while their starter is
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert _gone(facts["pid"], 15), f"redis-server {facts['pid']} outlived the process that started it"
        assert _gone(facts["guard"], 15)
        # the folder it made for itself is removed; one it was given is the giver's
        assert os.path.exists(facts["directory"]) is not own_folder
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for pid in (facts.get("pid"), facts.get("guard")):
            if pid is not None and not _dead(pid):  # the guard failed: leave no server behind
                os.kill(pid, signal.SIGKILL)


def test_stop_kill_and_restart_let_their_guards_go(tmp_path):
    server = RedisServer().start()
    first = server._guard.process
    server.restart(durable=True)  # SHUTDOWN SAVE, then a new server with a new guard
    second = server._guard.process
    assert first.poll() == 0 and second is not first and second.poll() is None
    server.restart(durable=False)
    third = server._guard.process
    assert second.poll() == 0
    pid = server.process.pid
    server.kill()
    assert third.poll() == 0 and server._guard is None and _dead(pid)
    server.start()
    fourth, directory = server._guard.process, server.directory
    server.stop()
    assert fourth.poll() == 0 and not os.path.exists(directory)


def test_a_restart_stays_down_for_what_it_is_asked_and_keeps_what_it_held():
    server = RedisServer().start()
    try:
        client = redis.Redis(host="127.0.0.1", port=server.port)
        client.set("k", "v")
        for bad in (-1, float("nan"), "1", True, 1e9):
            with pytest.raises(ValueError, match="down_for must be a number of seconds"):
                server.restart(durable=True, down_for=bad)
        client.set("k2", "still up")  # a refused restart left the server as it was
        began = time.monotonic()
        server.restart(durable=True, down_for=0.5)
        assert time.monotonic() - began >= 0.5  # the outage itself is a sleep between stop and start
        assert client.get("k") == b"v" and client.get("k2") == b"still up"
        client.close()
    finally:
        server.stop()


@pytest.mark.parametrize("persistent", [False, True])
def test_a_guard_leaves_a_folder_it_was_given_alone(tmp_path, persistent):
    server = RedisServer(persistent=persistent, directory=str(tmp_path / "mine")).start()
    guard = server._guard.process
    server.stop()
    assert guard.poll() == 0
    assert (tmp_path / "mine").is_dir()  # the caller's folder: the caller's to remove


def test_a_guard_needs_a_pid_and_leaves_once():
    from refqueue._guard import Guard

    for wrong in (0, -5, True, "12"):
        with pytest.raises(ValueError, match="Guard\\(pid\\) needs the pid of a running child"):
            Guard(wrong)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        guard = Guard(child.pid)
        guard.leave()
        guard.leave()  # a second time: nothing to say, nothing raised
        assert guard.process.returncode == 0 and child.poll() is None  # let go: the child untouched
    finally:
        child.kill()
        child.wait()
