"""Mutant: the dedup window is kept as one comma-joined string.

Completed ids are appended to a string (``"a,s,0"``) and a put is a replay when
its id is one of the string's comma-separated pieces: after ``"s,0"`` completes,
the distinct ids ``"s"`` and ``"0"`` are refused as replays (D5: a replay is a put
of the same id, compared exactly).
"""

from conformance.mutants._base import BaseQueue, factory
from refqueue.errors import ReplayedSample


class DedupJoined(BaseQueue):
    _joined = ""

    def _remember(self, sample_id):
        super()._remember(sample_id)
        if self._dedup:
            self._joined = ",".join(self._completed)

    def _validate_put(self, call, ref):
        sample_id = getattr(ref, "sample_id", None)
        if self._dedup and isinstance(sample_id, str) and sample_id in self._joined.split(","):
            raise ReplayedSample(f"{call}({sample_id!r}): completed within the dedup window")
        super()._validate_put(call, ref)


make = factory(DedupJoined)
