"""The seed's module names, served by refqueue, for code whose imports cannot change.

::

    import refqueue.compat.nemo  # once, before anything imports the seed's streaming modules

    from nemo_automodel.components.speculative.streaming.queue import SampleRefQueue  # refqueue's

Importing this module calls ``install()``: one module is put in
``sys.modules`` under each of the seed's names
(``nemo_automodel.components.speculative.streaming`` and its ``queue``,
``refs``, ``store``, ``stores``, ``stores.local``, ``stores.shared_dir`` and
``loader``).  Each is a stand-in whose attributes *are* refqueue's objects,
imported on first use (torch or safetensors only when a name that needs them
is used): ``SampleRefQueue`` under the seed's ``queue`` name is
``refqueue.queue.SampleRefQueue``, so ``isinstance`` and ``except`` work
across both spellings.  ``uninstall()`` removes them.  Nothing is copied or
wrapped except the loader and what a spec's ``dtype`` reads; the seed's
behaviours kept where that is safe:

* ``FeatureSpec.dtype`` reads the ``torch.dtype`` (``spec.dtype is
  torch.bfloat16``), as the seed's did, where torch is installed: install()
  calls ``refqueue.refs.seed_dtypes(True)``, for the whole process, and
  uninstall() undoes it.  That is safe because only what ``.dtype`` reads
  changes: a spec is still stored, compared, hashed and written to JSON by
  the dtype's *name* (D1: a ref rebuilt from JSON equals the store's), so
  refs made before, during and after compare equal, and refqueue itself
  reads ``spec.dtype_name``.  Code of the same process that reads
  ``spec.dtype`` as a name should read ``spec.dtype_name``.
* under the seed's ``loader`` name, ``FeatureDataLoader`` is this module's,
  refqueue's loader with the seed's two defaults: ``algorithm`` not given is
  EAGLE-3, as in the seed (refqueue's own loader takes it from the first ref
  instead), and, where NeMo Automodel itself is installed, a one-sample
  batch of an EAGLE-3 loader is yielded as the seed's own ``Eagle3TargetBatch``
  (``seed_eagle3_batch()``; refqueue defines no such class, and without
  NeMo Automodel the loader yields refqueue's ``Batch``, which answers the
  same field names).

What is left alone, because changing it would not be safe:

* NeMo Automodel's own packages: where it is installed, ``nemo_automodel``,
  ``.components`` and ``.components.speculative`` stay its own (its model
  code, ``Eagle3TargetBatch`` included, keeps working); only the parents
  that cannot be imported are made, as empty packages.
* Modules already imported: ``install()`` refuses (``RuntimeError``, nothing
  changed) when one of the seed's streaming modules is already in
  ``sys.modules``: a process would then hold two ``SampleRefQueue`` classes.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.machinery
import importlib.util
import sys
import threading
import types
from typing import Any

from refqueue.loader import Batch
from refqueue.loader import FeatureDataLoader as _RefqueueLoader
from refqueue.refs import FeatureAlgorithm, seed_dtypes

__all__ = ["SEED_PACKAGE", "SEED_MODULES", "FeatureDataLoader", "install", "uninstall", "seed_eagle3_batch"]

SEED_PACKAGE = "nemo_automodel.components.speculative.streaming"
_PARENTS = ("nemo_automodel", "nemo_automodel.components", "nemo_automodel.components.speculative")
_EAGLE3_TARGET = "nemo_automodel.components.speculative.eagle.target"  # the seed's model code

# The seed's module names -> (the refqueue module whose attributes it serves,
# or None; {name: (module, attribute)} served first).  The package's names are
# those the seed's package exports.
_Names = dict[str, tuple[str, str]]
SEED_MODULES: dict[str, tuple[str | None, _Names]] = {
    SEED_PACKAGE: (
        None,
        {
            **{name: ("refqueue.queue", name) for name in ("Lease", "SampleRefQueue", "VisibilityTimeout")},
            **{name: ("refqueue.refs", name) for name in ("FeatureAlgorithm", "FeatureSpec", "SampleRef",
                                                           "assert_no_tensors")},
            **{name: ("refqueue.store", name) for name in ("FeatureStore", "StoreHandle", "StoreHealth")},
            "LocalFeatureStore": ("refqueue.stores.local", "LocalFeatureStore"),
            "SharedDirFeatureStore": ("refqueue.stores.shared_dir", "SharedDirFeatureStore"),
        },
    ),
    f"{SEED_PACKAGE}.queue": ("refqueue.queue", {}),
    f"{SEED_PACKAGE}.refs": ("refqueue.refs", {}),
    f"{SEED_PACKAGE}.store": ("refqueue.store", {}),
    f"{SEED_PACKAGE}.stores": (
        "refqueue.stores", {"SharedDirFeatureStore": ("refqueue.stores.shared_dir", "SharedDirFeatureStore")}
    ),
    f"{SEED_PACKAGE}.stores.local": ("refqueue.stores.local", {}),
    f"{SEED_PACKAGE}.stores.shared_dir": ("refqueue.stores.shared_dir", {}),
    f"{SEED_PACKAGE}.loader": ("refqueue.loader", {"FeatureDataLoader": (__name__, "FeatureDataLoader")}),
}
_PACKAGES = frozenset({SEED_PACKAGE, f"{SEED_PACKAGE}.stores"})


class _SeedModule(types.ModuleType):
    """A module under one of the seed's names whose attributes are refqueue's
    objects, looked up on first use (then kept in the module's dict)."""

    def __init__(self, name: str, target: str | None, names: _Names) -> None:
        super().__init__(name, f"refqueue's stand-in for the seed's {name} (refqueue.compat.nemo)")
        self.__dict__["_refqueue_target"] = target
        self.__dict__["_refqueue_names"] = names
        package = name in _PACKAGES
        if package:
            self.__path__: list[str] = []
        self.__package__ = name if package else name.rpartition(".")[0]
        self.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=package)

    def __getattr__(self, attr: str) -> Any:
        target: str | None = self.__dict__["_refqueue_target"]
        names: _Names = self.__dict__["_refqueue_names"]
        if attr == "__all__":
            served = list(names) if target is None else list(getattr(importlib.import_module(target), "__all__", ()))
            return served + [name for name in names if name not in served]
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        if attr in names:
            module, name = names[attr]
            value = getattr(importlib.import_module(module), name)
        elif target is not None and hasattr(importlib.import_module(target), attr):
            value = getattr(importlib.import_module(target), attr)
        else:
            raise AttributeError(
                f"{self.__name__}.{attr}: refqueue's stand-in for the seed's module has no {attr!r} (it serves "
                f"{target or 'the names ' + ', '.join(sorted(names))}); use refqueue's equivalent "
                f"(docs/MIGRATING.md), or import it from NeMo Automodel without refqueue.compat.nemo"
            )
        self.__dict__[attr] = value
        return value

    def __dir__(self) -> list[str]:
        target = self.__dict__["_refqueue_target"]
        served = set(self.__dict__["_refqueue_names"])
        if target is not None:
            served |= {n for n in dir(importlib.import_module(target)) if not n.startswith("__")}
        return sorted(served | set(self.__dict__))


