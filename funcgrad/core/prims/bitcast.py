"""bitcast_convert_type: reinterpret an array's bits as another dtype of the same width.

``bitcast_convert_type(float32 1.0, uint32)`` is ``0x3f800000``: the bytes stay, only
their meaning changes (NumPy's ``x.view(dtype)``, StableHLO's ``bitcast_convert``).
Random number generation builds floats from random bits with it.  The result does not
depend smoothly on the input, so its tangent is zero.
"""

from __future__ import annotations

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.primitive import Primitive

bitcast_convert_type_p = Primitive("bitcast_convert_type", keeps_weak=False,
                                   differentiable=False)


def _bitcast_impl(x, *, new_dtype):
    _check_dtypes(x.dtype, new_dtype)
    return x.view(new_dtype)


def _bitcast_rule(x, *, new_dtype):
    _check_dtypes(x.dtype, new_dtype)
    return ShapedArray(x.shape, new_dtype, False)


def _check_dtypes(old, new_dtype):
    if old.itemsize != new_dtype.itemsize:
        raise TypeError(f"bitcast_convert_type: {old.name} ({old.itemsize * 8} bits) "
                        f"and {new_dtype.name} ({new_dtype.itemsize * 8} bits) differ in "
                        "width; bitcast only between dtypes of one width (e.g. float32 and "
                        "uint32), or convert with astype")
    if old.kind in "cb" or new_dtype.kind in "cb":
        raise TypeError(f"bitcast_convert_type: cannot bitcast {old.name} to "
                        f"{new_dtype.name}; only integer and floating dtypes")


def _bitcast_jvp(primals, tangents, *, new_dtype):
    return bitcast_convert_type_p.bind(primals[0], new_dtype=new_dtype), None


def _bitcast_batch(axis_size, args, dims, *, new_dtype):
    return bitcast_convert_type_p.bind(args[0], new_dtype=new_dtype), dims[0]


bitcast_convert_type_p.impl = _bitcast_impl
bitcast_convert_type_p.abstract_eval = _bitcast_rule
bitcast_convert_type_p.jvp = _bitcast_jvp
bitcast_convert_type_p.batch = _bitcast_batch


def bitcast_convert_type(x, new_dtype):
    """``x``'s bits read as ``new_dtype`` (same bit width); a no-op for equal dtypes.

    >>> bitcast_convert_type(fg.tensor(1.0), fg.uint32)
    tensor(1065353216, dtype=uint32)
    """
    new_dtype = dtypes.canonicalize(new_dtype)
    if x.dtype == new_dtype:
        return x
    return bitcast_convert_type_p.bind(x, new_dtype=np.dtype(new_dtype))


# --- MLIR lowering ------------------------------------------------------------------------------


def _lower_bitcast(ctx, args, in_avals, out_avals, *, new_dtype):
    return ctx.op("stablehlo.bitcast_convert", args, out_avals)


bitcast_convert_type_p.lower = _lower_bitcast
