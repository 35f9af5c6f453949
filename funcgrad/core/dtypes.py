"""dtypes: the supported element types, JAX's promotion lattice and weak Python scalars.

funcgrad dtypes are plain ``numpy.dtype`` objects (bfloat16 comes from ml_dtypes), so
``t.dtype == np.float32`` and ``t.dtype == fg.float32`` both hold.
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
bool_ = np.dtype(np.bool_)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

SUPPORTED = (
    bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64,
    bfloat16, float16, float32, float64, complex64, complex128,
)
_BY_NAME = {d.name: d for d in SUPPORTED}
_BY_NAME.update({"bool_": bool_, "float": float32, "int": int32, "complex": complex64,
                 "half": float16, "single": float32, "double": float64})

# Python scalars are "weak": they take the dtype of whatever they meet.  These stand for
# them inside the lattice; a result that is still weak gets the default dtype of its kind.
_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = "int*", "float*", "complex*"
DEFAULT_DTYPE = {_WEAK_INT: int32, _WEAK_FLOAT: float32, _WEAK_COMPLEX: complex64}

# JAX's type promotion lattice: each node lists the nodes directly above it.
_LATTICE_UP = {
    bool_: [_WEAK_INT],
    _WEAK_INT: [uint8, int8],
    uint8: [uint16, int16],
    uint16: [uint32, int32],
    uint32: [uint64, int64],
    uint64: [_WEAK_FLOAT],
    int8: [int16],
    int16: [int32],
    int32: [int64],
    int64: [_WEAK_FLOAT],
    _WEAK_FLOAT: [bfloat16, float16, _WEAK_COMPLEX],
    bfloat16: [float32],
    float16: [float32],
    float32: [float64, complex64],
    float64: [complex128],
    _WEAK_COMPLEX: [complex64],
    complex64: [complex128],
    complex128: [],
}


def _upward_closure() -> dict:
    closure = {}
    for node in _LATTICE_UP:
        seen, todo = {node}, [node]
        while todo:
            for up in _LATTICE_UP[todo.pop()]:
                if up not in seen:
                    seen.add(up)
                    todo.append(up)
        closure[node] = seen
    return closure


_UPPER = _upward_closure()


def _least_upper_bound(nodes) -> object:
    common = set.intersection(*(_UPPER[n] for n in nodes))
    # the least element of the common upper bounds is the one all others lie above
    for candidate in common:
        if common <= _UPPER[candidate]:
            return candidate
    raise TypeError(f"no common dtype for {nodes}")  # unreachable: complex128 tops all


class DTypeError(TypeError, ValueError):
    """An unknown or unsupported dtype: a TypeError as in JAX and NumPy ("data type not
    understood"), and a ValueError as funcgrad raised before."""


def canonicalize(dtype) -> np.dtype:
    """Turn a dtype-like (string, numpy type, Python type) into a supported ``np.dtype``.

    Raises ``ValueError`` listing the valid names for anything unknown.
    """
    if dtype is None:
        raise ValueError("dtype must not be None here")
    if isinstance(dtype, np.dtype) and dtype in _DTYPE_SET:
        return dtype
    if isinstance(dtype, str):
        found = _BY_NAME.get(dtype)
        if found is None:  # NumPy's codes: 'f4', '<i8', '?'
            try:
                found = np.dtype(dtype)
            except TypeError:
                found = None
            found = found if found in _DTYPE_SET else None
        if found is None:
            raise DTypeError(
                f"unknown dtype {dtype!r}; valid dtypes are: {', '.join(sorted(_BY_NAME))}")
        return found
    if dtype is float:
        return float32
    if dtype is int:
        return int32
    if dtype is complex:
        return complex64
    if dtype is bool:
        return bool_
    try:
        as_np = np.dtype(dtype)
    except TypeError:
        as_np = None
    if as_np is None or as_np not in _DTYPE_SET:
        raise DTypeError(
            f"unsupported dtype {dtype!r}; valid dtypes are: {', '.join(d.name for d in SUPPORTED)}"
        )
    return as_np


_DTYPE_SET = frozenset(SUPPORTED)


def lattice_node(dtype: np.dtype, weak: bool):
    """The lattice node of a (dtype, weak) pair: weak values stand for their kind."""
    if not weak or dtype == bool_:
        return dtype
    return _WEAK_KIND[dtype.kind]


_WEAK_KIND = {
    "i": _WEAK_INT,
    "u": _WEAK_INT,
    "f": _WEAK_FLOAT,
    "c": _WEAK_COMPLEX,
    "V": _WEAK_FLOAT,
}


@functools.lru_cache(maxsize=4096)
def promote_pairs(pairs: tuple) -> tuple[np.dtype, bool]:
    """Result (dtype, weak) of promoting a tuple of (dtype, weak) pairs, as JAX does."""
    if len(pairs) == 1:
        return pairs[0]
    dtypes = {d for d, _ in pairs}
    if len(dtypes) == 1 and not all(w for _, w in pairs):
        return pairs[0][0], False
    if all(w for _, w in pairs):
        node = _least_upper_bound({d for d, _ in pairs})
        weak = True
    else:
        node = _least_upper_bound({lattice_node(d, w) for d, w in pairs})
        weak = isinstance(node, str)
    dtype = DEFAULT_DTYPE[node] if isinstance(node, str) else node
    if node in _WIDE_FOR_INT64 and any(not w and _is_64_bit_integer(d) for d, w in pairs):
        # 64-bit integers are NumPy data: int64 * 1.0 is float64 (NumPy, JAX with 64-bit
        # types), as their true division and mean are (float_dtype_for); strongly typed,
        # since a weak float64 stands for a Python number inside jit (weak_default_width)
        return _WIDE_FOR_INT64[node], False
    return dtype, weak and dtype != bool_


_WIDE_FOR_INT64 = {_WEAK_FLOAT: float64, _WEAK_COMPLEX: complex128}


def promote_types(a, b) -> np.dtype:
    """The dtype two values of these dtypes promote to under JAX's lattice; the Python
    types ``int``, ``float`` and ``complex`` stand for weakly typed values, as in JAX.

    >>> promote_types(fg.int8, fg.uint8)
    dtype('int16')
    >>> promote_types(float, fg.float16)
    dtype('float16')
    """
    def weak(t):  # identity: np.dtype("float64") == float holds
        return any(t is python for python in (int, float, complex))

    return promote_pairs(((canonicalize(a), weak(a)), (canonicalize(b), weak(b))))[0]


_WEAK_DEFAULT_WIDTH = {np.dtype(np.float64): np.dtype(np.float32),
                       np.dtype(np.int64): np.dtype(np.int32),
                       np.dtype(np.complex128): np.dtype(np.complex64)}


def weak_default_width(dtype) -> np.dtype:
    """The dtype a *weak* value of ``dtype`` takes when it alone decides a result's dtype:
    Python numbers passed to ``jit`` are weak 64-bit inside (full precision), and come out at
    the default width, float32/int32/complex64, as they do eagerly and in JAX."""
    dtype = np.dtype(dtype)
    return _WEAK_DEFAULT_WIDTH.get(dtype, dtype)


_PYTHON_TYPES = {bool: (np.dtype(np.bool_), False), int: (np.dtype(np.int32), True),
                 float: (np.dtype(np.float32), True), complex: (np.dtype(np.complex64), True)}


def dtype_and_weak(x) -> tuple[np.dtype, bool]:
    """(dtype, weak) of a Tensor, NumPy array, dtype-like or Python scalar."""
    if isinstance(x, np.generic):  # np.float64 subclasses float but is strongly typed
        return canonicalize(x.dtype), False
    if isinstance(x, bool):
        return bool_, False
    if isinstance(x, int):
        return int32, True
    if isinstance(x, float):
        return float32, True
    if isinstance(x, complex):
        return complex64, True
    if isinstance(x, type) and x in _PYTHON_TYPES:  # the types are weak too, as in JAX
        return _PYTHON_TYPES[x]
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval.dtype, aval.weak_type
    if isinstance(x, (np.ndarray, np.generic)):
        return canonicalize(x.dtype), False
    return canonicalize(x), False


def result_type(*args) -> np.dtype:
    """The dtype an operation on ``args`` (tensors, arrays, dtypes, scalars) produces.

    >>> result_type(fg.ones(3, dtype=fg.float16), 2.0)
    dtype('float16')
    """
    if not args:
        raise ValueError("result_type needs at least one argument")
    return promote_pairs(tuple(dtype_and_weak(a) for a in args))[0]


def is_float(dtype) -> bool:
    return dtype.kind == "f" or dtype == bfloat16


def is_inexact(dtype) -> bool:
    return dtype.kind in "fcV" or dtype == bfloat16


def is_complex(dtype) -> bool:
    return dtype.kind == "c"


def is_integer(dtype) -> bool:
    return dtype.kind in "iu"


def float_dtype_for(dtype) -> np.dtype:
    """The floating dtype an integer or bool input converts to (true division, mean...):
    float32 (JAX's default), float64 for 64-bit integers (NumPy data: ``np.arange(10)`` is
    int64, and its mean or ratio is float64 in NumPy and in JAX with 64-bit types)."""
    if is_inexact(dtype):
        return dtype
    return float64 if _is_64_bit_integer(dtype) else float32


def _is_64_bit_integer(dtype) -> bool:
    """int64/uint64: NumPy data, whose float results are float64 (float_dtype_for, and
    promotion with Python floats in promote_pairs)."""
    return dtype.kind in "iu" and dtype.itemsize == 8


def real_dtype(dtype) -> np.dtype:
    """The real counterpart of a complex dtype (itself for real dtypes)."""
    return {complex64: float32, complex128: float64}.get(dtype, dtype)


def complex_dtype(dtype) -> np.dtype:
    """The complex dtype holding values of ``dtype``: complex128 for float64 and
    complex128, complex64 for everything else (float32, half floats, integers)."""
    return np.dtype(np.complex128 if dtype in (np.float64, np.complex128) else np.complex64)


def finfo(dtype):
    """Machine limits of a floating dtype (``ml_dtypes.finfo`` also knows bfloat16)."""
    return ml_dtypes.finfo(canonicalize(dtype))


def iinfo(dtype):
    """Machine limits of an integer dtype."""
    return np.iinfo(canonicalize(dtype))
