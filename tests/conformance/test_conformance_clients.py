"""Several clients of one queue (docs/CERTIFYING.md): the factory's
open_client, the skewed clocks the kit opens them with, the harness making
its steps through them in turn, reproductions that name them, and the
durations a backend on its own clock is handed."""

import math

import pytest

from refqueue.clock import ManualClock
from refqueue.conformance import Capabilities
from refqueue.conformance.backends import inprocess
from refqueue.conformance.certify import certify, with_clients
from refqueue.conformance.contract import CLIENT_SKEW, backend_of, load_backend
from refqueue.conformance.harness import Harness, ModelConfig
from refqueue.conformance.render import render_test
from refqueue.conformance.session import REAL_CLOCK_SCALE, SkewedClock, backend_seconds, client_skew

pytestmark = pytest.mark.torch

SHARED = "conformance.legal.shared_client:make"


class Recorder:
    """A client that forwards to the queue and records what it was asked."""

    def __init__(self, queue, calls):
        self._queue, self._calls = queue, calls

    def __getattr__(self, name):
        self._calls.append(name)
        return getattr(self._queue, name)


def _recording_backend():
    calls, clocks = [], []

    def make(store, clock, **config):
        return inprocess(store, clock, **config)

    def open_client(queue, store, clock):
        clocks.append(clock)
        return Recorder(queue, calls)

    make.open_client = open_client
    return backend_of(make, "tests:recording"), calls, clocks


def test_skewed_clocks_read_the_base_clock_plus_the_skew():
    base = ManualClock(100.0)
    ahead = SkewedClock(base, client_skew(1))
    behind = SkewedClock(base, client_skew(2))
    assert (ahead.now(), behind.now()) == (100.0 + CLIENT_SKEW, 100.0 - CLIENT_SKEW)
    base.advance(2.0)
    assert ahead.now() == 102.0 + CLIENT_SKEW
    assert [client_skew(i) for i in (1, 2, 3, 4)] == [0.5, -0.5, 1.0, -1.0]
    assert not hasattr(ahead, "advance")  # a client never moves time


def test_steps_alternate_between_the_two_clients_and_reach_the_second():
    backend, calls, clocks = _recording_backend()
    assert backend.clients == 2
    h = Harness(backend, ModelConfig(visibility_timeout=1.0), sizes={"s0": 1, "s1": 1})
    assert len(clocks) == 1 and isinstance(clocks[0], SkewedClock) and clocks[0].skew == CLIENT_SKEW
    ref = h.store_put("s0")
    h.put(ref)
    lease = h.acquire()
    h.ack(lease)
    assert [step.client for step in h.trace] == [0, 1, 0, 1]
    # put (step 2) and ack (step 4) went through the second client, and so did
    # the reads of the observables after them; the acquire did not.
    assert "put" in calls and "ack" in calls and "acquire_nowait" not in calls
    assert "pending_count" in calls


def test_a_reproduction_names_the_second_client_and_replays():
    backend = load_backend(SHARED)
    config = ModelConfig(visibility_timeout=1.0)
    h = Harness(backend, config, sizes={"s0": 1})
    ref = h.store_put("s0")
    h.put(ref)
    lease = h.acquire()
    h.extend(lease, 1.0)
    h.fail(lease)
    source = render_test(h.trace, target=SHARED, config=config, sizes={"s0": 1}, store=None, reason="a replay")
    assert "q1 = s.client(1)" in source
    assert "q1.put(ref1)" in source and "q1.extend(lease1, s.seconds(1.0))" in source
    namespace = {}
    exec(compile(source, "replay", "exec"), namespace)
    namespace["test_counterexample"]()


def test_with_clients_chooses_how_many_and_refuses_what_the_backend_cannot_open():
    backend = load_backend(SHARED)
    assert with_clients(backend, 1).clients == 1
    assert with_clients(backend, 3).clients == 3
    plain = load_backend("refqueue.conformance.backends:inprocess")
    assert plain.clients == 1
    with pytest.raises(ValueError, match="has no open_client"):
        with_clients(plain, 2)
    for bad in (0, -1, True, 1.5, "2"):
        with pytest.raises(ValueError, match="clients must be an int >= 1"):
            with_clients(backend, bad)


def test_a_run_through_three_clients_passes_and_says_so():
    cert = certify(SHARED, profile="ci", phases=("construction",), clients=3)
    assert cert.passed
    assert cert.configuration == {
        "clients": 3, "client_clock_skew_s": [0.5, -0.5], "clock": "injected (the kit's ManualClock)",
    }


def test_open_client_must_be_callable():
    def make(store, clock, **config):
        return inprocess(store, clock, **config)

    make.open_client = "redis://"
    with pytest.raises(TypeError, match="open_client must be a callable"):
        backend_of(make, "tests:bad")


def test_a_backend_on_its_own_clock_is_handed_durations_an_hour_per_second():
    def make(store, clock, **config):
        return inprocess(store, clock, **config)

    make.capabilities = Capabilities(injected_clock=False)
    own = backend_of(make, "tests:own")
    assert backend_seconds(own, 1.0) == REAL_CLOCK_SCALE == 3600.0
    assert backend_seconds(own, 2) == 7200.0
    # What the call must refuse is passed as it is, so it is refused the same way.
    for refused in (0.0, -1.0, math.inf, None, "1", True):
        assert backend_seconds(own, refused) is refused
    assert math.isnan(backend_seconds(own, math.nan))
    injected = load_backend("refqueue.conformance.backends:inprocess")
    assert backend_seconds(injected, 1.0) == 1.0


def test_a_tie_dead_lettered_in_the_backends_order_moves_the_dedup_window_too():
    # Two leases due at the same instant, both dead-lettered at the cap by one
    # reclaim, newest first: the backend's last completion is s0, so with a
    # window of 1 a re-put of s1 is new and one of s0 a replay (D5).  The
    # model lists ties by sample id (s0, then s1); it must take the backend's
    # order for the window as it does for dead_letters() (the deep walks
    # rejected this legal backend before).
    backend = load_backend("conformance.legal.tie_any_order:make_newest_first")
    config = ModelConfig(visibility_timeout=1.0, max_deliveries=1, dedup_window=1)
    h = Harness(backend, config, sizes={"s0": 1, "s1": 1}, clock_start=0.0)
    for sid in ("s0", "s1"):
        h.put(h.store_put(sid))
    h.acquire()
    h.acquire()
    h.tick(1.0)
    h.reclaim()
    assert [d[0] for d in h.dead] == ["s1", "s0"]
    assert h.state.completed == ("s0",)
    h.put(h.store_put("s1"))  # enqueued by both
    h.put(h.store_put("s0"))  # refused as a replay by both
    assert h.trace[-1].expect.kind == "replay"
    assert h.state.pending == ("s1",)
