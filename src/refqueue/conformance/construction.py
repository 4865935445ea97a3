"""The ``construction`` phase: the configurations a factory must accept or refuse.

Each case is a queue configuration (and, for the kit's store, the store's
caps and watermarks in units); the reference model decides whether it is
valid (``ModelConfig.byte_config``, in bytes, as the store reports them).
A configuration the model rejects (a zero timeout, an empty hysteresis
band, a half-set effective watermark pair, ...) must make the factory raise
``TypeError``/``ValueError``; one it accepts must construct.  A case that
needs the kit's store is left out for a backend with its own
(``make_store``), and one that needs ``max_deliveries``/``dedup_window``/
``dead_letter_limit`` for a backend that does not declare them (the model
validates a ``dead_letter_limit`` only: what a queue drops past it is the calls
phase's ``dead-letter-limit``).  A failure's replay constructs the
backend with the failing configuration.

Imports: ``harness`` (``ModelConfig``), ``session``, ``samples``, ``render``.
"""

from __future__ import annotations

import sys

import time
from collections.abc import Mapping
from typing import Any

from refqueue.conformance.contract import Backend, rejection_kind
from refqueue.conformance.harness import ModelConfig
from refqueue.conformance.phase import Context, PhaseBase, PhaseResult, timed

__all__ = ["CONSTRUCTIONS", "PHASE", "check_construction"]

# (what, queue config, default store config in units); the model decides which
# of them a factory must refuse.
CONSTRUCTIONS: list[tuple[str, ModelConfig, dict[str, int | None]]] = [
    ("defaults", ModelConfig(), {}),
    ("zero visibility timeout", ModelConfig(visibility_timeout=0.0), {}),
    ("negative visibility timeout", ModelConfig(visibility_timeout=-1.0), {}),
    ("non-finite visibility timeout", ModelConfig(visibility_timeout=float("nan")), {}),
    ("watermark pair", ModelConfig(high=4, low=1), {}),
    ("empty hysteresis band", ModelConfig(high=3, low=3), {}),
    ("inverted watermarks", ModelConfig(high=2, low=3), {}),
    ("high override only, store without watermarks", ModelConfig(high=4), {}),
    ("high override over the store's low", ModelConfig(high=8), {"capacity": 10, "high": 6, "low": 2}),
    ("low override at the store's high", ModelConfig(low=6), {"capacity": 10, "high": 6, "low": 2}),
    ("high override past capacity", ModelConfig(high=11, low=2), {"capacity": 10}),
    ("max_deliveries=0", ModelConfig(max_deliveries=0), {}),
    ("max_deliveries=2", ModelConfig(max_deliveries=2), {}),
    ("dedup_window=-1", ModelConfig(dedup_window=-1), {}),
    ("dedup_window=3", ModelConfig(dedup_window=3), {}),
    ("dead_letter_limit=-1", ModelConfig(dead_letter_limit=-1), {}),
    ("dead_letter_limit=True", ModelConfig(dead_letter_limit=True), {}),
    ("dead_letter_limit=0", ModelConfig(dead_letter_limit=0), {}),
    ("dead_letter_limit=5", ModelConfig(dead_letter_limit=5), {}),
    ("dead_letter_limit=sys.maxsize", ModelConfig(dead_letter_limit=sys.maxsize), {}),
    ("dead_letter_limit=sys.maxsize + 1", ModelConfig(dead_letter_limit=sys.maxsize + 1), {}),
]


def check_construction(backend: Backend) -> tuple[int, dict[str, Any] | None]:
    """Construct the backend with each of ``CONSTRUCTIONS`` it can take; the
    number checked and, on a disagreement with the model, the failure (with
    its replay's source under ``"source"``)."""
    from refqueue.conformance.samples import default_store
    from refqueue.conformance.session import Session

    caps = backend.capabilities
    checked = 0
    for what, config, store in CONSTRUCTIONS:
        if (
            (config.max_deliveries is not None and not caps.max_deliveries)
            or (config.dedup_window is not None and not caps.dedup_window)
            or (config.dead_letter_limit is not None and not caps.dead_letter_limit)
        ):
            continue
        if backend.make_store is not None and store:
            continue  # the case needs the kit's store
        model_error = None
        try:
            limits_store = backend.make_store() if backend.make_store is not None else default_store(**store)
            try:
                config.byte_config(limits_store, fifo=caps.fifo)  # in bytes: messages say bytes
            finally:
                limits_store.close()
        except (TypeError, ValueError) as exc:
            model_error = str(exc)
        checked += 1
        try:
            session = Session(backend, config.backend_config(), sizes={}, store=store)
        except Exception as exc:  # noqa: BLE001 - classified against the model
            if model_error is not None and rejection_kind(exc) == "invalid":
                continue
            message = (
                f"constructing with {what} raised {type(exc).__name__}: {exc}; "
                + ("the model rejects it as invalid" if model_error else "the model accepts it")
            )
            return checked, _failure(backend, what, config, store, model_error, message)
        session.close()
        if model_error is not None:
            message = f"constructing with {what} succeeded; the model rejects it: {model_error}"
            return checked, _failure(backend, what, config, store, model_error, message)
    return checked, None


def _failure(
    backend: Backend,
    what: str,
    config: ModelConfig,
    store: Mapping[str, int | None],
    model_error: str | None,
    message: str,
) -> dict[str, Any]:
    from refqueue.conformance.render import render_construction

    source = render_construction(
        target=backend.target, what=what, config=config, store=store, model_error=model_error, reason=message
    )
    return {"phase": "construction", "message": message, "trace_steps": 0, "source": source}


class ConstructionPhase(PhaseBase):
    name = "construction"
    sized = False  # the same few constructions whatever the profile

    def run(self, context: Context) -> PhaseResult:
        context.progress.start("construction", len(CONSTRUCTIONS))
        started = time.perf_counter()
        checked, failure = check_construction(context.backend)
        result = PhaseResult(timed(0, time.perf_counter() - started, configurations=checked))
        if failure is not None:
            result.replay = failure.pop("source")
            result.failure = {**failure, "steps_to_failure": 0, "phase_steps_to_failure": 0}
        return result

    def summary(self, name: str, entry: Mapping[str, Any]) -> list[str]:
        return [f"  {name:<13} {entry['configurations']} configurations"]


PHASE = ConstructionPhase()
