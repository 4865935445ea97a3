"""Mutant: the queue keeps each ref in a row whose version columns are TEXT,
so a ref put with ``target_model_version=7`` comes back in its lease with
``"7"``.  A consumer that checks the version it trains against (``== 7``)
drops every sample (docs/API.md: versions are ``str | int``, kept as given;
a lease carries the ref put)."""
import dataclasses

from conformance.mutants._base import BaseQueue, _Entry, factory


class RefVersionsAsText(BaseQueue):
    def _put_nowait(self, call, ref):
        self._validate_put(call, ref)
        row = dataclasses.replace(
            ref, target_model_version=str(ref.target_model_version), draft_weight_version=str(ref.draft_weight_version)
        )
        self._entries[ref.sample_id] = _Entry(row)
        self._pending.append(ref.sample_id)
        self._ready.notify()


make = factory(RefVersionsAsText)
