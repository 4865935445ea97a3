"""Mutant: ``extend`` accepts a stale lease.

It finds the entry by ``sample_id`` and moves the deadline of whatever lease
is live now, so a slow stale consumer's heartbeat keeps another consumer's
lease from being reclaimed (D1, D7).
"""

from conformance.mutants._base import BaseQueue, Lease, _check_seconds, factory


class ExtendStale(BaseQueue):
    def extend(self, lease: Lease, seconds: float | None = None) -> bool:
        with self._lock:
            self._check_lease("extend", lease)
            seconds = self._vt.seconds if seconds is None else _check_seconds("extend(seconds)", seconds)
            entry = self._entries.get(lease.ref.sample_id)
            if entry is None or entry.lease is None:
                return False
            entry.deadline = self._clock.now() + seconds
            return True


make = factory(ExtendStale)
