"""Mutant: a blocking put admitted at a later step (after it waited) enqueues
its ref without waking a waiting consumer ("the producer was asleep, so no
consumer can be waiting for it"): a consumer blocked in ``acquire`` sleeps
through its poll interval with the ref pending (docs/API.md: a step
enqueues as ``put`` does, and every put wakes one waiting ``acquire``, D6)."""

from typing import Any

from conformance.mutants._base import BaseQueue, _Entry, _Parked, factory


class AdmissionNoWake(BaseQueue):
    def _try_put_nowait(self, ref: Any, parked: _Parked) -> tuple[bool, int]:
        if not parked.counted:  # the first step: as the base
            return super()._try_put_nowait(ref, parked)
        with self._lock:
            self._validate_put("put_blocks_until_below", ref)
            health = self._store.health()
            paused = self._next_paused(self._effective(health.resident_bytes, 0))
            self._announce(self._transition(paused, health))
            admitted = self._admits(paused)
            if admitted:
                self._unpark(parked)
                self._entries[ref.sample_id] = _Entry(ref)
                self._pending.append(ref.sample_id)  # the bug: no self._ready.notify()
            return admitted, self._room_changes


make = factory(AdmissionNoWake)
