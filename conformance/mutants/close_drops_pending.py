"""Mutant: ``close`` drops the pending refs.

Closing should stop new puts while what is pending still drains (D3); this
queue forgets it, and those samples' data stays resident forever.
"""

from conformance.mutants._base import BaseQueue, factory


class CloseDropsPending(BaseQueue):
    def close(self) -> None:
        with self._lock:
            for sample_id in self._pending:
                del self._entries[sample_id]
            self._pending.clear()
            self._closed = True
            self._ready.notify_all()
            self._wake_producers("close")


make = factory(CloseDropsPending)
