"""Fixtures of the queue's tests: a ``BytesStore``, a ``ManualClock`` and a
queue factory bound to both (defined in ``queue_fixtures``, shared with the
hardening tests)."""

from __future__ import annotations

from queue_fixtures import clock, make_queue, store, stored

__all__ = ["clock", "make_queue", "store", "stored"]
