"""``fnp.float32`` and friends: dtypes that are also constructors, as ``jnp.float32``.

``fnp.float32(0.5)`` is a 0-d float32 tensor (``fnp.int32(x)`` converts a tensor, also
under transformations), and ``fnp.float32`` works wherever a dtype does (NumPy reads its
``dtype`` attribute; it compares and hashes equal to ``np.dtype("float32")``).
"""

from __future__ import annotations

import numpy as np

from funcgrad.core import dtypes


class ScalarType:
    """A dtype that converts values to tensors of itself when called."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def __call__(self, value):
        from funcgrad.numpy._util import asarray

        return asarray(value, self.dtype)

    def __eq__(self, other):
        try:
            return self.dtype == np.dtype(other)
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.dtype)

    def __getattr__(self, name):  # name, kind, itemsize, type, ... of the dtype
        if name == "dtype":  # not set yet (unpickling): no attribute, not a recursion
            raise AttributeError(name)
        return getattr(self.dtype, name)

    def __reduce__(self):  # pickled and copied as the one instance of its dtype
        return _scalar_type, (self.dtype.name,)

    def __repr__(self):
        return f"fnp.{self.dtype.name}"

    def __str__(self):
        return self.dtype.name


_NAMES = ("bfloat16", "bool_", "complex64", "complex128", "float16", "float32", "float64",
          "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
SCALAR_TYPES = {name: ScalarType(getattr(dtypes, name)) for name in _NAMES}


def _scalar_type(name: str) -> ScalarType:
    return SCALAR_TYPES["bool_" if name == "bool" else name]


# names JAX also gives its scalar types, and NumPy's abstract scalar classes (for issubdtype)
ALIASES = {"bool": "bool_", "double": "float64", "single": "float32", "half": "float16",
           "cdouble": "complex128", "csingle": "complex64"}
ABSTRACT = {name: getattr(np, name) for name in (
    "generic", "number", "inexact", "floating", "complexfloating", "integer",
    "signedinteger", "unsignedinteger", "character", "flexible")}


def issubdtype(arg1, arg2) -> bool:
    """Whether ``arg1`` is a ``arg2`` in NumPy's dtype hierarchy, with bfloat16 a floating
    type (NumPy does not know it is).

    >>> fnp.issubdtype(fnp.bfloat16, fnp.floating)
    True
    """
    first = np.dtype(arg1)
    second = arg2 if isinstance(arg2, type) and issubclass(arg2, np.generic) else np.dtype(arg2)
    if first == dtypes.bfloat16 and isinstance(second, type):
        return second in (np.floating, np.inexact, np.number, np.generic)
    return bool(np.issubdtype(first, second))


_KINDS = {"bool": lambda d: d == np.bool_,
          "signed integer": lambda d: d.kind == "i",
          "unsigned integer": lambda d: d.kind == "u",
          "integral": lambda d: d.kind in "iu",
          "real floating": lambda d: dtypes.is_float(d),
          "complex floating": lambda d: d.kind == "c",
          "numeric": lambda d: d != np.bool_}


def isdtype(dtype, kind) -> bool:
    """Whether ``dtype`` is of ``kind`` (a dtype, one of the array API's kind names such as
    ``"real floating"`` or ``"integral"``, or a tuple of those), as ``jax.numpy.isdtype``.

    >>> fnp.isdtype(fnp.int8, ("integral", fnp.float32))
    True
    """
    dtype = np.dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; use a dtype or one of "
                             f"{sorted(_KINDS)}")
        return bool(_KINDS[kind](dtype))
    return dtype == np.dtype(kind)


def can_cast(from_, to, casting: str = "safe") -> bool:
    """Whether a cast between dtypes keeps values under ``casting`` (NumPy's rule; bfloat16
    converts safely to float32, float64 and complex).

    >>> fnp.can_cast(fnp.int8, fnp.float16)
    True
    """
    source, target = np.dtype(from_), np.dtype(to)
    if source == dtypes.bfloat16 and casting in ("safe", "same_kind"):
        return target == source or target.kind in "fc" and target.itemsize >= 4
    return bool(np.can_cast(source, target, casting=casting))
