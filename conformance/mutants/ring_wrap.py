"""Mutant: a ring buffer of pending refs with an off-by-one at the wrap.

With two refs or more pending, a new ref is written one slot before the
tail instead of at it, so the last two come out swapped.  Only a world with
three samples live at once (two pending and one more put) shows it.
"""

from conformance.mutants._base import BaseQueue, factory


class RingWrap(BaseQueue):
    def _put_nowait(self, call: str, ref) -> None:  # type: ignore[no-untyped-def]
        wrap = len(self._pending) >= 2
        super()._put_nowait(call, ref)
        if wrap:
            self._pending.insert(len(self._pending) - 2, self._pending.pop())


make = factory(RingWrap)