# What install() put in place; both changed only under _lock.
_lock = threading.Lock()
_installed: dict[str, types.ModuleType] = {}  # name -> the module it put in sys.modules
_bound: list[tuple[types.ModuleType, str]] = []  # (NeMo Automodel's own package, attribute it set)


def install() -> None:
    """Serve the seed's streaming module names from refqueue (idempotent).

    ``RuntimeError`` naming the modules, with nothing changed, when one of
    them was already imported (from NeMo Automodel, or made by someone else).
    """
    with _lock:
        if _installed:
            return
        taken = sorted(name for name in SEED_MODULES if name in sys.modules)
        if taken:
            raise RuntimeError(
                f"refqueue.compat.nemo.install(): {taken} are already imported (NeMo Automodel's own, or "
                f"another shim's), so their names cannot become refqueue's without two classes of each in "
                f"this process; import refqueue.compat.nemo before anything imports the seed's streaming "
                f"modules (e.g. first in your entry point or conftest.py)"
            )
        modules: dict[str, types.ModuleType] = {}
        for name in _missing_parents():
            package = types.ModuleType(name, f"an empty stand-in for {name} (refqueue.compat.nemo)")
            package.__path__ = []
            package.__package__ = name
            package.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
            modules[name] = package
        for name, (target, names) in SEED_MODULES.items():
            modules[name] = _SeedModule(name, target, names)
        bound = []
        for name, module in modules.items():
            parent, _, child = name.rpartition(".")
            if not parent:
                continue
            if parent in modules:
                setattr(modules[parent], child, module)
            else:  # NeMo Automodel's own package (importable: _missing_parents checked)
                own = importlib.import_module(parent)
                setattr(own, child, module)
                bound.append((own, child))
        sys.modules.update(modules)
        _installed.update(modules)
        _bound.extend(bound)
        if _torch_installed():  # without torch, names stay the only dtypes
            seed_dtypes(True)


