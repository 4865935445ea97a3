"""Mutant: a dead-letter makes room under ``dead_letter_limit`` (drops the
oldest kept dead letter and counts it) before the store scrubs, so a
dead-letter whose scrub raises, which commits nothing else, still loses the
oldest dead letter (docs/API.md: a failed scrub changes nothing)."""

from conformance.mutants._base import BaseQueue, _Entry, factory


class DeadLetterRoomBeforeScrub(BaseQueue):
    def _finish(self, entry: _Entry, reason: str | None) -> None:
        if reason is not None and self._dead and len(self._dead) >= self._dead_limit:
            del self._dead[0]
            self._dead_dropped += 1
        super()._finish(entry, reason)


make = factory(DeadLetterRoomBeforeScrub)
