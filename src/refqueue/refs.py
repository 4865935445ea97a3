"""The tensor-free control-plane record: ``SampleRef`` and its parts.

A ``SampleRef`` names one sample's features in a ``FeatureStore`` without
holding any of them: shapes and dtypes travel, tensors never do.  Everything
here is immutable, hashable and round-trips through JSON without loss
(``ref == SampleRef.from_json(ref.to_json())``); nothing is pickled.

``FeatureSpec.dtype`` is kept as a *name* (``"bfloat16"``), so this module
imports without torch; ``FeatureSpec(shape, torch.bfloat16)`` is accepted too,
and ``FeatureSpec.torch_dtype`` imports torch only when it is asked for.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass
from typing import Any

from refqueue.errors import TensorOnControlPlane

__all__ = [
    "MAX_INT",
    "MAX_NESTING",
    "DTYPE_SIZES",
    "FeatureAlgorithm",
    "FeatureSpec",
    "FrozenMap",
    "SampleRef",
    "assert_no_tensors",
    "dtype_name",
    "seed_dtypes",
]

# The largest count, dimension or version number a ref (or a lease) carries:
# a signed 63-bit int, what every JSON reader and every int64 column can hold
# (Python's json refuses to write an int of more than 4,300 digits at all).
MAX_INT = 2**63 - 1

# How deep control-plane data may nest (JSON from the wire, assert_no_tensors):
# a ref nests 4 levels; deeper input is refused with a ValueError instead of
# exhausting the interpreter's stack (RecursionError).
MAX_NESTING = 100

# Element size in bytes of every dtype a FeatureSpec may name.
DTYPE_SIZES: Mapping[str, int] = {
    "bool": 1,
    "uint8": 1,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "complex64": 8,
    "complex128": 16,
}


class FeatureAlgorithm(str, enum.Enum):
    """The speculative-decoding recipe a sample's features were made for."""

    EAGLE3 = "eagle3"
    DFLASH = "dflash"
    DSPARK = "dspark"

    @property
    def required_features(self) -> tuple[str, ...]:
        """Feature names a ref of this algorithm must carry."""
        return _REQUIRED[self]

    def __str__(self) -> str:
        return self.value


_REQUIRED: dict[FeatureAlgorithm, tuple[str, ...]] = {
    FeatureAlgorithm.EAGLE3: ("aux_hidden_states", "input_ids", "attention_mask", "loss_mask"),
    FeatureAlgorithm.DFLASH: ("hidden_states", "input_ids", "attention_mask", "loss_mask"),
    FeatureAlgorithm.DSPARK: (
        "target_hidden_states",
        "target_last_hidden_states",
        "input_ids",
        "loss_mask",
    ),
}


def _is_torch_dtype(value: object) -> bool:
    cls = type(value)
    return cls.__name__ == "dtype" and cls.__module__ == "torch"


def dtype_name(dtype: object) -> str:
    """The refqueue name of ``dtype`` (a name, a ``torch.dtype`` or a numpy dtype).

    >>> dtype_name("bfloat16")
    'bfloat16'
    """
    if isinstance(dtype, str):
        name = dtype[6:] if dtype.startswith("torch.") else dtype
    elif _is_torch_dtype(dtype):
        name = str(dtype)[len("torch.") :]
    elif type(dtype).__module__.startswith("numpy") and hasattr(dtype, "name"):
        name = str(dtype.name)
    else:
        raise TypeError(
            f"dtype {dtype!r} ({type(dtype).__name__}) is neither a dtype name nor a torch.dtype; "
            f"pass a name such as 'bfloat16' or a torch.dtype such as torch.bfloat16"
        )
    if name == "bool_":
        name = "bool"
    if name not in DTYPE_SIZES:
        raise ValueError(
            f"dtype {dtype!r} is not one refqueue can size; "
            f"use one of {', '.join(sorted(DTYPE_SIZES))}"
        )
    return name


