"""Mutant: ``on_pause`` fires on every blocked step, not once per transition.

A producer blocked over the high watermark calls the callback again at each
poll, so an ops dashboard counts one pause many times (D4: exactly once).
"""

from typing import Any

from conformance.mutants._base import BaseQueue, factory


class PauseEveryStep(BaseQueue):
    def _transition(self, paused: bool, health: Any) -> list[Any]:
        events = super()._transition(paused, health)
        if paused and not events:
            events.append((self._on_pause, health))
        return events


make = factory(PauseEveryStep)
