"""Mutant: every lease carries the default ``VisibilityTimeout`` (30 s), not the queue's.

The lease is built with ``Timeout()`` (copy-pasted from the dataclass default),
so a consumer that reads ``lease.visibility_timeout`` to pace its heartbeats
(extend every half timeout) uses 30 s on a queue whose timeout is 1 s.
"""
from conformance.mutants._base import BaseQueue, Lease, Timeout, factory


class LeaseVtDefault(BaseQueue):
    def _acquire_nowait(self):
        if not self._pending:
            return None
        now = self._clock.now()  # (first, as the base: a clock that raises leaves the ref pending)
        entry = self._entries[self._pending.popleft()]
        entry.deliveries += 1
        entry.deadline = now + self._vt.seconds
        entry.lease = Lease(entry.ref, entry.deadline, Timeout(), entry.redeliveries, next(self._ids), self._epoch)
        return entry.lease


make = factory(LeaseVtDefault)
