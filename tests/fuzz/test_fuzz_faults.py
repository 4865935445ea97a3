"""Fuzz: exceptions thrown from the clock, the store and the callbacks at every
call site of the queue, in any order of operations.  No sample is ever lost:
once the faults stop, every sample put is delivered and completes exactly once
(acked or dead-lettered), the store ends empty, and no id is stuck (a re-put
of a completed id succeeds).  A call that raised an injected fault changed
nothing, except where the docs say the step committed first (a callback's
exception propagates after the transition; ``reclaim_expired`` keeps what it
took back before the fault).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_helpers import put, snapshot

from refqueue.clock import ManualClock
from refqueue.errors import QueueClosed
from refqueue.queue import SampleRefQueue, VisibilityTimeout
from refqueue.stores import LocalFeatureStore

pytestmark = pytest.mark.timeout(300)
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)


class Injected(Exception):
    """A fault the test injected."""


class Faults:
    """A schedule of faults, one bool per call of a faulty site."""

    def __init__(self, schedule: list[bool]) -> None:
        self.schedule = iter(schedule)
        self.on = True
        self.count = 0

    def maybe(self, where: str) -> None:
        if self.on and next(self.schedule, False):
            self.count += 1
            raise Injected(where)


class FaultyClock(ManualClock):
    def __init__(self, faults: Faults) -> None:
        super().__init__(0.0)
        self.faults = faults

    def now(self) -> float:
        self.faults.maybe("clock")
        return super().now()


class FaultyStore(LocalFeatureStore):
    def __init__(self, faults: Faults) -> None:
        super().__init__(None, None, 200, 64)  # watermarks: health() is called by blocking puts
        self.faults = faults

    def scrub(self, ref):
        self.faults.maybe("scrub")
        return super().scrub(ref)

    def health(self):
        self.faults.maybe("health")
        return super().health()


OPS = st.sampled_from(["put", "put_blocking", "acquire", "ack", "fail", "extend", "dead_letter", "reclaim",
                       "advance", "reclaim_expired_all"])


@SETTINGS
@given(
    ops=st.lists(st.tuples(OPS, st.integers(0, 5)), min_size=1, max_size=40),
    schedule=st.lists(st.booleans(), max_size=60),
    max_deliveries=st.sampled_from([None, 1, 2]),
)
def test_faults_from_clock_store_and_callbacks_never_lose_a_sample(ops, schedule, max_deliveries):
    faults = Faults(schedule)
    store = FaultyStore(faults)
    clock = FaultyClock(faults)

    def callback(health):
        faults.maybe("callback")

    queue = SampleRefQueue(store, VisibilityTimeout(5.0), clock=clock, max_deliveries=max_deliveries,
                           on_pause=callback, on_resume=callback)
    put_ids: list[str] = []
    leases = []

    def look():
        faults.on = False  # the test's own observation is not a call site
        try:
            return snapshot(store, queue)
        finally:
            faults.on = True

    for op, k in ops:
        before = look()
        try:
            if op in ("put", "put_blocking"):
                sample_id = f"s{len(put_ids)}"
                faults.on = False  # the faults are the queue's calls of the store, not the producer's
                ref = put(store, sample_id, k)
                faults.on = True
                put_ids.append(sample_id)
                try:
                    if op == "put":
                        queue.put(ref)
                    else:
                        queue.put_blocks_until_below(ref, abort_when=lambda: True)
                except Injected:
                    if sample_id not in pending_or_leased(queue):
                        queue.put(ref)  # the producer retries; the data is still in the store
                    raise
                except Exception:
                    store.scrub(ref)  # PutAborted: the producer takes its data back
                    put_ids.pop()
                    continue
            elif op == "acquire":
                lease = queue.acquire_nowait()
                if lease is not None:
                    leases.append(lease)
            elif op == "advance":
                clock.advance(k + 0.5)
            elif op in ("reclaim", "reclaim_expired_all"):
                queue.reclaim_expired()
            elif leases:
                lease = leases[k % len(leases)]
                if op == "dead_letter":
                    queue.dead_letter(lease, "poison")
                else:
                    getattr(queue, op)(lease)
        except Injected as fault:
            if fault.args[0] in ("clock", "health", "scrub") and op not in ("reclaim", "reclaim_expired_all",
                                                                           "put", "put_blocking"):
                assert look() == before, (op, fault)
    # the faults stop; drain everything (the queue stays open)
    faults.on = False
    delivered = []
    for _ in range(10 * (len(put_ids) + 1)):
        if queue.pending_count() == 0 and queue.outstanding_count() == 0:
            break
        clock.advance(10)
        queue.reclaim_expired()
        lease = queue.acquire_nowait()
        if lease is not None:
            delivered.append(lease.ref.sample_id)
            assert queue.ack(lease) is True
    assert queue.pending_count() == 0 and queue.outstanding_count() == 0, snapshot(store, queue)
    dead = {d.ref.sample_id for d in queue.dead_letters()}
    assert set(delivered) | dead <= set(put_ids)
    # every sample put was completed (acked in the drain or before, or dead-lettered): no data is left
    assert store.health().sample_count == 0, (put_ids, delivered, dead)
    for sample_id in put_ids:  # and no id is stuck: each one can be put again
        queue.put(put(store, sample_id))
    assert queue.pending_count() == len(put_ids)
    queue.close()
    with pytest.raises(QueueClosed):
        queue.put(put(store, "after-close"))


def pending_or_leased(queue) -> set[str]:
    return set(queue._live)  # noqa: SLF001 (the test's own bookkeeping after a fault)
