"""Fuzz: the Redis client with hostile values planted in its keys by another
client (issue 21, defects 10, 11, 13), and hostile sample ids.

Another program sharing the server writes into the queue's keys: a key of
another kind, a counter that is not one, a list entry or hash field of any
bytes, a record deleted.  Every call of the queue then either answers (a
value of its documented type) or raises a refqueue error (never redis-py's,
never a ``TypeError`` or ``KeyError`` of the client), and a call that raised
changed nothing: every key holds what it held, but for the counters a
put-back (an acquire or a completion undone) moves on (``meta``'s
``version``, ``tip``, ``seq``, ``room``, and ``tips``) and the ``lost`` mark
of a state-loss detection.  ``reclaim_expired`` runs
one script per lease it dead-letters and keeps what it took back before an
error (docs/API.md), so only its error type is checked.  Real
``redis-server``; the planting client is plain redis-py.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

redis_py = pytest.importorskip("redis")

from fuzz_helpers import hostile_text  # noqa: E402

from refqueue._leases import DeadLetter, Lease  # noqa: E402
from refqueue.backends._redis_server import RedisServer, redis_server_binary  # noqa: E402
from refqueue.backends.redis import RedisSampleRefQueue  # noqa: E402
from refqueue.clock import ManualClock  # noqa: E402
from refqueue.errors import QueueStateLost, RefQueueError  # noqa: E402
from refqueue.queue import VisibilityTimeout  # noqa: E402
from refqueue.refs import FeatureSpec, SampleRef  # noqa: E402
from refqueue.stores.local import LocalFeatureStore  # noqa: E402

pytestmark = [pytest.mark.redis, pytest.mark.timeout(300)]
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
                    deadline=None)
URI = "mem://fuzz-redis"
SPECS = {"aux_hidden_states": FeatureSpec((2, 3), "float32"), "input_ids": FeatureSpec((3,), "int64"),
         "attention_mask": FeatureSpec((3,), "bool"), "loss_mask": FeatureSpec((3,), "float32")}
NAMES = itertools.count()

# The queue's keys, and the kind of value each holds (tests/redis's schema)
KINDS = {"meta": "hash", "tips": "hash", "pending": "list", "refs": "hash", "lease": "hash", "deliv": "hash",
         "redeliv": "hash", "deadlines": "zset", "dead": "list", "done": "list", "doneset": "set", "wake": "list",
         "producers": "zset", "acked": "list", "parked": "hash", "intents": "hash", "intentdue": "zset",
         "donerefs": "hash", "doneorder": "zset"}
# What a put-back (an acquire or completion undone) moves on, or a detected state loss marks
UNGUARDED_META = {b"version", b"tip", b"seq", b"room", b"lost"}


@pytest.fixture(scope="module")
def server():
    if redis_server_binary() is None:
        pytest.skip("redis-server is not installed; the Redis fuzz tests need a real server")
    started = RedisServer().start()
    yield started
    started.stop()


def ref(sample_id: str) -> SampleRef:
    return SampleRef.build(sample_id, SPECS, algorithm="eagle3", store_uri=URI, num_tokens=3)


def world(url: str, admin):
    """A queue holding: "a" leased, "c" and "d" pending (c failed once), "b"
    dead-lettered; its clock past a's deadline.  Returns (queue, lease of a, clock)."""
    clock = ManualClock(100.0)
    q = RedisSampleRefQueue(LocalFeatureStore(None, None, None, None, uri=URI), VisibilityTimeout(5.0), url=url,
                            name=f"fuzz-{next(NAMES)}", clock=clock, max_deliveries=3, dedup_window=2,
                            high_watermark_bytes=10**12, low_watermark_bytes=1)
    for sample_id in "abcd":
        q.put(ref(sample_id))
    lease = q.acquire_nowait()
    assert q.dead_letter(q.acquire_nowait(), "poison")
    assert q.fail(q.acquire_nowait())
    clock.advance(10.0)
    return q, lease, clock


