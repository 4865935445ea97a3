"""Mutant: the backend's dead letters are a plain (not frozen) dataclass of
its own, handed out as they are kept: a caller that edits one
(``letter.reason = ...``) edits the queue's record, and ``hash(letter)``
raises ``TypeError`` (docs/API.md: ``DeadLetter`` is a frozen dataclass)."""

from dataclasses import dataclass

from conformance.mutants._base import BaseQueue, SampleRef, _Entry, factory


@dataclass
class MutableDeadLetter:
    ref: SampleRef
    reason: str
    deliveries: int


class DeadLetterMutable(BaseQueue):
    def _finish(self, entry: _Entry, reason: str | None) -> None:
        super()._finish(entry, reason)
        if reason is not None:  # the bug: the record kept is a mutable one
            kept = self._dead[-1] if self._dead else None
            if kept is not None and kept.ref.sample_id == entry.ref.sample_id:
                self._dead[-1] = MutableDeadLetter(kept.ref, kept.reason, kept.deliveries)  # type: ignore[call-overload]


make = factory(DeadLetterMutable)
