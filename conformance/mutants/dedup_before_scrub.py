"""Mutant: an ack (or dead-letter) enters its id into the dedup window before
the store scrubs, so an ack whose scrub raises (and that commits nothing
else) still pushes the oldest completed id out of a full window: a replay of
that id is then accepted (D5: the window holds the last N completed ids)."""

from conformance.mutants._base import BaseQueue, _Entry, factory


class DedupBeforeScrub(BaseQueue):
    def _finish(self, entry: _Entry, reason: str | None) -> None:
        self._remember(entry.ref.sample_id)
        super()._finish(entry, reason)

    def _remember(self, sample_id: str) -> None:
        if not self._dedup or (self._completed and self._completed[-1] == sample_id):
            return  # (the second call, from the base's _finish, once the scrub worked)
        self._completed.append(sample_id)


make = factory(DedupBeforeScrub)
