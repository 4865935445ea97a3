"""Mutant: the store's scrub updates its byte count and its sample count in two steps.

``health()`` takes no lock (docs/API.md: it must be O(1) bookkeeping), so it
must read the two counters as one value.  This store's scrub lowers the
resident bytes, lets another thread run (as a store that updates metrics or
calls out between the two writes would), and only then lowers the sample
count: a ``health()`` read in between sees the bytes of one state and the
count of another, which no order of the calls explains.  One thread alone
never reads in between: every single-threaded phase certifies it; only the
threads phase, whose histories read ``health()`` while other threads ack,
sees the torn pair.
"""

import time

from conformance.mutants._base import BaseQueue, factory
from refqueue.stores.local import LocalFeatureStore


class TornStore(LocalFeatureStore):
    """A ``LocalFeatureStore`` whose scrub writes its two counters one at a time."""

    def __init__(self) -> None:
        # The kit's own store (no caps, no watermarks), as in release_scrubs.
        super().__init__(
            max_samples=None, max_bytes=None, high_watermark_bytes=None, low_watermark_bytes=None, device="cpu"
        )

    def _scrub_locked(self, ref):  # type: ignore[no-untyped-def]
        entry = self._samples.get(ref.sample_id)
        if entry is None or entry.ref != ref:
            return False
        del self._samples[ref.sample_id]
        resident, count = self._counters
        self._counters = (resident - ref.estimated_bytes, count)  # the bytes first ...
        time.sleep(0)  # ... another thread may read health() now ...
        self._counters = (resident - ref.estimated_bytes, count - 1)  # ... then the count
        return True


make = factory(BaseQueue, make_store=TornStore)
