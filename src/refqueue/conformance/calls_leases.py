"""The ``calls`` phase's checks of a lease's identity: its epoch, its id, its
JSON.  ``refqueue.conformance.calls`` lists them (``NAMED_CHECKS``) with its
own and says what each checks (``lease-epoch-empty``, ``lease-epoch-altered``,
``two-queues-one-store``, ``leases-across-clients``, ``lease-ids-from-1``, ``lease-id-below-1``,
``lease-id-not-int``, ``lease-fields``, ``json-round-trip``,
``lease-json-hostile``); each runs on a fresh queue (``probe.Probe``).

A lease's identity is its delivery (D1): a copy with another epoch is a
foreign lease to every call that takes one, a lease id below 1 is one no
queue mints, and a lease that went through JSON must be the lease it was,
field by field, whatever its class's ``==`` compares.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
from collections.abc import Callable
from typing import Any

from refqueue.clock import ManualClock
from refqueue.conformance.contract import Backend, rejection_kind
from refqueue.conformance.probe import Failed, NotRun, Probe
from refqueue.conformance.samples import RICH_META, STORE_META
from refqueue.conformance.session import client_skew, open_clients
from refqueue.refs import MAX_NESTING, SampleRef

__all__ = [
    "ODD_CLOCK", "ODD_TIMEOUT", "altered_epoch", "json_round_trip", "lease_fields", "lease_id_below_1",
    "lease_id_not_int", "lease_ids_from_1", "leases_across_clients", "lease_json_hostile", "two_queues_one_store",
]  # fmt: skip

_LEASE_FIELDS = ("ref", "deadline", "visibility_timeout", "redelivery_count", "lease_id", "epoch")
# A clock and a timeout whose sum has digits below a millisecond and is no round number: a
# deadline kept in whole milliseconds, or a lease carrying a default timeout, shows.
ODD_CLOCK = 100.0001234
ODD_TIMEOUT = 7.3125


def _odd_probe(backend: Backend) -> Probe:
    return Probe(backend, clock=ManualClock(ODD_CLOCK), visibility_timeout=ODD_TIMEOUT)


def _seconds_of(timeout: Any) -> Any:
    return getattr(timeout, "seconds", timeout)


def _copy_with(lease: Any, field: str, value: Any) -> Any:
    """A copy of ``lease`` with one field set (through ``object.__setattr__``, so a frozen lease too)."""
    twin = copy.copy(lease)
    try:
        object.__setattr__(twin, field, value)
    except Exception as exc:  # noqa: BLE001
        raise Failed(f"cannot set a copied lease's {field} ({type(exc).__name__}: {exc})") from exc
    return twin


def _refused_everywhere(qq: Any, twin: Any, kind: str, refused: str, counted: str) -> None:
    """Every lease-taking call the backend offers (ack, fail, and extend and dead_letter where
    declared) refuses ``twin`` as ``kind`` and changes no count; ``refused`` and ``counted``
    describe the lease in the two messages."""
    before = qq.counts()
    calls = [("ack", lambda: qq.q.ack(twin)), ("fail", lambda: qq.q.fail(twin))]
    if qq.caps.extend:
        calls.append(("extend", lambda: qq.q.extend(twin, 5.0)))
    if qq.caps.dead_letter:
        calls.append(("dead_letter", lambda: qq.q.dead_letter(twin, "poison")))
    for name, call in calls:
        qq.refuses(f"{name}({refused})", call, kind)
        qq.expect_counts(before, f"{name}({counted})")


def altered_epoch(epoch: Callable[[str], str], label: str) -> Callable[[Backend], int]:
    def check(backend: Backend) -> int:
        qq = Probe(backend)
        try:
            lease = qq.leased("a")
            new_epoch = epoch(lease.epoch)
            twin = _copy_with(lease, "epoch", new_epoch)
            _refused_everywhere(qq, twin, "foreign", f"lease with epoch {new_epoch!r}) ({label}",
                                f"lease with epoch {new_epoch!r}")
            if qq.caps.injected_clock and lease.deadline != 130.0:
                raise Failed(f"the lease's deadline is {lease.deadline!r}; expected 130.0 (clock 100 + timeout 30)")
            if qq.call("ack(the real lease)", lambda: qq.q.ack(lease)) is not True:
                raise Failed(f"after the leases with epoch {new_epoch!r} were refused, ack of the real lease did not return True")
            return qq.calls
        finally:
            qq.close()

    return check


def two_queues_one_store(backend: Backend) -> int:
    first = Probe(backend)
    try:
        second = Probe(backend, store=first.store, clock=first.clock)
        if first.q.epoch == second.q.epoch:
            raise Failed(f"two queues on one store share the epoch {first.q.epoch!r}; each queue needs its own")
        mine = first.leased("a")
        theirs = second.leased("b")
        second.refuses("second.ack(a lease of the first queue)", lambda: second.q.ack(mine), "foreign")
        first.refuses("first.ack(a lease of the second queue)", lambda: first.q.ack(theirs), "foreign")
        first.refuses("first.fail(a lease of the second queue)", lambda: first.q.fail(theirs), "foreign")
        if first.call("first.ack(its own lease)", lambda: first.q.ack(mine)) is not True:
            raise Failed("the first queue's ack of its own lease did not return True")
        if second.call("second.ack(its own lease)", lambda: second.q.ack(theirs)) is not True:
            raise Failed("the second queue's ack of its own lease did not return True")
        return first.calls + second.calls + _successive_queues(backend)
    finally:
        first.close()


SUCCESSIVE = 40  # queues made one after another, each dropped before the next is made


def _successive_queues(backend: Backend) -> int:
    """Queues made one after another, each on its own store and dropped (and
    collected) before the next: each has its own epoch, and each refuses the
    first one's lease as foreign.  An epoch made from the process id and
    ``id(self)`` comes back once a dropped queue's memory is reused (within
    a few queues, in CPython)."""
    epochs: list[str] = []
    calls, old = 0, None
    for n in range(SUCCESSIVE):
        qq = Probe(backend)
        try:
            epochs.append(qq.q.epoch)
            lease = qq.leased("a")
            if old is None:
                old = lease  # a lease of a queue about to be dropped, never acked
            else:
                qq.refuses(f"ack(a lease on 'a' of the first of {n + 1} queues made one after another, dropped) on "
                           f"the last, which holds its own lease on 'a'", lambda: qq.q.ack(old), "foreign")
            calls += qq.calls
        finally:
            qq.close()
            del qq
            gc.collect(0)  # (the dropped queue's memory may now hold the next one; the youngest objects only: cheap)
    if len(set(epochs)) != len(epochs):
        raise Failed(f"{SUCCESSIVE} queues made one after another, each dropped before the next, have "
                     f"{len(set(epochs))} distinct epochs; each queue needs its own (docs/API.md: the epoch identifies "
                     f"the issuing queue, e.g. uuid4().hex), or a lease of a dropped queue passes for a new queue's")
    return calls


def _field(obj: Any, name: str) -> Any:
    return getattr(obj, name, "<missing>")


def lease_fields(backend: Backend) -> int:
    qq = _odd_probe(backend)
    try:
        lease = qq.leased("a")
        carried = _seconds_of(_field(lease, "visibility_timeout"))
        if carried != ODD_TIMEOUT:
            raise Failed(
                f"a lease of a queue made with visibility_timeout={ODD_TIMEOUT} carries visibility_timeout "
                f"{_field(lease, 'visibility_timeout')!r}; docs/API.md: a lease carries the timeout it was issued with"
            )
        if qq.caps.injected_clock and _field(lease, "deadline") != ODD_CLOCK + ODD_TIMEOUT:
            raise Failed(
                f"a lease acquired at clock {ODD_CLOCK} on a queue with visibility_timeout={ODD_TIMEOUT} has deadline "
                f"{_field(lease, 'deadline')!r}; docs/API.md: deadlines are clock.now() + visibility_timeout.seconds "
                f"({ODD_CLOCK + ODD_TIMEOUT!r})"
            )
        if qq.call("ack(lease)", lambda: qq.q.ack(lease)) is not True:
            raise Failed("ack of the live lease did not return True")
        return qq.calls
    finally:
        qq.close()


# The sample json-round-trip leases: an id beyond ASCII, metadata of every kind
# (int versions, text beyond ASCII): a from_json that decodes bytes as Latin-1,
# or JSON that turns ints into strs, shows.
_JSON_ID = "a-é-☃"


def json_round_trip(backend: Backend) -> int:
    qq = _odd_probe(backend)
    try:
        lease = qq.leased(_JSON_ID, {**STORE_META, **RICH_META[0]})
        ref = lease.ref
        again = qq.call("SampleRef.from_json(ref.to_json())", lambda: SampleRef.from_json(ref.to_json()))
        for f in dataclasses.fields(SampleRef):
            if _field(again, f.name) != _field(ref, f.name):
                raise Failed(f"SampleRef.from_json(ref.to_json()).{f.name} is {_field(again, f.name)!r}, not {_field(ref, f.name)!r}")
        if qq.call("fail(lease)", lambda: qq.q.fail(lease)) is not True:
            raise Failed("fail of a live lease did not return True")
        redelivered = qq.acquire("acquire() after the fail")
        if redelivered is None or redelivered.redelivery_count != 1:
            raise Failed(f"acquire() after a fail returned {redelivered!r}; expected the ref again with redelivery_count 1")
        text = qq.call("lease.to_json()", redelivered.to_json)
        if not isinstance(text, str):
            raise Failed(f"lease.to_json() returned {type(text).__name__}, not a str of JSON")
        twin = qq.call("type(lease).from_json(lease.to_json())", lambda: type(redelivered).from_json(text))
        wrong = [
            f"{name} is {_field(twin, name)!r}, not {_field(redelivered, name)!r}"
            for name in _LEASE_FIELDS
            if _field(twin, name) != _field(redelivered, name)
        ]
        if wrong:
            raise Failed("type(lease).from_json(lease.to_json()) differs field by field: " + "; ".join(wrong))
        encoded = text.encode()
        from_bytes = qq.call("type(lease).from_json(lease.to_json().encode())", lambda: type(redelivered).from_json(encoded))
        wrong = [
            f"{name} is {_field(from_bytes, name)!r}, not {_field(redelivered, name)!r}"
            for name in _LEASE_FIELDS
            if _field(from_bytes, name) != _field(redelivered, name)
        ]
        if wrong:
            raise Failed("type(lease).from_json(lease.to_json().encode()) (docs/API.md: from_json takes a str or "
                         "bytes) differs field by field: " + "; ".join(wrong))  # fmt: skip
        if qq.call("ack(the round-tripped lease)", lambda: qq.q.ack(twin)) is not True:
            raise Failed("ack of the round-tripped lease did not return True")
        return qq.calls
    finally:
        qq.close()


# Text a Lease.from_json must refuse with ValueError (TypeError for a value that is no str or
# bytes), never another exception: JSON of the wrong shape, not JSON, nested past MAX_NESTING.
_HOSTILE_JSON: tuple[tuple[str, Any], ...] = (
    ("'{}'", "{}"),
    ("'[]'", "[]"),
    ("'null'", "null"),
    ("'{\"ref\": 1}'", '{"ref": 1}'),
    ("'not json'", "not json"),
    ("b'\\xff'", b"\xff"),
    (f"'[' * {50 * MAX_NESTING}", "[" * (50 * MAX_NESTING)),
    ("42", 42),
    ("None", None),
)


def lease_json_hostile(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        lease = qq.leased("a")
        for what, value in _HOSTILE_JSON:
            qq.calls += 1
            try:
                got = type(lease).from_json(value)
            except Exception as exc:  # noqa: BLE001 - classified below
                if rejection_kind(exc) != "invalid":
                    raise Failed(
                        f"type(lease).from_json({what}) raised {type(exc).__name__}: {str(exc)[:200]}; docs/API.md: "
                        f"from_json raises ValueError for text that is not a lease's JSON (TypeError for a value "
                        f"that is no str or bytes), never another exception"
                    ) from exc
                continue
            raise Failed(f"type(lease).from_json({what}) returned {got!r}; it is no lease's JSON: a ValueError")
        if qq.call("ack(lease)", lambda: qq.q.ack(lease)) is not True:
            raise Failed("ack of the live lease did not return True")
        return qq.calls
    finally:
        qq.close()


def lease_ids_from_1(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        first = qq.leased("a")
        second = qq.leased("b")
        ids = (_field(first, "lease_id"), _field(second, "lease_id"))
        if type(ids[0]) is not int or ids[0] != 1:
            raise Failed(
                f"the first lease of a fresh queue has lease_id {ids[0]!r}; docs/API.md: a queue mints lease ids as "
                f"ints counting up from 1"
            )
        if type(ids[1]) is not int or ids[1] <= ids[0]:
            raise Failed(f"the second lease of a fresh queue has lease_id {ids[1]!r} after {ids[0]!r}; ids count up from 1")
        return qq.calls
    finally:
        qq.close()


def leases_across_clients(backend: Backend) -> int:
    """Leases acquired through two clients of one queue, the second on a
    machine whose clock runs ahead: every lease has an identity of its own
    (the queue mints them, not each client) and, on the kit's clock, the
    deadline the queue's clock gives; each acks through the other client."""
    if backend.open_client is None:
        raise NotRun("one client: the factory has no open_client (or the run passed clients=1)")
    qq = _odd_probe(backend)
    try:
        skew = client_skew(1)  # open_clients' second client: its machine runs ahead
        other = qq.call("open_client(queue)", lambda: open_clients(backend, qq.q, qq.store, qq.clock, 2)[1])
        clients = {"A": qq.q, "B": other}
        order = (("B", "s0"), ("A", "s1"), ("B", "s2"), ("A", "s3"))
        for _, sample_id in order:
            ref = qq.ref(sample_id)
            qq.call(f"A.put({sample_id!r})", lambda: qq.q.put(ref))
        taken: list[tuple[str, Any]] = []
        seen: dict[tuple[Any, Any], str] = {}
        pending = [sample_id for _, sample_id in order]
        for who, _ in order:
            lease = qq.acquire(f"{who}.acquire()", clients[who])
            # FIFO: the head; a backend that delivers in any order: any sample pending
            allowed = pending[:1] if qq.caps.fifo else pending
            if lease is None or lease.ref.sample_id not in allowed:
                raise Failed(f"{who}.acquire() with {pending!r} pending (FIFO: {qq.caps.fifo}) returned {lease!r}")
            pending.remove(lease.ref.sample_id)
            ident = (_field(lease, "epoch"), _field(lease, "lease_id"))
            if ident in seen:
                raise Failed(
                    f"{who}.acquire() returned a lease with (epoch, lease_id) {ident!r}, the identity of the lease "
                    f"{seen[ident]} acquired before it; the queue mints lease identities, never two clients the same one"
                )
            seen[ident] = f"{who} acquired on {lease.ref.sample_id!r}"
            deadline = _field(lease, "deadline")
            if qq.caps.injected_clock and deadline != ODD_CLOCK + ODD_TIMEOUT:
                raise Failed(
                    f"{who}.acquire() at the queue's clock {ODD_CLOCK} (visibility_timeout={ODD_TIMEOUT}) returned a "
                    f"lease with deadline {deadline!r}, not {ODD_CLOCK + ODD_TIMEOUT!r}"
                    + (f": {who}'s machine runs {skew:+g} s off, and its clock is not the queue's" if who == "B" else "")
                )
            taken.append((who, lease))
        for who, lease in taken:
            by = "A" if who == "B" else "B"
            if qq.call(f"{by}.ack({who}'s lease on {lease.ref.sample_id!r})", lambda: clients[by].ack(lease)) is not True:
                raise Failed(f"{by}.ack of the live lease {who} acquired on {lease.ref.sample_id!r} did not return True")
        return qq.calls
    finally:
        qq.close()


