"""Mutant: a blocking put validates its ref on its first step only; a later
step enqueues it without asking whether the id became pending meanwhile (a
plain ``put`` of the same ref while the producer waited), so the id is
pending twice (docs/API.md: every step's rejections come first)."""

from typing import Any

from conformance.mutants._base import BaseQueue, _Parked, factory


class StepsSkipDuplicate(BaseQueue):
    def _try_put_nowait(self, ref: Any, parked: _Parked) -> tuple[bool, int]:
        if not parked.counted:  # the first step (it has not parked yet): validated as the base does
            return super()._try_put_nowait(ref, parked)
        with self._lock:
            health = self._store.health()
            paused = self._next_paused(self._effective(health.resident_bytes, 0))
            self._announce(self._transition(paused, health))
            admitted = self._admits(paused)
            if admitted:
                self._unpark(parked)
                self._entries[ref.sample_id] = self._entries.get(ref.sample_id) or _entry(ref)
                self._pending.append(ref.sample_id)
                self._ready.notify()
            return admitted, self._room_changes


def _entry(ref: Any) -> Any:
    from conformance.mutants._base import _Entry

    return _Entry(ref)


make = factory(StepsSkipDuplicate)
