"""A wrong ref never leaves ``next()`` waiting, and a drained store resumes a blocked producer.

A ref the loader cannot train on is dead-lettered at once (D7) and raised at
its place in the stream (``on_mismatch="raise"``), on an *open* queue with
nothing else coming: a loader that skipped it and went on waiting would hang.
Each ``next()`` here runs in its own thread, joined with a bound that only
catches a hang; the refs are the seed's two shapes (a ref built by hand for
another algorithm than the store's data, and a put's ref altered after the
put) and a ref whose data was never put.
"""

from __future__ import annotations

import dataclasses
import threading

import pytest

torch = pytest.importorskip("torch")

from loader_helpers import GUARD_S, SCHEMA, ManualClock, make_queue, put_sample, sample_tensors  # noqa: E402

from refqueue.errors import SchemaMismatch  # noqa: E402
from refqueue.loader import FeatureDataLoader, LoaderStats  # noqa: E402
from refqueue.queue import SampleRefQueue, VisibilityTimeout  # noqa: E402
from refqueue.refs import FeatureSpec, SampleRef  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.timeout(120)]

CONFIGS = [(1, 0), (3, 0), (1, 2), (3, 4)]  # (batch_size, prefetch)


def next_in_a_thread(loader: FeatureDataLoader):
    """``next(loader)`` in a thread joined within GUARD_S: what it returned or raised."""
    outcome: dict = {}

    def pull():
        try:
            outcome["value"] = next(loader)
        except BaseException as exc:  # the outcome under test
            outcome["error"] = exc

    thread = threading.Thread(target=pull, name="next", daemon=True)  # a hung one must not outlive the run
    thread.start()
    thread.join(GUARD_S)
    assert not thread.is_alive(), f"next() still waiting after {GUARD_S} s"
    return outcome


def dflash_ref_built_by_hand(store) -> tuple[SampleRef, SampleRef | None]:
    """The dflash sample 'bad' put into ``store``, and a ref to it built field by
    field, with keys and an estimate of its own (not the ref the put made):
    (the ref to queue, the put's ref)."""
    tensors = {
        "hidden_states": torch.zeros(2, 8),
        "input_ids": torch.zeros(2, 8, dtype=torch.long),
        "attention_mask": torch.ones(2, 8, dtype=torch.long),
        "loss_mask": torch.ones(2, 8, dtype=torch.long),
    }
    made = store.put("bad", tensors, run_id="run", algorithm="dflash", schema_version=1,
                     target_model_version="t", draft_weight_version=0, num_tokens=16)
    return SampleRef(
        sample_id="bad",
        run_id="run",
        store_uri=store.store_uri,
        feature_keys={name: f"hand/{name}" for name in tensors},
        feature_specs={name: FeatureSpec((2, 8), "float32") for name in tensors},
        algorithm="dflash",
        schema_version=1,
        num_tokens=16,
        estimated_bytes=64,
        target_model_version="t",
        draft_weight_version=0,
    ), made


def altered_after_put(store) -> tuple[SampleRef, SampleRef | None]:
    """A put's ref with its schema_version changed afterwards, and the put's ref."""
    made = store.put("bad", sample_tensors(0), run_id="run", algorithm="eagle3", schema_version=SCHEMA,
                     target_model_version="t", draft_weight_version=0, num_tokens=4)
    return dataclasses.replace(made, schema_version=SCHEMA + 1), made


def never_put(store) -> tuple[SampleRef, SampleRef | None]:
    specs = {name: FeatureSpec.of(t) for name, t in sample_tensors(0).items()}
    return SampleRef.build("bad", specs, algorithm="eagle3", store_uri=store.uri, schema_version=SCHEMA), None


WRONG_REFS = {
    "another-algorithm-built-by-hand": (dflash_ref_built_by_hand, "the resident data was put under another ref"),
    "altered-after-put": (altered_after_put, "the resident data was put under another ref"),
    "never-put": (never_put, "its data is not in"),
}


