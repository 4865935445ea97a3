"""The ``calls`` phase: values and calls the other phases never make.

The walks, the lockstep machine and the threads phase pass short finite poll
intervals, one queue per store, leases as the queue made them and stores
that never fail.  Each check here makes one such call on a fresh queue of
the backend, bounded in time, and compares what it sees with docs/API.md
(and, for the soak, with the reference model through the ``Harness``):

``acquire-poll-inf``
    ``acquire(poll_interval=math.inf)`` returns a pending ref's lease at once
    (so does ``float("inf")``, an infinity equal to it but not the same
    object), and ``None`` on a closed, drained queue (each call runs in a
    thread joined with a timeout of ``WITHIN`` seconds: a call that hangs
    fails); ``acquire()`` with its default poll interval (0.05 s) answers
    ``None`` on an empty open queue within ``DEFAULT_POLL_WITHIN`` seconds.
``reclaimer-twice``
    ``start_reclaimer()`` twice: the second raises ``RuntimeError`` (one
    runs); ``stop_reclaimer()`` stops it, a second ``stop_reclaimer()`` is a
    no-op, and a new ``start_reclaimer()`` then starts one (then stopped).
``with-queue``
    ``with queue as q:`` gives the queue itself and starts nothing on entry
    (a ``start_reclaimer()`` inside the block starts one); on exit the queue
    is closed, its reclaimer stopped (``start_reclaimer()`` starts one
    again) and the store still open (``store.health()`` answers, a sample
    put and scrubbed); a block that raises
    closes the queue and stops its reclaimer too, its exception let through.
``lease-epoch-empty`` / ``lease-epoch-altered``
    a copy of a live lease whose ``epoch`` was set (``object.__setattr__``) to
    ``""`` or to another string is refused by ``ack``, ``fail`` and (where
    declared) ``extend`` and ``dead_letter`` as a foreign lease; nothing
    changes, and the real lease still acks.
``two-queues-one-store``
    two queues the factory made on the *same* store have different epochs,
    and each refuses the other's lease as foreign.
``leases-across-clients``
    with a second client of the queue (``open_client``, on a clock running
    ahead): four leases acquired through the two clients in turn have four
    (epoch, lease_id) identities and, on the kit's clock, the deadline of the
    queue's clock + timeout; each acks through the other client.  A client
    that mints its own lease ids or reads its own machine's clock shows at
    the second client's first acquire (the deadline soak found both only
    after thousands of calls).
``lease-ids-from-1``
    the first lease of a fresh queue has ``lease_id`` 1 (an ``int``), the
    second a larger one: docs/API.md, ids count up from 1.
``lease-id-below-1``
    a copy of a live lease whose ``lease_id`` was set to 0 or a negative int
    is refused with ``ValueError`` by ``ack``, ``fail`` and (where declared)
    ``extend`` and ``dead_letter``, never answered ``False``; nothing
    changes, and the real lease still acks.
``dead-letters-copied``
    (where ``dead_letter`` is declared) after one ``dead_letter``, a caller
    appends to and clears the list ``dead_letters()`` returned; the next
    ``dead_letters()`` still lists that one dead letter: the queue handed
    out a copy, not its own list.  The letter itself is frozen: setting its
    ``reason`` raises ``AttributeError`` and ``hash()`` of it answers.
``lease-id-not-int``
    the same with ``lease_id`` set to ``True`` (equal to the live id 1), a
    float or an ``int`` subclass: ``TypeError``, nothing changes.
``lease-fields``
    on a queue made with an odd timeout and clock (``ODD_TIMEOUT``,
    ``ODD_CLOCK``), a lease carries that timeout and the deadline
    ``clock + timeout``.
``durations-above-max`` / ``durations-not-positive``
    ``extend(lease, 1e300)`` (and ``2 * threading.TIMEOUT_MAX``; then 0,
    negative seconds, nan), ``acquire(poll_interval=...)``,
    ``put_blocks_until_below(ref, poll_interval=...)`` and
    ``start_reclaimer(...)`` of such a value raise ``ValueError`` (each in a
    thread joined with a timeout: one that takes the interval fails);
    nothing changes, and the lease still extends and acks.
``dead-letter-reason``
    ``dead_letter(lease, reason)`` of a reason that is no non-empty str is a
    ``TypeError``/``ValueError``; nothing changes.
``dead-letter-reasons-kept``
    ``dead_letters()`` lists each reason exactly as ``dead_letter`` was given
    it (``calls_inputs.ODD_REASONS``: one letter, spaces at the ends, lines,
    separators and quotes, text beyond ASCII, a NUL, 4 KiB): the walks give
    only ``"poison"``.
``sample-ids-exact``
    ids that a loose comparison takes for one (``calls_inputs.LOOKALIKE_IDS``:
    ``"Sample-A"``/``"sample-a"``, ``"x"``/``"x "``/``" x"``, ``"é"`` in NFC
    and NFD, ``"A"``/fullwidth ``"Ａ"``, ``"ß"``/``"ss"``, a 1 KiB id) are all
    put, delivered in put order exactly as given and acked.
``dedup-ids-exact``
    the same lookalikes, and ``"s"``, ``"0"``, ``"s,"`` (pieces of
    ``"s,0"``), on a queue with a dedup window, each put, acquired and acked
    before the next is put: none is refused as a replay of one completed
    before it (a window that casefolds or normalises ids, or keeps them
    joined in one string, refuses some); the first id put again is.
``refs-delivered-intact``
    refs whose metadata a backend that stores them by hand gets wrong
    (``calls_inputs.RICH_META``: versions as ints and as strs, a run id
    beyond ASCII and with quotes, a version of ``2**62``) come back in their
    leases equal field by field, each field of the type put.
``foreign-uri-same-scheme``
    ``put`` of a ref of another store whose URI shares this store's scheme
    is a ``ValueError``; nothing changes.
``scrub-fails``
    a store whose ``scrub`` raises on demand: ``ack`` (and ``dead_letter``,
    where declared) of a live lease raises and commits nothing (the lease
    is still outstanding, nothing pending, the data resident, no dead
    letter); once scrubbing works again the same lease acks.
``scrub-fails-keeps-windows`` / ``put-health-fails`` / ``reclaim-scrub-fails`` / ``clock-fails`` / ``reclaimer-error-kept``
    ``refqueue.conformance.calls_failures`` (an ack's or dead-letter's failed
    scrub against the dedup window and the kept dead letters; a blocking
    put whose store's health() raises; a reclaim's
    dead-letter scrub that raises; a clock that raises under acquire, extend
    and reclaim; the background reclaimer's reclaim that raises),
    which says what each checks.
``json-round-trip``
    ``SampleRef.from_json(ref.to_json())`` and (with ``lease_json``)
    ``type(lease).from_json(lease.to_json())`` (and of its bytes) of a
    redelivered lease, on the odd clock and timeout, equal the original
    *field by field* (ref, deadline, visibility timeout, redelivery_count,
    lease_id, epoch), whatever the class's ``==`` compares, and the
    round-tripped lease acks.  Its sample id and run id go beyond ASCII and
    its versions are ints (``samples.RICH_META``).
``lease-json-hostile``
    ``type(lease).from_json`` of text that is no lease's JSON raises
    ``ValueError``/``TypeError``, never another exception.
``deadline-soak``
    one queue holding ``SOAK`` leases at once, with distinct deadlines, some
    extended by other amounts and some failed and taken again, reclaimed in
    small steps of time: every reclaim count and observable agrees with the
    model (a deadline heap that loses entries past a thousand shows here).
``callback-own-health``, ``deadline-heap-interleaved``, ``dead-letters-drained-copied``, ``drain-concurrent``, ``orphans-collected``
    ``refqueue.conformance.calls_state`` (what a callback receives, lists a
    call returned, the deadline index under a long interleaving, dead
    letters drained while others are made, orphans collected through the
    store), which says what each checks.
``dead-letters-kept``, ``dedup-window-large``, ``put-duplicate-concurrent``, ``reclaimers-started-at-once``, ``reads-while-busy``
    ``refqueue.conformance.calls_many`` (hundreds of dead letters kept; a
    dedup window of hundreds of ids; four threads putting one id, or
    starting a reclaimer, at once; the counts read while another thread
    works the queue),
    which says what each checks.
``reclaim-sub-ms``, ``reclaim-nan-clock``, ``extend-while-clock-read``
    ``refqueue.conformance.calls_clock`` (deadlines less than a millisecond
    apart; a clock that reads NaN; a lease re-leased while extend reads the
    clock), which says what each checks.
``reclaimer-ends``
    ``refqueue.conformance.calls_reclaimer`` (when the reclaimer's thread
    ends: at a drained queue's close, at a closed queue's drain, when its
    queue is dropped), which says what it checks.
``one-step-parks-nothing``, ``put-duplicate-while-blocked``
    ``refqueue.conformance.calls_puts`` (the steps of a blocking put: a
    one-step call parks nothing; every step validates the ref), which says
    what each checks.
``pending-many``, ``lease-ids-many``
    ``refqueue.conformance.calls_scale`` (5,000 refs pending and reclaimed by
    one call; leases past 2**16 on one queue), which says what each checks.

A check whose capability the backend declares absent is listed as not run,
with the reason; it never passes.  An exception of the backend that escapes
a check (a call it lacks, a store that refused the check's data) fails that
check, naming the call and the exception (``refqueue.conformance.crash``).  The checks are ``NAMED_CHECKS``, run in
that order by ``check_calls``; a failure's replay runs the failing check again.

Imports: ``calls_inputs``, ``calls_leases``, ``calls_many``, ``calls_puts``, ``calls_reclaimer``, ``calls_scale``,
``calls_state``, ``calls_clock`` and ``calls_failures`` (the checks kept there), ``probe``
(the queue each check makes), ``harness`` (the soak), ``samples``,
``render``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from refqueue.conformance.contract import Backend, load_backend
from refqueue.conformance.crash import blame
from refqueue.conformance.calls_clock import extend_while_clock_read, reclaim_nan_clock, reclaim_sub_ms
from refqueue.conformance.calls_failures import (
    clock_fails, put_health_fails, reclaim_scrub_fails, reclaimer_error_kept, scrub_fails_keeps_windows,
)  # fmt: skip
from refqueue.conformance.calls_inputs import (
    dead_letter_reason, dead_letter_reasons_kept, dedup_ids_exact, durations_above_max, durations_not_positive,
    foreign_uri_same_scheme, refs_delivered_intact, sample_ids_exact,
)  # fmt: skip
from refqueue.conformance.calls_leases import (
    altered_epoch, json_round_trip, lease_fields, lease_id_below_1, lease_id_not_int, lease_ids_from_1,
    lease_json_hostile, leases_across_clients, two_queues_one_store,
)  # fmt: skip
from refqueue.conformance.calls_reclaimer import reclaimer_ends
from refqueue.conformance.calls_puts import one_step_parks_nothing, put_duplicate_while_blocked
from refqueue.conformance.calls_many import (
    BACKLOG, BUSY_READS, DEDUP_LARGE, KEPT, LIMIT, PUT_ROUNDS, PUTTERS, START_ROUNDS, dead_letter_limit,
    dead_letters_kept, dedup_window_large, put_duplicate_concurrent, reads_while_busy, reclaimers_started_at_once,
)  # fmt: skip
from refqueue.conformance.calls_scale import LEASES_MANY, PENDING_MANY, lease_ids_many, pending_many
from refqueue.conformance.calls_state import (
    callback_own_health, dead_letters_drained_copied, deadline_heap_interleaved, drain_concurrent, orphans_collected,
)  # fmt: skip
from refqueue.conformance.harness import Divergence, Harness, ModelConfig
from refqueue.conformance.phase import (
    Check, ChecksReport, Context, PhaseBase, PhaseResult, checks_counts, checks_doc, checks_result, select_checks,
)  # fmt: skip
from refqueue.conformance.probe import (
    WITHIN, Failed, NotRun, Probe, ScrubSwitch, bounded, raises_while_scrubs_fail, scrub_switch_probe,
)  # fmt: skip
from refqueue.conformance.render import replay_module
from refqueue.conformance.session import open_clients

__all__ = ["CHECKS", "NAMED_CHECKS", "PHASE", "SOAK", "WITHIN", "CallsReport", "ScrubSwitch", "check_calls"]

SOAK = 1200  # leases outstanding at once in the deadline soak
DEFAULT_POLL_WITHIN = 0.5  # seconds an acquire() with the default poll interval (0.05 s) may take to answer None
CallsReport = ChecksReport


# -- the checks ----------------------------------------------------------------------


def _acquire_poll_inf(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        ref = qq.ref("a")
        qq.call("put('a')", lambda: qq.q.put(ref))
        lease = bounded("acquire(poll_interval=math.inf) with 'a' pending", lambda: qq.q.acquire(poll_interval=math.inf))
        if lease is None or lease.ref.sample_id != "a":
            raise Failed(f"acquire(poll_interval=math.inf) with 'a' pending returned {lease!r}; expected a lease on 'a'")
        if qq.call("ack(lease)", lambda: qq.q.ack(lease)) is not True:
            raise Failed("ack of the lease acquire(poll_interval=math.inf) returned did not return True")
        # an infinity made at run time (float("inf"), numpy.inf, 1e308 * 10) is math.inf by value, not by identity
        inf = float("inf")
        ref = qq.ref("b")
        qq.call("put('b')", lambda: qq.q.put(ref))
        lease = bounded("acquire(poll_interval=float('inf')) with 'b' pending", lambda: qq.q.acquire(poll_interval=inf))
        if lease is None or lease.ref.sample_id != "b":
            raise Failed(f"acquire(poll_interval=float('inf')) with 'b' pending returned {lease!r}; expected a lease on "
                         f"'b' (docs/API.md: the poll intervals take math.inf, any float equal to it)")
        qq.call("ack(lease of 'b')", lambda: qq.q.ack(lease))
        # the default poll interval (docs/API.md: acquire(poll_interval=0.05)): an empty open queue answers None soon
        started = time.monotonic()
        got = bounded("acquire() on an empty open queue", qq.q.acquire)
        waited = time.monotonic() - started
        if got is not None:
            raise Failed(f"acquire() on an empty open queue returned {got!r}; expected None after its poll interval")
        if waited > DEFAULT_POLL_WITHIN:
            raise Failed(f"acquire() on an empty open queue returned None after {waited:.2f} s; docs/API.md: its "
                         f"poll_interval defaults to 0.05 s (judged with a bound of {DEFAULT_POLL_WITHIN} s)")
        qq.call("close()", qq.q.close)
        got = bounded("acquire(poll_interval=math.inf) on a closed, drained queue", lambda: qq.q.acquire(poll_interval=math.inf))
        if got is not None:
            raise Failed(f"acquire(poll_interval=math.inf) on a closed, drained queue returned {got!r}; expected None")
        return qq.calls + 4
    finally:
        qq.close()


def _reclaimer_twice(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        qq.call("start_reclaimer()", qq.q.start_reclaimer)
        qq.calls += 1
        try:
            qq.q.start_reclaimer()
        except RuntimeError:
            pass
        except Exception as exc:  # noqa: BLE001
            raise Failed(f"a second start_reclaimer() raised {type(exc).__name__}: {exc}; docs/API.md says RuntimeError") from exc
        else:
            raise Failed("a second start_reclaimer() returned; docs/API.md says RuntimeError (one is already running)")
        qq.call("stop_reclaimer()", qq.q.stop_reclaimer)
        qq.call("a second stop_reclaimer()", qq.q.stop_reclaimer)
        qq.call("start_reclaimer() after stop_reclaimer()", qq.q.start_reclaimer)
        qq.call("stop_reclaimer()", qq.q.stop_reclaimer)
        return qq.calls
    finally:
        qq.close()


def _with_queue(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        if not hasattr(type(qq.q), "__enter__") or not hasattr(type(qq.q), "__exit__"):
            raise Failed(f"{type(qq.q).__name__} has no __enter__/__exit__; docs/API.md: `with queue as q:` closes it")
        ref = qq.ref("a")
        with qq.q as entered:
            if entered is not qq.q:
                raise Failed(f"`with queue as q:` bound q to {entered!r}, not the queue")
            if qq.q.is_closed:
                raise Failed("`with queue as q:` closed the queue on entry; it starts and closes nothing on entry")
            if qq.caps.reclaimer:  # nothing was started on entry: the user's own reclaimer starts
                qq.call("start_reclaimer() inside the with block (docs/API.md: `with queue:` starts nothing on entry)",
                        qq.q.start_reclaimer)
            qq.call("put('a') inside the with block", lambda: qq.q.put(ref))
        qq.calls += 1
        if not qq.q.is_closed:
            raise Failed("after `with queue:` exited, is_closed is False; the exit closes the queue")
        qq.call("store.health() after `with queue:` exited (the store stays open)", qq.store.health)
        orphan = qq.ref("b")  # a store closed behind the user's back refuses a put (health() may still answer)
        if qq.call("store.scrub(a sample put after `with queue:` exited; the store stays open)",
                   lambda: qq.store.scrub(orphan)) is not True:
            raise Failed("store.scrub of a sample put after `with queue:` exited did not return True; the exit closes "
                         "the queue, never the store")
        if qq.q.pending_count() != 1:
            raise Failed(f"after `with queue:` exited, pending_count() is {qq.q.pending_count()}; close drops nothing")
        qq.call("start_reclaimer() after `with queue:` exited (the exit stopped the reclaimer)", qq.q.start_reclaimer)
        qq.call("stop_reclaimer()", qq.q.stop_reclaimer)
    finally:
        qq.close()
    return qq.calls + _with_queue_raising(backend)


class _BlockRaised(Exception):
    """What the block of ``with-queue``'s second ``with queue:`` raises."""


