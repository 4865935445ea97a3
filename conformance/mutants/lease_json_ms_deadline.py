"""Mutant: ``Lease.to_json`` writes the deadline as whole milliseconds (an int
column in the implementer's wire format), so a round-tripped lease has a
different ``deadline`` whenever the clock reads sub-millisecond time (always,
on ``time.monotonic()``)."""
import json
from dataclasses import dataclass

from conformance.mutants import _base
from conformance.mutants._base import BaseQueue, Timeout, factory
from refqueue.refs import SampleRef


@dataclass(frozen=True)
class MsLease(_base.Lease):
    def to_json(self):
        return json.dumps({"ref": self.ref.to_dict(), "deadline_ms": int(self.deadline * 1000),
                           "visibility_timeout": self.visibility_timeout.seconds,
                           "redelivery_count": self.redelivery_count, "lease_id": self.lease_id, "epoch": self.epoch})

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        return cls(SampleRef.from_dict(data["ref"]), data["deadline_ms"] / 1000, Timeout(data["visibility_timeout"]),
                   data["redelivery_count"], data["lease_id"], data["epoch"])


class LeaseJsonMsDeadline(BaseQueue):
    def _acquire_nowait(self):
        if not self._pending:
            return None
        now = self._clock.now()  # (first, as the base: a clock that raises leaves the ref pending)
        entry = self._entries[self._pending.popleft()]
        entry.deliveries += 1
        entry.deadline = now + self._vt.seconds
        entry.lease = MsLease(entry.ref, entry.deadline, self._vt, entry.redeliveries, next(self._ids), self._epoch)
        return entry.lease


make = factory(LeaseJsonMsDeadline)
