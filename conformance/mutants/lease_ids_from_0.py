"""Mutant: lease ids count up from 0, not from 1.

docs/API.md: a queue mints lease ids as ints counting up from 1 (so that an
id below 1 is one no queue mints, refused with ``ValueError``).  This queue
starts its count at 0 and refuses only ids below 0; every walk and history
still agrees with the model, which never sees an id (issue 26: an outside
backend did this).
"""

import itertools

from conformance.mutants._base import BaseQueue, Lease, factory
from refqueue.errors import ForeignLease


class LeaseIdsFrom0(BaseQueue):
    def __init__(self, store, clock, **config):
        super().__init__(store, clock, **config)
        self._ids = itertools.count(0)

    def _check_lease(self, call, lease):
        if not isinstance(lease, Lease) or type(lease.lease_id) is not int:
            raise TypeError(f"{call} needs a Lease with an int lease_id, got {lease!r}")
        if lease.lease_id < 0:
            raise ValueError(f"{call}: lease_id {lease.lease_id} is below 0")
        if lease.epoch != self._epoch:
            raise ForeignLease(f"{call}: lease of epoch {lease.epoch!r}, this queue is {self._epoch!r}")


make = factory(LeaseIdsFrom0)
