"""Mutant: the queue has no background reclaimer, and does not say so.

``start_reclaimer``/``stop_reclaimer`` are simply not written (a backend
whose author relied on consumers calling ``reclaim_expired``), while the
factory declares the default capabilities, ``reclaimer`` among them.  The
kit calls ``start_reclaimer()`` in the calls phase and gets an
``AttributeError``: a failure of that phase naming the call and the missing
attribute, never a bare traceback (issue 26).  Declaring
``Capabilities(reclaimer=False)`` would be legal.
"""

from conformance.mutants._base import BaseQueue, factory

# BaseQueue's own attributes, the reclaimer's calls left out: a class that never had them
# (not a subclass, whose lookups would find BaseQueue's).  Its record, None, stays (close reads it).
_LEFT_OUT = ("start_reclaimer", "stop_reclaimer", "_reclaimer_thread", "_reclaim_tick", "__dict__", "__weakref__")
ReclaimerMissing = type(
    "ReclaimerMissing", (), {k: v for k, v in vars(BaseQueue).items() if k not in _LEFT_OUT}
)
ReclaimerMissing.__exit__ = lambda self, *exc_info: self.close()  # BaseQueue's stops the reclaimer first

make = factory(ReclaimerMissing)