@pytest.mark.parametrize("make_ref", WRONG_REFS, ids=list(WRONG_REFS))
@pytest.mark.parametrize(("batch_size", "prefetch"), CONFIGS)
def test_a_wrong_ref_on_an_open_queue_is_dead_lettered_and_raised_at_once(make_ref, batch_size, prefetch):
    build, store_says = WRONG_REFS[make_ref]
    store, queue = make_queue(0, close=False)  # open, and nothing else will come
    ref, made = build(store)
    queue.put(ref)
    # Given no algorithm or schema_version, as the seed's FeatureDataLoader(queue, store):
    # both are taken from this very ref, so only the store can tell that it is wrong.
    loader = FeatureDataLoader(queue, store, batch_size=batch_size, prefetch=prefetch, poll_interval=0.01)
    outcome = next_in_a_thread(loader)
    error = outcome.get("error")
    assert isinstance(error, SchemaMismatch) and isinstance(error, ValueError), outcome
    assert str(error).startswith("FeatureDataLoader cannot train on ref 'bad': the store cannot serve it: ")
    assert store_says in str(error)
    assert str(error).endswith(
        "; it was dead-lettered (queue.dead_letters() lists it).  Queue only the refs the store's put returned, "
        "and let the queue alone scrub their data (an ack or a dead-letter does), or pass on_mismatch='skip' "
        "to skip such refs with a warning"
    )
    (letter,) = queue.dead_letters()
    assert letter.ref == ref and letter.deliveries == 1 and store_says in letter.reason
    assert (queue.pending_count(), queue.outstanding_count(), queue.is_closed) == (0, 0, False)
    assert loader.stats == LoaderStats(dead_lettered=1, refused=1)
    # The loader stays usable: the next good sample comes next.
    put_sample(store, queue, 1)
    outcome = next_in_a_thread(loader)
    assert [s.ref.sample_id for s in outcome["value"]] == ["s1"]
    loader.close()
    assert queue.is_drained
    # The dead-letter scrubbed what was stored under the queued ref: nothing.  Data the producer
    # put under the put's ref is an orphan the producer owns (D2), scrubbed with that ref.
    resident = 0 if made is None else made.estimated_bytes
    assert store.health().resident_bytes == resident
    if made is not None:
        assert store.scrub(made)
    assert store.health().sample_count == 0


def test_with_on_mismatch_skip_a_wrong_ref_is_skipped_with_a_warning_and_the_next_sample_comes(caplog):
    store, queue = make_queue(0, close=False)
    queue.put(altered_after_put(store)[0])
    put_sample(store, queue, 1)
    loader = FeatureDataLoader(queue, store, poll_interval=0.01, on_mismatch="skip")
    with caplog.at_level("WARNING", logger="refqueue.loader"):
        outcome = next_in_a_thread(loader)
    assert [s.ref.sample_id for s in outcome["value"]] == ["s1"]
    (record,) = caplog.records
    assert record.getMessage().startswith(
        "FeatureDataLoader skipped ref 'bad' (dead-lettered): the store cannot serve it: "
    )
    assert loader.stats == LoaderStats(batches=1, dead_lettered=1, refused=1)


