"""The ``calls`` phase's checks of state a queue hands out or keeps for long:
what a callback receives, what a list a call returned stays, the deadline
index under a long interleaving, orphans collected through the store.

``refqueue.conformance.calls`` lists them (``NAMED_CHECKS``) after its own
and says what each checks; each runs on a fresh queue (``probe.Probe``, or
the model ``Harness``) and bounds every call that could wait:

``callback-own-health``
    ``on_pause``/``on_resume`` receive the ``StoreHealth`` the step that
    changed the pause flag read, not one read when the callback is called:
    the store changes right after the step read it (an orphan scrubbed, then
    another producer's ``store.put``), and each callback must still get the
    state its own transition was decided on.
``deadline-heap-interleaved``
    ``HEAP_ROUNDS`` acquires, each made while exactly one other lease is
    outstanding, each lease then acked or failed long before its deadline
    (so a lazily deleted deadline index grows past the in-process queue's
    1,024 stale entries of slack and compacts inside an acquire), then
    extends interleaved the same way, time moved by the injected clock: every
    count and observable after every call, and each reclaim, agree with the
    model.
``dead-letters-drained-copied``
    every list a call returns is the caller's: one ``dead_letters()``
    returned stays as it was when the queue dead-letters again and mutating
    it in every way a list allows changes nothing; ``drain_dead_letters()``
    returns the letters kept, the queue keeps none, and the drained list
    neither changes with the next dead letter nor changes the queue when the
    caller mutates it.
``drain-concurrent``
    ``DRAINED`` leases dead-lettered by ``DRAIN_THREADS`` threads at once
    while another thread calls ``drain_dead_letters()`` over and over
    (``DRAIN_ROUNDS`` times): every
    dead letter is drained exactly once (a drain that reads the list, then
    empties it in a second step, loses what was dead-lettered in between),
    and none is left behind.
``orphans-collected``
    ``ORPHANS`` orphans (data stored whose producers never put it) collected
    one by one with ``store.scrub(ref)``, between calls of queue work: each
    scrub returns True and takes exactly its bytes and one sample out of the
    store's ``health()``, with no limit on how many; where ``abort_when`` is
    declared, a one-step put is refused while the orphans hold the store
    above ``high`` and admitted (resumed) once they are collected.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from refqueue.conformance.contract import Backend, rejection_kind
from refqueue.conformance.harness import Divergence, Harness, ModelConfig
from refqueue.conformance.probe import WITHIN, Failed, NotRun, Probe, ScrubSwitch, bounded
from refqueue.conformance.samples import STORE_META, UNIT_BYTES, default_store, sample_tensors

__all__ = [
    "DRAINED", "DRAIN_ROUNDS", "DRAIN_THREADS", "HEAP_ROUNDS", "ORPHANS", "callback_own_health", "dead_letters_drained_copied",
    "deadline_heap_interleaved", "drain_concurrent", "orphans_collected",
]  # fmt: skip

HEAP_ROUNDS = 1100  # acquires with one other lease outstanding: past the in-process queue's 1,024 stale entries
EXTEND_ROUNDS = 200  # then acquires with extends interleaved
ORPHANS = 12  # orphans collected one by one (a limit of a few would stop early)
DRAINED = 60  # dead letters made while another thread drains (far below the in-process default dead_letter_limit, 10,000)
DRAIN_THREADS = 3  # threads dead-lettering at once
DRAIN_ROUNDS = 3  # rounds: a drain torn by a 1 ms wait, or by one thread switch, was caught in 30 of 30 tries each
_HEALTH_FIELDS = ("resident_bytes", "capacity_bytes", "sample_count", "high_watermark_hit", "low_watermark_hit")


def _health(health: Any) -> tuple[Any, ...]:
    return tuple(getattr(health, name, "<missing>") for name in _HEALTH_FIELDS)


def _health_text(health: Any) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in zip(_HEALTH_FIELDS, _health(health)))


def _stored(qq: Probe, sample_id: str, units: int, store: Any = None) -> Any:
    """``store.put`` of the kit's sample of ``units`` units (``store``: another than ``qq.store``)."""
    target = qq.store if store is None else store
    qq.calls += 1
    try:
        return target.put(sample_id, sample_tensors(units, qq.calls), num_tokens=units, **STORE_META)
    except Exception as exc:  # noqa: BLE001
        raise Failed(f"store.put({sample_id!r}) of {units * UNIT_BYTES} bytes raised {type(exc).__name__}: {exc}") from exc