def _with_queue_raising(backend: Backend) -> int:
    """A ``with queue:`` block that raises: the exit closes the queue all the same."""
    qq = Probe(backend)
    try:
        qq.call("start_reclaimer()", qq.q.start_reclaimer)
        try:
            with qq.q:
                raise _BlockRaised("the kit's with block raised on purpose")
        except _BlockRaised:
            pass
        except Exception as exc:  # noqa: BLE001 - the exit raised another exception: judged here
            raise Failed(f"`with queue:` whose block raised: the exit raised {type(exc).__name__}: {exc} instead of "
                         f"letting the block's exception through") from exc
        else:
            raise Failed("`with queue:` whose block raised swallowed the exception; its exit must let it through")
        qq.calls += 1
        if not qq.q.is_closed:
            raise Failed("after `with queue:` whose block raised, is_closed is False; the exit closes the queue "
                         "however the block ends (docs/API.md)")
        qq.call("start_reclaimer() after `with queue:` whose block raised (the exit stopped the reclaimer)",
                qq.q.start_reclaimer)
        qq.call("stop_reclaimer()", qq.q.stop_reclaimer)
        return qq.calls
    finally:
        qq.close()


def _dedup_across_clients(backend: Backend) -> int:
    """A sample completed through one client is a replay to the other's put
    (D5 holds for the queue, not for each client): each way round."""
    if backend.open_client is None:
        raise NotRun("one client: the factory has no open_client (or the run passed clients=1)")
    qq = Probe(backend, dedup_window=4)
    try:
        # open_clients' second client: its machine runs ahead
        other = qq.call("open_client(queue)", lambda: open_clients(backend, qq.q, qq.store, qq.clock, 2)[1])
        clients = {"A": qq.q, "B": other}
        for done_by, put_by, sample_id in (("B", "A", "s0"), ("A", "B", "s1")):
            ref = qq.ref(sample_id)
            qq.call(f"{put_by}.put({sample_id!r})", lambda: clients[put_by].put(ref))
            lease = qq.acquire(f"{done_by}.acquire()", clients[done_by])
            if lease is None or lease.ref.sample_id != sample_id:
                raise Failed(f"{done_by}.acquire() with only {sample_id!r} pending returned {lease!r}")
            if qq.call(f"{done_by}.ack(its lease)", lambda: clients[done_by].ack(lease)) is not True:
                raise Failed(f"{done_by}.ack of its live lease on {sample_id!r} did not return True")
            qq.refuses_replay(sample_id, f"{put_by}.put({sample_id!r}) again, completed through {done_by} within "
                                         f"dedup_window=4", clients[put_by])  # (the producer made the sample again)
            qq.expect_counts((0, 0, 0), f"the replay of {sample_id!r} through {put_by} was refused")
        return qq.calls
    finally:
        qq.close()


