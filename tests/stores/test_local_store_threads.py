"""LocalFeatureStore under threads: no copy holds the lock, counters stay consistent.

The copy of a large get or put is made to block on an Event (the store's copy
function is wrapped), so "another thread is inside the copy" is a fact of the
test, not a matter of timing.  The timeout marks only turn a deadlock into a
failure.
"""

from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")

from store_helpers import eagle3_tensors, exact, nbytes_of, put  # noqa: E402

from refqueue.errors import DuplicateSample, StoreClosed, StoreFull  # noqa: E402
from refqueue.stores import LocalFeatureStore, _tensors  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.timeout(120)]

GUARD_S = 30  # only bounds a hang; never reached when the store is right


class BlockingCopy:
    """Wraps the store's copy function; once armed, the next copy parks until released."""

    def __init__(self) -> None:
        self._real = _tensors.copy_to
        self.armed = False
        self.entered = threading.Event()  # set when a copy is parked
        self.proceed = threading.Event()  # set by the test to let it finish

    def __call__(self, tensor, device):
        if self.armed:
            self.armed = False
            self.entered.set()
            assert self.proceed.wait(GUARD_S), "the test never released the parked copy"
        return self._real(tensor, device)


class Worker(threading.Thread):
    """Runs ``fn`` and keeps its result or exception for the main thread."""

    def __init__(self, fn) -> None:
        super().__init__(daemon=True)
        self._fn = fn
        self.result = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self._fn()
        except BaseException as exc:  # handed to the main thread
            self.error = exc

    def finish(self):
        self.join(GUARD_S)
        assert not self.is_alive(), "worker thread hung"
        if self.error is not None:
            raise self.error
        return self.result


@pytest.fixture
def blocking_copy(monkeypatch):
    copy = BlockingCopy()
    monkeypatch.setattr(_tensors, "copy_to", copy)
    yield copy
    copy.proceed.set()


def big_tensors() -> dict:
    t = eagle3_tensors()
    t["aux_hidden_states"] = torch.ones(3, 512, 1024)  # 6 MiB
    return t


def test_health_returns_while_a_large_get_is_copying(blocking_copy):
    store = LocalFeatureStore(max_bytes=1 << 30, high_watermark_bytes=1 << 20, low_watermark_bytes=0)
    tensors = big_tensors()
    ref = put(store, "big", tensors)
    small = put(store, "small")
    expected = store.health()
    assert expected.high_watermark_hit

    blocking_copy.armed = True
    getter = Worker(lambda: store.get(ref))
    getter.start()
    assert blocking_copy.entered.wait(GUARD_S)
    # The getter is parked inside its tensor copy.  Nothing below may wait for it.
    assert not store._lock.locked()
    assert store.health() == expected
    _, handle = store.get(small)
    store.release(handle)
    assert store.scrub(small) is True
    assert store.health().sample_count == 1
    blocking_copy.proceed.set()
    got, handle = getter.finish()
    assert all(torch.equal(got[k], tensors[k]) for k in tensors)
    store.release(handle)


def test_scrub_during_a_get_copy_leaves_the_getter_whole(blocking_copy):
    store = LocalFeatureStore()
    tensors = big_tensors()
    ref = put(store, "big", tensors)
    blocking_copy.armed = True
    getter = Worker(lambda: store.get(ref))
    getter.start()
    assert blocking_copy.entered.wait(GUARD_S)
    assert store.scrub(ref) is True  # the ack committed while the copy was running
    assert store.health().resident_bytes == 0
    blocking_copy.proceed.set()
    got, _ = getter.finish()
    assert all(torch.equal(got[k], tensors[k]) for k in tensors)


def test_a_put_in_progress_reserves_its_id_and_room_but_is_not_resident(blocking_copy):
    size = nbytes_of(big_tensors())
    store = LocalFeatureStore(uri="mem://a", max_bytes=size + nbytes_of(eagle3_tensors()))
    blocking_copy.armed = True
    putter = Worker(lambda: put(store, "big", big_tensors()))
    putter.start()
    assert blocking_copy.entered.wait(GUARD_S)
    assert not store._lock.locked()
    assert store.health().resident_bytes == 0  # not visible before the commit
    with pytest.raises(DuplicateSample, match=exact(
        "LocalFeatureStore.put('big'): another put of 'big' into 'mem://a' is in progress; a sample id is "
        "written once per incarnation"
    )):
        put(store, "big")
    with pytest.raises(StoreFull):  # the reserved room counts against max_bytes
        put(store, "other", big_tensors())
    put(store, "small")  # what fits beside the reservation goes in
    blocking_copy.proceed.set()
    ref = putter.finish()
    assert store.health().resident_bytes == store.capacity_bytes
    store.get(ref)


def test_close_during_a_put_copy_discards_the_put(blocking_copy):
    store = LocalFeatureStore(uri="mem://a")
    blocking_copy.armed = True
    putter = Worker(lambda: put(store, "big", big_tensors()))
    putter.start()
    assert blocking_copy.entered.wait(GUARD_S)
    store.close()
    blocking_copy.proceed.set()
    with pytest.raises(StoreClosed, match=exact(
        "LocalFeatureStore 'mem://a' is closed; LocalFeatureStore.put('big') needs an open store, make a new "
        "LocalFeatureStore"
    )):
        putter.finish()
    assert store._samples == {} and store._counters == (0, 0)


def test_concurrent_clients_keep_the_counters_exact():
    """Four threads put/get/release/scrub their own samples while a fifth reads
    health: every snapshot is consistent (all samples have one size) and the
    store ends empty."""
    store = LocalFeatureStore(max_samples=8)
    size = nbytes_of(eagle3_tensors())
    stop = threading.Event()
    bad_snapshots = []

    def client(k: int) -> tuple[int, int]:
        done = unreleased = 0
        for i in range(150):
            try:
                ref = put(store, f"c{k}-{i % 3}", eagle3_tensors(seed=i))
            except StoreFull:
                continue
            got, handle = store.get(ref)
            assert torch.equal(got["aux_hidden_states"], eagle3_tensors(seed=i)["aux_hidden_states"])
            if i % 2:
                store.release(handle)
            else:
                unreleased += 1  # a holder that "crashed": gc sweeps its handle
            assert store.scrub(ref) is True
            done += 1
        return done, unreleased

    def monitor() -> None:
        while not stop.is_set():
            h = store.health()
            if h.resident_bytes != h.sample_count * size or not 0 <= h.sample_count <= 8:
                bad_snapshots.append(h)

    watcher = Worker(monitor)
    watcher.start()
    clients = [Worker(lambda k=k: client(k)) for k in range(4)]
    for c in clients:
        c.start()
    completed = [c.finish() for c in clients]
    stop.set()
    watcher.finish()
    assert bad_snapshots == []
    assert sum(done for done, _ in completed) > 0
    assert (store.health().resident_bytes, store.health().sample_count) == (0, 0)
    unreleased = sum(n for _, n in completed)
    assert store.handle_count == unreleased
    assert store.gc() == unreleased
    assert store.handle_count == 0
