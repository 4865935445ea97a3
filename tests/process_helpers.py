"""Whether a process is dead, read from ``/proc``: shared by the tests that
SIGKILL a starter and look for what it left running (``tests/redis``,
``tests/hardening``)."""

from __future__ import annotations

import time


def dead(pid: int) -> bool:
    """No process ``pid``, or only its zombie (dead, waiting for whoever adopted it to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True


def gone(pid: int, within: float) -> bool:
    """Whether ``pid`` is dead within ``within`` seconds (polled every 20 ms)."""
    deadline = time.monotonic() + within
    while not dead(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True
