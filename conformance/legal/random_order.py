"""Legal: ``fifo=False`` declared, and ``acquire`` hands out a pending ref drawn
at random (an unseeded generator: its choices differ from run to run, so
Hypothesis's re-runs of an example see other choices)."""

import random

from conformance.mutants._base import BaseQueue, Lease, factory
from refqueue.conformance import Capabilities


class RandomOrder(BaseQueue):
    _rng = random.Random()

    def _acquire_nowait(self) -> Lease | None:
        if self._pending:
            k = self._rng.randrange(len(self._pending))
            self._pending.rotate(-k)  # the drawn ref to the head, the others keep their cyclic order
        return super()._acquire_nowait()


make = factory(RandomOrder)
make.capabilities = Capabilities(fifo=False)
