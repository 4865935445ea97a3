"""The window between an ack's commit and its scrub (issue 27, D2/D9), held
open on purpose: a ``SharedDirFeatureStore`` whose ``scrub`` waits on a
``threading.Event`` until the test lets it go (synchronisation, not a sleep),
a real ``redis-server``, real tensors on a real shared directory.

What the contract says a reader sees there (docs/REDIS.md, "Between an ack's
commit and its scrub"; the spec's TwoStepAck): the sample is completed
(outstanding 0, ``lease_state`` "acked"), its scrub intent is open, its bytes
are still resident and still counted by ``store.health()`` (against the
watermarks, as the model counts them until ScrubIntent) and reported as
awaiting scrub by ``metrics()["intent_bytes"]``; a re-put of the id is
refused with ``ScrubPending`` (the spec's StorePut is refused while the data
is resident) and changes nothing.  Before issue 27 the re-put was accepted
with the server's clock (no client lock), and the scrub then removed the data
of the pending re-put."""

from __future__ import annotations

import re
import threading

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from redis_helpers import queue  # noqa: E402
from refqueue.clock import ManualClock  # noqa: E402
from refqueue.errors import DuplicateSample, ReplayedSample  # noqa: E402
from refqueue.stores.shared_dir import SharedDirFeatureStore  # noqa: E402

pytestmark = pytest.mark.redis

GATE_BOUND = 30.0  # seconds: a bound on waits that an event ends, never a pause in their place
# Seconds a read of the acking client is given to return inside the held scrub,
# which it must not: a read that waits fails nothing however long this is; a
# read that does not wait (before issue 27, with clock=None) returns within it.
OWN_READ_BOUND = 0.5


