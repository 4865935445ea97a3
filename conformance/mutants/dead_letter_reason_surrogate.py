"""Mutant: ``dead_letter`` checks that the reason is a non-empty str and no
more, so a reason holding a lone surrogate (``"bad \\udcff byte"``, what
``surrogateescape`` makes of a stray byte in a log line) is kept: it has no
UTF-8 form, so a dead-letter report written as JSON, or read on another
machine, fails later and far away (docs/API.md: such a reason is a
ValueError)."""

from conformance.mutants._base import BaseQueue, factory


class DeadLetterReasonSurrogate(BaseQueue):
    @staticmethod
    def _check_reason(reason: object) -> None:
        if not isinstance(reason, str) or not reason:
            raise ValueError(f"dead_letter needs a non-empty reason str, got {reason!r}")


make = factory(DeadLetterReasonSurrogate)
