"""Mutant: the poll intervals recognise "wait with no timeout" by identity
(``poll_interval is math.inf``), so ``float("inf")``, ``numpy.inf`` or an
infinity computed at run time is a different object and is refused with
``ValueError`` (docs/API.md: the poll intervals take ``math.inf``, a value)."""

import math
from typing import Any

from conformance.mutants._base import BaseQueue, Lease, _check_seconds, factory


def _poll(value: object) -> None:
    if value is not math.inf:  # the bug: identity, not equality
        _check_seconds("poll_interval", value)


class InfByIdentity(BaseQueue):
    def acquire(self, poll_interval: float = 0.05) -> Lease | None:
        _poll(poll_interval)
        return super().acquire(poll_interval)

    def put_blocks_until_below(self, ref: Any, poll_interval: float = 0.05, abort_when: Any = None) -> None:
        _poll(poll_interval)
        super().put_blocks_until_below(ref, poll_interval, abort_when)


make = factory(InfByIdentity)
