"""Mutant: ``close`` does not wake a consumer blocked in ``acquire``.

The queue is closed and, with nothing pending or leased, drained; but a
consumer already waiting in ``acquire(poll_interval=...)`` is not notified
and only returns its terminal None when its interval runs out, so a
shutdown takes a whole poll interval per idle consumer (D3, D6).
"""

from conformance.mutants._base import BaseQueue, factory


class CloseNoWake(BaseQueue):
    def close(self):
        with self._lock:
            self._closed = True  # ... and no self._ready.notify_all()
            self._wake_producers("close")


make = factory(CloseNoWake)
