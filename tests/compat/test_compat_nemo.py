"""``refqueue.compat.nemo``: the seed's module names for code whose imports cannot change.

The stand-ins serve refqueue's own objects (one class per name, whichever
spelling imported it); the loader under the seed's name keeps the seed's
EAGLE-3 default and, where NeMo Automodel is installed, yields the seed's own
``Eagle3TargetBatch`` (shown with a stand-in NeMo Automodel package written
under ``tmp_path``).  The two import routes docs/MIGRATING.md shows run here
as written, each in a fresh interpreter.
"""

from __future__ import annotations

import copy
import importlib
import logging
import math
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from compat_helpers import GUARD_S, put  # noqa: E402

import refqueue.loader  # noqa: E402
import refqueue.queue  # noqa: E402
import refqueue.refs  # noqa: E402
import refqueue.store  # noqa: E402
import refqueue.stores.local  # noqa: E402
from refqueue.errors import SchemaMismatch  # noqa: E402
from refqueue.loader import Batch  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.timeout(120)]

SEED = "nemo_automodel.components.speculative.streaming"
MIGRATING = Path(__file__).resolve().parents[2] / "docs" / "MIGRATING.md"


def _forget_nemo_modules() -> None:
    for name in [n for n in sys.modules if n == "nemo_automodel" or n.startswith("nemo_automodel.")]:
        del sys.modules[name]


@pytest.fixture
def nemo():
    """refqueue.compat.nemo installed afresh; everything it (or a stand-in
    NeMo Automodel package) put in sys.modules removed afterwards."""
    module = importlib.import_module("refqueue.compat.nemo")
    module.uninstall()
    _forget_nemo_modules()
    module.install()
    yield module
    module.uninstall()
    _forget_nemo_modules()


def test_the_seeds_module_names_serve_refqueues_own_objects(nemo):
    namespace: dict = {}
    exec(  # the seed's import statements, unchanged
        "from nemo_automodel.components.speculative.streaming import (FeatureAlgorithm, FeatureSpec, "
        "FeatureStore, Lease, LocalFeatureStore, SampleRef, SampleRefQueue, StoreHandle, StoreHealth, "
        "VisibilityTimeout, assert_no_tensors)\n"
        "from nemo_automodel.components.speculative.streaming.queue import SampleRefQueue as Q\n"
        "from nemo_automodel.components.speculative.streaming.stores.local import LocalFeatureStore as L\n"
        "import nemo_automodel.components.speculative.streaming.refs\n",
        namespace,
    )
    assert namespace["SampleRefQueue"] is namespace["Q"] is refqueue.queue.SampleRefQueue
    assert namespace["LocalFeatureStore"] is namespace["L"] is refqueue.stores.local.LocalFeatureStore
    assert namespace["Lease"] is refqueue.queue.Lease and namespace["StoreHealth"] is refqueue.store.StoreHealth
    assert namespace["FeatureSpec"] is refqueue.refs.FeatureSpec
    assert namespace["assert_no_tensors"] is refqueue.refs.assert_no_tensors
    seed_refs = namespace["nemo_automodel"].components.speculative.streaming.refs
    assert seed_refs.SampleRef is refqueue.refs.SampleRef  # the attribute chain of a plain import
    assert set(importlib.import_module(SEED).__all__) >= {"SampleRefQueue", "LocalFeatureStore", "SampleRef"}


def test_what_migrating_says_of_lease_ids_timeouts_and_loggers(nemo):
    # docs/MIGRATING.md: lease ids per queue from 1, not from the module's counter;
    # no infinite visibility timeout; the seed module's logger is refqueue.queue's
    seed_queue = importlib.import_module(f"{SEED}.queue")
    assert seed_queue.logger is logging.getLogger("refqueue.queue")
    drawn = seed_queue._next_lease_id()
    leases = []
    for _ in range(2):
        store = refqueue.stores.local.LocalFeatureStore()
        q = seed_queue.SampleRefQueue(store)
        q.put(put(store, "s0"))
        leases.append(q.acquire(poll_interval=GUARD_S))
    assert [lease.lease_id for lease in leases] == [1, 1] and leases[0] != leases[1]
    assert leases[0].epoch != leases[1].epoch
    assert seed_queue._next_lease_id() == drawn + 1  # the acquires drew nothing from it
    with pytest.raises(ValueError, match="must be finite, got inf"):
        seed_queue.VisibilityTimeout(math.inf)
    text = MIGRATING.read_text()
    for said in ("`_next_lease_id()` still exists", "`math.inf` included", "`refqueue.queue`'s", "`_sample_counters`"):
        assert said in text


