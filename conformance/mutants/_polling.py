"""The polling ``acquire`` of the polling mutants and of the legal
``conformance.legal.poll_10ms``: what a stranger writes from
docs/CERTIFYING.md when their store offers no way to wait for a change
(a table in a database, say): take what is pending, and if nothing is,
sleep a fixed period and look again, until the caller's poll interval is
over.  No waiting consumer is ever woken; a put, fail, reclaim, close or
drain is seen at the next look, up to one period later.
"""

from __future__ import annotations

import time

from conformance.mutants._base import BaseQueue, Lease, _check_poll


def polling(period: float) -> type[BaseQueue]:
    """A ``BaseQueue`` whose ``acquire`` looks every ``period`` seconds and is never woken."""

    class PollingQueue(BaseQueue):
        def acquire(self, poll_interval: float = 0.05) -> Lease | None:
            _check_poll("poll_interval", poll_interval)
            deadline = time.monotonic() + poll_interval
            while True:
                lease = self.acquire_nowait()
                if lease is not None or self.is_drained:
                    return lease
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                time.sleep(min(period, remaining))  # the bug, when period is past the wake bound

    PollingQueue.__name__ = PollingQueue.__qualname__ = f"Polling{round(period * 1000)}ms"
    return PollingQueue