def uninstall() -> None:
    """Remove what ``install()`` put in place (idempotent)."""
    with _lock:
        for name, module in _installed.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
        for own, attr in _bound:
            if getattr(own, attr, None) is _installed.get(f"{own.__name__}.{attr}"):
                delattr(own, attr)
        _installed.clear()
        _bound.clear()
        seed_dtypes(False)


def _torch_installed() -> bool:
    """Whether torch can be found (not imported: install() stays cheap)."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # a finder that refuses it, a broken install
        return False


def _missing_parents() -> list[str]:
    """The seed's parent packages that cannot be imported (from the first
    missing one down): those install() makes, empty."""
    for i, name in enumerate(_PARENTS):
        if name in sys.modules:
            continue
        try:
            found = importlib.util.find_spec(name) is not None  # imports the packages above it
        except (ImportError, ValueError):
            found = False
        if not found:
            return list(_PARENTS[i:])
    return []


def seed_eagle3_batch() -> type | None:
    """The seed's own ``Eagle3TargetBatch`` class where NeMo Automodel is
    installed and defines it as a dataclass, else None."""
    try:
        module = importlib.import_module(_EAGLE3_TARGET)
    except ImportError:
        return None
    cls = getattr(module, "Eagle3TargetBatch", None)
    return cls if isinstance(cls, type) and dataclasses.is_dataclass(cls) else None


def _as_seed_batch(cls: type, batch: Batch) -> Any:
    """``cls`` (the seed's ``Eagle3TargetBatch``) built from a one-sample
    batch's tensors: each of its fields the sample has, the rest left to the
    class's defaults."""
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    return cls(**{name: tensor for name, tensor in batch[0].tensors.items() if name in fields})


class FeatureDataLoader(_RefqueueLoader):
    """refqueue's ``FeatureDataLoader`` with the seed's defaults (see the
    module notes): ``algorithm=None`` is EAGLE-3, and an EAGLE-3 loader of
    one-sample batches with no ``collate`` yields the seed's
    ``Eagle3TargetBatch`` where NeMo Automodel is installed.  Everything
    else (arguments, checks, errors) is refqueue's loader's."""

    def __init__(
        self,
        queue: Any,
        store: Any = None,
        algorithm: FeatureAlgorithm | str | None = None,
        acquire_poll_interval: float | None = None,
        **options: Any,
    ) -> None:
        if algorithm is None:
            algorithm = FeatureAlgorithm.EAGLE3
        if options.get("collate") is None and options.get("batch_size", 1) == 1 and algorithm in ("eagle3",):
            batch_class = seed_eagle3_batch()
            if batch_class is not None:
                options["collate"] = functools.partial(_as_seed_batch, batch_class)
        super().__init__(queue, store, algorithm, acquire_poll_interval, **options)


install()
