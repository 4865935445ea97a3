"""Mutant: a blocking put's step whose ``store.health()`` raises lets the ref
in ("the store is unreachable, do not stall the producer"), so a store that
cannot report its residency turns the watermarks off (docs/API.md: failures
change nothing; the step decides the hysteresis from the residency)."""

from typing import Any

from conformance.mutants._base import BaseQueue, _Parked, factory


class HealthFailsOpen(BaseQueue):
    def _try_put_nowait(self, ref: Any, parked: _Parked) -> tuple[bool, int]:
        try:
            self._store.health()
        except Exception:
            with self._lock:
                self._validate_put("put_blocks_until_below", ref)
                self._unpark(parked)
                self._put_nowait("put_blocks_until_below", ref)
                return True, self._room_changes
        return super()._try_put_nowait(ref, parked)


make = factory(HealthFailsOpen)
