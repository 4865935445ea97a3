"""Mutant: a copy of a lease does not ack.

Lease identity is object identity (``is``), as in the anchor: a
``copy.copy(lease)`` or a lease rebuilt from JSON (another process) is
treated as stale (D1).
"""

from conformance.mutants._base import BaseQueue, Lease, _Entry, factory


class CopyNotAcking(BaseQueue):
    def _live(self, lease: Lease) -> _Entry | None:
        entry = self._entries.get(lease.ref.sample_id)
        if entry is None or entry.lease is not lease:
            return None
        return entry


make = factory(CopyNotAcking)
