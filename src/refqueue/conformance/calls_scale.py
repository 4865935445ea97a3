"""The ``calls`` phase's checks of sizes no other phase reaches: thousands of
refs pending at once, all reclaimed by one call, and more leases on one queue
than a 16-bit counter holds.  ``refqueue.conformance.calls`` lists them last
(``NAMED_CHECKS``; both are long checks, left out of the short pass of
``--fail-fast``):

``pending-many``
    ``PENDING_MANY`` refs put on one queue are all pending
    (``pending_count()``) and acquired in put order, each lease with its own
    ``lease_id``; with the clock past every deadline, *one*
    ``reclaim_expired()`` takes back all of them (docs/API.md: every lease
    with ``deadline <= now``), and each is delivered again (their deadlines
    are equal: ties, in any order) with ``redelivery_count`` 1 and acked.
    Without ``fifo`` the first deliveries may come in any order too.  A pending
    list with a fixed size that drops the oldest, or a reclaim that takes at
    most a batch per call, shows here: the walks hold a handful of refs and
    the deadline soak reclaims at most a few hundred at once.
``lease-ids-many``
    ``LEASES_MANY`` leases (past 2**16) minted on one queue by acquiring and
    failing one sample: each ``lease_id`` is larger than the one before
    (docs/API.md: lease ids count up from 1 per queue), the first lease, now
    stale, acks nothing, and the live one acks.  A counter that wraps
    reissues an old lease's id.  It needs about 130,000 calls: a backend too
    slow to make them within ``LEASES_BUDGET`` seconds (measured on the first
    ``LEASES_PROBE`` leases) is listed as not run, with its speed.

Each runs on a fresh queue (``probe.Probe``) on the kit's store (or the
backend's own: a store that cannot hold ``PENDING_MANY`` samples of one unit
makes ``pending-many`` not run).
"""

from __future__ import annotations

import time
from typing import Any

from refqueue.conformance.contract import Backend
from refqueue.conformance.probe import Failed, NotRun, Probe
from refqueue.conformance.samples import STORE_META, sample_tensors

__all__ = ["LEASES_BUDGET", "LEASES_MANY", "LEASES_PROBE", "PENDING_MANY", "lease_ids_many", "pending_many"]

PENDING_MANY = 5_000  # refs pending at once: past the sizes a fixed buffer is given (1,024, 4,096)
LEASES_MANY = 2**16 + 64  # leases minted on one queue: past what a 16-bit id holds
LEASES_PROBE = 2_000  # leases timed before the rest are made
LEASES_BUDGET = 60.0  # seconds the whole of lease-ids-many may take
VISIBILITY = 30.0


def _sample_id(lease: Any) -> Any:
    return getattr(getattr(lease, "ref", None), "sample_id", None)


