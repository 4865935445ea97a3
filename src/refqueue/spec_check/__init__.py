"""Model-check the TLA+ spec (spec/SampleRefQueue.tla) with TLC and prove
that it agrees with the Python reference model.

The ``refqueue check-spec`` subcommand (``add_arguments``/``run``).  Modules,
one concept each:

``tlc``        locate java and TLC's jar, run TLC on one config, read its output
``manifest``   spec/manifest.json: the expected outcome and size of each config
``values``     a reader for the TLA+ values TLC prints
``agreement``  TLC's dumped state graph against the Python explorer's
``command``    the subcommand: every config, a table, the counterexample traces
"""

from refqueue.spec_check.agreement import AgreementError, AgreementResult
from refqueue.spec_check.command import add_arguments, check_config, run
from refqueue.spec_check.manifest import ConfigEntry, ManifestError, load_manifest
from refqueue.spec_check.tlc import TlcRun, TlcUnavailable, run_tlc

__all__ = [
    "add_arguments",
    "run",
    "check_config",
    "load_manifest",
    "run_tlc",
    "ConfigEntry",
    "ManifestError",
    "TlcRun",
    "TlcUnavailable",
    "AgreementError",
    "AgreementResult",
]
