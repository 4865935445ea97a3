"""Legal: the in-process queue on its own clock (``time.monotonic``, the
default of ``SampleRefQueue``), ignoring the kit's, declared with
``Capabilities(injected_clock=False)``; ``make_reduced`` declares the
delivery cap and the dedup window absent too.

The kit must certify both however long a run takes on a loaded machine: it
hands such a backend every duration ``REAL_CLOCK_SCALE`` times longer (a walk's
1 s timeout is an hour), so no lease expires by itself, and it never lets
time pass (docs/CERTIFYING.md, the backend's own clock)."""

from typing import Any

from refqueue.clock import MonotonicClock
from refqueue.conformance import Capabilities
from refqueue.conformance.backends import inprocess


def make(store: Any, clock: Any, **config: Any) -> Any:
    return inprocess(store, MonotonicClock(), **config)


def make_reduced(store: Any, clock: Any, **config: Any) -> Any:
    return inprocess(store, MonotonicClock(), **config)


make.capabilities = Capabilities(injected_clock=False)  # type: ignore[attr-defined]
make_reduced.capabilities = Capabilities(  # type: ignore[attr-defined]
    injected_clock=False, max_deliveries=False, dedup_window=False
)
