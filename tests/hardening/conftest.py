"""Fixtures of the hardening tests (issue 12): the queue tests' ``BytesStore``
on a ``ManualClock``, and a queue factory bound to both (thread helpers are in
``hardening_helpers``).

``BytesStore`` and those fixtures live beside the queue's tests
(``tests/queue/bytes_store.py``, ``tests/queue/queue_fixtures.py``); this
directory puts that folder on ``sys.path`` to import them.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "queue"))

from queue_fixtures import clock, make_queue, store, stored  # noqa: E402

__all__ = ["clock", "make_queue", "store", "stored"]
