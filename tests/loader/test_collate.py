"""pad_collate: a batch of samples of different lengths as one dict of padded, stacked tensors."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from refqueue.collate import pad_collate  # noqa: E402
from refqueue.loader import FeatureDataLoader  # noqa: E402
from refqueue.queue import SampleRefQueue  # noqa: E402
from refqueue.stores import LocalFeatureStore  # noqa: E402

pytestmark = pytest.mark.torch

HIDDEN = 6


def features(algorithm: str, seq: int, i: int) -> dict:
    hidden = torch.full((seq, 3 * HIDDEN), float(i))
    common = {"input_ids": torch.arange(seq) + 100 * i, "loss_mask": torch.ones(seq)}
    if algorithm == "eagle3":
        return {"aux_hidden_states": hidden, **common, "attention_mask": torch.ones(seq, dtype=torch.bool),
                "position_ids": torch.arange(seq), "doc_id": torch.tensor([i, i])}
    if algorithm == "dflash":
        return {"hidden_states": hidden, **common, "attention_mask": torch.ones(seq, dtype=torch.bool)}
    return {"target_hidden_states": hidden, "target_last_hidden_states": torch.full((seq, HIDDEN), float(i)), **common}


def loader_over(algorithm: str, lengths: list[int], **kwargs):
    store = LocalFeatureStore()
    queue = SampleRefQueue(store)
    for i, seq in enumerate(lengths):
        ref = store.put(f"s{i}", features(algorithm, seq, i), run_id="r", algorithm=algorithm, schema_version=1,
                        target_model_version="t", draft_weight_version=0, num_tokens=seq)
        queue.put(ref)
    queue.close()
    return store, FeatureDataLoader(queue, algorithm=algorithm, batch_size=len(lengths), collate=pad_collate, **kwargs)


@pytest.mark.parametrize("algorithm", ["eagle3", "dflash", "dspark"])
def test_each_algorithm_gets_its_features_padded_to_the_longest_and_stacked(algorithm):
    store, loader = loader_over(algorithm, [5, 3, 7])
    with loader:
        (batch,) = list(loader)
    required = {"eagle3": ["aux_hidden_states", "input_ids", "attention_mask", "loss_mask"],
                "dflash": ["hidden_states", "input_ids", "attention_mask", "loss_mask"],
                "dspark": ["target_hidden_states", "target_last_hidden_states", "input_ids", "loss_mask"]}[algorithm]
    assert list(batch)[:4] == required and list(batch)[-1] == "lengths"
    assert batch["lengths"].tolist() == [5, 3, 7]
    hidden = batch[required[0]]
    assert hidden.shape == (3, 7, 3 * HIDDEN)
    for i, seq in enumerate([5, 3, 7]):
        assert torch.equal(hidden[i, :seq], torch.full((seq, 3 * HIDDEN), float(i)))
        assert not hidden[i, seq:].any()  # padding is 0
        assert batch["loss_mask"][i].sum() == seq  # padded positions take no loss
        assert torch.equal(batch["input_ids"][i, :seq], torch.arange(seq) + 100 * i)
    assert store.health().sample_count == 0  # all acked


def test_shared_optional_features_ride_along_and_a_feature_without_a_token_dimension_is_stacked():
    _, loader = loader_over("eagle3", [4, 2])
    with loader:
        (batch,) = list(loader)
    assert batch["position_ids"].shape == (2, 4)
    assert batch["doc_id"].tolist() == [[0, 0], [1, 1]]  # no dimension of num_tokens: stacked as it is


def test_a_feature_that_differs_beyond_its_token_dimension_is_refused_with_the_shapes():
    store = LocalFeatureStore()
    queue = SampleRefQueue(store)
    for i, width in enumerate([6, 8]):
        tensors = features("dflash", 4, i)
        tensors["hidden_states"] = torch.zeros(4, width)
        queue.put(store.put(f"s{i}", tensors, run_id="r", algorithm="dflash", schema_version=1,
                            target_model_version="t", draft_weight_version=0, num_tokens=4))
    queue.close()
    with FeatureDataLoader(queue, algorithm="dflash", batch_size=2, collate=pad_collate) as loader:
        with pytest.raises(ValueError, match=r"feature 'hidden_states' differs beyond its token dimension .*"
                                             r"\('s0', \(4, 6\)\), \('s1', \(4, 8\)\)"):
            next(loader)
    assert queue.pending_count() == 2  # the failed collate gave the batch back (close fails what it holds)


def test_an_empty_batch_is_refused():
    with pytest.raises(ValueError, match="^pad_collate: the batch is empty"):
        pad_collate([])


@pytest.mark.parametrize("pad_value", [True, "0", None, float("nan")])
def test_a_pad_value_that_is_not_a_number_is_refused(pad_value):
    with pytest.raises(TypeError, match=r"^pad_collate\(pad_value=.*\) must be a number"):
        pad_collate([], pad_value=pad_value)


@pytest.mark.parametrize("batch", [3, [{"input_ids": 1}], ["s0"]])
def test_what_is_not_a_batch_of_samples_is_refused(batch):
    with pytest.raises(TypeError, match=r"^pad_collate needs a Batch"):
        pad_collate(batch)