def keys_of(admin, q) -> list[bytes]:
    pattern = q._prefix.replace("{", "\\{").replace("}", "\\}") + "*"
    return sorted(admin.scan_iter(match=pattern))


def state(admin, q) -> dict:
    """Every key of the queue by content (a hash's fields in any order: a
    put-back may reorder them); meta without its unguarded fields; no tips."""
    out = {}
    for key in keys_of(admin, q):
        if key.endswith(b":tips"):
            continue
        kind = admin.type(key)
        if kind == b"hash":
            value = admin.hgetall(key)
            if key.endswith(b":meta"):
                value = {f: v for f, v in value.items() if f not in UNGUARDED_META}
        elif kind == b"list":
            value = admin.lrange(key, 0, -1)
        elif kind == b"set":
            value = sorted(admin.smembers(key))
        elif kind == b"zset":
            value = admin.zrange(key, 0, -1, withscores=True)
        else:
            value = admin.dump(key)
        out[key] = (kind, value)
    return out


values = st.one_of(
    st.sampled_from([b"-1", b"1.5", b"9" * 19, b"abc", b"", b"\xff\xfe", b'{"sample_id": "a"}', b"[1,2]",
                     b'["x", "poison", 1]', b"nan", b"inf", b"0", b"1", b"a", b"d", b"2"]),
    st.binary(max_size=16),
    st.text(max_size=8).map(str.encode),
)
fields = st.sampled_from([b"a", b"b", b"c", b"d", b"z", b"version", b"seq", b"room", b"dropped", b"closed",
                          b"paused", b"epoch", b"config"])


@st.composite
def planting(draw):
    """One change another program makes to the queue's keys: (what, key, args)."""
    what = draw(st.sampled_from(["retype", "hash", "push", "zadd", "delete", "meta", "room"]))
    if what == "retype":
        key = draw(st.sampled_from(sorted(KINDS)))
        kind = draw(st.sampled_from(sorted({"string", "list", "hash", "set", "zset"} - {KINDS[key]})))
        return what, key, (kind,)
    if what == "hash":
        key = draw(st.sampled_from([k for k, kind in KINDS.items() if kind == "hash" and k != "meta"]))
        return what, key, (draw(fields), draw(values))
    if what == "push":
        key = draw(st.sampled_from([k for k, kind in KINDS.items() if kind == "list"]))
        return what, key, (draw(st.booleans()), draw(values))
    if what == "zadd":
        key = draw(st.sampled_from([k for k, kind in KINDS.items() if kind == "zset"]))
        score = draw(st.one_of(st.floats(allow_nan=False), st.integers(-(2**53), 2**53)))
        return what, key, (draw(values), score)
    if what == "delete":
        return what, draw(st.sampled_from(sorted(KINDS))), ()
    if what == "room":
        return what, "producers", (draw(st.sampled_from(["string", "hash", "list"])),)
    return what, "meta", (draw(fields), draw(values))


def plant(admin, q, change) -> None:
    what, key, args = change
    full = q._prefix + key
    if what == "retype":
        admin.delete(full)
        {"string": lambda: admin.set(full, b"x"), "list": lambda: admin.rpush(full, b"x"),
         "hash": lambda: admin.hset(full, b"x", b"y"), "set": lambda: admin.sadd(full, b"x"),
         "zset": lambda: admin.zadd(full, {b"x": 1})}[args[0]]()
    elif what in ("hash", "meta"):
        admin.hset(full, args[0], args[1])
    elif what == "push":
        (admin.rpush if args[0] else admin.lpush)(full, args[1])
    elif what == "zadd":
        admin.zadd(full, {args[0]: args[1]})
    elif what == "delete":
        admin.delete(full)
    else:  # a waiting producer whose room list is of another kind
        token = "f" * 32
        admin.zadd(full, {token: 2**50})
        room = q._prefix + "room:" + token
        {"string": lambda: admin.set(room, b"x"), "hash": lambda: admin.hset(room, b"x", b"y"),
         "list": lambda: admin.rpush(room, b"x")}[args[0]]()


