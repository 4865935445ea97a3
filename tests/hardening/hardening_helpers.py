"""Helpers of the hardening tests for threads: ``watch`` (know that a thread
waits inside the queue before poking it) and ``Worker`` (a thread whose
``outcome`` is a bounded join)."""

from __future__ import annotations

import threading

from refqueue.queue import SampleRefQueue


class Waits(threading.Condition):
    """A ``Condition`` on the queue's lock that counts the ``wait``s entered,
    so a test knows a thread is blocked inside the queue before it pokes it:
    the count moves while the waiter still holds the queue lock, so whatever
    the test does next under that lock happens after the waiter registered."""

    def __init__(self, lock) -> None:
        super().__init__(lock)
        self.entered = 0
        self._seen = threading.Condition()

    def wait(self, timeout=None):
        with self._seen:
            self.entered += 1
            self._seen.notify_all()
        return super().wait(timeout)

    def until_entered(self, count: int, timeout: float = 30.0) -> None:
        with self._seen:
            assert self._seen.wait_for(lambda: self.entered >= count, timeout), "the thread never waited"


def watch(q: SampleRefQueue, name: str) -> Waits:
    """Replace ``q._ready`` or ``q._room`` by a counting condition on the queue lock."""
    cond = Waits(q._lock)
    setattr(q, name, cond)
    return cond


class Worker(threading.Thread):
    """Runs ``fn`` in a daemon thread and keeps its result or exception."""

    def __init__(self, fn) -> None:
        super().__init__(daemon=True)
        self.fn = fn
        self.result = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:
            self.error = exc

    def outcome(self, timeout: float = 30.0):
        self.join(timeout)
        assert not self.is_alive(), f"{self.fn} did not return within {timeout} s"
        if self.error is not None:
            raise self.error
        return self.result
