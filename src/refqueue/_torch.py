"""torch is optional: the queue, the reference model, the spec check and
``refqueue explore`` run without it; the feature stores, the loader's
collation and the conformance kit (whose samples are tensors) need it.

``require_torch(what)`` is the one place that says so: without torch it
raises ``TorchMissing`` (a ``ModuleNotFoundError``, so ``except ImportError``
still catches it) naming what needed torch and the install command of the
``gpu`` extra, instead of a bare ``No module named 'torch'``.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

__all__ = ["GPU_EXTRA", "INSTALL_HINT", "TorchMissing", "missing", "require_safetensors", "require_torch"]

# The extra of pyproject.toml that installs torch (pinned: torch==2.13.0) and safetensors.
GPU_EXTRA = "gpu"
INSTALL_HINT = f"pip install 'refqueue[{GPU_EXTRA}]'"


class TorchMissing(ModuleNotFoundError):
    """torch (or safetensors, which the ``gpu`` extra also installs) is not importable."""


def missing(what: str, module: str) -> TorchMissing:
    """The error saying that ``what`` needs ``module`` (torch or safetensors) and how to install it."""
    return TorchMissing(
        f"{what} needs {module}, which is not installed in this Python ({sys.executable}); "
        f"install it with: {INSTALL_HINT}  (torch==2.13.0 and safetensors)",
        name=module,
    )


def require_torch(what: str) -> ModuleType:
    """The ``torch`` module, or ``TorchMissing`` saying that ``what`` needs it.

    Only a missing torch is translated: an error raised while torch itself
    imports (a broken install) propagates unchanged.
    """
    return _require(what, "torch")


def require_safetensors(what: str) -> ModuleType:
    """The ``safetensors`` module, or ``TorchMissing`` saying that ``what`` needs it."""
    return _require(what, "safetensors")


def _require(what: str, name: str) -> ModuleType:
    """Import ``name``; if ``name`` itself is missing, ``TorchMissing`` naming
    ``what`` (a module missing inside it, a broken install, propagates)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        raise missing(what, name) from None
