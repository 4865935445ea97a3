"""Backends a stranger might hand the kit, for the tests of the verdict every
run ends with (``test_conformance_verdicts``): the kit's correct base queue
on a store of the stranger's own that does not fit the kit's runs.

``small_store:make`` runs on a store that states its cap (6 samples of the
kit's unit): too small for the threads phase, which must say so before it
records anything ("could not certify").  ``hidden_cap:make`` runs on a store
that refuses puts past 6 samples but reports no cap (``capacity_bytes`` is
None), so nothing can be decided in advance: the ``StoreFull`` it raises in
the middle of a phase must become that phase's failure, with the call.
"""

from __future__ import annotations

from typing import Any

from conformance.mutants._base import BaseQueue, factory
from refqueue.conformance.samples import UNIT_BYTES, default_store
from refqueue.stores.local import LocalFeatureStore

CAP_UNITS = 6


class HiddenCap(LocalFeatureStore):
    """A store with a cap it does not report."""

    @property
    def capacity_bytes(self) -> int | None:
        return None


def _hidden_cap_store() -> Any:
    return HiddenCap(device="cpu", max_bytes=CAP_UNITS * UNIT_BYTES, max_samples=None, high_watermark_bytes=None,
                     low_watermark_bytes=None)  # fmt: skip


small_store = factory(BaseQueue, make_store=lambda: default_store(capacity=CAP_UNITS))
hidden_cap = factory(BaseQueue, make_store=_hidden_cap_store)
