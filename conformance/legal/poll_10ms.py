"""Legal: ``acquire`` polls every 10 ms and is never woken
(``conformance.mutants._polling``).  A woken consumer then returns at most
10 ms (plus scheduling) after the waking call, within the 50 ms bound: the
contract bounds the latency, not the mechanism, so the kit must certify it
(and the polling mutants at 60, 100 and 200 ms must be rejected)."""

from conformance.mutants._base import factory
from conformance.mutants._polling import polling

make = factory(polling(0.01))
