"""Shared plumbing of funcgrad.numpy: argument conversion, promotion, broadcasting, axes."""

from __future__ import annotations

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core import interpreter as _interp
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.config import config
from funcgrad.core.interpreter import Tracer
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims.structural import broadcast_in_dim
from funcgrad.core.tensor import Tensor, tensor, to_numpy_array, wrap

_SCALARS = (bool, int, float, complex)


def asarray(x, dtype=None) -> Tensor:
    """``x`` as a Tensor (tracers pass through unchanged), optionally converted."""
    if isinstance(x, Tensor):
        if dtype is not None:
            return ew.convert_element_type(x, dtypes.canonicalize(dtype))
        return x
    if isinstance(x, (list, tuple)):  # may hold traced tensors: stacked by operations
        return tensor(x, dtype)
    return wrap(to_numpy_array(x, dtype))


def _dtype_weak(x):
    if isinstance(x, Tensor):
        return x.dtype, x.weak_type
    if isinstance(x, _SCALARS):
        return dtypes.dtype_and_weak(x)
    arr = x if isinstance(x, np.ndarray) else to_numpy_array(x)
    return dtypes.canonicalize(arr.dtype), False


def promote(name: str, *args, to_inexact: bool = False) -> list[Tensor]:
    """Convert ``args`` to Tensors of one promoted dtype (JAX's rules, weak scalars).

    ``to_inexact`` promotes integer and bool results to a float (true division, sqrt...):
    float32, float64 for 64-bit integers (``dtypes.float_dtype_for``).
    """
    first = args[0] if args else None
    if isinstance(first, Tensor) and first.dtype.kind != "b":
        # tensors of one (non-bool) dtype and weakness: nothing to promote
        dtype, weak = first.dtype, first.weak_type
        if all([isinstance(a, Tensor) and a.dtype == dtype and a.weak_type == weak
                for a in args]) and (not to_inexact or dtypes.is_inexact(dtype)):
            return list(args)
    converted = [a if isinstance(a, (Tensor,) + _SCALARS) else asarray(a) for a in args]
    pairs = tuple(_dtype_weak(a) for a in converted)
    dtype, weak = dtypes.promote_pairs(pairs)
    if to_inexact and not dtypes.is_inexact(dtype):
        dtype = dtypes.float_dtype_for(dtype)
    out = []
    for a in converted:
        if isinstance(a, Tensor):
            if a.dtype != dtype or a.weak_type != weak:
                a = ew.convert_element_type(a, dtype, weak)
        else:
            a = wrap(_scalar_array(name, a, dtype), weak)
        out.append(a)
    return out


def _scalar_array(name, value, dtype):
    if dtype.kind in "iu" and isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise OverflowError(f"{name}: Python int {value} out of range for {dtype.name}")
    if dtype.kind in "iub" and isinstance(value, float):
        raise TypeError(f"{name}: cannot mix a Python float with {dtype.name} here")
    return np.asarray(value, dtype=dtype)


def broadcast_shapes(name: str, *shapes) -> tuple:
    """NumPy's broadcast of ``shapes``; ``ValueError`` naming the op and shapes if none."""
    if len(shapes) == 1:
        return tuple(shapes[0])
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        size = 1
        for s in shapes:
            d = s[i - ndim + len(s)] if i - ndim + len(s) >= 0 else 1
            if d != 1:
                if size != 1 and d != size:
                    raise ValueError(f"{name}: shapes {' and '.join(str(tuple(x)) for x in shapes)}"
                                     " cannot be broadcast together")
                size = d
        out.append(size)
    return tuple(out)


def broadcast_exactly(name, value, shape, what: str, whose: str):
    """``value`` broadcast to ``shape``; a ValueError naming ``what`` if it cannot be (or
    only to a larger shape)."""
    try:
        fits = broadcast_shapes(name, value.shape, shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{name}: {what} has shape {value.shape}, which does not "
                         f"broadcast to {whose} shape {tuple(shape)}")
    return broadcast_to(value, shape)


