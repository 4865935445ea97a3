"""A command killed outright (SIGKILL: the OOM killer, a CI timeout) takes its
processes with it.  ``refqueue torture``: its producers and consumers (spawned
children, which would otherwise retry against a dead server for ever), the
throwaway ``redis-server`` and the server's guard.  ``refqueue certify -j 2``:
its workers, in the middle of walking a world.  Real processes, a real kill."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from process_helpers import dead as _dead
from refqueue.backends._redis_server import redis_server_binary


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(") ", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                pass
    return found


def _descendants(pid: int) -> dict[int, str]:
    """Every live descendant of ``pid`` and its command line."""
    out, todo = {}, [pid]
    while todo:
        for child in _children(todo.pop()):
            try:
                with open(f"/proc/{child}/cmdline", "rb") as cmdline:
                    out[child] = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
            except FileNotFoundError:
                continue
            todo.append(child)
    return out


def _kill_once_started(argv: list[str], started: Callable[[dict[int, str]], bool], within: float) -> None:
    """Run ``refqueue argv``; once ``started(its descendants)``, SIGKILL it and
    assert that every descendant it had is dead within ``within`` seconds."""
    run = subprocess.Popen(
        [sys.executable, "-m", "refqueue.cli", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    family: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            family = _descendants(run.pid)
            if started(family):
                break
            assert run.poll() is None, "the run ended before its processes started"
            time.sleep(0.05)
        else:
            pytest.fail(f"the command's processes did not all start within 120 s: {family}")
        family = _descendants(run.pid)
        run.send_signal(signal.SIGKILL)
        run.wait()
        deadline = time.monotonic() + within
        while not all(_dead(p) for p in family) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = {p: cmd for p, cmd in family.items() if not _dead(p)}
        # (the multiprocessing resource tracker leaves by itself once its last holder is gone)
        assert not left, f"processes of the killed run still alive: {left}"
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for pid in family:
            if not _dead(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:  # it died since _dead looked: the failure above is the news
                    pass


def _workers(family: dict[int, str]) -> int:
    return sum("spawn_main" in cmd for cmd in family.values())


@pytest.mark.redis
def test_a_killed_torture_run_leaves_no_process_behind(tmp_path):
    pytest.importorskip("redis")
    if redis_server_binary() is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server); the torture needs a real server")
    _kill_once_started(
        ["torture", "--faults", "none", "--duration", "120", "--producers", "1", "--consumers", "2",
         "--dir", str(tmp_path)],
        # the three workers, the server and its guard
        lambda family: _workers(family) >= 3 and any("redis-server" in cmd for cmd in family.values()),
        within=30,  # (without the watcher, the workers retried against the dead server for ever)
    )  # fmt: skip


def test_a_killed_certification_leaves_no_worker_behind(tmp_path):
    # the exhaustive walks take minutes: the workers are killed in the middle of a task
    # (without the watcher a worker noticed only when its task ended: 12 s after the kill, measured)
    _kill_once_started(
        ["certify", "--exhaustive", "--phase", "walks", "-j", "2", "--no-progress", "--report", str(tmp_path)],
        lambda family: _workers(family) >= 2,
        within=5,
    )


def test_a_killed_spec_check_leaves_no_tlc_behind(tmp_path):
    if shutil.which("java") is None:
        pytest.skip("java is not installed (TLC needs it): apt-get install default-jre-headless")
    # MCAgreement takes TLC about a minute: it is killed in the middle of its run
    _kill_once_started(
        ["check-spec", "--config", "MCAgreement", "--no-simulate"],
        lambda family: any("tlc2.TLC" in cmd for cmd in family.values()),
        within=5,  # (without its guard, TLC ran on to the end of its run)
    )
