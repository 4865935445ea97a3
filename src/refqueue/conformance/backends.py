"""Conformance factories of the in-repo backends (``MODULE:FACTORY`` targets).

``inprocess``  ``refqueue.queue.SampleRefQueue``, the thread-safe in-process
               queue; ``refqueue certify`` with no argument certifies it.
"""

from __future__ import annotations

from typing import Any

from refqueue.conformance.contract import Capabilities

__all__ = ["inprocess"]


def inprocess(store: Any, clock: Any, **config: Any) -> Any:
    """A ``SampleRefQueue`` over ``store`` reading lease time from ``clock``.

    ``visibility_timeout`` arrives as seconds and is wrapped in the queue's
    ``VisibilityTimeout``; the other keys are the queue's own keywords.
    """
    from refqueue.queue import SampleRefQueue, VisibilityTimeout

    seconds = config.pop("visibility_timeout", None)
    timeout = None if seconds is None else VisibilityTimeout(seconds)
    return SampleRefQueue(store, timeout, clock=clock, **config)


inprocess.capabilities = Capabilities(dead_letter_limit=True)  # type: ignore[attr-defined]
