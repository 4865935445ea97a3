"""``Guard(pid)``: a process that dies with the one that started it.

The throwaway ``redis-server`` and every TLC run are children started with
``subprocess``.  Their parent stops them when it ends normally; killed
(SIGKILL, the OOM killer, a CI timeout) it stops nothing, and the child runs
on: a server for ever, TLC to the end of its run (minutes).  A parent-death
signal would not do: Linux sends it when the *thread* that started the child
ends, and the kit's factories and the spec mutants start children from
threads that end before the children should.

So beside each such child runs a guard, a small Python process that reads a
pipe this process holds.  ``leave()`` says "leave" and closes the pipe: the
guard exits and touches nothing.  End-of-file without that word means this
process is gone: the guard SIGKILLs the child, waits (up to 10 s) until it is
reaped, and removes ``directory`` if it was given one (a folder the child
made for itself).  The guard ignores SIGINT: a Ctrl-C is its parent's to
handle, and the parent then lets it go.
"""

from __future__ import annotations

import subprocess
import sys

__all__ = ["Guard"]

_GUARD = """
import os, shutil, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
pid, directory = int(sys.argv[1]), sys.argv[2]
if sys.stdin.buffer.read() != b"leave":
    try:
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            os.kill(pid, 0)  # ProcessLookupError once it is reaped
            time.sleep(0.01)
    except ProcessLookupError:
        pass
    if directory:
        shutil.rmtree(directory, ignore_errors=True)
"""


class Guard:
    """The guard of the process ``pid`` (see the module docstring)."""

    def __init__(self, pid: int, directory: str | None = None) -> None:
        if isinstance(pid, bool) or not isinstance(pid, int) or pid < 1:
            raise ValueError(f"Guard(pid) needs the pid of a running child, an int >= 1, got {pid!r}")
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _GUARD, str(pid), directory or ""],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )

    def leave(self) -> None:
        """Let the guard go without touching the child (idempotent)."""
        stdin = self.process.stdin
        try:
            if stdin is not None and not stdin.closed:
                stdin.write(b"leave")
                stdin.close()
        except (BrokenPipeError, OSError):
            pass  # it is gone already
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
