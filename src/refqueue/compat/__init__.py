"""Compatibility shims for code written against another project's API.

``refqueue.compat.nemo``: the seed's module names
(``nemo_automodel.components.speculative.streaming`` and its submodules) for
code whose import lines cannot change.  Importing this package imports no
shim; each is opted into by importing it (see docs/MIGRATING.md).
"""

__all__: list[str] = []
