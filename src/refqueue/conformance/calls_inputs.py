"""The ``calls`` phase's checks of arguments a queue must refuse, or keep
exactly: durations out of range, a dead letter's reason that is no text, a
ref of another store under the same scheme; and reasons and sample ids of
every shape (long, multi-line, unicode, with separators, differing only in
case, spacing or normal form) kept as given and told apart, and refs of
every kind of metadata delivered as they were put.
``refqueue.conformance.calls`` lists them (``NAMED_CHECKS``) and says what
each checks (``durations-above-max``, ``durations-not-positive``,
``dead-letter-reason``, ``dead-letter-reasons-kept``, ``sample-ids-exact``,
``refs-delivered-intact``, ``foreign-uri-same-scheme``); each runs on a
fresh queue (``probe.Probe``).

docs/API.md: every public call validates its arguments and a rejected call
changes nothing.  The walks and the lockstep machine pass only the values a
correct caller passes (and ``acquire``'s bad intervals); these are the ones a
careless caller passes, each refused (``TypeError``/``ValueError``) with the
queue's counts unchanged, and the real call then still works.  A call that
takes a bad interval may wait it out or spin: each runs in a thread joined
with a timeout (``probe.bounded``).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable
from typing import Any

from refqueue.conformance.contract import Backend, rejection_kind
from refqueue.conformance.probe import Failed, Probe, bounded
from refqueue.conformance.samples import RICH_META, STORE_META

__all__ = [
    "DEDUP_IDS", "LOOKALIKE_IDS", "ODD_REASONS", "dead_letter_reason", "dead_letter_reasons_kept", "dedup_ids_exact",
    "durations_above_max",
    "durations_not_positive", "foreign_uri_same_scheme", "refs_delivered_intact", "sample_ids_exact",
]  # fmt: skip


def _refused_in_time(qq: Probe, what: str, call: Callable[[], Any], rule: str) -> None:
    """``call()`` raises TypeError/ValueError (in a thread joined with a timeout: one
    that takes its argument may wait or spin); ``rule`` says what docs/API.md asks."""
    box: list[Any] = []
    try:
        bounded(what, lambda: box.append(call()))
    except Failed as failed:
        error = failed.__cause__
        if error is None:  # still running: it took the argument
            raise Failed(f"{what} did not raise within the check's wait; docs/API.md: {rule}") from None
        if rejection_kind(error) != "invalid":
            raise Failed(f"{what} raised {type(error).__name__}: {error}; docs/API.md: {rule}") from error
    else:
        raise Failed(f"{what} returned {box[0]!r}; docs/API.md: {rule}")
    qq.calls += 1


def _duration_calls(qq: Probe, lease: Any, ref: Any, seconds: float) -> list[tuple[str, Callable[[], Any]]]:
    """Every call of the queue that takes a number of seconds, given ``seconds``."""
    calls: list[tuple[str, Callable[[], Any]]] = []
    shown = "10**400" if seconds == 10**400 else repr(seconds)
    if qq.caps.extend:
        calls.append((f"extend(lease, {shown})", lambda: qq.q.extend(lease, seconds)))
    calls.append((f"acquire(poll_interval={shown})", lambda: qq.q.acquire(poll_interval=seconds)))
    calls.append((
        f"put_blocks_until_below(ref, poll_interval={shown})",
        lambda: qq.q.put_blocks_until_below(ref, poll_interval=seconds),
    ))  # fmt: skip
    if qq.caps.reclaimer:
        calls.append((f"start_reclaimer({shown})", lambda: qq.q.start_reclaimer(seconds)))
    return calls


def _durations_refused(backend: Backend, values: tuple[float, ...], rule: str) -> int:
    qq = Probe(backend)
    try:
        lease = qq.leased("a")
        ref = qq.ref("b")
        before = qq.counts()
        deadline = lease.deadline
        for seconds in values:
            for what, call in _duration_calls(qq, lease, ref, seconds):
                _refused_in_time(qq, what, call, rule)
                qq.expect_counts(before, what)
        if qq.caps.injected_clock and getattr(lease, "deadline", None) != deadline:
            raise Failed(f"a refused extend changed the lease's deadline to {lease.deadline!r}")
        if qq.caps.extend and qq.call("extend(lease, 5.0)", lambda: qq.q.extend(lease, 5.0)) is not True:
            raise Failed("after the refused durations, extend(lease, 5.0) of the live lease did not return True")
        if qq.call("ack(lease)", lambda: qq.q.ack(lease)) is not True:
            raise Failed("after the refused durations, ack of the live lease did not return True")
        return qq.calls
    finally:
        qq.close()


def durations_above_max(backend: Backend) -> int:
    """Every duration a queue takes is at most ``threading.TIMEOUT_MAX`` (docs/API.md, Durations)."""
    return _durations_refused(
        backend, (1e300, threading.TIMEOUT_MAX * 2, 10**400),  # (an int too large for a float: never OverflowError)
        f"every duration is at most threading.TIMEOUT_MAX ({threading.TIMEOUT_MAX}), above it a ValueError that "
        f"names the value and the maximum",
    )  # fmt: skip


def durations_not_positive(backend: Backend) -> int:
    """Every duration a queue takes is > 0 and finite (``math.inf`` only as a poll interval)."""
    return _durations_refused(
        backend, (0, 0.0, -1.0, math.nan, -math.inf),
        "a duration (extend's seconds, a poll interval, the reclaimer's interval) is a number > 0 (finite, but for "
        "a poll interval's math.inf); 0, a negative number and nan are a ValueError, nothing changes",
    )  # fmt: skip


_BAD_REASONS: tuple[object, ...] = ("", 42, 1.5, None, b"poison", ["poison"], ("poison",))


def dead_letter_reason(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        lease = qq.leased("a")
        before = qq.counts()
        dead_before = len(qq.call("dead_letters()", qq.q.dead_letters))
        for reason in _BAD_REASONS:
            what = f"dead_letter(lease, {reason!r})"
            qq.refuses(what, lambda reason=reason: qq.q.dead_letter(lease, reason), "invalid")
            qq.expect_counts(before, what)
        listed = qq.call("dead_letters()", qq.q.dead_letters)
        if len(listed) != dead_before:
            raise Failed(f"after dead_letter calls with reasons that are no non-empty str were refused, dead_letters() "
                         f"lists {listed!r}; a refused call changes nothing")  # fmt: skip
        if qq.call("dead_letter(lease, 'poison')", lambda: qq.q.dead_letter(lease, "poison")) is not True:
            raise Failed("after the refused reasons, dead_letter(lease, 'poison') of the live lease did not return True")
        _lone_surrogate_reason(qq)
        return qq.calls
    finally:
        qq.close()


_LONE = "bad \udcff byte"  # a str with no UTF-8 form (what surrogateescape makes of a stray byte)


def _lone_surrogate_reason(qq: Probe) -> None:
    """A reason with no UTF-8 form is refused (TypeError/ValueError) with
    nothing changed (docs/API.md: a reason holding a lone surrogate is a
    ValueError; a dead letter is read on other machines, as UTF-8)."""
    lease = qq.leased("b")
    before = qq.counts()
    dead_before = qq.call("dead_letters()", qq.q.dead_letters)
    what = f"dead_letter(lease of 'b', {_LONE!r})"
    qq.calls += 1
    try:
        answer = qq.q.dead_letter(lease, _LONE)
    except Exception as exc:  # noqa: BLE001 - classified below
        if rejection_kind(exc) != "invalid":
            raise Failed(f"{what} raised {type(exc).__name__}: {exc}; a reason with no UTF-8 form is refused with "
                         f"TypeError/ValueError, nothing changed") from exc  # fmt: skip
    else:
        got = [getattr(d, "reason", None) for d in qq.call("dead_letters()", qq.q.dead_letters)
               if getattr(getattr(d, "ref", None), "sample_id", None) == "b"]  # fmt: skip
        raise Failed(f"{what} of the live lease returned {answer!r} (dead_letters() lists its reason as {got!r}); "
                     f"docs/API.md: a reason holding a lone surrogate has no UTF-8 form and is a ValueError, "
                     f"nothing changed")  # fmt: skip
    qq.expect_counts(before, what)
    listed = qq.call("dead_letters()", qq.q.dead_letters)
    if len(listed) != len(dead_before):
        raise Failed(f"{what} was refused, yet dead_letters() lists {len(listed)} (before: {len(dead_before)}); "
                     f"a refused call changes nothing")  # fmt: skip
    if qq.call("dead_letter(lease of 'b', 'poison')", lambda: qq.q.dead_letter(lease, "poison")) is not True:
        raise Failed(f"after {what} was refused, dead_letter(lease of 'b', 'poison') of the live lease did not "
                     f"return True")  # fmt: skip


# Reasons a consumer may give (docs/API.md: any non-empty str), each of a
# shape a backend that stores text by hand gets wrong: one letter, spaces at
# the ends, lines, separators and quotes of the usual encodings, text beyond
# ASCII, a NUL, 4 KiB, the queue's own reason.  The walks give only "poison".
ODD_REASONS: tuple[str, ...] = (
    "x", " padded\t ", "line one\nline two\r\n", "a|b,c;d:e=f\"g'h\\i{j}[k]%s%d", "échantillon corrompu ☠ 样本",
    "\x00nul", "r" * 4096, "max_deliveries",
)


def dead_letter_reasons_kept(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        given = []
        for n, reason in enumerate(ODD_REASONS):
            sample_id = f"r{n}"
            lease = qq.leased(sample_id)
            what = f"dead_letter(lease of {sample_id!r}, {_short(reason)})"
            if qq.call(what, lambda lease=lease, reason=reason: qq.q.dead_letter(lease, reason)) is not True:
                raise Failed(f"{what} of the live lease did not return True")
            given.append((sample_id, reason))
        listed = [
            (getattr(getattr(d, "ref", None), "sample_id", None), getattr(d, "reason", None))
            for d in qq.call("dead_letters()", qq.q.dead_letters)
        ]
        for (sample_id, reason), got in zip(given, listed):
            if got != (sample_id, reason):
                raise Failed(f"dead_letter(lease of {sample_id!r}, {_short(reason)}): dead_letters() lists "
                             f"{got[0]!r} with reason {_short(got[1])}; a reason is kept exactly as given (any "
                             f"non-empty str, docs/API.md)")  # fmt: skip
        if len(listed) != len(given):
            raise Failed(f"after {len(given)} dead letters, dead_letters() lists {len(listed)}: {listed[:3]!r}...")
        return qq.calls
    finally:
        qq.close()


# Sample ids that are distinct strs but equal to a backend that compares them
# loosely: by case (a SQL column with a case-insensitive collation), without
# trailing or leading spaces (PAD SPACE collations, a strip on the way in), in
# one Unicode normal form, or by width.  Every id is a valid file name (a
# backend's own store may name files by id) and has a UTF-8 form.
LOOKALIKE_IDS: tuple[str, ...] = (
    "Sample-A", "sample-a", "SAMPLE-A", "x", "x ", " x", "x\t", "\u00e9", "e\u0301", "A", "\uff21", "\u00df",
    "ss", "\ufb01", "fi", "s.0", "s:0", "s 0", "s,0", "s|0", "s%0", "i" * 1024,
)


def sample_ids_exact(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        for n, sample_id in enumerate(LOOKALIKE_IDS):
            ref = qq.ref(sample_id)
            try:
                qq.call(f"put({_short(sample_id)})", lambda ref=ref: qq.q.put(ref))
            except Failed as exc:
                raise Failed(f"{exc}; the ids pending before it are {', '.join(map(_short, LOOKALIKE_IDS[:n]))}: none is "
                             f"the same str, and ids are compared exactly (not by case, spaces at the ends, Unicode "
                             f"normal form or width)") from exc  # fmt: skip
        pending = qq.call("pending_count()", qq.q.pending_count)
        if pending != len(LOOKALIKE_IDS):
            raise Failed(f"after putting {len(LOOKALIKE_IDS)} distinct ids ({', '.join(map(_short, LOOKALIKE_IDS[:6]))}, "
                         f"...: equal to a comparison that ignores case, spaces or the normal form), pending_count() "
                         f"is {pending!r}; sample ids are compared exactly")  # fmt: skip
        left = list(LOOKALIKE_IDS)  # without FIFO (Capabilities.fifo False), any of them may come next
        for want in LOOKALIKE_IDS:
            lease = qq.acquire(f"acquire() with {_short(want)} next")
            got = getattr(getattr(lease, "ref", None), "sample_id", None)
            if got != want and not (not qq.caps.fifo and got in left):
                raise Failed(f"acquire() returned the lease of {_short(got)}; the put order says {_short(want)} (ids "
                             f"differing only in case, spaces or normal form are distinct: compared exactly)")  # fmt: skip
            left.remove(got)
            if qq.call(f"ack(lease of {_short(got)})", lambda lease=lease: qq.q.ack(lease)) is not True:
                raise Failed(f"ack of the live lease on {_short(got)} did not return True")
        qq.expect_counts((0, 0, 0), f"acking all {len(LOOKALIKE_IDS)} lookalike ids")
        return qq.calls
    finally:
        qq.close()


# The lookalikes, then pieces of one of them ("s,0": a window kept as one joined string holds "s" and "0").
DEDUP_IDS: tuple[str, ...] = LOOKALIKE_IDS + ("s", "0", "s,")


def dedup_ids_exact(backend: Backend) -> int:
    """With a dedup window, each id completes before the next is put: none is a replay of another."""
    window = 2 * len(DEDUP_IDS)
    qq = Probe(backend, dedup_window=window)
    try:
        for n, sample_id in enumerate(DEDUP_IDS):
            ref = qq.ref(sample_id)
            try:
                qq.call(f"put({_short(sample_id)})", lambda ref=ref: qq.q.put(ref))
            except Failed as exc:
                raise Failed(f"{exc}, on a queue made with dedup_window={window} after {', '.join(map(_short, DEDUP_IDS[:n]))} "
                             f"completed: none is the same str, and a replay is a put of the same id exactly (D5)") from exc  # fmt: skip
            lease = qq.acquire(f"acquire() with only {_short(sample_id)} pending")
            got = getattr(getattr(lease, "ref", None), "sample_id", None)
            if got != sample_id:
                raise Failed(f"acquire() with only {_short(sample_id)} pending returned the lease of {_short(got)}")
            if qq.call(f"ack(lease of {_short(sample_id)})", lambda lease=lease: qq.q.ack(lease)) is not True:
                raise Failed(f"ack of the live lease on {_short(sample_id)} did not return True")
        # the window does hold them: the same id exactly is a replay
        qq.refuses_replay(DEDUP_IDS[0], f"put({_short(DEDUP_IDS[0])}) again, completed within dedup_window={window}")
        qq.expect_counts((0, 0, 0), f"completing {len(DEDUP_IDS)} ids one after another")
        return qq.calls
    finally:
        qq.close()


def refs_delivered_intact(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        put = []
        for n, meta in enumerate(RICH_META):
            sample_id = f"m{n}"
            ref = qq.ref(sample_id, {**STORE_META, **meta})
            qq.call(f"put({sample_id!r})", lambda ref=ref: qq.q.put(ref))
            put.append(ref)
        for want in put if qq.caps.fifo else sorted(put, key=lambda r: r.sample_id):
            lease = qq.acquire(f"acquire() with the ref of {want.sample_id!r} pending")
            got = getattr(lease, "ref", None)
            if not qq.caps.fifo:
                got_id = getattr(got, "sample_id", None)
                want = next((r for r in put if r.sample_id == got_id), want)
            wrong = _fields_differ(want, got)
            if wrong:
                raise Failed(f"acquire() delivered the ref of {want.sample_id!r} with {wrong}: a lease carries the ref "
                             f"put, field by field and of the same types (versions are str | int, kept as given)")  # fmt: skip
            if qq.call(f"ack(lease of {want.sample_id!r})", lambda lease=lease: qq.q.ack(lease)) is not True:
                raise Failed(f"ack of the live lease on {want.sample_id!r} did not return True")
        qq.expect_counts((0, 0, 0), f"acking the {len(put)} refs")
        return qq.calls
    finally:
        qq.close()


def _fields_differ(want: Any, got: Any) -> str:
    """The fields of ``got`` that differ from ``want``'s (value or type), or ''."""
    if got is None:
        return "no ref at all"
    wrong = []
    for f in dataclasses.fields(want):
        a, b = getattr(want, f.name), getattr(got, f.name, None)
        if a != b or type(a) is not type(b):
            wrong.append(f"{f.name}={_short(b)} ({type(b).__name__}), not {_short(a)} ({type(a).__name__})")
    return "; ".join(wrong)


