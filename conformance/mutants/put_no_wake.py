"""Mutant: ``put`` does not wake a consumer blocked in ``acquire``.

The ref is enqueued but nobody is notified, so a consumer already waiting
in ``acquire(poll_interval=...)`` sleeps out its whole interval before it
looks again: the anchor's poll-interval latency (D6).  Every phase that
acquires with a short interval, or only after the put, still gets the ref.
"""

from conformance.mutants._base import BaseQueue, _Entry, factory


class PutNoWake(BaseQueue):
    def _put_nowait(self, call, ref):
        self._validate_put(call, ref)
        self._entries[ref.sample_id] = _Entry(ref)
        self._pending.append(ref.sample_id)  # ... and no self._ready.notify()


make = factory(PutNoWake)