def lease_id_below_1(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        lease = qq.leased("a")
        for bad in (0, -1, -lease.lease_id):
            twin = _copy_with(lease, "lease_id", bad)
            _refused_everywhere(qq, twin, "invalid", f"a copy of the live lease with lease_id={bad}, which no queue mints",
                                f"lease with lease_id={bad}")
        if qq.call("ack(the real lease)", lambda: qq.q.ack(lease)) is not True:
            raise Failed("after the leases with ids below 1 were refused, ack of the real lease did not return True")
        return qq.calls
    finally:
        qq.close()


class _Id(int):
    """An ``int`` subclass: no lease id (docs/API.md: an id is exactly an ``int``)."""


def lease_id_not_int(backend: Backend) -> int:
    qq = Probe(backend)
    try:
        lease = qq.leased("a")
        number = lease.lease_id
        bads: list[tuple[str, Any]] = [(f"{float(number)!r} (a float)", float(number)), (f"_Id({number}) (an int subclass)", _Id(number))]
        if number == 1:
            bads.insert(0, ("True (a bool, == 1)", True))
        for label, bad in bads:
            twin = _copy_with(lease, "lease_id", bad)
            _refused_everywhere(qq, twin, "invalid", f"a copy of the live lease with lease_id={label}, which no queue "
                                f"mints: docs/API.md, a TypeError", f"lease with lease_id={label}")  # fmt: skip
        if qq.call("ack(the real lease)", lambda: qq.q.ack(lease)) is not True:
            raise Failed("after the leases with ids that are no int were refused, ack of the real lease did not return True")
        return qq.calls
    finally:
        qq.close()
