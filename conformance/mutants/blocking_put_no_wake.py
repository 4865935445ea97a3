"""Mutant: a ref admitted by ``put_blocks_until_below`` wakes no consumer.

Only ``put`` notifies a waiting ``acquire``; the producer's blocking put
appends the ref to pending quietly, so a consumer blocked on the empty queue
sleeps out its poll interval with the ref pending (D6).
"""

from conformance.mutants._base import BaseQueue, _Entry, factory


class BlockingPutNoWake(BaseQueue):
    def _put_nowait(self, call, ref):
        if call != "put_blocks_until_below":
            super()._put_nowait(call, ref)
            return
        self._validate_put(call, ref)
        self._entries[ref.sample_id] = _Entry(ref)
        self._pending.append(ref.sample_id)  # (no notify)


make = factory(BlockingPutNoWake)