CALLS = {
    "put": lambda q, lease: q.put(ref("n")),
    "put_blocks_until_below": lambda q, lease: q.put_blocks_until_below(ref("n"), abort_when=lambda: True),
    "acquire_nowait": lambda q, lease: q.acquire_nowait(),
    "ack": lambda q, lease: q.ack(lease),
    "fail": lambda q, lease: q.fail(lease),
    "extend": lambda q, lease: q.extend(lease),
    "dead_letter": lambda q, lease: q.dead_letter(lease, "poison"),
    "lease_state": lambda q, lease: q.lease_state(lease),
    "close": lambda q, lease: q.close(),
    "pending_count": lambda q, lease: q.pending_count(),
    "outstanding_count": lambda q, lease: q.outstanding_count(),
    "is_closed": lambda q, lease: q.is_closed,
    "is_drained": lambda q, lease: q.is_drained,
    "is_paused": lambda q, lease: q.is_paused,
    "parked_bytes": lambda q, lease: q.parked_bytes,
    "dead_letters": lambda q, lease: q.dead_letters(),
    "drain_dead_letters": lambda q, lease: q.drain_dead_letters(),
    "dead_letters_dropped": lambda q, lease: q.dead_letters_dropped,
    "intents_count": lambda q, lease: q.intents_count(),
    "metrics": lambda q, lease: q.metrics(),
    "collect_intents": lambda q, lease: q.collect_intents(include_recent=True),
    "reclaim_expired": lambda q, lease: q.reclaim_expired(),
}
ANSWERS = {
    "acquire_nowait": lambda v: v is None or isinstance(v, Lease),
    "lease_state": lambda v: v in ("live", "acked", "other", "pending", "gone"),
    "dead_letters": lambda v: type(v) is list and all(isinstance(d, DeadLetter) for d in v),
    "drain_dead_letters": lambda v: type(v) is list and all(isinstance(d, DeadLetter) for d in v),
    "metrics": lambda v: type(v) is dict and all(type(v[k]) is int and v[k] >= 0 for k in ("pending", "outstanding")),
}
for _name in ("ack", "fail", "extend", "dead_letter", "is_closed", "is_drained", "is_paused"):
    ANSWERS[_name] = lambda v: type(v) is bool
for _name in ("pending_count", "outstanding_count", "parked_bytes", "dead_letters_dropped", "intents_count",
              "collect_intents", "reclaim_expired"):
    ANSWERS[_name] = lambda v: type(v) is int and v >= 0