def _one_step(qq: Probe, what: str, ref: Any) -> BaseException | None:
    """``put_blocks_until_below(ref, abort_when=lambda: True)`` (exactly one step), bounded:
    None when it returned, else what it raised."""
    qq.calls += 1
    try:
        bounded(what, lambda: qq.q.put_blocks_until_below(ref, abort_when=lambda: True))
    except Failed as failed:
        if failed.__cause__ is None:  # it did not return: a one-step put must
            raise
        return failed.__cause__
    return None


# -- callback-own-health ------------------------------------------------------------


class _HealthTap(ScrubSwitch):
    """A store forwarding to ``inner`` that runs ``after_read`` (once) right after the
    next ``health()`` read, and keeps the value that read returned in ``read``."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.after_read: Callable[[], Any] | None = None
        self.read: Any = None

    def health(self) -> Any:
        value = self.inner.health()
        then, self.after_read = self.after_read, None
        if then is not None:
            self.read = value
            then()  # the store changes after the step read it (another producer, an operator)
        return value


def callback_own_health(backend: Backend) -> int:
    inner = backend.make_store() if backend.make_store is not None else default_store()
    tap = _HealthTap(inner)
    got: list[tuple[str, Any]] = []
    qq = Probe(
        backend, store=tap, high_watermark_bytes=4 * UNIT_BYTES, low_watermark_bytes=2 * UNIT_BYTES,
        on_pause=lambda health: got.append(("on_pause", health)),
        on_resume=lambda health: got.append(("on_resume", health)),
    )  # fmt: skip
    qq.own_store = False
    try:
        work = _stored(qq, "work", 1)
        qq.call("put('work')", lambda: qq.q.put(work))
        lease = qq.acquire("acquire() with 'work' pending")
        if lease is None:
            raise Failed("acquire() with 'work' pending returned None")
        orphan = _stored(qq, "orphan", 3)
        p1 = _stored(qq, "p1", 1)
        # 5b resident (high 4b, low 2b), p1's own b: effective 4b, the step pauses; 'work' is leased, so it is refused.
        tap.after_read = lambda: inner.scrub(orphan)
        what = "put_blocks_until_below('p1', abort_when=lambda: True)"
        error = _one_step(qq, what, p1)
        if error is None or rejection_kind(error) != "aborted":
            raise Failed(f"{what} with 5b resident (high 4b, its own b, 'work' leased) "
                         f"{'returned' if error is None else f'raised {type(error).__name__}: {error}'}; it pauses and "
                         f"raises PutAborted")  # fmt: skip
        _expect_callback(got, "on_pause", tap, what, "the orphan (3b) was scrubbed right after that read")
        p2 = _stored(qq, "p2", 1)
        # 3b resident ('work', p1's data, p2), p2's own b: effective 2b = low, the step resumes and admits p2.
        tap.after_read = lambda: _stored(qq, "late", 3, store=inner)
        what = "put_blocks_until_below('p2', abort_when=lambda: True)"
        error = _one_step(qq, what, p2)
        if error is not None:
            raise Failed(f"{what} with 3b resident (low 2b, its own b) raised {type(error).__name__}: {error}; it "
                         f"resumes and enqueues 'p2'")  # fmt: skip
        _expect_callback(got, "on_resume", tap, what, "another producer stored 3b right after that read")
        qq.expect_counts((1, 1, 6 * UNIT_BYTES), f"{what} and another producer's store.put of 3b")
        return qq.calls
    finally:
        qq.close()
        inner.close()


def _expect_callback(got: list[tuple[str, Any]], name: str, tap: _HealthTap, what: str, then: str) -> None:
    """``got`` holds exactly one call, of ``name``, with the health the step read."""
    read, tap.read = tap.read, None
    if read is None:
        raise Failed(f"{what} never read store.health(); the hysteresis judges the residency health() reports (D8)")
    calls = [n for n, _ in got]
    if calls != [name]:
        raise Failed(f"{what} called on_pause/on_resume {calls}; it changes the pause flag once: [{name!r}]")
    health = got.pop()[1]
    if _health(health) != _health(read):
        raise Failed(
            f"{name} received ({_health_text(health)}) but the step of {what} read ({_health_text(read)}) from "
            f"store.health() and {then}: a callback receives the state of its own transition (docs/API.md: "
            f"`on_pause(health)`/`on_resume(health)`), not one read when it is called"
        )


# -- deadline-heap-interleaved ----------------------------------------------------------


def deadline_heap_interleaved(backend: Backend) -> int:
    """Every acquire is made while exactly one other lease (the anchor) is outstanding;
    each lease it returns is acked or failed long before its deadline, so its entry
    in a lazily deleted deadline index goes stale and stays: the index grows by one
    entry per acquire and passes any slack of stale entries inside an acquire.
    Then time passes every deadline and one reclaim must take back exactly the
    anchor (and the lease outstanding beside it)."""
    extend = backend.capabilities.extend
    fresh = [f"h{i:04d}" for i in range(HEAP_ROUNDS + EXTEND_ROUNDS + 4)]
    vt = 10_000.0
    h = Harness(backend, ModelConfig(visibility_timeout=vt), sizes={sid: 1 for sid in fresh}, clock_start=100.0)
    ids = iter(fresh)

    def put_new() -> None:
        sid = next(ids)
        ref = h.store_put(sid)
        if ref is None:
            raise Failed(f"the store refused the check's sample {sid!r}, which the model says it holds")
        h.put(ref)

    def acquire(what: str) -> str:
        name = h.acquire()
        if name is None:
            raise Failed(f"acquire() {what} returned None with refs pending")
        return name

    try:
        put_new()
        put_new()
        acquire("of the first (anchor) lease")
        for part, rounds in (("acquire/ack/fail", HEAP_ROUNDS), ("acquire/extend/ack/fail", EXTEND_ROUNDS if extend else 0)):
            for r in range(rounds):
                lease = acquire(f"in round {r} of the {part} part")  # the anchor is the one other lease outstanding
                if part != "acquire/ack/fail":
                    h.extend(lease, vt / 2 + r)  # another deadline, far away: the old entry goes stale
                    h.extend(lease, vt / 4 + r)
                if r % 3 == 2:
                    h.fail(lease)  # back to pending; its entry stale
                else:
                    h.ack(lease)
                    put_new()
                if r % 100 == 99:
                    h.tick(1.0)
                    h.reclaim()  # nothing is due
            h.tick(2 * vt)
            h.reclaim()  # every deadline passed: the anchor comes back
            acquire(f"of the next anchor, after the {part} part")
        return len(h.trace)
    except Divergence as exc:
        raise Failed(f"interleaved acquires, acks, fails{' and extends' if extend else ''} diverged from the model: "
                     f"{exc}") from exc  # fmt: skip
    finally:
        h.dispose()


# -- dead-letters-drained-copied -------------------------------------------------------------


def _mutations(letters: list[Any]) -> list[tuple[str, Callable[[], Any]]]:
    junk = letters[0]
    return [
        ("listed[0] = listed[-1]", lambda: letters.__setitem__(0, letters[-1])),
        ("listed.reverse()", letters.reverse),
        ("listed.extend([listed[0]] * 3)", lambda: letters.extend([junk] * 3)),
        ("listed.sort(key=id)", lambda: letters.sort(key=id)),
        ("listed.pop()", letters.pop),
        ("del listed[0]", lambda: letters.__delitem__(0)),
        ("listed.clear()", letters.clear),
    ]


def _mutate(letters: Any, what: str) -> str:
    """Mutate the list ``what`` returned in every way a list allows; the mutations, as text."""
    if not isinstance(letters, list):
        raise Failed(f"{what} returned a {type(letters).__name__}; docs/API.md: a list[DeadLetter], the caller's own")
    done = []
    for text, mutation in _mutations(letters):
        try:
            mutation()
        except Exception as exc:  # noqa: BLE001
            raise Failed(f"{text} on the list {what} returned raised {type(exc).__name__}: {exc}; it is a plain list") from exc
        done.append(text)
    return "; ".join(done)


def _ids(letters: Any) -> list[str]:
    return [getattr(getattr(d, "ref", None), "sample_id", repr(d)) for d in letters]


def dead_letters_drained_copied(backend: Backend) -> int:
    qq = Probe(backend)
    try:

        def dead(sample_id: str) -> None:
            lease = qq.leased(sample_id)
            if qq.call(f"dead_letter(lease of {sample_id!r}, 'kit')", lambda: qq.q.dead_letter(lease, "kit")) is not True:
                raise Failed(f"dead_letter of the live lease on {sample_id!r} did not return True")

        def listed(what: str, want: list[str]) -> None:
            got = _ids(qq.call("dead_letters()", qq.q.dead_letters))
            if got != want:
                raise Failed(f"after {what}, dead_letters() lists {got}; it should list {want}")

        dead("a")
        dead("b")
        held = qq.call("dead_letters()", qq.q.dead_letters)
        dead("c")
        if _ids(held) != ["a", "b"]:
            raise Failed(f"a list dead_letters() returned with ['a', 'b'] dead lists {_ids(held)} after the queue "
                         f"dead-lettered 'c': it is the queue's own list, not a copy")  # fmt: skip
        mutated = _mutate(held, "dead_letters()")
        listed(f"a caller's {mutated} on a list dead_letters() returned", ["a", "b", "c"])
        drain = getattr(qq.q, "drain_dead_letters", None)
        if drain is None:  # docs/API.md lists it; a backend without it has only dead_letters() to copy
            return qq.calls
        drained = qq.call("drain_dead_letters()", drain)
        if _ids(drained) != ["a", "b", "c"]:
            raise Failed(f"drain_dead_letters() returned {_ids(drained)}; it returns the letters kept, ['a', 'b', 'c']")
        listed("drain_dead_letters()", [])
        dead("d")
        if _ids(drained) != ["a", "b", "c"]:
            raise Failed(f"the list drain_dead_letters() returned lists {_ids(drained)} after the queue dead-lettered "
                         f"'d': it is the queue's own list, not the caller's")  # fmt: skip
        mutated = _mutate(drained, "drain_dead_letters()")
        listed(f"a caller's {mutated} on the list drain_dead_letters() returned, and dead_letter of 'd'", ["d"])
        again = qq.call("drain_dead_letters()", drain)
        if _ids(again) != ["d"]:
            raise Failed(f"a second drain_dead_letters() returned {_ids(again)}; it returns the one letter kept since, ['d']")
        listed("a second drain_dead_letters()", [])
        return qq.calls
    finally:
        qq.close()


# -- drain-concurrent ----------------------------------------------------------------------


def drain_concurrent(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        drain = getattr(qq.q, "drain_dead_letters", None)
        if drain is None:
            raise NotRun("the backend has no drain_dead_letters() (docs/API.md lists it)")
        for round_ in range(DRAIN_ROUNDS):
            _drain_round(qq, drain, [f"dl{round_}-{k}" for k in range(DRAINED)])
        return qq.calls
    finally:
        qq.close()


def _drain_round(qq: Probe, drain: Callable[[], Any], ids: list[str]) -> None:
    """``ids`` leased, then dead-lettered by ``DRAIN_THREADS`` threads while another drains."""
    leases = [qq.leased(sample_id) for sample_id in ids]
    drained: list[str] = []
    errors: list[str] = []
    lettering = threading.Semaphore(0)  # one release per dead-lettering thread done
    start = threading.Barrier(DRAIN_THREADS + 1, timeout=WITHIN)  # every thread starts at once

    def letter(share: list[Any]) -> None:
        try:
            start.wait()
            for lease in share:
                time.sleep(0)  # let the other threads in between calls (a share is done in microseconds)
                if qq.q.dead_letter(lease, "kit") is not True:
                    errors.append(f"dead_letter of the live lease on {lease.ref.sample_id!r} did not return True")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(f"dead_letter raised {type(exc).__name__}: {exc}")
        finally:
            lettering.release()

    def drainer() -> None:
        done = 0
        try:
            start.wait()
            while done < DRAIN_THREADS:
                drained.extend(_ids(drain()))
                while lettering.acquire(blocking=False):
                    done += 1
            drained.extend(_ids(drain()))  # what the last dead letters left
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(f"drain_dead_letters() raised {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=letter, args=(leases[t::DRAIN_THREADS],), daemon=True) for t in range(DRAIN_THREADS)]
    threads.append(threading.Thread(target=drainer, daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WITHIN)
        if thread.is_alive():
            raise Failed(f"{DRAIN_THREADS} threads dead-lettering {len(ids)} leases while another drains had not "
                         f"finished after {WITHIN} s")  # fmt: skip
    qq.calls += 2 * len(ids)
    if errors:
        raise Failed(errors[0])
    if sorted(drained) != sorted(ids):
        lost = sorted(set(ids) - set(drained))
        twice = sorted({i for i in drained if drained.count(i) > 1})
        raise Failed(
            f"{DRAIN_THREADS} threads dead-lettered {len(ids)} leases while another called drain_dead_letters() "
            f"over and over: {len(lost)} dead letter(s) never drained ({lost[:5]}{', ...' if len(lost) > 5 else ''}), "
            f"{len(twice)} drained twice ({twice[:5]}); each must be drained exactly once (a drain reads and empties "
            f"the list in one step)"
        )
    left = _ids(qq.call("dead_letters()", qq.q.dead_letters))
    if left:
        raise Failed(f"after every dead letter was drained, dead_letters() still lists {left}")


# -- orphans-collected -------------------------------------------------------------------


def orphans_collected(backend: Backend) -> int:
    paced = backend.capabilities.abort_when  # a one-step put shows what the orphans cost producers
    qq = Probe(backend, high_watermark_bytes=4 * UNIT_BYTES, low_watermark_bytes=2 * UNIT_BYTES)
    try:
        work = _stored(qq, "w0", 1)
        qq.call("put('w0')", lambda: qq.q.put(work))
        lease = qq.acquire("acquire() with 'w0' pending")
        if lease is None:
            raise Failed("acquire() with 'w0' pending returned None")
        # Producers that died between store.put and put: their data stays until collected.
        orphans = [_stored(qq, f"o{i}", 1 + i % 3) for i in range(ORPHANS)]
        units = 1 + sum(1 + i % 3 for i in range(ORPHANS))
        qq.expect_counts((0, 1, units * UNIT_BYTES), f"{ORPHANS} orphans stored beside the leased 'w0'")
        if paced:  # paused ('w0' leased, work a consumer can free): the producer gives up, its data one more orphan
            p = _stored(qq, "p", 1)
            what = "put_blocks_until_below('p', abort_when=lambda: True)"
            error = _one_step(qq, what, p)
            if error is None or rejection_kind(error) != "aborted":
                raise Failed(f"{what} with {units + 1}b resident (high 4b, 'w0' leased) "
                             f"{'returned' if error is None else f'raised {type(error).__name__}: {error}'}; it pauses "
                             f"and raises PutAborted")  # fmt: skip
            orphans.append(p)
        for k, orphan in enumerate(orphans, 1):
            sid = orphan.sample_id
            before = qq.call("store.health()", qq.store.health)
            if qq.call(f"store.scrub({sid!r}), the orphan's collection", lambda: qq.store.scrub(orphan)) is not True:
                raise Failed(f"store.scrub of the orphan {sid!r} (the {_nth(k)} collected) did not return True")
            after = qq.call("store.health()", qq.store.health)
            want = (before.resident_bytes - orphan.estimated_bytes, before.sample_count - 1)
            if (after.resident_bytes, after.sample_count) != want:
                raise Failed(
                    f"store.scrub of the orphan {sid!r} (the {_nth(k)} collected, {orphan.estimated_bytes} bytes) returned "
                    f"True, but health() went from {before.resident_bytes} bytes in {before.sample_count} samples to "
                    f"{after.resident_bytes} in {after.sample_count}, not {want[0]} in {want[1]}: orphans are collected "
                    f"by store.scrub(ref), every one of them (docs/API.md, D8), however many came before"
                )
            if qq.call(f"store.scrub({sid!r}) again", lambda: qq.store.scrub(orphan)) is not False:
                raise Failed(f"a second store.scrub of the collected orphan {sid!r} did not return False (nothing left)")
            if k % 4 == 0:  # queue work between collections: the lease acked, the next one taken
                held = lease
                if qq.call("ack(the leased work)", lambda: qq.q.ack(held)) is not True:
                    raise Failed("ack of the live lease on the work did not return True")
                nxt = _stored(qq, f"w{k}", 1)
                qq.call(f"put('w{k}')", lambda: qq.q.put(nxt))
                lease = qq.acquire(f"acquire() with 'w{k}' pending")
                if lease is None:
                    raise Failed(f"acquire() with 'w{k}' pending returned None")
        qq.expect_counts((0, 1, UNIT_BYTES), f"every orphan collected ({len(orphans)}), the work leased")
        if paced:
            q = _stored(qq, "q", 1)
            what = "put_blocks_until_below('q', abort_when=lambda: True)"
            error = _one_step(qq, what, q)
            if error is not None:
                raise Failed(f"{what} after every orphan was collected (2b resident, low 2b, its own b) raised "
                             f"{type(error).__name__}: {error}; it resumes and enqueues 'q'")  # fmt: skip
            qq.expect_counts((1, 1, 2 * UNIT_BYTES), what)
        return qq.calls
    finally:
        qq.close()


def _nth(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"
