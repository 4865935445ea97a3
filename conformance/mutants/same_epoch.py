"""Mutant: every queue has the epoch ``"queue"``, so two queues on one store
take each other's leases for their own (D1)."""

from conformance.mutants._base import BaseQueue, factory


class SameEpoch(BaseQueue):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self._epoch = "queue"


make = factory(SameEpoch)
