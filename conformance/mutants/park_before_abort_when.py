"""Mutant: a blocking put parks its ref as soon as a step does not admit it,
before it asks ``abort_when``, so a one-step call
(``abort_when=lambda: True``) parks its ref for a moment, lowering the other
producers' effective residency in a call that never waits (docs/API.md: a
ref is parked only once its producer goes to wait, after ``abort_when()``
said no; D8)."""

from typing import Any

from conformance.mutants._base import BaseQueue, _Parked, factory


class ParkBeforeAbortWhen(BaseQueue):
    def _try_put_nowait(self, ref: Any, parked: _Parked) -> tuple[bool, int]:
        enqueued, seen = super()._try_put_nowait(ref, parked)
        if not enqueued:
            with self._lock:
                if not parked.counted:
                    self._park(parked)
                    seen = self._room_changes  # (its own parking is no news to it)
        return enqueued, seen


make = factory(ParkBeforeAbortWhen)
