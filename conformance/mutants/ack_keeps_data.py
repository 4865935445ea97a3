"""Mutant: ``ack`` never tells the store to scrub.

The queue considers the sample done but its bytes stay resident, so the
store fills up and a producer paused at the high watermark never resumes (D2).
"""

from conformance.mutants._base import BaseQueue, _Entry, factory


class AckKeepsData(BaseQueue):
    def _finish(self, entry: _Entry, reason: str | None) -> None:
        if reason is not None:
            super()._finish(entry, reason)
            return
        del self._entries[entry.ref.sample_id]
        self._remember(entry.ref.sample_id)
        self._wake_producers("ack")
        self._wake_if_drained("ack")


make = factory(AckKeepsData)