class GatedScrubStore(SharedDirFeatureStore):
    """The real shared-directory store, whose ``scrub`` announces itself
    (``entered``) and then waits for ``gate`` before it removes anything."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.entered = threading.Event()
        self.gate = threading.Event()

    def scrub(self, ref):
        self.entered.set()
        if not self.gate.wait(GATE_BOUND):
            raise AssertionError("the test never opened the scrub's gate")
        return super().scrub(ref)


def _tensors(i: int) -> dict:
    return {
        "aux_hidden_states": torch.full((3, 4, 8), float(i)),
        "input_ids": torch.arange(4, dtype=torch.int64) + i,
        "attention_mask": torch.ones(4, dtype=torch.bool),
        "loss_mask": torch.ones(4),
    }


def _put(store, sample_id: str, i: int = 0):
    return store.put(sample_id, _tensors(i), run_id="run", algorithm="eagle3", schema_version=1,
                     target_model_version="target", draft_weight_version=0, num_tokens=4)


def _files(root) -> list[str]:
    return sorted(p.name for p in (root / "samples").iterdir())


def _scrub_pending_text(call: str, sample_id: str, delay: float) -> str:
    return (
        f"^{re.escape(call)}\\({re.escape(repr(sample_id))}\\): the data of that sample's previous incarnation is "
        f"still being scrubbed from the store \\(its completion committed; its scrub intent is open\\); put it "
        f"again once the scrub is done: the completing client finishes it, else any client's collect_intents\\(\\) "
        f"or reclaimer does within intent_delay = {re.escape(repr(delay))} s$"
    )


class _OwnRead:
    """``q.outstanding_count()`` in a thread of its own, then the directory's
    files as the read returned."""

    def __init__(self, q, root):
        self.seen: dict = {}
        self.done = threading.Event()

        def read():
            self.seen["outstanding"] = q.outstanding_count()
            self.seen["files"] = _files(root)
            self.done.set()

        self.thread = threading.Thread(target=read, daemon=True)
        self.thread.start()

    def join(self) -> dict:
        self.thread.join(GATE_BOUND)
        assert not self.thread.is_alive(), "the acking client's read never returned"
        return self.seen


class _Acker:
    """``q.ack(lease)`` in a thread of its own, its answer kept."""

    def __init__(self, q, lease):
        self.answer: list = []
        self.thread = threading.Thread(target=lambda: self.answer.append(q.ack(lease)), daemon=True)
        self.thread.start()

    def join(self) -> bool:
        self.thread.join(GATE_BOUND)
        assert not self.thread.is_alive(), "the ack never returned"
        return self.answer[0]


@pytest.mark.parametrize("clock", ["server", "injected"])
def test_during_a_gated_scrub_the_sample_is_acked_its_bytes_await_scrub_and_a_re_put_is_refused(
    redis_server, queue_name, tmp_path, clock
):
    root = tmp_path / "features"
    gated = GatedScrubStore(root, fsync=False)
    plain = SharedDirFeatureStore(root, fsync=False)  # another process's view of the same directory
    shared_clock = None if clock == "server" else ManualClock(100.0)  # injected: one clock, as docs/REDIS.md asks
    q = queue(redis_server.url, queue_name, clock=shared_clock, store=gated, seconds=30.0)
    other = queue(redis_server.url, queue_name, clock=shared_clock, store=plain, seconds=30.0)
    ref = _put(plain, "a")
    q.put(ref)
    lease = q.acquire_nowait()
    acker = _Acker(q, lease)
    try:
        assert gated.entered.wait(GATE_BOUND), "the ack never reached its scrub"
        # the scrub is held open: the ack committed in Redis, the data is on disk.
        # This client's own threads do not see the window (D2 is one step for
        # a process): its read waits for the scrub, in either configuration.
        own = _OwnRead(q, root)
        assert not own.done.wait(OWN_READ_BOUND), f"a read of the acking client returned inside its scrub: {own.seen}"
        # Another client (process) sees it: completed, intent open, data resident
        assert other.outstanding_count() == 0 and other.pending_count() == 0
        assert other.lease_state(lease) == "acked" and other.intents_count() == 1
        health = plain.health()
        assert (health.resident_bytes, health.sample_count) == (ref.estimated_bytes, 1)  # counted until scrubbed
        assert _files(root) == ["a.safetensors"]
        version = other.metrics()["version"]  # the queue's state changes so far
        for call, do in (("put", lambda: other.put(ref)),
                         ("put_blocks_until_below", lambda: other.put_blocks_until_below(ref))):
            with pytest.raises(DuplicateSample, match=_scrub_pending_text(call, "a", 30.0)) as refused:
                do()
            assert type(refused.value).__name__ == "ScrubPending"
        # the refused calls changed nothing
        after = other.metrics()
        assert after["version"] == version and after["pending"] == 0 and after["outstanding"] == 0
        assert after["intents"] == 1 and other.parked_bytes == 0
        assert _files(root) == ["a.safetensors"]
        # the bytes awaiting scrub, reported as such (still part of health()'s resident_bytes above)
        gauges = other.metrics()
        assert gauges["intents"] == 1 and gauges["intent_bytes"] == ref.estimated_bytes
        assert not own.done.is_set()  # the acking client's read still waits
    finally:
        gated.gate.set()
    assert acker.join() is True
    assert own.join() == {"outstanding": 0, "files": []}  # it returned after the scrub, never inside it
    # the scrub ran: nothing resident, no intent, and the id may be stored and put again (D5)
    assert _files(root) == [] and plain.health().resident_bytes == 0
    gauges = other.metrics()
    assert gauges["intents"] == 0 and gauges["intent_bytes"] == 0
    again = _put(plain, "a", 1)
    other.put(again)
    assert other.pending_count() == 1 and _files(root) == ["a.safetensors"]
    relet = q.acquire_nowait()
    assert relet.ref == again and relet.redelivery_count == 0


def test_a_re_put_during_the_scrub_of_a_deduplicated_id_is_a_replay(redis_server, queue_name, tmp_path):
    """With ``dedup_window`` the id is a replay whatever its scrub: the
    permanent answer (skip it) comes before the passing one (retry later)."""
    root = tmp_path / "features"
    gated = GatedScrubStore(root, fsync=False)
    plain = SharedDirFeatureStore(root, fsync=False)
    q = queue(redis_server.url, queue_name, clock=None, store=gated, dedup_window=4)
    other = queue(redis_server.url, queue_name, clock=None, store=plain, dedup_window=4)
    ref = _put(plain, "a")
    q.put(ref)
    acker = _Acker(q, q.acquire_nowait())
    try:
        assert gated.entered.wait(GATE_BOUND), "the ack never reached its scrub"
        with pytest.raises(ReplayedSample, match=r"^put\('a'\): that sample completed within the last 4 "):
            other.put(ref)
    finally:
        gated.gate.set()
    assert acker.join() is True


def test_a_collector_may_finish_the_scrub_of_a_client_still_inside_it(redis_server, queue_name, tmp_path):
    """Another client's ``collect_intents(include_recent=True)`` during the
    gated scrub removes the data and clears the intent; the re-put is then
    accepted, and the committing client's late scrub removes nothing of it."""
    root = tmp_path / "features"
    gated = GatedScrubStore(root, fsync=False)
    plain = SharedDirFeatureStore(root, fsync=False)
    q = queue(redis_server.url, queue_name, clock=None, store=gated)
    other = queue(redis_server.url, queue_name, clock=None, store=plain)
    q.put(_put(plain, "a"))
    acker = _Acker(q, q.acquire_nowait())
    try:
        assert gated.entered.wait(GATE_BOUND), "the ack never reached its scrub"
        assert other.collect_intents(include_recent=True) == 1
        assert _files(root) == [] and other.intents_count() == 0
        again = _put(plain, "a", 1)
        other.put(again)  # the scrub is done: accepted
    finally:
        gated.gate.set()
    assert acker.join() is True
    assert _files(root) == ["a.safetensors"] and plain.health().resident_bytes == again.estimated_bytes
    assert q.acquire_nowait().ref == again