# Each example builds a queue on the server (about 80 ms): half the profile's examples
# (50 in CI; the deep profile's 2,000 give 1,000).
@settings(SETTINGS, max_examples=max(1, settings.default.max_examples // 2))
@given(changes=st.lists(planting(), min_size=1, max_size=3), call=st.sampled_from(sorted(CALLS)))
def test_a_call_over_planted_values_answers_or_raises_a_refqueue_error_changing_nothing(server, changes, call):
    admin = redis_py.Redis.from_url(server.url)
    q, lease, _ = world(server.url, admin)
    try:
        for change in changes:
            try:
                plant(admin, q, change)
            except redis_py.exceptions.ResponseError:
                pass  # an earlier change made this one impossible (a key of another kind)
        before = state(admin, q)
        try:
            answer = CALLS[call](q, lease)
        except RefQueueError as exc:
            after = state(admin, q)
            if call != "reclaim_expired":
                assert after == before, (changes, call, exc)
            assert "Traceback" not in str(exc) and str(exc), exc
            if not isinstance(exc, QueueStateLost):
                assert admin.type(q._prefix + "meta") != b"hash" or not admin.hexists(q._prefix + "meta", "lost")
        else:
            assert call not in ANSWERS or ANSWERS[call](answer), (changes, call, answer)
    finally:
        for key in keys_of(admin, q):
            admin.delete(key)
        for key in admin.scan_iter(match=q._prefix.replace("{", "\\{").replace("}", "\\}") + "room:*"):
            admin.delete(key)
        admin.close()


@SETTINGS
@given(sample_id=st.one_of(hostile_text, st.text(min_size=1, max_size=300)))
def test_a_hostile_sample_id_round_trips_or_is_refused_naming_it(server, sample_id):
    admin = redis_py.Redis.from_url(server.url)
    q = RedisSampleRefQueue(LocalFeatureStore(None, None, None, None, uri=URI), VisibilityTimeout(5.0),
                            url=server.url, name=f"fuzz-{next(NAMES)}", clock=ManualClock(0.0))
    try:
        try:
            r = ref(sample_id)
        except (TypeError, ValueError):
            return  # SampleRef's own refusal (tests/fuzz/test_fuzz_refs.py)
        try:
            q.put(r)
        except (TypeError, ValueError) as exc:
            assert repr(sample_id)[:40] in str(exc) or "sample id" in str(exc), str(exc)
            assert q.pending_count() == 0
            return
        lease = q.acquire_nowait()
        assert lease.ref == r and q.ack(lease) is True
        assert (q.pending_count(), q.outstanding_count()) == (0, 0)
    finally:
        for key in keys_of(admin, q):
            admin.delete(key)
        admin.close()


@SETTINGS
@given(reason=st.one_of(hostile_text, st.text(min_size=1, max_size=300)))
def test_a_hostile_dead_letter_reason_is_kept_exactly_or_refused_naming_it(server, reason):
    admin = redis_py.Redis.from_url(server.url)
    q = RedisSampleRefQueue(LocalFeatureStore(None, None, None, None, uri=URI), VisibilityTimeout(5.0),
                            url=server.url, name=f"fuzz-{next(NAMES)}", clock=ManualClock(0.0))
    try:
        q.put(ref("s"))
        lease = q.acquire_nowait()
        try:
            answer = q.dead_letter(lease, reason)
        except (TypeError, ValueError) as exc:
            assert not reason or "UTF-8" in str(exc), str(exc)
            assert type(exc) in (TypeError, ValueError) and "Traceback" not in str(exc)
            assert q.lease_state(lease) == "live" and q.dead_letters() == []  # nothing changed
            return
        assert answer is True
        assert [(d.ref.sample_id, d.reason) for d in q.dead_letters()] == [("s", reason)]
    finally:
        for key in keys_of(admin, q):
            admin.delete(key)
        admin.close()


def test_a_reason_without_a_utf8_form_is_refused_by_name_and_the_lease_stays_live(server):
    q = RedisSampleRefQueue(LocalFeatureStore(None, None, None, None, uri=URI), VisibilityTimeout(5.0),
                            url=server.url, name=f"fuzz-{next(NAMES)}", clock=ManualClock(0.0))
    q.put(ref("s"))
    lease = q.acquire_nowait()
    for reason in ("\ud800", "bad \udcff byte"):
        with pytest.raises(ValueError, match="no UTF-8 form, so Redis cannot store it") as caught:
            q.dead_letter(lease, reason)
        assert type(caught.value) is ValueError and repr(reason) in str(caught.value)
    assert q.lease_state(lease) == "live" and q.dead_letters() == []
    assert q.dead_letter(lease, "échantillon ☠") is True
    assert [d.reason for d in q.dead_letters()] == ["échantillon ☠"]
    q.delete()


def test_the_fuzz_world_is_what_the_property_assumes(server):
    admin = redis_py.Redis.from_url(server.url)
    q, lease, clock = world(server.url, admin)
    assert (q.pending_count(), q.outstanding_count(), len(q.dead_letters())) == (2, 1, 1)
    assert q.lease_state(lease) == "live" and not math.isnan(clock.now())
    for key in keys_of(admin, q):
        admin.delete(key)
    admin.close()