class FrozenMap(Mapping[str, Any]):
    """An immutable, hashable, *ordered* mapping (order is part of equality).

    Feature order is significant (a draft may size a projection by the order
    of the aux hidden states), so ``{"a": 1, "b": 2}`` and ``{"b": 2, "a": 1}``
    are different feature maps here.
    """

    __slots__ = ("_items", "_dict", "_hash")

    def __init__(self, items: Mapping[str, Any] | tuple[tuple[str, Any], ...] = ()):
        pairs = tuple(items.items()) if isinstance(items, Mapping) else tuple(items)
        for pair in pairs:
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise TypeError(
                    f"FrozenMap items must be (key, value) pairs, got {pair!r} ({type(pair).__name__}); "
                    f"pass a mapping or a sequence of 2-tuples"
                )
        mapping = dict(pairs)
        if len(mapping) != len(pairs):
            seen: set[Any] = set()
            for key, _ in pairs:
                if key in seen:
                    duplicate = key
                    break
                seen.add(key)
            raise ValueError(
                f"FrozenMap got the key {duplicate!r} more than once; each key may appear once "
                f"(remove the duplicate pair)"
            )
        self._items = pairs
        self._dict = mapping
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._dict[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == tuple(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self._items)
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenMap({dict(self._items)!r})"


def _check_name(owner: str, field: str, value: object, fix: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{owner}.{field} must be a non-empty str, got {value!r}; {fix}")
    _check_utf8(f"{owner}.{field}", value)


def _utf8(text: str) -> bool:
    """Whether ``text`` has a UTF-8 form: no lone surrogate (U+D800..U+DFFF)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_utf8(what: str, text: str) -> None:
    # A ref's JSON crosses machines as UTF-8 (RFC 8259, 8.1): a lone surrogate
    # has no UTF-8 form, so Redis, a file name or another language's JSON
    # reader would refuse or mangle it later, far from where it came in.
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{what} {_short(text)} holds a lone surrogate (U+D800..U+DFFF) at index {exc.start}, which has no UTF-8 "
            f"form; pass text that encodes as UTF-8 (decode raw bytes with errors='replace', or hex them)"
        ) from None


def _check_count(owner: str, field: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{owner}.{field} must be an int, got {_short(value)} ({type(value).__name__}); "
            f"pass a whole number (a bool is not accepted)"
        )
    if value < 0:
        raise ValueError(f"{owner}.{field} must be >= 0, got {_short(value)}; pass a non-negative count")
    if value > MAX_INT:
        raise ValueError(
            f"{owner}.{field} must be at most 2**63 - 1 (a signed 63-bit int, what JSON readers and int64 "
            f"fields hold), got {_short(value)}; pass a smaller number"
        )


def _short(value: object) -> str:
    """``repr(value)``, cut to 80 characters (a huge int's repr may not even exist)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"an int of {value.bit_length()} bits"
    try:
        text = repr(value)
    except RecursionError:
        return f"<a {type(value).__name__} nested too deeply to show>"
    except Exception as exc:  # a hostile __repr__
        return f"<a {type(value).__name__} whose repr raised {type(exc).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _check_version(field: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(
            f"SampleRef.{field} must be a str or an int, got {value!r} ({type(value).__name__}); "
            f"pass the version label or step number"
        )
    if isinstance(value, str) and not value:
        raise ValueError(f"SampleRef.{field} must not be empty; pass the version label")
    if isinstance(value, str):
        _check_utf8(f"SampleRef.{field}", value)
    if isinstance(value, int) and value < 0:
        raise ValueError(f"SampleRef.{field} must be >= 0, got {value}; pass the step number")
    if isinstance(value, int) and value > MAX_INT:
        raise ValueError(
            f"SampleRef.{field} must be at most 2**63 - 1 (a signed 63-bit int), got {_short(value)}; "
            f"pass the step number, or a str label"
        )


@dataclass(frozen=True, slots=True, eq=False)
class FeatureSpec:
    """Shape and dtype of one feature; ``dtype`` is kept by name.

    Two specs are equal (and hash equal) when their shapes and dtype names
    are.  ``dtype`` reads the name (``"bfloat16"``), except in a process
    where ``refqueue.compat.nemo`` is installed, where it reads the
    ``torch.dtype`` as the seed's did (``seed_dtypes``); ``dtype_name`` is
    the name in every process.
    """

    shape: tuple[int, ...]
    dtype: str

    def __init__(self, shape: Any, dtype: Any) -> None:
        if isinstance(shape, (str, bytes, Mapping, Set)) or not hasattr(shape, "__iter__"):
            raise TypeError(
                f"FeatureSpec.shape must be a sequence of ints, got {_short(shape)} ({type(shape).__name__}); "
                f"pass e.g. (seq_len, hidden) (a dict or a set has no dimension order)"
            )
        dims = tuple(shape)
        for dim in dims:
            if isinstance(dim, bool) or not isinstance(dim, int) or dim < 0:
                raise ValueError(
                    f"FeatureSpec.shape {_short(dims)} has dimension {_short(dim)}; "
                    f"a shape must be a tuple of non-negative ints, so pass every dimension as an int >= 0"
                )
            if dim > MAX_INT:
                raise ValueError(
                    f"FeatureSpec.shape has dimension {_short(dim)}; every dimension must be at most "
                    f"2**63 - 1 (a signed 63-bit int), pass the real size"
                )
        object.__setattr__(self, "shape", dims)
        _DTYPE_SLOT.__set__(self, dtype_name(dtype))

    def __eq__(self, other: object) -> bool:
        if type(other) is not FeatureSpec:
            return NotImplemented
        return self.shape == other.shape and _DTYPE_SLOT.__get__(self) == _DTYPE_SLOT.__get__(other)

    def __hash__(self) -> int:
        return hash((self.shape, _DTYPE_SLOT.__get__(self)))

    @property
    def dtype_name(self) -> str:
        """The dtype's name (``"bfloat16"``), in every process."""
        name: str = _DTYPE_SLOT.__get__(self)
        return name

    @property
    def numel(self) -> int:
        """Number of elements (1 for a scalar, shape ``()``)."""
        return math.prod(self.shape)

    @property
    def element_size(self) -> int:
        return DTYPE_SIZES[self.dtype_name]

    @property
    def nbytes(self) -> int:
        """``numel * element_size``: the bytes one tensor of this spec holds."""
        return self.numel * self.element_size

    @property
    def torch_dtype(self) -> Any:
        """The ``torch.dtype`` of this spec; imports torch on first use."""
        import torch

        return getattr(torch, self.dtype_name)

    def to_dict(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dtype": self.dtype_name}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FeatureSpec:
        if not isinstance(data, Mapping) or set(data) != {"shape", "dtype"}:
            raise ValueError(
                f"a FeatureSpec dict needs exactly the keys 'shape' and 'dtype', got {data!r}"
            )
        return cls(data["shape"], data["dtype"])

    @classmethod
    def of(cls, tensor: Any) -> FeatureSpec:
        """The spec of a torch tensor (or anything with ``shape`` and ``dtype``)."""
        return cls(tuple(tensor.shape), tensor.dtype)


# The slot that holds a spec's dtype name; ``FeatureSpec.dtype`` is this slot,
# or, while ``seed_dtypes(True)`` holds, a property over it that reads the torch.dtype.
_DTYPE_SLOT: Any = FeatureSpec.__dict__["dtype"]


def _set_seed_dtype(spec: FeatureSpec, value: object) -> None:
    _DTYPE_SLOT.__set__(spec, dtype_name(value))  # what dataclasses' __setstate__ (copy) writes back


# it reads what ``torch_dtype`` reads
_SEED_DTYPE = property(
    FeatureSpec.__dict__["torch_dtype"].fget, _set_seed_dtype, doc="The feature's torch.dtype (refqueue.compat.nemo installed)."
)


def seed_dtypes(on: bool) -> None:
    """Make ``FeatureSpec.dtype`` read the ``torch.dtype`` (``on``), as the
    seed's did, or the name (the default).  Process-wide; called by
    ``refqueue.compat.nemo.install()``/``uninstall()``.  Only what ``.dtype``
    reads changes: specs are stored, compared, hashed and written to JSON by
    name either way, so refs made before and after stay equal; torch is
    imported on the first read."""
    if not isinstance(on, bool):
        raise TypeError(f"seed_dtypes(on) takes True or False, got {on!r}")
    setattr(FeatureSpec, "dtype", _SEED_DTYPE if on else _DTYPE_SLOT)  # noqa: B010 - a slot's class attribute


_REF_FIELDS = (
    "sample_id",
    "run_id",
    "store_uri",
    "feature_keys",
    "feature_specs",
    "algorithm",
    "schema_version",
    "num_tokens",
    "estimated_bytes",
    "target_model_version",
    "draft_weight_version",
)


@dataclass(frozen=True, slots=True)
class SampleRef:
    """A reference to one sample's features in a store: ids, shapes, sizes, no tensors.

    Validated on construction: no tensor anywhere (``TensorOnControlPlane``,
    a ``ValueError`` and a ``TypeError``), non-empty ids, a
    ``scheme://location`` store URI, the same feature names (in the same
    order) in ``feature_keys`` and ``feature_specs``, every feature its
    ``algorithm`` requires, and non-negative counts.  ``estimated_bytes`` is
    the producer's estimate, any int >= 0 (as in the seed): refs a store makes
    carry the specs' exact total (``SampleRef.build`` computes it too), and a
    store refuses data whose size differs from the ref it is put under.
    """

    sample_id: str
    run_id: str
    store_uri: str
    feature_keys: Mapping[str, str]
    feature_specs: Mapping[str, FeatureSpec]
    algorithm: FeatureAlgorithm
    schema_version: int
    num_tokens: int
    estimated_bytes: int
    target_model_version: str | int
    draft_weight_version: str | int

    def __post_init__(self) -> None:
        _check_fields_hold_no_tensor(self)
        _check_name("SampleRef", "sample_id", self.sample_id, "pass the producer's id for this sample")
        _check_name("SampleRef", "run_id", self.run_id, "pass the id of the training run")
        _check_store_uri(self.store_uri)
        algorithm = self.algorithm
        if not isinstance(algorithm, FeatureAlgorithm):
            try:
                algorithm = FeatureAlgorithm(algorithm)
            except ValueError:
                raise ValueError(
                    f"SampleRef.algorithm {self.algorithm!r} is not a FeatureAlgorithm; "
                    f"use one of {', '.join(a.value for a in FeatureAlgorithm)}"
                ) from None
            object.__setattr__(self, "algorithm", algorithm)
        keys = _frozen_features("feature_keys", self.feature_keys)
        specs = _frozen_features("feature_specs", self.feature_specs)
        for name, key in keys.items():
            _check_name("SampleRef", f"feature_keys[{name!r}]", key, "pass the store key of this feature")
        fixed_specs = {}
        for name, spec in specs.items():
            if isinstance(spec, Mapping):
                spec = FeatureSpec.from_dict(spec)
            if not isinstance(spec, FeatureSpec):
                raise TypeError(
                    f"SampleRef.feature_specs[{name!r}] must be a FeatureSpec, got {spec!r}; "
                    f"build it with FeatureSpec(shape, dtype)"
                )
            fixed_specs[name] = spec
        specs = FrozenMap(fixed_specs)
        if tuple(keys) != tuple(specs):
            raise ValueError(
                f"SampleRef.feature_keys names {list(keys)} but feature_specs names {list(specs)}; "
                f"both must name the same feature set, in the same order"
            )
        missing = [f for f in algorithm.required_features if f not in keys]
        if missing:
            raise ValueError(
                f"SampleRef {self.sample_id!r} for algorithm {algorithm.value!r} is missing "
                f"required features {missing}; add them (it needs "
                f"{list(algorithm.required_features)})"
            )
        object.__setattr__(self, "feature_keys", keys)
        object.__setattr__(self, "feature_specs", specs)
        _check_count("SampleRef", "schema_version", self.schema_version)
        _check_count("SampleRef", "num_tokens", self.num_tokens)
        _check_count("SampleRef", "estimated_bytes", self.estimated_bytes)
        _check_version("target_model_version", self.target_model_version)
        _check_version("draft_weight_version", self.draft_weight_version)

    def feature_names(self) -> tuple[str, ...]:
        """The feature names, in feature order (the seed's ``feature_names()``)."""
        return tuple(self.feature_keys)

    @property
    def specs_nbytes(self) -> int:
        """The bytes the feature specs add up to (Σ numel × element size);
        equal to ``estimated_bytes`` for every ref a store or ``build`` made."""
        return sum(spec.nbytes for spec in self.feature_specs.values())

    # -- serialisation (JSON, never pickle) ---------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; ``SampleRef.from_dict`` inverts it exactly."""
        return {
            "sample_id": self.sample_id,
            "run_id": self.run_id,
            "store_uri": self.store_uri,
            "feature_keys": dict(self.feature_keys),
            "feature_specs": {k: s.to_dict() for k, s in self.feature_specs.items()},
            "algorithm": self.algorithm.value,
            "schema_version": self.schema_version,
            "num_tokens": self.num_tokens,
            "estimated_bytes": self.estimated_bytes,
            "target_model_version": self.target_model_version,
            "draft_weight_version": self.draft_weight_version,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SampleRef:
        if type(data) is dict and cls is SampleRef:  # exactly a dict, as json.loads makes: try the fast path
            ref = _from_plain_dict(data)
            if ref is not None:
                return ref
        if not isinstance(data, Mapping):
            raise TypeError(f"SampleRef.from_dict needs a dict, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_REF_FIELDS))
        missing = [f for f in _REF_FIELDS if f not in data]
        if unknown or missing:
            raise ValueError(
                f"a SampleRef dict must have exactly the fields {list(_REF_FIELDS)}; "
                f"missing {missing}, unknown {unknown}"
            )
        specs = data["feature_specs"]
        if not isinstance(specs, Mapping):
            raise TypeError(f"SampleRef dict field 'feature_specs' must be a dict, got {specs!r}")
        fields = dict(data)
        fields["feature_specs"] = {k: FeatureSpec.from_dict(v) for k, v in specs.items()}
        return cls(**fields)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> SampleRef:
        """The ref ``to_json`` wrote.  ``TypeError`` for text that is not a str
        or bytes; ``ValueError`` for anything else wrong (not JSON, nested
        deeper than ``MAX_NESTING``, not a ref's fields)."""
        return cls.from_dict(load_json("SampleRef.from_json", text))

    # -- conveniences -------------------------------------------------------

    @classmethod
    def build(
        cls,
        sample_id: str,
        specs: Mapping[str, FeatureSpec],
        *,
        algorithm: FeatureAlgorithm | str,
        store_uri: str = "mem://local",
        run_id: str = "run",
        schema_version: int = 1,
        num_tokens: int = 0,
        target_model_version: str | int = "target",
        draft_weight_version: str | int = 0,
        key_prefix: str | None = None,
    ) -> SampleRef:
        """A ref whose feature keys are ``"<sample_id>/<feature>"`` and whose size is computed."""
        prefix = sample_id if key_prefix is None else key_prefix
        specs = {k: (FeatureSpec.from_dict(v) if isinstance(v, Mapping) else v) for k, v in specs.items()}
        for name, spec in specs.items():
            if not isinstance(spec, FeatureSpec):
                raise TypeError(f"spec for feature {name!r} must be a FeatureSpec, got {spec!r}")
        return cls(
            sample_id=sample_id,
            run_id=run_id,
            store_uri=store_uri,
            feature_keys={name: f"{prefix}/{name}" for name in specs},
            feature_specs=specs,
            algorithm=algorithm,  # type: ignore[arg-type]  # a str is checked and converted by __post_init__
            schema_version=schema_version,
            num_tokens=num_tokens,
            estimated_bytes=sum(s.nbytes for s in specs.values()),
            target_model_version=target_model_version,
            draft_weight_version=draft_weight_version,
        )


# -- the parse fast path --------------------------------------------------
#
# ``from_dict`` of a plain dict (what ``json.loads`` makes, so what every ref
# read from the wire is) first tries ``_from_plain_dict``: one pass over the
# fields that accepts only values of the exact builtin types JSON yields
# (``type(x) is str``, ``is int``, ``is list``, ``is dict``) and checks each of
# them as ``__post_init__`` does.  Anything it is not sure of (a wrong type, a
# bad value, a subclass, a ``torch.``-prefixed dtype name) makes it answer
# None, and the slow path then accepts it or raises its own error: the fast
# path decides only what the slow path would accept, and builds an equal ref.
# A value of an exact builtin type is never a tensor, so the tensor walk of
# ``__post_init__`` has nothing to find here.

_ALGORITHMS: dict[str, FeatureAlgorithm] = {a.value: a for a in FeatureAlgorithm}
# Store URIs that passed ``_check_store_uri`` (a pure function of the str);
# most refs of a run share one, so checking it once saves the scheme scan.
_URIS_SEEN: set[str] = set()
_URIS_KEPT = 64
# FeatureSpecs are immutable: one instance per (shape, dtype) read.
_SPECS_SEEN: dict[tuple[tuple[int, ...], str], FeatureSpec] = {}
_SPECS_KEPT = 4096
_new = object.__new__
_set = object.__setattr__


def _plain_count(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_INT


def _plain_version(value: object) -> bool:
    kind = type(value)
    return (kind is str and value != "" and _utf8(value)) or (kind is int and 0 <= value <= MAX_INT)  # type: ignore[operator, arg-type]


def _plain_spec(data: object) -> FeatureSpec | None:
    """The FeatureSpec of a JSON spec dict, or None where the slow path must decide."""
    if type(data) is not dict or len(data) != 2:
        return None
    shape, dtype = data.get("shape"), data.get("dtype")
    if type(shape) is not list or type(dtype) is not str or dtype not in DTYPE_SIZES:
        return None
    for dim in shape:
        if type(dim) is not int or dim < 0 or dim > MAX_INT:
            return None
    dims = tuple(shape)
    key = (dims, dtype)
    spec = _SPECS_SEEN.get(key)
    if spec is None:
        spec = _new(FeatureSpec)
        _set(spec, "shape", dims)
        _DTYPE_SLOT.__set__(spec, dtype)
        if len(_SPECS_SEEN) < _SPECS_KEPT:
            _SPECS_SEEN[key] = spec
    return spec


def _plain_map(pairs: tuple[tuple[str, Any], ...], mapping: dict[str, Any]) -> FrozenMap:
    """A FrozenMap of distinct-keyed ``pairs`` (``mapping`` is ``dict(pairs)``), built without re-checking them."""
    frozen = _new(FrozenMap)
    _set(frozen, "_items", pairs)
    _set(frozen, "_dict", mapping)
    _set(frozen, "_hash", None)
    return frozen


def _from_plain_dict(data: dict[str, Any]) -> SampleRef | None:
    """The ref of a plain, valid ref dict, or None where the slow path must decide (see above)."""
    if len(data) != len(_REF_FIELDS):
        return None
    try:
        sample_id = data["sample_id"]
        run_id = data["run_id"]
        store_uri = data["store_uri"]
        keys = data["feature_keys"]
        specs = data["feature_specs"]
        algorithm = data["algorithm"]
        schema_version = data["schema_version"]
        num_tokens = data["num_tokens"]
        estimated_bytes = data["estimated_bytes"]
        target_model_version = data["target_model_version"]
        draft_weight_version = data["draft_weight_version"]
    except KeyError:
        return None
    if (
        type(sample_id) is not str
        or not sample_id
        or not _utf8(sample_id)
        or type(run_id) is not str
        or not run_id
        or not _utf8(run_id)
        or type(store_uri) is not str
        or type(keys) is not dict
        or not keys
        or type(specs) is not dict
        or len(specs) != len(keys)
        or type(algorithm) is not str
        or not _plain_count(schema_version)
        or not _plain_count(num_tokens)
        or not _plain_count(estimated_bytes)
        or not _plain_version(target_model_version)
        or not _plain_version(draft_weight_version)
    ):
        return None
    kind = _ALGORITHMS.get(algorithm)
    if kind is None:
        return None
    if store_uri not in _URIS_SEEN:
        try:
            _check_store_uri(store_uri)
        except ValueError:
            return None
        if len(_URIS_SEEN) < _URIS_KEPT:
            _URIS_SEEN.add(store_uri)
    key_pairs = tuple(keys.items())
    spec_pairs = []
    for (name, key), (spec_name, spec_data) in zip(key_pairs, specs.items()):
        if type(name) is not str or not name or type(spec_name) is not str or name != spec_name or not _utf8(name):
            return None
        if type(key) is not str or not key or not _utf8(key):
            return None
        spec = _plain_spec(spec_data)
        if spec is None:
            return None
        spec_pairs.append((name, spec))
    for required in _REQUIRED[kind]:
        if required not in keys:
            return None
    spec_items = tuple(spec_pairs)
    ref = _new(SampleRef)
    _set(ref, "sample_id", sample_id)
    _set(ref, "run_id", run_id)
    _set(ref, "store_uri", store_uri)
    _set(ref, "feature_keys", _plain_map(key_pairs, dict(keys)))
    _set(ref, "feature_specs", _plain_map(spec_items, dict(spec_items)))
    _set(ref, "algorithm", kind)
    _set(ref, "schema_version", schema_version)
    _set(ref, "num_tokens", num_tokens)
    _set(ref, "estimated_bytes", estimated_bytes)
    _set(ref, "target_model_version", target_model_version)
    _set(ref, "draft_weight_version", draft_weight_version)
    return ref


def load_json(what: str, text: object) -> Any:
    """``json.loads(text)`` for control-plane records from the wire: a str or
    bytes of JSON nested at most ``MAX_NESTING`` deep.  ``TypeError`` for
    another type; ``ValueError`` (never ``RecursionError``) for anything else
    wrong, naming ``what`` and the fix."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise TypeError(f"{what} needs a str or bytes of JSON, got {_short(text)} ({type(text).__name__}); "
                        f"pass what to_json returned")
    depth = _nesting(text)
    if depth > MAX_NESTING:
        raise ValueError(
            f"{what} got JSON nested {depth} levels deep; control-plane records nest at most {MAX_NESTING} "
            f"levels, pass what to_json returned"
        )
    try:
        return json.loads(text)
    except RecursionError:  # not reached after the depth check; kept as a guard
        raise ValueError(f"{what} got JSON nested too deeply to parse; pass what to_json returned") from None
    except ValueError as exc:
        raise ValueError(f"{what} got text that is not JSON ({exc}); pass what to_json returned") from None


def _nesting(text: str | bytes | bytearray) -> int:
    """The deepest ``[``/``{`` nesting of JSON text (brackets inside strings
    are skipped; on malformed text, an upper bound json.loads then rejects)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return MAX_NESTING  # cannot nest deeper (the common case: no scan)
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif char in "]}":
            depth -= 1
    return deepest


def _check_store_uri(uri: object) -> None:
    if not isinstance(uri, str) or "://" not in uri:
        raise ValueError(
            f"SampleRef.store_uri must look like 'scheme://location', got {uri!r}; "
            f"e.g. 'mem://local' or 'shared:///mnt/features'"
        )
    _check_utf8("SampleRef.store_uri", uri)
    scheme, _, location = uri.partition("://")
    if not scheme or not (scheme[0].isalpha() and all(c.isalnum() or c in "+-." for c in scheme)):
        raise ValueError(
            f"SampleRef.store_uri {uri!r} has no valid scheme before '://'; "
            f"start it with letters, e.g. 'mem://local'"
        )
    if not location:
        raise ValueError(
            f"SampleRef.store_uri {uri!r} has nothing after '://'; name the location, e.g. 'mem://local'"
        )


def _frozen_features(field: str, value: object) -> FrozenMap:
    if not isinstance(value, Mapping):
        raise TypeError(
            f"SampleRef.{field} must be a mapping of feature name to value, got {type(value).__name__}"
        )
    if not value:
        raise ValueError(f"SampleRef.{field} is empty; a ref carries at least one feature")
    for name in value:
        if not isinstance(name, str) or not name:
            raise ValueError(f"SampleRef.{field} has feature name {name!r}; names are non-empty str")
        _check_utf8(f"SampleRef.{field} feature name", name)
    return value if isinstance(value, FrozenMap) else FrozenMap(value)


_ARRAY_MODULES = ("torch", "numpy", "jax", "jaxlib", "cupy", "tensorflow", "mlx")
_SCALARS = (str, bytes, int, float, bool, type(None), enum.Enum)


def _looks_like_tensor(obj: object) -> bool:
    """A tensor or array of a known array library, or anything that duck-types
    as one: the buffer protocols (``__dlpack__``, ``__cuda_array_interface__``,
    ``__array_interface__``), or torch's ``data_ptr`` / ``is_cuda`` /
    a callable ``numel``.  Classes themselves, dtypes, devices and sizes are
    not tensors."""
    if isinstance(obj, _SCALARS) or isinstance(obj, type):
        return False
    module = type(obj).__module__ or ""
    if module.split(".")[0] in _ARRAY_MODULES:
        return not _is_torch_dtype(obj) and type(obj).__name__ not in ("dtype", "device", "Size")
    if isinstance(obj, (FeatureSpec, FrozenMap, Mapping, list, tuple, set, frozenset)):
        return False
    if any(hasattr(obj, a) for a in ("__dlpack__", "__cuda_array_interface__", "__array_interface__")):
        return True
    if hasattr(obj, "data_ptr") or hasattr(obj, "is_cuda"):
        return True
    return callable(getattr(obj, "numel", None))


def _tensor_error(path: str, value: object) -> TensorOnControlPlane:
    return TensorOnControlPlane(
        f"{path} is a {type(value).__module__}.{type(value).__name__}: the control plane carries no tensors "
        f"or arrays (a tensor-like object is not allowed on it); put the data in a FeatureStore and pass its "
        f"SampleRef"
    )


def _check_fields_hold_no_tensor(ref: SampleRef) -> None:
    """The first tensor in a ref's fields (or in its feature maps) raises."""
    for field in _REF_FIELDS:
        value = getattr(ref, field)
        if isinstance(value, _SCALARS):
            continue
        if isinstance(value, Mapping):
            for name, item in value.items():
                if _looks_like_tensor(name):
                    raise _tensor_error(f"SampleRef.{field} key", name)
                if _looks_like_tensor(item):
                    raise _tensor_error(f"SampleRef.{field}[{name!r}]", item)
        elif _looks_like_tensor(value):
            raise _tensor_error(f"SampleRef.{field}", value)


def assert_no_tensors(obj: object, where: str = "ref", *, path: str | None = None) -> None:
    """Raise ``TensorOnControlPlane`` if ``obj`` holds a tensor or array anywhere inside.

    Walks mappings, sequences, sets and dataclass-like objects (``__slots__``
    or ``__dict__``), naming the path of the first offender; ``path=`` (the
    seed's name) and ``where`` both name the root.  A tensor-like is what
    ``_looks_like_tensor`` says: a known array library's array, or anything
    with a buffer protocol or torch's ``data_ptr`` / ``is_cuda`` / ``numel()``.
    ``TensorOnControlPlane`` is a ``ValueError`` (as the seed raises) and a
    ``TypeError`` (as refqueue did).  A mapping keyed by anything but ``str``
    raises ``ValueError``: control-plane records travel as JSON, whose keys
    are strings.
    """
    if path is not None:
        if not isinstance(path, str):
            raise TypeError(f"assert_no_tensors(path={path!r}) must be a str naming the object; pass e.g. 'ref'")
        where = path
    elif not isinstance(where, str):
        raise TypeError(f"assert_no_tensors(where={where!r}) must be a str naming the object; pass e.g. 'ref'")
    seen: set[int] = set()

    def walk(value: object, path: str, depth: int = 0) -> None:
        if _looks_like_tensor(value):
            raise _tensor_error(path, value)
        if isinstance(value, _SCALARS):
            return
        if id(value) in seen:
            return
        if depth >= MAX_NESTING:
            raise ValueError(
                f"{where} nests more than {MAX_NESTING} levels deep (at {path[:120]}...); control-plane data "
                f"nests at most {MAX_NESTING} levels, flatten it"
            )
        seen.add(id(value))
        if isinstance(value, Mapping):
            for key, item in value.items():
                if _looks_like_tensor(key):
                    raise _tensor_error(f"{path} key {type(key).__name__}", key)
                if not isinstance(key, str):
                    raise ValueError(
                        f"{path} has the key {key!r} ({type(key).__name__}): control-plane dicts must be "
                        f"str-keyed (they travel as JSON); use str keys, e.g. {str(key)!r}"
                    )
                walk(item, f"{path}[{key!r}]", depth + 1)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]", depth + 1)
        else:
            slots = getattr(type(value), "__slots__", ())
            for name in slots if isinstance(slots, (tuple, list)) else (slots,):
                if hasattr(value, name) and not name.startswith("__"):
                    walk(getattr(value, name), f"{path}.{name}", depth + 1)
            for name, item in getattr(value, "__dict__", {}).items():
                walk(item, f"{path}.{name}", depth + 1)

    walk(obj, where)
