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
