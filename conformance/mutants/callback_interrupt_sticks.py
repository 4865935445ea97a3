"""Mutant: the queue marks that a thread is calling the callbacks and clears
the mark on ``except Exception`` only, so an ``on_pause`` that raises
``KeyboardInterrupt`` leaves it set: no pause or resume is reported again
(docs/API.md: a callback's exception propagates, and every change is
reported)."""

from conformance.mutants._base import BaseQueue, factory


class CallbackInterruptSticks(BaseQueue):
    def _fire(self) -> None:
        with self._lock:
            if self._calling:
                return
            self._calling = True
        try:
            while True:
                with self._lock:
                    if not self._callbacks:
                        self._calling = False
                        return
                    callback, health = self._callbacks.popleft()
                self._call(callback, health)
        except Exception:
            with self._lock:
                self._calling = False
            raise


make = factory(CallbackInterruptSticks)
