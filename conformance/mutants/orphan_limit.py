"""Mutant: the backend's store collects at most three orphans.

The queue tells its store which samples it holds (``note_queued``), and the
store takes a scrub of any other sample for the collection of an orphan (a
producer that died between ``store.put`` and ``put``, or gave up).  To stop a
runaway cleanup script it budgets those collections: three per store.  The
fourth orphan's ``scrub`` returns True and leaves the data resident, so
residency never falls back below ``low`` and producers stay paused for as
long as the queue holds work.  The walks of the ci profile collect fewer
orphans per store than that.
"""

from typing import Any

from conformance.mutants._base import BaseQueue, factory
from refqueue.stores.local import LocalFeatureStore

ORPHAN_BUDGET = 3


class OrphanBudgetStore(LocalFeatureStore):
    """A ``LocalFeatureStore`` (the kit's configuration) that collects three orphans at most."""

    def __init__(self) -> None:
        super().__init__(
            max_samples=None, max_bytes=None, high_watermark_bytes=None, low_watermark_bytes=None, device="cpu"
        )
        self._queued: set[str] = set()  # sample ids the queue holds (pending or leased)
        self._stored: dict[str, Any] = {}  # sample id -> the ref its data is resident under
        self._orphans_collected = 0

    def note_queued(self, sample_id: str) -> None:
        self._queued.add(sample_id)

    def put(self, sample_id: str, tensors: Any, **meta: Any) -> Any:
        ref = super().put(sample_id, tensors, **meta)
        self._stored[sample_id] = ref
        return ref

    def scrub(self, ref: Any) -> bool:
        if self._stored.get(ref.sample_id) != ref:  # nothing resident under this ref
            return super().scrub(ref)
        if ref.sample_id in self._queued:  # the queue's own scrub (an ack, a dead letter)
            self._queued.discard(ref.sample_id)
        elif self._orphans_collected >= ORPHAN_BUDGET:
            return True  # the bug: the budget is spent, the data stays
        else:
            self._orphans_collected += 1
        done = super().scrub(ref)
        if done:
            del self._stored[ref.sample_id]
        return done


class OrphanLimitQueue(BaseQueue):
    def _put_nowait(self, call: str, ref: Any) -> None:
        super()._put_nowait(call, ref)
        note = getattr(self._store, "note_queued", None)
        if note is not None:
            note(ref.sample_id)


make = factory(OrphanLimitQueue, make_store=OrphanBudgetStore)
