"""Mutant: the epoch is made from the process id and ``id(self)``, not at
random: a queue made after another was dropped often gets its memory, and so
its epoch, and a lease of the dropped queue passes for one of the new queue's.
docs/API.md: the epoch identifies the issuing queue (``uuid4().hex``).
"""

import os

from conformance.mutants._base import BaseQueue, factory


class EpochFromId(BaseQueue):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._epoch = f"{os.getpid():08x}{id(self):024x}"


make = factory(EpochFromId)
