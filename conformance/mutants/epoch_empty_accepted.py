"""Mutant: a lease whose epoch is ``""`` is taken for one of this queue's
(an unset epoch read as "any queue"), so an altered lease acks (D1)."""

from conformance.mutants._base import BaseQueue, factory


class EpochEmptyAccepted(BaseQueue):
    def _check_lease(self, call: str, lease: object) -> None:
        if getattr(lease, "epoch", None) == "":
            return
        super()._check_lease(call, lease)


make = factory(EpochEmptyAccepted)
