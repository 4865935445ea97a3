"""Mutant: ``put`` validates under the lock, serialises the ref for its audit log
outside it, then takes the lock again, re-checks ``closed`` ("the queue may have
closed meanwhile") and enqueues, but does not re-check duplicates.  Two producers
putting the same id at once both return: one DuplicateSample never raised, the
first incarnation silently replaced."""
from conformance.mutants._base import BaseQueue, _Entry, factory
from refqueue.errors import QueueClosed


class PutDupRace2(BaseQueue):
    def put(self, ref):
        with self._lock:
            self._validate_put("put", ref)
        record = ref.to_json()  # the audit record, built outside the lock
        with self._lock:
            if self._closed:
                raise QueueClosed(f"put({ref.sample_id!r}) after close()")
            self._entries[ref.sample_id] = _Entry(ref)
            if ref.sample_id in self._pending:
                self._pending.remove(ref.sample_id)
            self._pending.append(ref.sample_id)
            self._ready.notify()
        del record


make = factory(PutDupRace2)
