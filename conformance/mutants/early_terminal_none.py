"""Mutant: terminal None while leases are outstanding.

``is_drained`` (and so ``acquire``'s terminal None) only asks "closed and
nothing pending", forgetting outstanding leases whose reclaim would put
work back: the anchor's lost-work bug (D3).
"""

from conformance.mutants._base import BaseQueue, factory


class EarlyTerminalNone(BaseQueue):
    def _drained(self) -> bool:
        return self._closed and not self._pending


make = factory(EarlyTerminalNone)
