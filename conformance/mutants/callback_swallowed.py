"""Mutant: an exception raised by ``on_pause``/``on_resume`` is swallowed.

The queue logs the callback's exception and carries on, so the producer
whose step delivered the transition never learns that its pause handler
failed (docs/API.md: it propagates out of the call that delivered it, after
the step committed).  Callbacks that never raise (every other phase's)
cannot tell.
"""

import logging

from conformance.mutants._base import BaseQueue, factory

logger = logging.getLogger(__name__)


class CallbackSwallowed(BaseQueue):
    @staticmethod
    def _call(callback, health):
        try:
            callback(health)
        except Exception:  # the bug: the caller never hears of it
            logger.debug("callback raised", exc_info=True)


make = factory(CallbackSwallowed)
