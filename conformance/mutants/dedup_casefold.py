"""Mutant: the dedup window compares ids casefolded and in one normal form.

A window meant to catch "the same sample" normalises what it remembers, so
after ``"Sample-A"`` completes, a put of the distinct id ``"sample-a"`` is
refused as a replay (D5: a replay is a put of the same id, compared exactly).
"""

import unicodedata

from conformance.mutants._base import BaseQueue, factory
from refqueue.errors import ReplayedSample


def _loose(sample_id):
    return unicodedata.normalize("NFKC", sample_id).casefold().strip()


class DedupCasefold(BaseQueue):
    def _remember(self, sample_id):
        super()._remember(_loose(sample_id))

    def _validate_put(self, call, ref):
        if self._dedup and getattr(ref, "sample_id", None) is not None and _loose(ref.sample_id) in self._completed:
            raise ReplayedSample(f"{call}({ref.sample_id!r}): completed within the dedup window")
        super()._validate_put(call, ref)


make = factory(DedupCasefold)
