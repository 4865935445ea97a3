"""Mutant: ``outstanding_count()`` walks the queue's records without its lock
("a read need not lock"), so a count read while another thread puts or acks
raises ``RuntimeError: dictionary changed size during iteration`` (docs/API.md:
every call is thread-safe)."""

from conformance.mutants._base import BaseQueue, factory


class CountsUnlocked(BaseQueue):
    def outstanding_count(self) -> int:
        return sum(1 for e in self._entries.values() if e.lease is not None)


make = factory(CountsUnlocked)
