"""Mutant: ``put`` compares only the scheme of the ref's store URI with its store's
(lenient about host aliases), so a ref of another ``mem://`` store is enqueued;
its consumer's ``get`` then fails against this queue's store (docs/API.md: put
rejects a ref for another store URI with ValueError)."""
from conformance.mutants._base import BaseQueue, factory
from refqueue.refs import SampleRef


class UriSchemeOnly(BaseQueue):
    def _validate_put(self, call, ref):
        if isinstance(ref, SampleRef) and ref.store_uri.split("://")[0] == self._store.uri.split("://")[0]:
            import dataclasses
            ref = dataclasses.replace(ref, store_uri=self._store.uri)
        super()._validate_put(call, ref)


make = factory(UriSchemeOnly)
