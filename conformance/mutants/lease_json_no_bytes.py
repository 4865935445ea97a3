"""Mutant: ``Lease.from_json`` takes a str only; bytes (what a socket or Redis hands
back) raise ``TypeError``.  docs/API.md: from_json takes a str or bytes."""
import json
from dataclasses import dataclass

from conformance.mutants import _base
from conformance.mutants._base import BaseQueue, Timeout, factory
from refqueue.refs import SampleRef


@dataclass(frozen=True)
class StrLease(_base.Lease):
    @classmethod
    def from_json(cls, text):
        if not isinstance(text, str):
            raise TypeError(f"Lease.from_json needs a str, got {type(text).__name__}")
        data = json.loads(text)
        return cls(SampleRef.from_dict(data["ref"]), data["deadline"], Timeout(data["visibility_timeout"]),
                   data["redelivery_count"], data["lease_id"], data["epoch"])


class LeaseJsonNoBytes(BaseQueue):
    def _check_lease(self, call, lease):
        super()._check_lease(call, lease)

    def _acquire_nowait(self):
        if not self._pending:
            return None
        now = self._clock.now()  # (first, as the base: a clock that raises leaves the ref pending)
        entry = self._entries[self._pending.popleft()]
        entry.deliveries += 1
        entry.deadline = now + self._vt.seconds
        entry.lease = StrLease(entry.ref, entry.deadline, self._vt, entry.redeliveries, next(self._ids), self._epoch)
        return entry.lease


make = factory(LeaseJsonNoBytes)
