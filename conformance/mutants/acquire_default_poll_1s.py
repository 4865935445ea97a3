"""Mutant: ``acquire()``'s default ``poll_interval`` is 1.0 s (a BLPOP-style
default), not 0.05 s, so a consumer calling ``acquire()`` on an open, empty
queue waits twenty times longer than docs/API.md says (the kit's other
checks always pass an interval)."""

from conformance.mutants._base import BaseQueue, Lease, factory


class AcquireDefaultPoll1s(BaseQueue):
    def acquire(self, poll_interval: float = 1.0) -> Lease | None:  # the bug: 1.0, not 0.05
        return super().acquire(poll_interval)


make = factory(AcquireDefaultPoll1s)
