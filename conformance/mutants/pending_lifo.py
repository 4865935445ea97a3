"""Mutant: with two refs or more pending, ``acquire`` takes the newest.

A stack where a queue belongs: invisible while at most one ref is ever
pending (the agreement world), wrong as soon as pending holds two.
"""

from conformance.mutants._base import BaseQueue, Lease, factory


class PendingLifo(BaseQueue):
    def _acquire_nowait(self) -> Lease | None:
        if len(self._pending) >= 2:
            self._pending.rotate(1)  # the newest ref comes to the head
        return super()._acquire_nowait()


make = factory(PendingLifo)
