"""Concrete ``FeatureStore``s (these import torch; ``refqueue.store`` does not).

* ``LocalFeatureStore`` (``refqueue.stores.local``): tensors in this process,
  on ``cpu`` or ``cuda``; URIs ``mem://<name>``.
"""

from refqueue.stores.local import LocalFeatureStore

__all__ = ["LocalFeatureStore"]
