"""The ``calls`` phase's checks that take many calls to show: many dead
letters kept, and the oldest dropped past ``dead_letter_limit``, a large dedup
window, many threads putting one id (or starting a reclaimer) at once, the
counts read while another thread works the queue.
``refqueue.conformance.calls`` lists them (``NAMED_CHECKS``) and says what each
checks (``dead-letters-kept``, ``dead-letter-limit``, ``dedup-window-large``,
``put-duplicate-concurrent``, ``reclaimers-started-at-once``,
``reads-while-busy``);
each runs on a fresh queue (``probe.Probe``).

The walks keep a handful of samples, their dedup windows hold a few ids, and
the threads phase gives each thread its own ids, so a queue that keeps only
its newest hundred dead letters, caps its dedup memory, or whose ``put``
checks for a duplicate and enqueues in two steps, passes them.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from refqueue.conformance.contract import Backend, rejection_kind
from refqueue.conformance.probe import WITHIN, Failed, Probe

__all__ = [
    "DEDUP_LARGE", "KEPT", "LIMIT", "PUTTERS", "PUT_ROUNDS", "dead_letter_limit", "dead_letters_kept", "dedup_window_large",
    "put_duplicate_concurrent", "reclaimers_started_at_once", "START_ROUNDS", "BACKLOG", "BUSY_READS",
    "reads_while_busy",
]

KEPT = 300  # dead letters on one queue: far below docs/API.md's default dead_letter_limit (10,000)
LIMIT = 4  # the dead_letter_limit of dead-letter-limit, which makes LIMIT + 3 dead letters
DEDUP_LARGE = 600  # the dedup window of dedup-window-large: past the round caps a backend may pick (256, 512)
PUTTERS = 4  # threads putting the same ref at once
PUT_ROUNDS = 150  # rounds of them, each on a fresh id
START_ROUNDS = 40  # rounds of PUTTERS threads starting a reclaimer at once
BACKLOG = 1000  # refs pending while reads-while-busy's worker takes, acks and puts
BUSY_READS = 6000  # reads of the counts while the worker takes, acks and puts
BUSY_WITHIN = 60.0  # seconds those reads may take
_SWITCH_S = 1e-5  # the interpreter's thread switch interval during the rounds (default 5 ms): races show


def dead_letters_kept(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        ids = [f"k{n}" for n in range(KEPT)]
        for sample_id in ids:
            _complete(qq, sample_id, dead=True)
        listed = [getattr(getattr(d, "ref", None), "sample_id", None) for d in qq.call("dead_letters()", qq.q.dead_letters)]
        if listed != ids:
            missing = [i for i in ids if i not in listed]
            raise Failed(
                f"after {KEPT} dead letters on a queue made with the default dead_letter_limit (docs/API.md: 10,000), "
                f"dead_letters() lists {len(listed)} ({len(missing)} missing, the first {missing[:3]}"
                f"{'' if listed == [i for i in ids if i in listed] else '; and not in dead-letter order'}); it lists the "
                f"newest dead_letter_limit not yet drained, in dead-letter order"
            )
        dropped = getattr(qq.q, "dead_letters_dropped", 0)
        if dropped != 0:
            raise Failed(f"after {KEPT} dead letters, below the default dead_letter_limit, dead_letters_dropped is {dropped!r}")
        return qq.calls
    finally:
        qq.close()


def dead_letter_limit(backend: Backend) -> int:
    """Past ``dead_letter_limit``, the oldest dead letters are dropped (and
    counted in ``dead_letters_dropped``); draining drops nothing, and the
    limit holds again after a drain."""
    qq = Probe(backend, dead_letter_limit=LIMIT)
    try:
        made = LIMIT + 3
        letters = [(f"L{n}", f"reason {n}") for n in range(made)]
        for sample_id, reason in letters:
            _complete(qq, sample_id, dead=True, reason=reason)
        context = f"after {made} dead letters on a queue made with dead_letter_limit={LIMIT}"
        _expect_letters("dead_letters()", qq.call("dead_letters()", qq.q.dead_letters), letters[-LIMIT:], context)
        _expect_dropped(qq, made - LIMIT, context)
        limit = getattr(qq.q, "dead_letter_limit", LIMIT)
        if limit != LIMIT:
            raise Failed(f"a queue made with dead_letter_limit={LIMIT} has dead_letter_limit {limit!r}")
        if not hasattr(qq.q, "drain_dead_letters"):
            return qq.calls
        drained = qq.call("drain_dead_letters()", qq.q.drain_dead_letters)
        _expect_letters("drain_dead_letters()", drained, letters[-LIMIT:], context)
        _expect_letters("dead_letters()", qq.call("dead_letters()", qq.q.dead_letters), [],
                        f"{context}, once drained")
        _expect_dropped(qq, made - LIMIT, f"{context} and a drain (draining drops nothing)")
        again = [(f"M{n}", "again") for n in range(LIMIT + 1)]
        for sample_id, reason in again:
            _complete(qq, sample_id, dead=True, reason=reason)
        context = f"{context}, a drain and {LIMIT + 1} more"
        _expect_letters("dead_letters()", qq.call("dead_letters()", qq.q.dead_letters), again[-LIMIT:], context)
        _expect_dropped(qq, made - LIMIT + 1, context)
    finally:
        qq.close()
    return qq.calls + _keep_none(backend)


def _keep_none(backend: Backend) -> int:
    """``dead_letter_limit=0`` keeps no dead letter (each one dropped and counted), not every one."""
    qq = Probe(backend, dead_letter_limit=0)
    try:
        for n in range(2):
            _complete(qq, f"Z{n}", dead=True, reason="kit")
        context = "after 2 dead letters on a queue made with dead_letter_limit=0 (docs/API.md: 0 keeps none)"
        _expect_letters("dead_letters()", qq.call("dead_letters()", qq.q.dead_letters), [], context)
        _expect_dropped(qq, 2, context)
        return qq.calls
    finally:
        qq.close()


def _expect_letters(call: str, got: Any, want: list[tuple[str, str]], context: str) -> None:
    listed = [(getattr(getattr(d, "ref", None), "sample_id", None), getattr(d, "reason", None)) for d in got]
    if listed != want:
        raise Failed(
            f"{context}, {call} lists {[sid for sid, _ in listed]} (reasons {[r for _, r in listed]}); docs/API.md: "
            f"the newest dead_letter_limit not yet drained, in dead-letter order (so {[sid for sid, _ in want]}), "
            f"the oldest dropped first"
        )


def _expect_dropped(qq: Probe, want: int, context: str) -> None:
    if not hasattr(qq.q, "dead_letters_dropped"):
        return
    dropped = qq.call("dead_letters_dropped", lambda: qq.q.dead_letters_dropped)
    if dropped != want:
        raise Failed(f"{context}, dead_letters_dropped is {dropped!r}, not {want} (the dead letters dropped to keep "
                     f"the limit)")


def dedup_window_large(backend: Backend) -> int:
    qq = Probe(backend, dedup_window=DEDUP_LARGE)
    try:
        ids = [f"u{n:04d}" for n in range(DEDUP_LARGE + 1)]
        for n, sample_id in enumerate(ids[:DEDUP_LARGE]):
            _complete(qq, sample_id, dead=n % 10 == 9)  # every tenth dead-lettered: it counts as completed (D5)
        for sample_id, which in ((ids[0], "oldest"), (ids[9], "dead-lettered"), (ids[DEDUP_LARGE - 1], "newest")):
            qq.refuses_replay(sample_id, f"put({sample_id!r}) again, the {which} of {DEDUP_LARGE} ids completed on a "
                                         f"queue made with dedup_window={DEDUP_LARGE}")
        _complete(qq, ids[DEDUP_LARGE], dead=False)  # one more: the oldest leaves the window
        first = qq.ref(ids[0])
        qq.call(f"put({ids[0]!r}) after {DEDUP_LARGE} newer ids completed (it left the dedup window)",
                lambda: qq.q.put(first))
        _complete(qq, ids[0], dead=False, put=False)
        qq.expect_counts((0, 0, 0), f"every one of the {DEDUP_LARGE + 2} samples completed")
        return qq.calls
    finally:
        qq.close()


def _complete(qq: Probe, sample_id: str, *, dead: bool, put: bool = True, reason: str = "kit") -> None:
    """Put (unless ``put`` is False), acquire and ack (or dead-letter with ``reason``) ``sample_id``."""
    if put:
        lease = qq.leased(sample_id)
    else:
        lease = qq.acquire(f"acquire() with {sample_id!r} pending")
        if lease is None or getattr(getattr(lease, "ref", None), "sample_id", None) != sample_id:
            raise Failed(f"acquire() with only {sample_id!r} pending returned {lease!r}")
    if dead:
        done = qq.call(f"dead_letter(lease of {sample_id!r}, {reason!r})", lambda: qq.q.dead_letter(lease, reason))
    else:
        done = qq.call(f"ack(lease of {sample_id!r})", lambda: qq.q.ack(lease))
    if done is not True:
        raise Failed(f"{'dead_letter' if dead else 'ack'} of the live lease on {sample_id!r} did not return True")


def put_duplicate_concurrent(backend: Backend) -> int:
    qq = Probe(backend)
    switch = sys.getswitchinterval()
    try:
        sys.setswitchinterval(_SWITCH_S)
        for round_ in range(PUT_ROUNDS):
            ref = qq.ref(f"d{round_}")
            before = qq.call("pending_count()", qq.q.pending_count)
            outcomes = _put_at_once(qq, ref)
            accepted = [o for o in outcomes if o is None]
            wrong = [o for o in outcomes if o is not None and rejection_kind(o) != "duplicate"]
            if wrong:
                raise Failed(f"{PUTTERS} threads put({ref.sample_id!r}) at once: one raised {type(wrong[0]).__name__}: "
                             f"{wrong[0]}; all but one must raise DuplicateSample")  # fmt: skip
            pending = qq.call("pending_count()", qq.q.pending_count)
            if len(accepted) != 1 or pending != before + 1:
                raise Failed(
                    f"{PUTTERS} threads put({ref.sample_id!r}) of one new ref at once (round {round_ + 1} of "
                    f"{PUT_ROUNDS}): {len(accepted)} returned and pending_count() went from {before} to {pending}; "
                    f"docs/API.md: a put of an id pending or leased raises DuplicateSample, so exactly one is "
                    f"accepted and the id is pending once (a put that checks for the id and enqueues in two steps "
                    f"lets two in)"
                )
        return qq.calls
    finally:
        sys.setswitchinterval(switch)
        qq.close()


def _put_at_once(qq: Probe, ref: Any) -> list[BaseException | None]:
    """``PUTTERS`` threads call ``put(ref)`` on one barrier: what each got (None: returned)."""
    return _at_once(qq, f"put({ref.sample_id!r})", lambda: qq.q.put(ref))


def _at_once(qq: Probe, what: str, call: Any) -> list[BaseException | None]:
    """``PUTTERS`` threads make ``call`` on one barrier: what each got (None: returned)."""
    outcomes: list[BaseException | None] = []
    start = threading.Barrier(PUTTERS, timeout=WITHIN)

    def caller() -> None:
        try:
            start.wait()
            call()
        except BaseException as exc:  # noqa: BLE001 - judged by the caller
            outcomes.append(exc)
        else:
            outcomes.append(None)

    threads = [threading.Thread(target=caller, daemon=True) for _ in range(PUTTERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WITHIN)
        if thread.is_alive():
            raise Failed(f"{PUTTERS} threads calling {what} at once had not all returned after {WITHIN} s")
    qq.calls += PUTTERS
    return outcomes


def reclaimers_started_at_once(backend: Backend) -> int:
    qq = Probe(backend)
    switch = sys.getswitchinterval()
    try:
        sys.setswitchinterval(_SWITCH_S)
        for round_ in range(START_ROUNDS):
            outcomes = _at_once(qq, "start_reclaimer(60.0)", lambda: qq.q.start_reclaimer(60.0))
            started = [o for o in outcomes if o is None]
            wrong = [o for o in outcomes if o is not None and not isinstance(o, RuntimeError)]
            if wrong:
                raise Failed(f"{PUTTERS} threads called start_reclaimer(60.0) at once: one raised "
                             f"{type(wrong[0]).__name__}: {wrong[0]}; all but one must raise RuntimeError")
            if len(started) != 1:
                raise Failed(
                    f"{PUTTERS} threads called start_reclaimer(60.0) at once on a queue with no reclaimer (round "
                    f"{round_ + 1} of {START_ROUNDS}): {len(started)} returned; docs/API.md: start_reclaimer is atomic, "
                    f"one reclaimer runs and a second start raises RuntimeError (one that checks and records in two "
                    f"steps starts two, and stop_reclaimer stops one of them)"
                )
            qq.call("stop_reclaimer()", qq.q.stop_reclaimer)
        return qq.calls
    finally:
        sys.setswitchinterval(switch)
        qq.close()


def reads_while_busy(backend: Backend) -> int:
    """While one thread takes, acks and puts (``BACKLOG`` refs pending), another
    reads ``pending_count()``, ``outstanding_count()``, ``is_paused`` and
    ``parked_bytes`` over and over, ``BUSY_READS`` reads: every read returns,
    and each is a value the queue had (pending ``BACKLOG - 1`` or ``BACKLOG``,
    outstanding 0 or 1).  A count that walks the queue's records without its
    lock raises (``dictionary changed size during iteration``) or answers a
    number between two states."""
    qq = Probe(backend)
    switch = sys.getswitchinterval()
    try:
        for n in range(BACKLOG):
            ref = qq.ref(f"b{n}")
            qq.call(f"put('b{n}')", lambda: qq.q.put(ref))
        reads: list[tuple[str, Any, frozenset[Any]]] = [
            ("pending_count()", qq.q.pending_count, frozenset({BACKLOG - 1, BACKLOG})),
            ("outstanding_count()", qq.q.outstanding_count, frozenset({0, 1})),
            ("is_paused", lambda: qq.q.is_paused, frozenset({False})),
        ]
        if hasattr(type(qq.q), "parked_bytes"):
            reads.append(("parked_bytes", lambda: qq.q.parked_bytes, frozenset({0})))
        read_enough = threading.Event()  # the reader is done (or failed): the worker stops
        trouble: list[str] = []
        rounds = [0]

        def work() -> None:
            try:
                while not read_enough.is_set():
                    lease = qq.q.acquire_nowait() if qq.caps.acquire_nowait else qq.q.acquire(poll_interval=0.001)
                    if lease is None:
                        trouble.append(f"the worker's acquire() returned None with {BACKLOG} refs pending")
                        return
                    qq.q.ack(lease)
                    qq.q.put(qq.ref(f"n{rounds[0]}"))
                    rounds[0] += 1
            except BaseException as exc:  # noqa: BLE001 - reported below
                trouble.append(f"the worker's call raised {type(exc).__name__}: {exc}")

        reads_made = [0]
        wrong: list[str] = []

        def read() -> None:
            try:
                while reads_made[0] < BUSY_READS and not trouble:
                    for what, fn, legal in reads:
                        try:
                            value = fn()
                        except BaseException as exc:  # noqa: BLE001 - judged below
                            wrong.append(f"{what} raised {type(exc).__name__}: {exc}")
                            return
                        reads_made[0] += 1
                        if value not in legal:
                            wrong.append(f"{what} returned {value!r}; the queue only ever held {sorted(legal)}")
                            return
            finally:
                read_enough.set()

        sys.setswitchinterval(_SWITCH_S)
        worker = threading.Thread(target=work, name="refqueue-calls-busy-worker", daemon=True)
        reader = threading.Thread(target=read, name="refqueue-calls-reads-while-busy", daemon=True)
        worker.start()
        reader.start()
        reader.join(BUSY_WITHIN)
        read_enough.set()
        worker.join(WITHIN)
        sys.setswitchinterval(switch)
        qq.calls += 3 * rounds[0] + reads_made[0]
        if wrong:
            raise Failed(
                f"while another thread took, acked and put ({rounds[0]} rounds, {BACKLOG} refs pending), after "
                f"{reads_made[0]} reads of the counts: {wrong[0]}; docs/API.md: every call is thread-safe, and a "
                f"count reads one state of the queue"
            )
        if trouble:
            raise Failed(trouble[0])
        if reader.is_alive() or worker.is_alive():
            raise Failed(f"{BUSY_READS} reads of the counts beside a thread taking, acking and putting had not ended "
                         f"after {BUSY_WITHIN} s (only {reads_made[0]} made)")
        return qq.calls
    finally:
        sys.setswitchinterval(switch)
        qq.close()