def pending_many(backend: Backend) -> int:
    qq = Probe(backend, visibility_timeout=VISIBILITY)
    try:
        ids = [f"m{i:05d}" for i in range(PENDING_MANY)]
        for i, sample_id in enumerate(ids):
            try:
                ref = qq.store.put(sample_id, sample_tensors(1, i), num_tokens=1, **STORE_META)
            except MemoryError as exc:  # StoreFull: the backend's own store has a cap below the check's size
                raise NotRun(f"the store refused sample {i + 1} of {PENDING_MANY} ({exc}); pending-many needs a store "
                             f"that holds {PENDING_MANY} samples of one unit") from exc
            qq.calls += 1
            qq.call(f"put({sample_id!r}) with {i} refs pending", lambda: qq.q.put(ref))
        resident = qq.store.health().resident_bytes
        qq.expect_counts((PENDING_MANY, 0, resident), f"{PENDING_MANY} puts (each ref pending)")
        lease_ids: set[Any] = set()
        left = set(ids)  # (without FIFO, Capabilities.fifo False, any of them may come next)
        for i, sample_id in enumerate(ids):
            lease = qq.acquire(f"acquire() with {PENDING_MANY - i} pending")
            got = _sample_id(lease)
            if got != sample_id and not (not qq.caps.fifo and got in left):
                raise Failed(
                    f"acquire() number {i + 1}, with {PENDING_MANY - i} of {PENDING_MANY} refs pending, returned "
                    f"{_show(lease)}; "
                    + (f"delivery is FIFO (docs/API.md): the oldest pending ref, {sample_id!r}" if qq.caps.fifo else
                       "each ref put is delivered once")
                )
            left.discard(got)
            lease_ids.add(lease.lease_id)
        if len(lease_ids) != PENDING_MANY:
            raise Failed(f"{PENDING_MANY} leases outstanding at once carry {len(lease_ids)} distinct lease_ids; each "
                         f"lease_id is unique within its queue (docs/API.md)")
        qq.clock.advance(VISIBILITY + 1.0)
        got = qq.call(f"reclaim_expired() with {PENDING_MANY} leases past their deadline", qq.q.reclaim_expired)
        if got != PENDING_MANY:
            raise Failed(
                f"reclaim_expired() with all {PENDING_MANY} leases past their deadline returned {got!r}; it takes back "
                f"every lease with deadline <= now in one call, however many (docs/API.md), so {PENDING_MANY}"
            )
        qq.expect_counts((PENDING_MANY, 0, resident), f"reclaim_expired() of {PENDING_MANY} leases (each pending again)")
        left = set(ids)  # (the leases' deadlines are equal: the order of ties is free)
        for i in range(PENDING_MANY):
            lease = qq.acquire(f"acquire() with {PENDING_MANY - i} reclaimed refs pending")
            sample_id = _sample_id(lease)
            if sample_id not in left or getattr(lease, "redelivery_count", None) != 1:
                raise Failed(
                    f"acquire() number {i + 1} after the reclaim returned {_show(lease)} (redelivery_count "
                    f"{getattr(lease, 'redelivery_count', None)!r}); each reclaimed ref is delivered once more, with "
                    f"redelivery_count 1"
                )
            left.discard(sample_id)
            if qq.call(f"ack(lease of {sample_id!r})", lambda: qq.q.ack(lease)) is not True:
                raise Failed(f"ack of the live redelivered lease on {sample_id!r} did not return True")
        qq.expect_counts((0, 0, 0), f"the ack of every one of the {PENDING_MANY} refs")
        return qq.calls
    finally:
        qq.close()


def lease_ids_many(backend: Backend) -> int:
    qq = Probe(backend, visibility_timeout=VISIBILITY)  # (max_deliveries: the default, no cap)
    try:
        first = qq.leased("w")
        last, started = first, time.perf_counter()
        if not isinstance(first.lease_id, int):
            raise Failed(f"the first lease has lease_id {first.lease_id!r}; docs/API.md: an int, counting up from 1")
        for n in range(2, LEASES_MANY + 1):
            if qq.call(f"fail(lease {n - 1} of 'w')", lambda: qq.q.fail(last)) is not True:
                raise Failed(f"fail of the live lease number {n - 1} on 'w' (lease_id {last.lease_id!r}) did not "
                             f"return True")
            lease = qq.acquire(f"acquire() of 'w', failed {n - 1} times")
            if _sample_id(lease) != "w":
                raise Failed(f"acquire() with only 'w' pending (failed {n - 1} times) returned {_show(lease)}")
            if not isinstance(lease.lease_id, int) or lease.lease_id <= last.lease_id:
                raise Failed(
                    f"lease number {n} of the queue has lease_id {lease.lease_id!r}, after {last.lease_id!r}; "
                    f"docs/API.md: lease ids count up from 1 per queue (unique within it), so a stale lease "
                    f"never carries a live one's id"
                )
            last = lease
            if n == LEASES_PROBE:
                spent = time.perf_counter() - started
                whole = spent * LEASES_MANY / LEASES_PROBE
                if whole > LEASES_BUDGET:
                    raise NotRun(
                        f"{LEASES_PROBE} leases took {spent:.1f} s: {LEASES_MANY:,} would take about {whole:.0f} s, "
                        f"more than the {LEASES_BUDGET:.0f} s this check may take"
                    )
        if qq.call("ack(the first lease of 'w', stale)", lambda: qq.q.ack(first)) is not False:
            raise Failed(
                f"ack of the first lease on 'w' (lease_id {first.lease_id!r}), stale {LEASES_MANY - 1} leases ago, did "
                f"not return False; a stale lease changes nothing (D1)"
            )
        if qq.call(f"ack(lease {LEASES_MANY} of 'w')", lambda: qq.q.ack(last)) is not True:
            raise Failed(f"ack of the live lease number {LEASES_MANY} on 'w' did not return True")
        qq.expect_counts((0, 0, 0), "the ack of 'w'")
        return qq.calls
    finally:
        qq.close()


def _show(lease: Any) -> str:
    sample_id = _sample_id(lease)
    return repr(lease) if sample_id is None else f"a lease on {sample_id!r}"
