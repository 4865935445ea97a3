"""Mutant: ``on_pause``/``on_resume`` get ``store.health()`` read when the callback is called.

The step that changes the pause flag queues only which callback is due, and
the delivery, after the lock is released, reads the store's health afresh
("the freshest state is the most useful").  By then another producer may
have stored data, or an orphan may have been collected: ``on_resume`` can
report a store above ``high``, ``on_pause`` one below ``low``, and a
monitor that logs the callback's residency logs a state no transition was
decided on.  One thread delivering right after its own step sees the same
health, so the walks and the lockstep machine never tell the two apart.
"""

from typing import Any

from conformance.mutants._base import BaseQueue, factory


class CallbackHealthAtDelivery(BaseQueue):
    def _call(self, callback: Any, health: Any) -> None:
        callback(self._store.health())  # the bug: not the health the step read


make = factory(CallbackHealthAtDelivery)