def _scrub_fails(backend: Backend) -> int:
    qq, store = scrub_switch_probe(backend)
    try:
        calls: list[tuple[str, Callable[[Any], Any]]] = [("ack", lambda lease: qq.q.ack(lease))]
        if qq.caps.dead_letter:
            calls.append(("dead_letter", lambda lease: qq.q.dead_letter(lease, "poison")))
        for k, (name, call) in enumerate(calls):
            lease = qq.leased(f"s{k}")
            before = qq.counts()
            dead = list(qq.q.dead_letters()) if qq.caps.dead_letter or qq.caps.max_deliveries else None
            raises_while_scrubs_fail(qq, store, f"{name}(lease)", lambda: call(lease))
            if store.scrubs_refused == 0:
                raise Failed(f"{name}(lease) of a live lease never called store.scrub")
            qq.expect_counts(before, f"{name}(lease) whose scrub raised (nothing commits)")
            if dead is not None and list(qq.q.dead_letters()) != dead:
                raise Failed(f"after {name}(lease) whose scrub raised, dead_letters() changed; nothing commits")
            store.scrubs_refused = 0
            if qq.call(f"{name}(lease) again, the store scrubbing", lambda: call(lease)) is not True:
                raise Failed(f"{name}(lease) again, once the store scrubs, did not return True: the lease must still be live")
        return qq.calls
    finally:
        qq.close()