class FinishedElsewhereStore(LocalFeatureStore):
    """Before serving ``victim``, lets ``meanwhile()`` run once: there, the
    loader's lease expires and another consumer takes the sample back and acks
    it, so the loader's lease is stale and the data gone when it gets it."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.meanwhile = None

    def get(self, ref, device=None):
        meanwhile, self.meanwhile = self.meanwhile, None
        if meanwhile is not None:
            meanwhile()
        return super().get(ref, device)


def test_a_stale_lease_whose_data_is_gone_is_dropped_as_stale_not_refused():
    clock = ManualClock()
    store = FinishedElsewhereStore()
    queue = SampleRefQueue(store, VisibilityTimeout(5.0), clock=clock)
    put_sample(store, queue, 0)

    def another_consumer_finishes_it():
        clock.advance(10.0)
        assert queue.reclaim_expired() == 1
        assert queue.ack(queue.acquire_nowait()) is True  # scrubs s0's data
        queue.close()

    store.meanwhile = another_consumer_finishes_it
    loader = FeatureDataLoader(queue, store, poll_interval=0.01, reclaim=False)
    outcome = next_in_a_thread(loader)
    assert isinstance(outcome.get("error"), StopIteration), outcome  # drained: nothing raised, nothing left
    assert queue.dead_letters() == [] and loader.stats == LoaderStats(stale=1)


# -- on_resume once the store drains -------------------------------------------------


def test_on_resume_fires_when_acks_drain_the_store_below_low_under_a_blocked_producer():
    # The seed expects on_resume once the consumers drain the store.  Here the
    # consumer is a FeatureDataLoader in its own thread; a producer is blocked
    # in put_blocks_until_below.  The pause flag changes in a producer's step
    # (D4): the ack that drains the store wakes the producer, whose step
    # finds the store at or below low, fires on_resume and enqueues.
    store = LocalFeatureStore(max_bytes=1 << 20, high_watermark_bytes=3000, low_watermark_bytes=1000)
    paused, resumed = [], []
    queue = SampleRefQueue(store, on_pause=lambda h: paused.append(h.resident_bytes),
                           on_resume=lambda h: resumed.append(h.resident_bytes))
    refs = [put_sample(store, queue, i) for i in range(4)]  # 4 x 436 bytes: 1744, above low
    late = store.put("late", sample_tensors(9), run_id="run", algorithm="eagle3", schema_version=SCHEMA,
                     target_model_version="t", draft_weight_version=0, num_tokens=4)
    big = store.put("big", {**sample_tensors(8), "logits": torch.zeros(400)}, run_id="run", algorithm="eagle3",
                    schema_version=SCHEMA, target_model_version="t", draft_weight_version=0, num_tokens=4)
    queue.put(big)  # now 1744 + 436 (late) + 2036 (big) = 4216 bytes resident, above high
    assert store.health().resident_bytes == 4216
    blocked = threading.Event()

    def still_waiting() -> bool:  # abort_when: asked after each step that leaves the producer paused
        blocked.set()
        return False

    producer = threading.Thread(target=queue.put_blocks_until_below, args=(late,),
                                kwargs=dict(poll_interval=GUARD_S, abort_when=still_waiting))
    producer.start()
    assert blocked.wait(GUARD_S) and len(paused) == 1 and resumed == []
    seen = []

    def consume():
        with FeatureDataLoader(queue, store, poll_interval=0.01) as loader:
            for batch in loader:
                seen.append(batch[0].ref.sample_id)

    consumer = threading.Thread(target=consume)
    consumer.start()
    producer.join(GUARD_S)
    assert not producer.is_alive(), "the producer was never resumed"
    queue.close()
    consumer.join(GUARD_S)
    assert not consumer.is_alive()
    assert len(resumed) == 1 and resumed[0] <= 1000 < 3000 <= paused[0]
    assert sorted(seen) == sorted([r.sample_id for r in refs] + ["big", "late"])
    assert store.health().sample_count == 0


def test_without_a_blocked_producer_draining_fires_on_resume_at_the_next_blocking_put():
    # D4: only a step of put_blocks_until_below reads the watermarks.  Acks that
    # drain the store with no producer blocked fire nothing; the next step does.
    store = LocalFeatureStore(max_bytes=1 << 20, high_watermark_bytes=1000, low_watermark_bytes=500)
    events = []
    queue = SampleRefQueue(store, on_pause=lambda h: events.append("pause"),
                           on_resume=lambda h: events.append("resume"))
    for i in range(3):
        put_sample(store, queue, i)  # 3 x 436 = 1308 bytes, above high
    s3 = store.put("s3", sample_tensors(3), run_id="run", algorithm="eagle3", schema_version=SCHEMA,
                   target_model_version="t", draft_weight_version=0, num_tokens=4)
    with pytest.raises(RuntimeError):  # one step: paused (PutAborted is a RuntimeError)
        queue.put_blocks_until_below(s3, abort_when=lambda: True)
    assert events == ["pause"] and queue.is_paused
    for _ in range(3):
        assert queue.ack(queue.acquire_nowait())
    assert events == ["pause"] and queue.is_paused  # drained to s3's bytes alone, and no step yet
    assert store.health().resident_bytes == s3.estimated_bytes < 500
    queue.put_blocks_until_below(s3, abort_when=lambda: True)  # the next step resumes and enqueues
    assert events == ["pause", "resume"] and not queue.is_paused
