"""Mutant: ``extend`` checks the lease, reads the clock outside its lock, and
commits in a second lock section to whatever lease the sample holds by then.

A fail and a new acquire landing while it reads the clock make the stale
extend move the *new* holder's deadline (and answer True): the new lease
outlives its timeout, and a crashed new holder's sample comes back late.
docs/API.md (D1): a stale extend changes nothing.
"""

from conformance.mutants._base import BaseQueue, _check_seconds, factory


class ExtendUnlocked(BaseQueue):
    def extend(self, lease, seconds=None):
        with self._lock:
            self._check_lease("extend", lease)
            seconds = self._vt.seconds if seconds is None else _check_seconds("extend(seconds)", seconds)
            if self._live(lease) is None:
                return False
        deadline = self._clock.now() + seconds  # (outside the lock)
        with self._lock:
            entry = self._entries.get(lease.ref.sample_id)
            if entry is None or entry.deadline is None:
                return False
            entry.deadline = deadline  # ... on the sample, without asking whose lease it holds now
            return True


make = factory(ExtendUnlocked)