def test_an_object_made_under_one_spelling_is_an_instance_under_the_other(nemo):
    from nemo_automodel.components.speculative.streaming import LocalFeatureStore, SampleRefQueue

    store = LocalFeatureStore()  # the seed's spelling
    queue = refqueue.queue.SampleRefQueue(store)  # refqueue's
    assert isinstance(queue, SampleRefQueue) and isinstance(store, refqueue.stores.local.LocalFeatureStore)
    ref = put(store, "s0")
    queue.put(ref)
    with pytest.raises(ValueError, match="already present"):  # as seed code catches it
        SampleRefQueue.put(queue, ref)
    assert queue.pending_count() == 1


def test_a_name_refqueue_does_not_provide_is_an_import_error_naming_it(nemo):
    with pytest.raises(ImportError, match="AsyncFeaturePipeline"):
        exec(f"from {SEED} import AsyncFeaturePipeline", {})
    with pytest.raises(AttributeError, match=r"has no 'PromptSource'.*docs/MIGRATING\.md"):
        importlib.import_module(SEED).PromptSource  # noqa: B018


def test_install_refuses_when_a_seed_module_is_already_imported_and_changes_nothing(nemo):
    nemo.uninstall()
    before = dict(sys.modules)
    planted = type(sys)(f"{SEED}.refs")
    sys.modules[f"{SEED}.refs"] = planted
    try:
        with pytest.raises(RuntimeError, match=re.escape(f"['{SEED}.refs'] are already imported")):
            nemo.install()
        assert sys.modules[f"{SEED}.refs"] is planted
        assert {n for n in sys.modules if n.startswith("nemo_automodel")} == {f"{SEED}.refs"}
    finally:
        del sys.modules[f"{SEED}.refs"]
    assert set(sys.modules) == set(before)


def test_uninstall_removes_every_name(nemo):
    nemo.uninstall()
    assert not [n for n in sys.modules if n.startswith("nemo_automodel")]
    with pytest.raises(ModuleNotFoundError, match="nemo_automodel"):
        importlib.import_module(f"{SEED}.queue")
    nemo.install()
    nemo.install()  # idempotent
    assert importlib.import_module(f"{SEED}.queue").SampleRefQueue is refqueue.queue.SampleRefQueue


def test_installed_a_specs_dtype_reads_the_torch_dtype_and_refs_still_compare_by_name(nemo):
    from nemo_automodel.components.speculative.streaming.refs import FeatureSpec, SampleRef

    spec = FeatureSpec(shape=(2, 8, 96), dtype=torch.bfloat16)  # the seed's own check
    assert spec.shape == (2, 8, 96) and spec.dtype is torch.bfloat16 and spec.dtype_name == "bfloat16"
    assert copy.copy(spec) == spec and copy.deepcopy(spec).dtype is torch.bfloat16  # copies write the name back
    store = refqueue.stores.local.LocalFeatureStore()
    ref = put(store, "s0")
    assert ref.feature_specs["aux_hidden_states"].dtype is torch.uint8
    again = SampleRef.from_json(ref.to_json())  # JSON carries the name; equal, hash equal
    assert again == ref and hash(again) == hash(ref)
    assert '"dtype": "uint8"' in ref.to_json() or '"dtype":"uint8"' in ref.to_json()
    queue = refqueue.queue.SampleRefQueue(store)
    queue.put(ref)
    lease = queue.acquire_nowait()
    assert refqueue.queue.Lease.from_json(lease.to_json()).ref == ref and queue.ack(lease)
    nemo.uninstall()  # names again, for the specs made while installed too
    assert spec.dtype == "bfloat16" and again.feature_specs["aux_hidden_states"].dtype == "uint8"
    assert FeatureSpec((2, 8, 96), "bfloat16") == spec


def _next_within_guard(loader):
    outcome: dict = {}

    def pull():
        try:
            outcome["value"] = next(loader)
        except BaseException as exc:  # the outcome under test
            outcome["error"] = exc

    thread = threading.Thread(target=pull, daemon=True)
    thread.start()
    thread.join(GUARD_S)
    assert not thread.is_alive(), "next() still waiting"
    return outcome


def test_the_seeds_loader_name_defaults_to_eagle3_and_refuses_another_algorithm_at_once(nemo):
    from nemo_automodel.components.speculative.streaming.loader import FeatureDataLoader

    store = refqueue.stores.local.LocalFeatureStore()
    queue = refqueue.queue.SampleRefQueue(store)
    tensors = {"hidden_states": torch.zeros(2, 8), "input_ids": torch.zeros(2, 8, dtype=torch.long),
               "attention_mask": torch.ones(2, 8, dtype=torch.long), "loss_mask": torch.ones(2, 8, dtype=torch.long)}
    queue.put(store.put("d0", tensors, run_id="run", algorithm="dflash", schema_version=1,
                        target_model_version="t", draft_weight_version=0, num_tokens=16))
    loader = FeatureDataLoader(queue, store, acquire_poll_interval=0.01)  # the seed's call; the queue stays open
    assert isinstance(loader, refqueue.loader.FeatureDataLoader) and loader.algorithm == "eagle3"
    outcome = _next_within_guard(loader)
    assert isinstance(outcome.get("error"), SchemaMismatch), outcome
    assert "algorithm 'dflash' is not the loader's 'eagle3'" in str(outcome["error"])
    assert [d.ref.sample_id for d in queue.dead_letters()] == ["d0"]
    assert refqueue.loader.FeatureDataLoader(queue, store).algorithm is None  # refqueue's own: from the first ref