def _deadline_soak(backend: Backend) -> int:
    ids = [f"s{i:04d}" for i in range(SOAK)]
    h = Harness(backend, ModelConfig(visibility_timeout=4 * SOAK), sizes={sid: 1 for sid in ids}, clock_start=100.0)
    try:
        for cap, limit in (("capacity", h.cfg.capacity_bytes), ("max_samples", h.cfg.max_samples)):
            if limit is not None and limit < SOAK:
                raise NotRun(f"the backend's own store holds {limit} samples of one unit ({cap}); the soak needs {SOAK}")
        names = {}
        for sid in ids:
            ref = h.store_put(sid)
            if ref is None:
                raise Failed(f"the store refused the soak's sample {sid!r}, which the model says it holds")
            h.put(ref)
        for sid in ids:
            names[sid] = h.acquire()
            h.tick(1)  # every lease gets its own deadline
        leases = [names[sid] for sid in ids]
        for k, name in enumerate(leases):
            if name is None:
                continue
            if k % 7 == 3 and h.caps.extend:
                h.extend(name, 3 * SOAK + k % 50)  # another amount than the timeout
            elif k % 11 == 5:
                h.fail(name)
        while h.state.pending:
            h.acquire()
        for _ in range(50):
            h.tick(SOAK / 10)
            h.reclaim()
        return len(h.trace)
    except Divergence as exc:
        raise Failed(f"the soak of {SOAK} leases diverged from the model: {exc}") from exc
    finally:
        h.dispose()


