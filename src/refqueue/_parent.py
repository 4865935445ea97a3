"""``exit_with_parent()``: a process started with ``multiprocessing`` leaves
when the process that started it dies.

The torture's producers and consumers, the certify workers (``-j``) and the
bench's consumers are spawned children.  Their parent stops them when it ends
normally; killed (SIGKILL, the OOM killer, a CI timeout) it stops nothing, and
a child in the middle of a call, or retrying against a server that died with
its parent, would run on for ever.  A daemon thread of the child waits on the
parent's sentinel (readable once the parent is gone) and ends the child at
once with ``PARENT_GONE_EXIT``: nothing the child holds is worth keeping, since
nobody is left to read it.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import threading

__all__ = ["PARENT_GONE_EXIT", "exit_with_parent"]

PARENT_GONE_EXIT = 75  # (EX_TEMPFAIL): the child did not fail; its parent went away


def exit_with_parent() -> bool:
    """In a child started by ``multiprocessing``, start the watcher and answer
    True; elsewhere (no multiprocessing parent) do nothing and answer False."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return False
    sentinel = parent.sentinel

    def watch() -> None:
        multiprocessing.connection.wait([sentinel])
        os._exit(PARENT_GONE_EXIT)

    threading.Thread(target=watch, name="refqueue-exit-with-parent", daemon=True).start()
    return True
