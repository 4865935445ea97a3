"""Mutant: ``on_pause``/``on_resume`` are called with the queue's lock held.

The hysteresis step calls the callback where it decides the transition,
inside the critical section, instead of after the lock is released.  A
callback that only records the event (as every other phase's does) sees
nothing wrong; one that reads the queue's counts, or hands the event to a
thread that does, stalls until the step ends (and deadlocks when it waits
for that thread): the anchor's deadlock (D4).
"""

from conformance.mutants._base import BaseQueue, factory


class CallbackUnderLock(BaseQueue):
    def _transition(self, paused, health):
        for callback, health_then in super()._transition(paused, health):
            if callback is not None:
                callback(health_then)  # still inside _try_put_nowait's `with self._lock`
        return []


make = factory(CallbackUnderLock)
