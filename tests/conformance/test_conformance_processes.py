"""The children of multi-process histories (``refqueue.conformance.processes``):
with a ``Children`` pool, the children of one history serve the next (each
history still has its four threads and its own client in each child); a
child that failed, hung or died is never reused; closing the pool ends the
children that wait.  On the fake of ``fault_backends``."""

import os
import signal

import pytest

from refqueue.conformance.processes import Children, RecordingHung, record_processes

pytestmark = pytest.mark.torch

FAKE = "fault_backends:make"


def _threads(history):
    return sorted({e.thread for e in history.events})


def test_the_children_of_one_history_serve_the_next():
    with Children() as pool:
        histories = [record_processes(FAKE, seed=seed, pool=pool) for seed in range(3)]
        assert pool.spawned == 2
        waiting = list(pool._idle)
        assert len(waiting) == 2 and all(c.proc.poll() is None for c in waiting)
    for history in histories:
        assert _threads(history) == [0, 1, 2, 3]
    # the children ran each history's own programs (seeds 0, 1, 2)
    assert len({tuple((e.thread, e.call) for e in h.events if e.thread >= 2) for h in histories}) == 3
    # leaving the block closed their stdin: they exited on their own
    assert [c.proc.returncode for c in waiting] == [0, 0]


def test_without_a_pool_each_history_spawns_its_children_and_ends_them():
    history = record_processes(FAKE, seed=1)
    assert _threads(history) == [0, 1, 2, 3]


def test_a_child_that_died_while_it_waited_is_replaced_and_one_that_failed_is_not_reused():
    with Children() as pool:
        record_processes(FAKE, seed=0, pool=pool)
        dead, alive = pool._idle
        os.kill(dead.proc.pid, signal.SIGKILL)
        dead.proc.wait()
        # the live child takes the next history, a new one replaces the dead;
        # both fail in it (no client opens from the spec) and are ended
        with pytest.raises(RuntimeError, match="refuses every client opened from a spec"):
            record_processes("fault_backends:make_child_cannot_open", seed=0, pool=pool)
        assert pool.spawned == 3
        assert pool._idle == [] and alive.proc.poll() is not None
        history = record_processes(FAKE, seed=1, pool=pool)
        assert pool.spawned == 5 and _threads(history) == [0, 1, 2, 3]


def test_a_child_that_hung_is_killed_not_reused():
    with Children() as pool:
        record_processes(FAKE, seed=0, pool=pool)
        waiting = list(pool._idle)
        # both waiting children take the next history; their calls hang (the kit's own do not)
        with pytest.raises(RecordingHung, match=r"thread [23] \(a child process\) had not finished its calls 2.0 s"):
            record_processes("fault_backends:make_child_hangs", seed=0, pool=pool, hang_after=2.0)
        assert pool.spawned == 2 and pool._idle == []
        assert all(c.proc.poll() is not None for c in waiting)  # killed, not kept for the next history
