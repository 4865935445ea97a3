"""The ``calls`` phase's check of when the background reclaimer's thread ends
(docs/API.md, "The reclaimer's life").  ``refqueue.conformance.calls`` lists
it after its own:

``reclaimer-ends``
    the thread ``start_reclaimer(RECLAIMER_INTERVAL)`` starts (found as the
    threads of this process that appeared) has ended when ``close()`` of a
    drained queue returns (it joins it); on a queue closed with a lease
    outstanding it ends by itself once the ack of that lease drains the
    queue; and a queue dropped without ``close()`` is collected and its
    reclaimer ends (the thread holds its queue weakly).  Each wait is
    bounded by ``WITHIN`` seconds.  A reclaimer that is no thread of this
    process (none appears) is listed as not run.  A reclaimer that outlives
    its queue leaks a thread (and the queue, with everything it holds) per
    queue a long-lived process makes and forgets.
"""

from __future__ import annotations

import gc
import threading
from typing import Any

from refqueue.conformance.contract import Backend
from refqueue.conformance.probe import WITHIN, Failed, NotRun, Probe
from refqueue.conformance.samples import default_store

__all__ = ["RECLAIMER_INTERVAL", "reclaimer_ends"]

RECLAIMER_INTERVAL = 0.01  # seconds between the reclaimer's passes


def _started(qq: Probe, q: Any, what: str) -> list[threading.Thread]:
    """``q.start_reclaimer(RECLAIMER_INTERVAL)``: the threads that appeared (NotRun when none did)."""
    before = set(threading.enumerate())
    qq.call(what, lambda: q.start_reclaimer(RECLAIMER_INTERVAL))
    threads = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    if not threads:
        raise NotRun(f"{what} started no thread in this process: the reclaimer runs elsewhere, its end unseen")
    return threads


def _ended(threads: list[threading.Thread], within: float) -> list[threading.Thread]:
    """The threads still alive after waiting up to ``within`` seconds for them all."""
    for thread in threads:
        thread.join(within)
    return [t for t in threads if t.is_alive()]


def reclaimer_ends(backend: Backend) -> int:
    calls = 0
    what = f"start_reclaimer({RECLAIMER_INTERVAL})"
    # a drained queue's close() joins its reclaimer
    qq = Probe(backend)
    try:
        threads = _started(qq, qq.q, what)
        qq.call("close() of the empty queue (drained)", qq.q.close)
        alive = _ended(threads, 1.0)
        if alive:
            raise Failed(f"close() of a drained queue returned with its reclaimer's thread {alive[0].name!r} still "
                         f"running 1.0 s later; docs/API.md: close() stops the reclaimer of a drained queue at once, "
                         f"joining it")
        calls += qq.calls
    finally:
        qq.close()
    # closed with a lease out: the reclaimer runs on, and ends by itself once the ack drains the queue
    qq = Probe(backend)
    try:
        lease = qq.leased("r0")
        threads = _started(qq, qq.q, what)
        qq.call("close() with the lease on 'r0' outstanding", qq.q.close)
        if qq.call("ack(lease of 'r0')", lambda: qq.q.ack(lease)) is not True:
            raise Failed("ack of the live lease on 'r0' after close() did not return True")
        alive = _ended(threads, WITHIN)
        if alive:
            raise Failed(f"the ack that drained the closed queue returned and its reclaimer's thread "
                         f"{alive[0].name!r} was still running {WITHIN} s later (every {RECLAIMER_INTERVAL} s); "
                         f"docs/API.md: the reclaimer ends by itself on its first tick after the queue is drained")
        calls += qq.calls
    finally:
        qq.close()
    # dropped without close(): collected, and its reclaimer ends
    store = backend.make_store() if backend.make_store is not None else default_store()
    try:
        threads, made = _forgotten(backend, store, what)
        calls += made
        alive = _ended(threads, 0.2)
        if alive:
            gc.collect()  # a cycle inside the backend's queue is still collectable: not its fault
            alive = _ended(alive, WITHIN)
        if alive:
            raise Failed(
                f"a queue dropped without close() after {what} (nothing else referring to it) still had its "
                f"reclaimer's thread {alive[0].name!r} running {WITHIN} s after a full garbage collection; "
                f"docs/API.md: the thread holds its queue by a weak reference only, so a dropped queue is collected "
                f"and its reclaimer ends at once"
            )
    finally:
        try:
            store.close()
        except Exception:  # noqa: BLE001 - the check is judged
            pass
    return calls


def _forgotten(backend: Backend, store: Any, what: str) -> tuple[list[threading.Thread], int]:
    """A queue on ``store`` with its reclaimer started, then let go: its
    reclaimer's threads and the calls made (no reference to the queue is left
    in this frame or the probe's)."""
    qq = Probe(backend, store=store)
    try:
        threads = _started(qq, qq.q, what)
        return threads, qq.calls
    finally:
        del qq.q  # the probe's reference: the queue's last one, unless the backend keeps it