def broadcast_to(x: Tensor, shape) -> Tensor:
    shape = tuple(shape)
    if x.shape == shape:
        return x
    lead = len(shape) - x.ndim
    return broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def apply_elementwise(name: str, prim, *tensors: Tensor) -> Tensor:
    """Apply an elementwise primitive to promoted tensors of broadcastable shapes.

    Eagerly, NumPy broadcasts inside the impl (no materialized broadcast); under a
    transformation the operands are broadcast explicitly first.
    """
    shapes = [t.shape for t in tensors]
    first = shapes[0]
    same = all(s == first for s in shapes)
    shape = first if same else broadcast_shapes(name, *shapes)
    if _interp.current() is _interp.EAGER and all(
            type(t) is Tensor and type(t._buf) is np.ndarray for t in tensors):
        return eager_apply(name, prim, tensors, shape)
    if not same:
        tensors = [broadcast_to(t, shape) for t in tensors]
    return prim.bind(*tensors)


def eager_apply(name: str, prim, tensors, shape: tuple) -> Tensor:
    """An elementwise primitive applied eagerly to host ``tensors`` (one promoted dtype,
    shapes broadcasting to ``shape``): NumPy broadcasts inside the impl."""
    # (select_n's weakness is its cases', as its rule: the selector is a strong bool)
    values = tensors[1:] if prim is ew.select_n_p else tensors
    weak = prim.keeps_weak and all([t._weak for t in values])
    try:
        out = prim.impl(*[t._buf for t in tensors])
    except TypeError:
        _check_rule(name, prim, tensors, shape)  # raises the rule's clear error
        raise
    if type(out) is not np.ndarray:
        out = np.asarray(out)
    if out.shape != shape:  # a 0-d input and NumPy's scalar results
        out = np.broadcast_to(out, shape)
    result = wrap(out, weak)
    if config.debug_nans:
        _interp._check_nans(prim, result)
    if config.check_avals:
        want = _check_rule(name, prim, tensors, shape)
        if want.shape != result.shape or want.dtype != result.dtype:
            raise AssertionError(f"primitive '{prim.name}': NumPy impl gave "
                                 f"{result.aval}, shape rule says {want}")
    return result


def _check_rule(name: str, prim, tensors, shape):
    """The primitive's shape/dtype rule on the broadcast operands; its errors name ``name``."""
    avals = [ShapedArray(shape, t.dtype, t.weak_type) for t in tensors]
    if prim is ew.select_n_p:  # the selector keeps its own dtype
        avals[0] = ShapedArray(shape, tensors[0].dtype)
    try:
        return prim.abstract_eval(*avals)
    except TypeError as err:
        message = str(err)
        if not message.startswith(name + ":"):
            message = f"{name}: {message}"
        raise TypeError(message) from None


def normalize_axis(name: str, axis: int, ndim: int) -> int:
    if isinstance(axis, Tracer):  # axes must be known when tracing: say how
        raise axis._concretization_error(f"{name}: use as an axis")
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{name}: axis must be an int, got {type(axis).__name__}")
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise ValueError(f"{name}: axis {axis} is out of bounds for a tensor of rank {ndim}")
    return int(axis) % max(ndim, 1)


def axis_or_flattened(name: str, x: Tensor, axis) -> tuple:
    """``(x, axis)`` with ``axis`` normalized, or ``(x flattened, 0)`` for ``axis=None``
    (NumPy's convention for functions along one axis)."""
    from funcgrad.core.prims.structural import reshape

    if axis is None:
        return reshape(x, (x.size,)), 0
    return x, normalize_axis(name, axis, x.ndim)


def normalize_axes(name: str, axis, ndim: int) -> tuple:
    """``axis`` (None, int or tuple) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(name, a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{name}: repeated axis in {axis}")
        return tuple(sorted(axes))
    return (normalize_axis(name, axis, ndim),)


def is_concrete(x) -> bool:
    """True for values whose numbers are known now (not tracers)."""
    return not isinstance(x, Tensor) or type(x) is Tensor
