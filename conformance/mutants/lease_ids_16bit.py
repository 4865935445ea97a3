"""Mutant: lease ids are kept in 16 bits: after 65,535 leases they start again
at 1, so a stale lease from long ago carries the id of a live one.
docs/API.md: lease ids count up from 1 per queue, unique within it.
"""

import itertools

from conformance.mutants._base import BaseQueue, factory


class LeaseIds16Bit(BaseQueue):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._ids = itertools.cycle(range(1, 2**16))


make = factory(LeaseIds16Bit)
