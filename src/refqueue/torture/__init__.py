"""``refqueue torture``: a deployment of ``RedisSampleRefQueue`` and
``SharedDirFeatureStore`` under faults, recorded and checked (Jepsen's
history and checker, FoundationDB's seeded fault schedule).

Modules, one concept each:

* ``config``: ``TortureConfig``, what one run does, checked up front;
* ``schedule``: the faults of a run, a pure function of the seed;
* ``server``: the throwaway ``redis-server`` (or the user's, on loopback);
* ``proxy``: the TCP proxy that loses replies on order;
* ``workers``: the producer and consumer processes, careful users;
* ``processes``: the supervisor that starts, reaps and replaces them;
* ``nemesis``: carries out the schedule, recording each fault;
* ``history``: the per-process JSONL records and their merge;
* ``final``: the end of a run (close, drain, intents, residency);
* ``facts`` and ``checker``: the rules over the merged history;
* ``report``: the table and the excerpts; ``cli``: the command.
"""

from refqueue.torture.checker import ANOMALY_KINDS, Anomaly, CheckResult, Verdict, check
from refqueue.torture.config import FAULTS, PERSISTENCE, TortureConfig, parse_faults
from refqueue.torture.history import History, Op, Recorder, load
from refqueue.torture.schedule import FaultStep, plan

__all__ = [
    "ANOMALY_KINDS", "Anomaly", "CheckResult", "Verdict", "check", "FAULTS", "PERSISTENCE", "TortureConfig",
    "parse_faults", "History", "Op", "Recorder", "load", "FaultStep", "plan", "run_torture",
]


def run_torture(config: TortureConfig, progress=None):  # noqa: ANN001, ANN201 (imports the heavy parts lazily)
    """One run (``refqueue.torture.runner.run_torture``)."""
    from refqueue.torture.runner import run_torture as run

    return run(config, progress)
