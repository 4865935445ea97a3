"""Mutant: ``put`` wakes a waiting consumer only when pending was empty.

A classic lost wakeup: "a consumer can only be waiting if nothing was
pending, so notify on the empty-to-one transition".  Two consumers wait;
two puts come back to back; the first wakes one consumer, but the second
finds the first ref still pending (the woken consumer has not taken it
yet) and wakes nobody.  The second consumer sleeps through its whole poll
interval with a ref pending (D6: every put wakes one waiting acquire).
"""

from conformance.mutants._base import BaseQueue, _Entry, factory


class PutWakesIfEmpty(BaseQueue):
    def _put_nowait(self, call, ref):
        self._validate_put(call, ref)
        was_empty = not self._pending
        self._entries[ref.sample_id] = _Entry(ref)
        self._pending.append(ref.sample_id)
        if was_empty:  # the bug: the second of two quick puts wakes nobody
            self._ready.notify()


make = factory(PutWakesIfEmpty)
