"""Issue 12, defect 1: a clock that raises, or an asynchronous exception,
never loses a sample.

On 8456e91 ``acquire`` popped the pending ref before it read the clock: a
clock that raised once left the sample neither pending nor leased (a re-put
raised ``DuplicateSample`` forever; after ``close()`` the queue reported
itself drained with the data still resident).  Now every state change runs
what can raise first and commits last.

The asynchronous case is checked deterministically.  CPython delivers an
asynchronous exception (``KeyboardInterrupt`` from a signal,
``PyThreadState_SetAsyncExc``) only at its *eval-breaker checkpoints*: on
entry to a Python function, right after a call returns, and on a backward
jump.  ``Interrupter`` raises an exception at the k-th such checkpoint inside
the queue's own code (every module of ``refqueue``), for k = 1, 2, ... until
the operation completes untouched, and after each interrupted run the queue
must be consistent and the sample must come back (pending, or leased with a
deadline the reclaim finds).  The interrupter is a superset of CPython's own
points (it also stops after calls to Python functions, which CPython does
not), so passing it is a stronger claim than the interpreter needs.
"""

from __future__ import annotations

import dis
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType, FrameType

import pytest
from bytes_store import BytesStore

import refqueue
from refqueue.errors import DuplicateSample
from refqueue.queue import SampleRefQueue, VisibilityTimeout

pytestmark = pytest.mark.timeout(120)

HOUR = 3600.0


class ClockDown(Exception):
    """What ``FlakyClock.now`` raises."""


class FlakyClock:
    """A manual clock whose ``now()`` raises ``ClockDown`` the next ``failures`` times."""

    def __init__(self) -> None:
        self.t = 0.0
        self.failures = 0

    def now(self) -> float:
        if self.failures:
            self.failures -= 1
            raise ClockDown("the clock is down")
        return self.t


def observable(q: SampleRefQueue, store: BytesStore) -> tuple:
    return (q.pending_count(), q.outstanding_count(), q.is_closed, q.is_drained, q.dead_letters(),
            store.health(), tuple(store.scrubs))


def assert_consistent(q: SampleRefQueue) -> None:
    """The queue's records agree with one another (white box): every live
    sample is pending xor leased, outstanding counts the leased ones, and
    every leased one has its current entry in the deadline heap."""
    with q._lock:
        pending = list(q._pending)
        pending_ids = {id(r) for r in pending}
        assert len(pending_ids) == len(pending)
        leased = [r for r in q._live.values() if id(r) not in pending_ids]
        assert all(q._live.get(r.ref.sample_id) is r for r in pending), "a pending ref has no live record"
        assert all(r.deadline is None for r in pending), "a pending record carries a deadline"
        assert q._outstanding == len(leased), (q._outstanding, [r.ref.sample_id for r in leased])
        heap = set(q._deadlines._heap)
        for r in leased:
            assert r.deadline is not None, f"{r.ref.sample_id!r} is neither pending nor leased"
            assert (r.deadline, r.ref.sample_id, r.lease_id) in heap, (
                f"lease {r.lease_id} of {r.ref.sample_id!r} has no deadline entry: reclaim can never find it"
            )


def assert_comes_back(q: SampleRefQueue, store: BytesStore, clock: FlakyClock, sample_id: str) -> None:
    """Whatever happened, the sample is pending or leased, and reclaim plus
    acquire hand it out again; its ack then empties store and queue."""
    assert q.pending_count() + q.outstanding_count() == 1
    clock.t += HOUR  # past every deadline
    q.reclaim_expired()
    lease = q.acquire_nowait()
    assert lease is not None and lease.ref.sample_id == sample_id
    assert q.ack(lease) is True
    q.close()
    assert q.is_drained and store.health().resident_bytes == 0


@pytest.fixture
def flaky() -> FlakyClock:
    return FlakyClock()


@pytest.fixture
def queue_on(store, flaky):
    def make(**kwargs) -> SampleRefQueue:
        return SampleRefQueue(store, VisibilityTimeout(10.0), clock=flaky, **kwargs)

    return make


# -- a clock that raises changes nothing -----------------------------------------------


@pytest.mark.parametrize("how", ["acquire_nowait", "acquire"])
def test_acquire_with_a_raising_clock_leaves_the_ref_pending(queue_on, stored, store, flaky, how):
    q = queue_on()
    q.put(stored("a"))
    before = observable(q, store)
    flaky.failures = 1
    with pytest.raises(ClockDown):
        q.acquire_nowait() if how == "acquire_nowait" else q.acquire(poll_interval=HOUR)
    assert observable(q, store) == before  # 8456e91: pending 0, outstanding 0
    assert_consistent(q)
    lease = q.acquire_nowait()
    assert lease.ref.sample_id == "a" and lease.redelivery_count == 0
    assert q.ack(lease) is True
    q.close()
    assert q.is_drained and store.health().resident_bytes == 0


def test_after_a_raising_clock_a_closed_queue_still_delivers_the_ref(queue_on, stored, store, flaky):
    q = queue_on()
    ref = stored("a")
    q.put(ref)
    flaky.failures = 1
    with pytest.raises(ClockDown):
        q.acquire_nowait()
    with pytest.raises(DuplicateSample, match=r"that sample is already pending"):
        q.put(ref)
    q.close()
    assert not q.is_drained  # 8456e91: drained, with the data still resident
    assert q.acquire_nowait().ref == ref


