"""Mutant: leaving ``with queue:`` closes the queue's store too ("it owns
it"), so the producer's orphan scrubs, another queue on the same store and
the loader's gets all fail afterwards (docs/API.md: the exit closes the
queue, never the store).  The kit's store answers ``health()`` when closed,
so only a call that needs the store open shows it."""

from conformance.mutants._base import BaseQueue, factory


class WithClosesStore(BaseQueue):
    def __exit__(self, *exc_info: object) -> None:
        try:
            super().__exit__(*exc_info)
        finally:
            self._store.close()  # the bug


make = factory(WithClosesStore)
