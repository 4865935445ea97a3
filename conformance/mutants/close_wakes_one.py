"""Mutant: ``close`` wakes one waiting consumer, not all of them.

``close()`` of an empty queue drains it, and every consumer blocked in
``acquire`` should return its terminal None at once; this one calls
``notify()`` where ``notify_all()`` is needed, so with several idle
consumers all but one sleep through their poll interval (D3, D6).  A check
with one blocked consumer cannot tell.
"""

from conformance.mutants._base import BaseQueue, factory


class CloseWakesOne(BaseQueue):
    def close(self):
        with self._lock:
            self._closed = True
            self._ready.notify()  # the bug: one waiter, not all
            self._wake_producers("close")


make = factory(CloseWakesOne)
