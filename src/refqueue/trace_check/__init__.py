"""Trace validation: replay a recorded event log against the reference model.

``refqueue trace-check run.jsonl [more files]`` (``refqueue.trace_check.cli``)
merges the files, orders each process's records by sequence and replays every
queue's records against ``refqueue.model`` (``replay.QueueReplay``: one model
action per record), stopping at the first record the model does not allow;
``Monitor(queue)`` does the same online, as the queue runs.  ``--tla`` turns a
short log into a TLC run of ``spec/SampleRefQueueTrace.tla`` (``tla``).
The model is imported, never the production queue.
"""

from refqueue.trace_check.check import TraceChecker, TraceResult, Violation, check_records, order_records
from refqueue.trace_check.monitor import Monitor, TraceViolation
from refqueue.trace_check.replay import BadTrace, QueueReplay, describe_state

__all__ = [
    "BadTrace", "Monitor", "QueueReplay", "TraceChecker", "TraceResult", "TraceViolation", "Violation",
    "check_records", "describe_state", "order_records",
]
