"""The ``calls`` phase's checks of the steps of ``put_blocks_until_below``
(docs/API.md, D8: each step validates the ref first and parks nothing when it
rejects; a producer parks its ref only once it goes to wait, after
``abort_when()`` said no).  ``refqueue.conformance.calls`` lists them after its
own; each needs ``abort_when`` and makes its queue with watermarks of 2 and 1
units, one 2-unit sample leased so that a 1-unit step pauses:

``one-step-parks-nothing``
    ``put_blocks_until_below(ref, abort_when=...)`` at high: while its
    ``abort_when`` is consulted the first time, ``parked_bytes`` (read from
    another thread, bounded) is 0, and the call raises ``PutAborted``.  A
    backend that parks the ref as soon as its step is not admitted counts it
    against the other producers' residency in a call that never waits, and
    ``abort_when=lambda: True`` is no longer one atomic step.  Not run where
    the queue has no ``parked_bytes``.
``put-duplicate-while-blocked``
    a producer blocked in ``put_blocks_until_below(ref)`` (its
    ``abort_when`` consulted twice: it has parked and stepped again); a plain
    ``put`` of the same ref meanwhile is accepted (a parked ref is not
    enqueued); once the ack of the leased sample frees room, the blocked
    producer's next step finds the id pending and raises
    ``DuplicateSample``: one copy pending, nothing parked.  A backend that
    validates the ref on the first step only enqueues the id twice.
"""

from __future__ import annotations

import threading
from typing import Any

from refqueue.conformance.contract import Backend, rejection_kind
from refqueue.conformance.probe import WITHIN, Failed, NotRun, Probe
from refqueue.conformance.samples import STORE_META, UNIT_BYTES, sample_tensors

__all__ = ["POLL", "one_step_parks_nothing", "put_duplicate_while_blocked"]

POLL = 0.01  # the blocked producer's poll interval: it steps again this often


def _at_high(backend: Backend) -> tuple[Probe, Any]:
    """A queue with watermarks 2 and 1 units and a 2-unit sample leased (a step
    of a 1-unit ref sees 2 units besides its own: high, it pauses); the lease."""
    qq = Probe(backend, high_watermark_bytes=2 * UNIT_BYTES, low_watermark_bytes=UNIT_BYTES)
    try:
        big = qq.call("store.put('big', 2 units)",
                      lambda: qq.store.put("big", sample_tensors(2, 1), num_tokens=2, **STORE_META))
        qq.call("put('big')", lambda: qq.q.put(big))
        lease = qq.acquire("acquire() with 'big' pending")
        if lease is None or lease.ref.sample_id != "big":
            raise Failed(f"acquire() with only 'big' pending returned {lease!r}")
    except BaseException:
        qq.close()
        raise
    return qq, lease


def one_step_parks_nothing(backend: Backend) -> int:
    qq, _ = _at_high(backend)
    try:
        if not hasattr(type(qq.q), "parked_bytes"):
            raise NotRun("the queue has no parked_bytes (docs/API.md lists it)")
        small = qq.ref("small")
        seen: list[object] = []

        def abort_when() -> bool:
            if not seen:  # the first consult: read parked_bytes from another thread (a lock held now stalls it)
                reader = threading.Thread(target=lambda: seen.append(qq.q.parked_bytes), daemon=True)
                reader.start()
                reader.join(WITHIN)
                if not seen:
                    seen.append(None)  # not read in time: abort_when runs under a lock, not judged here
            return True

        what = "put_blocks_until_below('small', abort_when=...) at high ('big', 2 units, leased; high 2 units)"
        qq.calls += 1
        try:
            value = qq.q.put_blocks_until_below(small, abort_when=abort_when)
        except Exception as exc:  # noqa: BLE001 - judged below
            if rejection_kind(exc) != "aborted":
                raise Failed(f"{what} raised {type(exc).__name__}: {exc}; it must raise PutAborted") from exc
        else:
            raise Failed(f"{what} returned {value!r}; paused, with abort_when() true, it must raise PutAborted")
        if not seen:
            raise Failed(f"{what} raised PutAborted without consulting abort_when()")
        if seen[0] not in (None, 0):
            raise Failed(
                f"while {what} consulted abort_when() the first time, parked_bytes was {seen[0]!r}, not 0; docs/API.md: "
                f"a ref is parked only once its producer goes to wait, after abort_when() said no, so a one-step "
                f"call parks nothing (D8)"
            )
        parked = qq.call("parked_bytes", lambda: qq.q.parked_bytes)
        if parked != 0 or qq.call("pending_count()", qq.q.pending_count) != 0:
            raise Failed(f"after {what} raised PutAborted, parked_bytes is {parked!r} (0) and pending_count() "
                         f"{qq.q.pending_count()} (0)")
        return qq.calls
    finally:
        qq.close()


def put_duplicate_while_blocked(backend: Backend) -> int:
    qq, lease = _at_high(backend)
    stop = threading.Event()  # the kit's way out: a producer left blocked when the check fails
    try:
        ref = qq.ref("x")
        consults = [0]
        stepped_again = threading.Event()

        def abort_when() -> bool:
            consults[0] += 1
            if consults[0] >= 2:
                stepped_again.set()
            return stop.is_set()

        box: dict[str, Any] = {}
        done = threading.Event()

        def produce() -> None:
            try:
                box["value"] = qq.q.put_blocks_until_below(ref, poll_interval=POLL, abort_when=abort_when)
            except BaseException as exc:  # noqa: BLE001 - judged below
                box["error"] = exc
            finally:
                done.set()

        what = f"put_blocks_until_below('x', poll_interval={POLL}) blocked at high ('big', 2 units, leased)"
        qq.calls += 1
        threading.Thread(target=produce, name="refqueue-calls-put-duplicate-while-blocked", daemon=True).start()
        if not stepped_again.wait(WITHIN):
            if done.is_set():
                raise Failed(f"{what} ended ({box!r}) instead of waiting; at high it waits")
            raise Failed(f"{what} did not consult abort_when() again within {WITHIN} s; it steps every {POLL} s")
        qq.call("put('x') (the same ref, while its blocked producer has it parked)", lambda: qq.q.put(ref))
        qq.call("ack(lease of 'big')", lambda: qq.q.ack(lease))
        if not done.wait(WITHIN):
            raise Failed(f"{what} had not returned {WITHIN} s after the ack of 'big' freed room (and 'x' was put by "
                         f"another call meanwhile)")
        error = box.get("error")
        if error is None or rejection_kind(error) != "duplicate":
            got = f"raised {type(error).__name__}: {error}" if error is not None else f"returned {box.get('value')!r}"
            raise Failed(
                f"{what}, the same ref put meanwhile by a plain put(), {got} once the ack freed room; its next step "
                f"finds 'x' pending and must raise DuplicateSample (docs/API.md: every step's rejections come first)"
            )
        pending = qq.call("pending_count()", qq.q.pending_count)
        if pending != 1:
            raise Failed(f"after the blocked producer's DuplicateSample, pending_count() is {pending}, not 1: 'x' is "
                         f"pending once")
        if hasattr(type(qq.q), "parked_bytes") and qq.call("parked_bytes", lambda: qq.q.parked_bytes) != 0:
            raise Failed(f"after {what} raised DuplicateSample, parked_bytes is {qq.q.parked_bytes!r}, not 0")
        return qq.calls
    finally:
        stop.set()
        qq.close()
