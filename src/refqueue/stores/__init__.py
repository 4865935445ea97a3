"""Concrete ``FeatureStore``s (these import torch; ``refqueue.store`` does not).

* ``LocalFeatureStore`` (``refqueue.stores.local``): tensors in this process,
  on ``cpu`` or ``cuda``; URIs ``mem://<name>``.
"""

from refqueue._torch import require_torch

# Every store module imports torch; without it, say what to install, once, here
# (this package's __init__ runs before any of its modules).
require_torch("refqueue.stores (LocalFeatureStore, SharedDirFeatureStore)")

from refqueue.stores.local import LocalFeatureStore  # noqa: E402

__all__ = ["LocalFeatureStore"]
