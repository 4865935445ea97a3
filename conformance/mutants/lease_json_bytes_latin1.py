"""Mutant: ``Lease.to_json`` writes text beyond ASCII as it is
(``ensure_ascii=False``) and ``Lease.from_json`` decodes bytes as Latin-1,
so a lease whose sample id or run id is not ASCII comes back from its UTF-8
bytes with mangled ids ('é' as 'Ã©'), and its ack is refused or raises
(docs/API.md: from_json takes the str or its UTF-8 bytes)."""
import dataclasses
import json

from conformance.mutants._base import BaseQueue, Lease, factory


class Latin1Lease(Lease):
    def to_json(self):
        return json.dumps(json.loads(super().to_json()), ensure_ascii=False)

    @classmethod
    def from_json(cls, text):
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("latin-1")
        return super().from_json(text)


class LeaseJsonBytesLatin1(BaseQueue):
    def _acquire_nowait(self):
        lease = super()._acquire_nowait()
        if lease is None:
            return None
        entry = self._entries[lease.ref.sample_id]
        entry.lease = Latin1Lease(**{f.name: getattr(lease, f.name) for f in dataclasses.fields(lease)})
        return entry.lease


make = factory(LeaseJsonBytesLatin1)
