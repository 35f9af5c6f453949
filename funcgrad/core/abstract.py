"""Abstract values: what every transformation knows about a value (shape, dtype, weakness)."""

from __future__ import annotations

import math

import numpy as np

from funcgrad.core import dtypes

_SHORT_NAMES = {
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bool": "bool", "complex64": "c64", "complex128": "c128",
}


class ShapedArray:
    """The abstract value of an array: ``ShapedArray((2, 3), float32)`` prints ``f32[2,3]``.

    ``weak_type`` marks values that came from Python scalars and so yield to the dtype of
    whatever they are combined with.
    """

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def strip_weak(self) -> ShapedArray:
        return ShapedArray(self.shape, self.dtype, False) if self.weak_type else self

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def __eq__(self, other) -> bool:
        return (isinstance(other, ShapedArray) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def str_short(self) -> str:
        name = _SHORT_NAMES.get(self.dtype.name, self.dtype.name)
        return f"{name}[{','.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.shape}, {self.dtype.name}{weak})"

    __str__ = str_short


def aval_of(x) -> ShapedArray:
    """The abstract value of a Tensor, tracer, NumPy array or Python scalar."""
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        dtype, weak = dtypes.dtype_and_weak(x)
        return ShapedArray((), dtype, weak)
    arr = np.asarray(x)
    return ShapedArray(arr.shape, dtypes.canonicalize(arr.dtype), False)
