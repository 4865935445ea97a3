"""Mutant: each thread calls the callbacks it finds queued, whether or not
another thread is calling one.

A step queues its ``on_pause``/``on_resume`` in order, but every producer
then pops and calls them itself, with no "someone is already calling"
flag.  A producer that pauses the queue while another producer is still
inside ``on_resume`` calls ``on_pause`` at once: the two callbacks overlap,
and a handler that tracks the pause state (``paused = True`` /
``paused = False``) can end on "resumed" while the queue is paused
(docs/API.md: one at a time, in the order of the changes).  Callbacks that
return at once make the overlap a rare race; the blocking phase holds one
callback open and sees the other come in.
"""

from conformance.mutants._base import BaseQueue, factory


class CallbacksOverlap(BaseQueue):
    def _fire(self):
        while True:
            with self._lock:
                if not self._callbacks:
                    return
                callback, health = self._callbacks.popleft()
            callback(health)  # the bug: nothing stops another thread calling the next one now


make = factory(CallbacksOverlap)
