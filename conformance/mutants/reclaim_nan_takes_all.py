"""Mutant: a reclaim at a clock reading NaN takes back every outstanding lease
(NaN taken for "long past", as a deadline heap whose comparisons NaN breaks
did).  docs/API.md: a reclaim at a NaN ``now`` takes nothing back.
"""

from conformance.mutants._base import BaseQueue, factory


class ReclaimNanTakesAll(BaseQueue):
    def _expired(self, now):
        if now != now:  # NaN
            hits = [e for e in self._entries.values() if e.deadline is not None]
            return sorted(hits, key=lambda e: (e.deadline, e.ref.sample_id))
        return super()._expired(now)


make = factory(ReclaimNanTakesAll)