def _frozen(letter: Any) -> None:
    """A dead letter is a frozen dataclass (docs/API.md): a caller can neither
    change it (nor so the queue's record) nor fail to hash it."""
    try:
        object.__getattribute__(letter, "reason")
        setattr(letter, "reason", "changed by the kit")
    except AttributeError:  # FrozenInstanceError, or a read-only attribute: as documented
        pass
    else:
        raise Failed(f"a caller set the reason of the dead letter dead_letters() returned ({type(letter).__name__}); "
                     f"docs/API.md: DeadLetter(ref, reason, deliveries) is a frozen dataclass, its fields read-only")
    try:
        hash(letter)
    except TypeError as exc:
        raise Failed(f"hash() of the dead letter dead_letters() returned raised TypeError: {exc}; docs/API.md: "
                     f"DeadLetter is a frozen dataclass (hashable)") from exc


def _dead_letters_copied(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        lease = qq.leased("a")
        if qq.call("dead_letter(lease of 'a', 'kit')", lambda: qq.q.dead_letter(lease, "kit")) is not True:
            raise Failed("dead_letter of the live lease on 'a' did not return True")
        listed = qq.call("dead_letters()", qq.q.dead_letters)
        if len(listed) != 1:
            raise Failed(f"dead_letters() after one dead_letter returned {listed!r}; it should list that one")
        _frozen(listed[0])
        try:  # what a caller may do with the list it was given
            listed.append(listed[0])
            listed.clear()
        except Exception as exc:  # noqa: BLE001
            raise Failed(f"dead_letters() returned a {type(listed).__name__} a caller cannot change ({exc}); it "
                         f"should return a list, a copy of the queue's") from exc  # fmt: skip
        again = qq.call("dead_letters()", qq.q.dead_letters)
        if len(again) != 1 or getattr(again[0], "ref", None) is None or again[0].ref.sample_id != "a":
            raise Failed(
                f"a caller appended to and cleared the list dead_letters() returned, and then dead_letters() returned "
                f"{again!r}: it gave out the queue's own list; it must return a copy (mutating it changes nothing)"
            )
        return qq.calls
    finally:
        qq.close()


NAMED_CHECKS: tuple[Check, ...] = (
    Check("acquire-poll-inf", "acquire(poll_interval=math.inf) returns at once with a ref or on a drained queue", _acquire_poll_inf),
    Check(
        "reclaimer-twice", "start_reclaimer twice raises RuntimeError; stop_reclaimer twice; start again", _reclaimer_twice,
        ("reclaimer",),
    ),
    Check("with-queue", "with queue: closes the queue and stops its reclaimer, never the store", _with_queue, ("reclaimer",)),
    Check("lease-epoch-empty", "a lease whose epoch is '' is foreign; nothing changes", altered_epoch(lambda epoch: "", "an empty epoch")),
    Check(
        "lease-epoch-altered", "a lease whose epoch was altered is foreign; nothing changes",
        altered_epoch(lambda epoch: epoch + "x", "an altered epoch"),
    ),
    Check(
        "two-queues-one-store", "two queues on one store have different epochs and refuse each other's leases",
        two_queues_one_store,
    ),
    Check(
        "dedup-across-clients", "a sample acked through one client is a replay (ReplayedSample) to another client's "
        "put within dedup_window, each way round (D5)", _dedup_across_clients, ("dedup_window",),
    ),
    Check(
        "dead-letters-copied", "dead_letters() returns a copy: appending to and clearing the list it returned changes "
        "nothing", _dead_letters_copied, ("dead_letter",),
    ),
    Check(
        "leases-across-clients", "leases acquired through two clients (one on a clock ahead) have identities of "
        "their own and the deadlines of the queue's clock; each acks through the other client", leases_across_clients,
    ),
    Check("lease-ids-from-1", "a fresh queue's first lease has lease_id 1, the next a larger int", lease_ids_from_1),
    Check(
        "lease-id-below-1", "a copy of a live lease with lease_id 0 or negative is a ValueError to ack, fail, extend and "
        "dead_letter; nothing changes", lease_id_below_1,
    ),
    Check(
        "lease-id-not-int", "a copy of a live lease whose lease_id is a bool, a float or an int subclass is a "
        "TypeError to ack, fail, extend and dead_letter; nothing changes", lease_id_not_int,
    ),
    Check(
        "lease-fields", "a lease carries its queue's visibility timeout and the deadline clock + timeout (an odd "
        "clock and timeout)", lease_fields,
    ),
    Check(
        "durations-above-max", "extend, the poll intervals and start_reclaimer refuse seconds above "
        "threading.TIMEOUT_MAX (1e300 among them) with ValueError; nothing changes", durations_above_max,
    ),
    Check(
        "durations-not-positive", "extend, the poll intervals and start_reclaimer refuse 0, negative seconds and nan "
        "with ValueError; nothing changes", durations_not_positive,
    ),
    Check(
        "dead-letter-reason", "dead_letter refuses a reason that is no non-empty str (42, None, bytes, a list) with "
        "TypeError/ValueError; nothing changes; one with no UTF-8 form (a lone surrogate) is refused so too", dead_letter_reason, ("dead_letter",),
    ),
    Check(
        "dead-letter-reasons-kept", "dead_letters() lists each reason exactly as given: one letter, spaces at the "
        "ends, lines, separators and quotes, text beyond ASCII, a NUL, 4 KiB", dead_letter_reasons_kept,
        ("dead_letter",),
    ),
    Check(
        "sample-ids-exact", "ids differing only in case, spaces at the ends, Unicode normal form or width are "
        "distinct: each is put, delivered in put order as given, and acked", sample_ids_exact,
    ),
    Check(
        "dedup-ids-exact", "with a dedup window, the lookalike ids (and 's', '0', 's,', pieces of 's,0') each "
        "completed before the next is put: none is refused as a replay of another; the same id exactly is",
        dedup_ids_exact, ("dedup_window",),
    ),
    Check(
        "refs-delivered-intact", "a lease carries the ref put, field by field and of the same types: versions as "
        "ints and as strs, text beyond ASCII, quotes, a version of 2**62", refs_delivered_intact,
    ),
    Check(
        "foreign-uri-same-scheme", "put refuses a ref of another store whose URI has this store's scheme; nothing "
        "changes", foreign_uri_same_scheme,
    ),
    Check("scrub-fails", "an ack (dead_letter) whose scrub raises commits nothing", _scrub_fails),
    Check(
        "scrub-fails-keeps-windows", "an ack (dead_letter) whose scrub raises leaves the dedup window (and the kept dead "
        "letters, with dead_letter_limit=1) as they were: the id completed before it is still a replay",
        scrub_fails_keeps_windows, ("dedup_window",),
    ),
    Check(
        "put-health-fails", "a one-step blocking put whose store.health() raises, on a queue with watermarks, raises "
        "and changes nothing (never enqueues: that fails open); once health() answers it enqueues",
        put_health_fails, ("abort_when",),
    ),
    Check(
        "one-step-parks-nothing", "put_blocks_until_below at high with abort_when true: parked_bytes is 0 while "
        "abort_when is consulted, and PutAborted (a ref parks only once its producer goes to wait)",
        one_step_parks_nothing, ("abort_when",),
    ),
    Check(
        "put-duplicate-while-blocked", "a producer blocked in put_blocks_until_below(ref); a plain put of the same ref "
        "meanwhile; its next step raises DuplicateSample and the id is pending once",
        put_duplicate_while_blocked, ("abort_when",),
    ),
    Check(
        "json-round-trip", "refs and leases (from str and from bytes) round-trip through JSON field by field",
        json_round_trip, ("lease_json",),
    ),
    Check(
        "lease-json-hostile", "Lease.from_json refuses text that is no lease's JSON (too deep, not JSON, the wrong "
        "shape) with ValueError/TypeError, never another exception", lease_json_hostile, ("lease_json",),
    ),
    Check(
        "deadline-soak", f"{SOAK} leases with distinct deadlines reclaimed in steps, as the model says", _deadline_soak,
        ("injected_clock",),
    ),
    # refqueue.conformance.calls_state: state handed out, or kept for long
    Check(
        "callback-own-health", "on_pause/on_resume receive the store health their own step read, not one read at "
        "delivery", callback_own_health, ("abort_when",),
    ),
    Check(
        "deadline-heap-interleaved", "acquires beside one other lease, acked or failed early (extends interleaved): "
        "every count and reclaim as the model says", deadline_heap_interleaved, ("injected_clock",),
    ),
    Check(
        "dead-letters-drained-copied", "lists from dead_letters() and drain_dead_letters() stay as returned and are "
        "the caller's to mutate", dead_letters_drained_copied, ("dead_letter",),
    ),
    Check(
        "drain-concurrent", "dead letters made by three threads while a fourth drains are each drained exactly once",
        drain_concurrent, ("dead_letter",),
    ),
    Check(
        "orphans-collected", "every orphan store.scrub collects leaves the store's health, however many; producers "
        "resume", orphans_collected,
    ),
    # refqueue.conformance.calls_many: many calls
    Check(
        "dead-letters-kept", f"{KEPT} dead letters are all listed by dead_letters(), in order (the default "
        "dead_letter_limit is 10,000)", dead_letters_kept, ("dead_letter",),
    ),
    Check(
        "dead-letter-limit", f"with dead_letter_limit={LIMIT}, dead_letters() keeps the newest {LIMIT}, the oldest "
        "dropped and counted (dead_letters_dropped); a drain drops nothing; dead_letter_limit=0 keeps none",
        dead_letter_limit,
        ("dead_letter", "dead_letter_limit"),
    ),
    Check(
        "dedup-window-large", f"with dedup_window={DEDUP_LARGE}, each of {DEDUP_LARGE} completed ids (acked or "
        "dead-lettered) is a replay, and the oldest is accepted once one more completed (D5)", dedup_window_large,
        ("dedup_window",),
    ),
    Check(
        "put-duplicate-concurrent", f"{PUTTERS} threads put one new ref at once, {PUT_ROUNDS} rounds: exactly one is "
        "accepted, the others raise DuplicateSample", put_duplicate_concurrent,
    ),
    Check(
        "reclaimers-started-at-once", f"{PUTTERS} threads call start_reclaimer() at once, {START_ROUNDS} rounds: "
        "exactly one starts, the others raise RuntimeError", reclaimers_started_at_once, ("reclaimer",),
    ),
    Check(
        "reclaimer-ends", "the reclaimer's thread has ended when close() of a drained queue returns, ends by itself "
        "once a closed queue drains, and ends when its queue is dropped without close() (held weakly)",
        reclaimer_ends, ("reclaimer",),
    ),
    Check(
        "reads-while-busy", f"while a thread takes, acks and puts ({BACKLOG} pending), another makes {BUSY_READS} reads of "
        "pending_count(), outstanding_count(), is_paused and parked_bytes: each returns a value the queue had",
        reads_while_busy,
    ),
    Check(
        "reclaim-scrub-fails", "a reclaim that dead-letters at max_deliveries=1 whose scrub raises raises and commits "
        "nothing; the next reclaim dead-letters", reclaim_scrub_fails, ("max_deliveries", "injected_clock"),
    ),
    Check(
        "clock-fails", "acquire, extend and reclaim_expired whose clock raises raise and change nothing (the ref "
        "pending, the old deadline, the lease out)", clock_fails, ("injected_clock",),
    ),
    Check(
        "reclaimer-error-kept", "a background reclaimer whose reclaim raised (a dead-letter's scrub) stops, and "
        "stop_reclaimer() raises RuntimeError; nothing committed", reclaimer_error_kept,
        ("max_deliveries", "injected_clock", "reclaimer"),
    ),
    # refqueue.conformance.calls_clock: clock readings no other phase makes
    Check(
        "reclaim-sub-ms", "reclaim_expired() 0.3 ms before a lease's deadline takes nothing back, at the deadline "
        "it takes the lease back", reclaim_sub_ms, ("injected_clock",),
    ),
    Check(
        "reclaim-nan-clock", "reclaim_expired() with the clock reading NaN takes nothing back (or raises and changes "
        "nothing)", reclaim_nan_clock, ("injected_clock",),
    ),
    Check(
        "extend-while-clock-read", "another thread failing and re-acquiring the lease while extend reads the clock "
        "leaves the new lease its own deadline", extend_while_clock_read, ("injected_clock", "extend"),
    ),
    # refqueue.conformance.calls_scale: sizes no other phase reaches
    Check(
        "pending-many", f"{PENDING_MANY:,} refs pending at once are delivered in put order; one reclaim_expired() "
        "takes back every one of their leases", pending_many, ("injected_clock",),
    ),
    Check(
        "lease-ids-many", f"{LEASES_MANY:,} leases on one queue (past 2**16) have lease ids counting up; the first, "
        "stale, acks nothing", lease_ids_many, ("injected_clock",),
    ),
)  # fmt: skip
CHECKS = tuple(c.name for c in NAMED_CHECKS)
_BY_NAME = {c.name: c for c in NAMED_CHECKS}


def check_calls(backend: Backend | str, *, checks: tuple[str, ...] | None = None) -> ChecksReport:
    """Run ``checks`` (default: all of ``CHECKS``) on ``backend``; stops at the first failure."""
    if isinstance(backend, str):
        backend = load_backend(backend)
    names = select_checks(CHECKS, checks)
    report = ChecksReport()
    caps = backend.capabilities.to_dict()
    started = time.perf_counter()
    for name in names:
        check = _BY_NAME[name]
        missing = [c for c in check.needs if not caps[c]]
        if missing:
            report.not_run[name] = f"{', '.join(missing)}=False declared"
            continue
        t0 = time.perf_counter()
        try:
            report.steps += check.run(backend)
        except NotRun as exc:
            report.not_run[name] = str(exc)
            continue
        except Failed as exc:
            report.failure = f"{name}: {exc}"
            report.failed_check = name
            report.checks[name] = {"what": check.what, "seconds": round(time.perf_counter() - t0, 3)}
            break
        except Exception as exc:  # noqa: BLE001 - the backend's exception fails the check; the kit's is raised
            found = blame(exc)
            if found is None:
                raise
            report.failure = f"{name}: {found.describe()}"
            report.failed_check = name
            report.crash = found.to_dict()
            report.checks[name] = {"what": check.what, "seconds": round(time.perf_counter() - t0, 3)}
            break
        report.checks[name] = {"what": check.what, "seconds": round(time.perf_counter() - t0, 3)}
    report.seconds = time.perf_counter() - started
    return report


# Checks of thousands of calls (minutes on a backend whose call costs a millisecond),
# left out of the short pass of --fail-fast and made in the whole run.
LONG_CHECKS = ("deadline-soak", "deadline-heap-interleaved", "pending-many", "lease-ids-many")


class CallsPhase(PhaseBase):
    name = "calls"
    checks = CHECKS
    sized = True  # the short pass of --fail-fast leaves out the long checks (LONG_CHECKS)

    def run(self, context: Context) -> PhaseResult:
        names = tuple(c for c in CHECKS if c not in LONG_CHECKS) if context.short else CHECKS
        context.progress.start("calls", len(names))
        report = check_calls(context.backend, checks=names)
        context.progress.update(len(report.checks) + len(report.not_run), "checks", force=True)
        counts = checks_counts(report, bounded=False, not_run=dict(report.not_run))
        return checks_result(context, "calls", report, counts, _render)

    def summary(self, name: str, entry: Mapping[str, Any]) -> list[str]:
        not_run = f"; not run: {', '.join(entry['not_run'])}" if entry.get("not_run") else ""
        return [f"  {name:<13} {len(entry['checks'])} checks, {entry['steps']:,} calls, {entry['seconds']} s{not_run}"]


def _render(context: Context, report: ChecksReport) -> str:
    """A pytest module that runs the failing check of the calls phase again."""
    notes = ["This test runs the failing check again on a fresh queue; every wait in it is bounded."]
    return replay_module(
        checks_doc(context, "calls", report, "does not answer a call as docs/API.md says.", notes),
        ["from refqueue.conformance.calls import check_calls", "from refqueue.conformance.contract import load_backend"],
        [f"report = check_calls(BACKEND, checks=({report.failed_check!r},))", "assert report.ok, report.failure"],
        target=context.target,
    )


PHASE = CallsPhase()