def test_extend_with_a_raising_clock_keeps_the_old_deadline(queue_on, stored, store, flaky):
    q = queue_on()
    q.put(stored("a"))
    lease = q.acquire_nowait()  # deadline 10
    flaky.t = 5.0
    before = observable(q, store)
    heap = list(q._deadlines._heap)
    flaky.failures = 1
    with pytest.raises(ClockDown):
        q.extend(lease, 100.0)
    assert observable(q, store) == before and q._deadlines._heap == heap
    assert_consistent(q)
    flaky.t = 10.0
    assert q.reclaim_expired() == 1  # the deadline it had


def test_reclaim_with_a_raising_clock_changes_nothing(queue_on, stored, store, flaky):
    q = queue_on()
    q.put(stored("a"))
    q.acquire_nowait()
    flaky.t = 10.0
    before = observable(q, store)
    flaky.failures = 1
    with pytest.raises(ClockDown):
        q.reclaim_expired()
    assert observable(q, store) == before
    assert_consistent(q)
    assert q.reclaim_expired() == 1


# -- asynchronous exceptions at every checkpoint ------------------------------------------


class Interrupt(BaseException):
    """Stands in for an asynchronous ``KeyboardInterrupt``."""


_PACKAGE = str(Path(refqueue.__file__).resolve().parent)


@functools.cache
def _ours(code: CodeType) -> bool:
    return str(Path(code.co_filename).resolve()).startswith(_PACKAGE)


@functools.cache
def _checkpoints(code: CodeType) -> frozenset[int]:
    """Offsets of the instructions where an interrupt stands for one CPython
    may deliver, other than on function entry: each backward jump, and the
    instruction after each call.  CPython raises the latter *inside* the call
    instruction, so its exception handler (a ``with`` block's exit, a
    ``finally``) is the call's; a trace function can only raise at the next
    instruction, so a call whose next instruction has another handler (the
    last call of a ``with`` body) is left out rather than misrepresented."""
    table = dis.Bytecode(code).exception_entries

    def handler(offset: int) -> int | None:
        return next((e.target for e in table if e.start <= offset < e.end), None)

    points = set()
    previous = None
    for ins in dis.get_instructions(code):
        if previous is not None and previous.opname.startswith("CALL") and handler(previous.offset) == handler(ins.offset):
            points.add(ins.offset)
        if ins.opname == "JUMP_BACKWARD":
            points.add(ins.offset)
        previous = ins
    return frozenset(points)


class Interrupter:
    """A trace function that raises ``Interrupt`` at the ``at``-th checkpoint
    met in refqueue's code (1-based), and records where."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.seen = 0
        self.where: str | None = None

    def _checkpoint(self, where: str) -> None:
        self.seen += 1
        if self.seen == self.at:
            self.where = where
            raise Interrupt(where)  # Python unsets the trace function: one interrupt per run

    def call(self, frame: FrameType, event: str, arg: object):
        if event != "call" or not _ours(frame.f_code):
            return None
        self._checkpoint(f"entering {frame.f_code.co_qualname}")
        frame.f_trace_opcodes = True
        return self.step

    def step(self, frame: FrameType, event: str, arg: object):
        if event == "opcode" and frame.f_lasti in _checkpoints(frame.f_code):
            self._checkpoint(f"{frame.f_code.co_qualname} at offset {frame.f_lasti}")
        return self.step


def interrupted(op: Callable[[], object], at: int) -> str | None:
    """Run ``op`` with an interrupt at checkpoint ``at``: where it landed, or
    None if ``op`` completed before reaching it."""
    interrupter = Interrupter(at)
    previous = sys.gettrace()
    sys.settrace(interrupter.call)
    try:
        op()
    except Interrupt:
        assert interrupter.where is not None
        return interrupter.where
    finally:
        sys.settrace(previous)
    return None


def _acquire_nowait(q, clock):
    return q.acquire_nowait


def _acquire(q, clock):
    return lambda: q.acquire(poll_interval=HOUR)


def _fail(q, clock):
    lease = q.acquire_nowait()
    return lambda: q.fail(lease)


def _extend(q, clock):
    lease = q.acquire_nowait()
    clock.t = 3.0
    return lambda: q.extend(lease, 20.0)


def _reclaim_expired(q, clock):
    q.acquire_nowait()
    clock.t = 10.0
    return q.reclaim_expired


@pytest.mark.parametrize("prepare", [_acquire_nowait, _acquire, _fail, _extend, _reclaim_expired],
                         ids=lambda f: f.__name__.lstrip("_"))
def test_an_asynchronous_exception_at_any_checkpoint_loses_no_sample(prepare):
    landed = []
    for at in range(1, 1000):
        store, clock = BytesStore(), FlakyClock()
        q = SampleRefQueue(store, VisibilityTimeout(10.0), clock=clock)
        q.put(store.put("a", {"aux_hidden_states": b"xxxx", "input_ids": b"", "attention_mask": b"",
                              "loss_mask": b""}))
        op = prepare(q, clock)
        where = interrupted(op, at)
        if where is None:
            break
        landed.append(where)
        try:
            assert_consistent(q)
            assert_comes_back(q, store, clock, "a")
        except AssertionError as exc:
            raise AssertionError(f"interrupted at checkpoint {at} ({where}): {exc}") from exc
    else:
        pytest.fail("the operation never completed under the interrupter")
    assert len(landed) >= 3, landed  # the interrupter reached the queue's code
