"""Mutant: a blocking put's step decides the pause under the lock, but sets the flag after letting go of it.

One step of ``put_blocks_until_below`` reads the pause flag and the store's
residency under the lock and decides the next flag; this backend then lets
go of the lock (as code that logs or calls a metrics hook there would),
takes it again, and sets the flag and picks the callback from the flag it
*read*, not the one it finds.  Two producers that step at once both see
"not paused" and both call ``on_pause``: the callback runs twice for one
pause (docs/API.md: exactly once).  One producer alone never notices, and
the producers phase counts no callbacks per step: only the threads phase,
whose histories record the callbacks each call ran and check them against
the model, catches it.
"""

import time

from conformance.mutants._base import BaseQueue, factory


class PauseFlagRace(BaseQueue):
    def _try_put_nowait(self, ref, parked):  # type: ignore[no-untyped-def]
        with self._lock:
            self._validate_put("put_blocks_until_below", ref)
            health = self._store.health()
            own = 0 if parked.counted else parked.nbytes
            was = self._paused
            paused = self._next_paused(self._effective(health.resident_bytes, own))
        time.sleep(0)  # the lock is let go between the decision and the write
        with self._lock:
            events = []
            if paused != was:  # decided on the flag it read, not on the flag now
                events.append((self._on_pause if paused else self._on_resume, health))
                if not paused:
                    self._wake_producers("resume")
            self._paused = paused
            admitted = self._admits(paused)
            if admitted:
                self._unpark(parked)
                self._put_nowait("put_blocks_until_below", ref)
            self._announce(events)
            return admitted, self._room_changes


make = factory(PauseFlagRace)
