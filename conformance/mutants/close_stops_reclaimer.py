"""Mutant: ``close()`` stops the background reclaimer, leases outstanding or not.

"Closing a queue stops its threads" reads well, but a lease held by a
consumer that crashed after the close is then never reclaimed: the closed
queue never drains and every consumer waiting for its terminal None waits for
ever (docs/API.md: the reclaimer keeps running until the closed queue drains; D3).
"""

from conformance.mutants._base import BaseQueue, factory


class CloseStopsReclaimer(BaseQueue):
    def close(self):
        super().close()
        self.stop_reclaimer()


make = factory(CloseStopsReclaimer)
