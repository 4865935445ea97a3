"""Mutant: a blocking put that the queue's ``close()`` ends with
``QueueClosed`` skips its clean-up ("closed: nothing left to account for"),
so its ref stays parked: ``parked_bytes`` keeps the bytes of producers that
have all returned (docs/API.md, D8: a waiting producer's ref is parked until
its call returns or raises for any reason, ``QueueClosed`` included)."""

from typing import Any

from conformance.mutants._base import BaseQueue, QueueClosed, _check_poll, _Parked, factory


class ClosedLeavesParked(BaseQueue):
    def put_blocks_until_below(self, ref: Any, poll_interval: float = 0.05, abort_when: Any = None) -> None:
        _check_poll("poll_interval", poll_interval)
        parked = _Parked(getattr(ref, "estimated_bytes", 0))
        try:
            self._step_until_enqueued(ref, parked, poll_interval, abort_when)
        except QueueClosed:
            raise  # the bug: no unpark
        except BaseException:
            with self._lock:
                self._unpark(parked)
            raise
        with self._lock:
            self._unpark(parked)


make = factory(ClosedLeavesParked)
