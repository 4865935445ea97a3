"""Mutant: an ``acquire`` that was waiting when ``close()`` came returns None,
drained or not ("the queue is closing: consumers can go"), so a consumer
waiting while a lease is still out quits, and the lease that comes back (a
fail, a reclaim) finds nobody.  An acquire made after the close waits as it
should (docs/API.md, D3: None only on a closed, drained queue; otherwise it
waits)."""

import time

from conformance.mutants._base import BaseQueue, Lease, _check_poll, _wait, factory


class CloseWakesWithNone(BaseQueue):
    def acquire(self, poll_interval: float = 0.05) -> Lease | None:
        _check_poll("poll_interval", poll_interval)
        deadline = time.monotonic() + poll_interval
        with self._lock:
            closed_at_entry = self._closed
            while True:
                lease = self._acquire_nowait()
                if lease is not None or self._drained():
                    return lease
                if self._closed and not closed_at_entry:
                    return None  # the bug: woken by close(), it leaves
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                _wait(self._ready, remaining)


make = factory(CloseWakesWithNone)
