"""Mutant: ``dead_letter`` tidies the reason before it keeps it: surrounding
whitespace stripped, cut to 256 characters (what a backend that writes the
reason into a log line or a fixed-width column does).  ``dead_letters()``
then lists a reason the consumer never gave (docs/API.md: the string given
to ``dead_letter(lease, reason)``, any non-empty str)."""
from conformance.mutants._base import BaseQueue, factory


class DeadLetterReasonTrimmed(BaseQueue):
    def dead_letter(self, lease, reason):
        if isinstance(reason, str) and reason.strip():
            reason = reason.strip()[:256]
        return super().dead_letter(lease, reason)


make = factory(DeadLetterReasonTrimmed)