def _short(text: object) -> str:
    shown = repr(text)
    return shown if len(shown) <= 60 else f"{shown[:40]}...{shown[-8:]} ({len(text)} characters)"  # type: ignore[arg-type]


def foreign_uri_same_scheme(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        ref = qq.ref("a")
        scheme = ref.store_uri.split("://", 1)[0]
        other = f"{scheme}://conformance-elsewhere"
        if other == ref.store_uri:
            other += "-2"
        twin = dataclasses.replace(ref, store_uri=other)
        before = qq.counts()
        rule = f"(put of a ref for another store URI: {other!r}, this store is {ref.store_uri!r})"
        qq.refuses(f"put(ref of {other!r}) {rule}", lambda: qq.q.put(twin), "invalid")
        qq.expect_counts(before, f"put(ref of {other!r})")
        qq.refuses(f"put_blocks_until_below(ref of {other!r}) {rule}", lambda: qq.q.put_blocks_until_below(twin), "invalid")
        qq.expect_counts(before, f"put_blocks_until_below(ref of {other!r})")
        qq.call("put(the store's own ref)", lambda: qq.q.put(ref))
        lease = qq.acquire("acquire() with 'a' pending")
        if lease is None or lease.ref.store_uri != ref.store_uri:
            raise Failed(f"acquire() after put of the store's own ref returned {lease!r}, not that ref's lease")
        return qq.calls
    finally:
        qq.close()
