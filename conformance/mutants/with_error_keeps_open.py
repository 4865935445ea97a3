"""Mutant: ``with queue:`` closes the queue only when its block ends normally;
a block that raises leaves it open (a producer's ``with`` that crashed keeps
consumers waiting on a queue nobody will close).  docs/API.md: on exit it
stops the reclaimer and closes the queue.
"""

from conformance.mutants._base import BaseQueue, factory


class WithErrorKeepsOpen(BaseQueue):
    def __exit__(self, exc_type, exc, tb):
        self.stop_reclaimer()
        if exc_type is None:
            self.close()


make = factory(WithErrorKeepsOpen)