def test_without_nemo_automodel_the_loader_yields_refqueues_batch(nemo):
    from nemo_automodel.components.speculative.streaming.loader import FeatureDataLoader

    assert nemo.seed_eagle3_batch() is None
    store = refqueue.stores.local.LocalFeatureStore()
    queue = refqueue.queue.SampleRefQueue(store)
    queue.put(put(store, "s0", 3))
    queue.close()
    (batch,) = list(FeatureDataLoader(queue, store))
    assert isinstance(batch, Batch) and int(batch.aux_hidden_states[0]) == 3 and batch.logits is None


STAND_IN_TARGET = '''
"""A stand-in for NeMo Automodel's EAGLE-3 target module: its batch class only."""
from dataclasses import dataclass
from typing import Any


@dataclass
class Eagle3TargetBatch:
    aux_hidden_states: Any
    input_ids: Any
    attention_mask: Any
    loss_mask: Any
    logits: Any = None
    target_probs: Any = None
'''


def test_where_nemo_automodel_is_installed_the_loader_yields_its_eagle3_target_batch(nemo, tmp_path, monkeypatch):
    root = tmp_path / "nemo_automodel"
    for package in ("", "components", "components/speculative", "components/speculative/eagle"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    (root / "components/speculative/eagle/target.py").write_text(STAND_IN_TARGET)
    nemo.uninstall()
    _forget_nemo_modules()
    monkeypatch.syspath_prepend(str(tmp_path))
    nemo.install()
    # NeMo Automodel's own packages stay its own; only the streaming names are refqueue's
    speculative = importlib.import_module("nemo_automodel.components.speculative")
    assert speculative.__file__ == str(root / "components/speculative/__init__.py")
    assert speculative.streaming.queue.SampleRefQueue is refqueue.queue.SampleRefQueue
    from nemo_automodel.components.speculative.eagle.target import Eagle3TargetBatch
    from nemo_automodel.components.speculative.streaming.loader import FeatureDataLoader

    assert nemo.seed_eagle3_batch() is Eagle3TargetBatch
    store = refqueue.stores.local.LocalFeatureStore()
    queue = refqueue.queue.SampleRefQueue(store)
    for i in range(2):
        queue.put(put(store, f"s{i}", i))
    queue.close()
    batches = list(FeatureDataLoader(queue, store))
    assert all(isinstance(b, Eagle3TargetBatch) for b in batches)
    assert [int(b.aux_hidden_states[0]) for b in batches] == [0, 1] and batches[0].logits is None
    assert queue.is_drained and store.health().sample_count == 0
    # batches of several samples, or another collate, stay refqueue's
    assert FeatureDataLoader(queue, store, batch_size=2)._collate is None
    nemo.uninstall()
    assert not hasattr(speculative, "streaming")


def _python_blocks_of_switching_imports() -> list[str]:
    text = MIGRATING.read_text()
    section = text.split("## Switching imports", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


CHECK = """
import refqueue.loader, refqueue.queue, refqueue.refs, refqueue.stores.local
assert SampleRefQueue is refqueue.queue.SampleRefQueue
assert LocalFeatureStore is refqueue.stores.local.LocalFeatureStore
assert FeatureAlgorithm is refqueue.refs.FeatureAlgorithm and SampleRef is refqueue.refs.SampleRef
assert FeatureSpec is refqueue.refs.FeatureSpec and assert_no_tensors is refqueue.refs.assert_no_tensors
assert issubclass(FeatureDataLoader, refqueue.loader.FeatureDataLoader)
print("ok", FeatureDataLoader.__module__)
"""


@pytest.mark.parametrize("route", [0, 1], ids=["change-the-imports", "compat-module"])
def test_each_route_migrating_shows_runs_as_written(route):
    blocks = _python_blocks_of_switching_imports()
    assert len(blocks) == 2, blocks
    assert ("refqueue.compat.nemo" in blocks[route]) == (route == 1)
    done = subprocess.run([sys.executable, "-c", blocks[route] + textwrap.dedent(CHECK)],
                          capture_output=True, text=True, timeout=GUARD_S * 4)
    assert done.returncode == 0, done.stderr
    module = "refqueue.compat.nemo" if route == 1 else "refqueue.loader"
    assert done.stdout.split() == ["ok", module]
