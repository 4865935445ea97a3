"""Mutant: ``extend`` turns its seconds into a float before it checks them,
so an int too large for a float (``10**400``) raises ``OverflowError``.
docs/API.md: a number of seconds may be an int of any size; above
``threading.TIMEOUT_MAX`` it is a ``ValueError``, never an ``OverflowError``.
"""

from conformance.mutants._base import BaseQueue, factory


class SecondsOverflow(BaseQueue):
    def extend(self, lease, seconds=None):
        if seconds is not None and type(seconds) is int:
            seconds = float(seconds)  # (OverflowError for 10**400)
        return super().extend(lease, seconds)


make = factory(SecondsOverflow)
