"""Mutant: a lease with an id no queue mints is answered as stale.

docs/API.md: ``ack``/``fail``/``extend``/``dead_letter`` of a lease altered to
carry an id below 1 raise ``ValueError``.  This queue checks only the type
and the epoch, then finds no live lease with that id and returns ``False``,
as for a stale lease: a caller that corrupted its lease is told it merely
lost the race (issue 26: an outside backend did this).
"""

from conformance.mutants._base import BaseQueue, Lease, factory
from refqueue.errors import ForeignLease


class LeaseIdNegativeStale(BaseQueue):
    def _check_lease(self, call, lease):
        if not isinstance(lease, Lease):
            raise TypeError(f"{call} needs a Lease, got {type(lease).__name__}")
        if lease.epoch != self._epoch:  # ... and no look at lease_id
            raise ForeignLease(f"{call}: lease of epoch {lease.epoch!r}, this queue is {self._epoch!r}")


make = factory(LeaseIdNegativeStale)
