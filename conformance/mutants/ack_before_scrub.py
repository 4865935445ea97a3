"""Mutant: an ack (or dead-letter) commits before the store scrubs, so a
scrub that raises leaves the sample acked with its data still resident
(docs/API.md: a failed scrub rejects the ack, nothing changed)."""

from conformance.mutants._base import BaseQueue, _Entry, factory


class AckBeforeScrub(BaseQueue):
    def _finish(self, entry: _Entry, reason: str | None) -> None:
        del self._entries[entry.ref.sample_id]
        if reason is not None:
            from conformance.mutants._base import DeadLetter

            self._dead.append(DeadLetter(entry.ref, reason, entry.deliveries))
        self._remember(entry.ref.sample_id)
        self._wake_producers("ack" if reason is None else "dead_letter")
        self._wake_if_drained("ack" if reason is None else "dead_letter")
        self._store.scrub(entry.ref)


make = factory(AckBeforeScrub)
