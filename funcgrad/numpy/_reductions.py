"""Reductions and cumulative functions of funcgrad.numpy (axis/keepdims as NumPy)."""

from __future__ import annotations

import builtins
import math

from funcgrad.core import dtypes
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims import reductions as red
from funcgrad.core.prims.structural import broadcast_in_dim, reshape
from funcgrad.numpy import _elementwise as elt
from funcgrad.numpy._util import (
    asarray,
    broadcast_shapes,
    broadcast_to,
    normalize_axes,
    normalize_axis,
    promote,
)


def _keep(y, x_shape, axes, keepdims):
    if not keepdims:
        return y
    shape = tuple(1 if i in axes else d for i, d in enumerate(x_shape))
    return reshape(y, shape)


def _sum_dtype(dtype):
    """JAX's accumulation dtype: bool and small integers sum in the default int width."""
    if dtype == dtypes.bool_:
        return dtypes.int32
    if dtype.kind == "i" and dtype.itemsize < 4:
        return dtypes.int32
    if dtype.kind == "u" and dtype.itemsize < 4:
        return dtypes.uint32
    return dtype


# the dtype a reduction accumulates in: float32 for float16/bfloat16 (as JAX: adding 5000
# float16 ones in float16 stops at 2048), else the dtype itself
_upcast = red.accumulation_dtype


# bool results accumulate as NumPy's bool add and multiply do: sums are ORs, products ANDs
# (the running ones a running max/min of 0s and 1s)
_LOGICAL = {red.reduce_sum: red.reduce_or, red.reduce_prod: red.reduce_and,
            red.cumsum: red.cummax, red.cumprod: red.cummin}


def _accumulated(prim_fn, x, target, *args):
    """``prim_fn(x in its accumulation dtype, *args)``, converted back to ``target``; a
    weakly typed ``x`` (a Python number given to jit) gives a weakly typed result."""
    if target == dtypes.bool_:
        truth = ew.convert_element_type(x, dtypes.bool_)
        if prim_fn in (red.cumsum, red.cumprod):
            truth = ew.convert_element_type(truth, dtypes.uint8)
        return ew.convert_element_type(_LOGICAL[prim_fn](truth, *args), dtypes.bool_)
    wide, weak = _upcast(target), x.weak_type and x.dtype == target
    out = prim_fn(ew.convert_element_type(x, wide, weak_type=weak), *args)
    return out if wide == target else ew.convert_element_type(out, target, weak_type=weak)


def _masked(name, x, where, fill):
    """``x`` with the elements where ``where`` (broadcast to x's shape) is False replaced
    by ``fill``: NumPy's ``where=`` of reductions."""
    if where is None:
        return x
    return elt.where(_mask(name, where, x.shape), x, fill)


def _mask(name, where, shape):
    mask = elt._truth(where)
    if broadcast_shapes(name, mask.shape, shape) != shape:
        raise ValueError(f"{name}: where= of shape {mask.shape} does not broadcast to the "
                         f"input's shape {shape}")
    return broadcast_to(mask, shape)


def sum(x, axis=None, dtype=None, keepdims: bool = False, initial=None, *,  # noqa: A001
        where=None):
    """Sum over ``axis`` (all axes by default), of the elements where ``where`` holds,
    plus ``initial``.

    >>> fnp.sum(fg.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=0)
    tensor([4., 6.], dtype=float32)
    """
    x = _masked("sum", asarray(x), where, 0)
    axes = normalize_axes("sum", axis, x.ndim)
    target = _sum_dtype(x.dtype) if dtype is None else dtypes.canonicalize(dtype)
    out = _keep(_accumulated(red.reduce_sum, x, target, axes), x.shape, axes, keepdims)
    return out if initial is None else out + asarray(initial).astype(out.dtype)


def prod(x, axis=None, dtype=None, keepdims: bool = False, initial=None, *, where=None):
    """Product over ``axis`` (of the elements where ``where`` holds), times ``initial``.

    >>> fnp.prod(fg.tensor([1.0, 2.0, 3.0]))
    tensor(6., dtype=float32)
    """
    x = _masked("prod", asarray(x), where, 1)
    axes = normalize_axes("prod", axis, x.ndim)
    target = _sum_dtype(x.dtype) if dtype is None else dtypes.canonicalize(dtype)
    out = _keep(_accumulated(red.reduce_prod, x, target, axes), x.shape, axes, keepdims)
    return out if initial is None else out * asarray(initial).astype(out.dtype)


def _extremum(name, prim_fn, x, axis, keepdims, initial=None, where=None):
    x = asarray(x)
    if initial is not None:  # in x's dtype, as JAX (an int32 max with initial=-10. is int32)
        initial = ew.convert_element_type(asarray(initial), x.dtype)
    if where is not None:
        if initial is None:
            raise ValueError(f"{name}: where= needs initial= (the value of a reduction over "
                             "no element), as in NumPy and JAX")
        x = _masked(name, x, where, initial)
    axes = normalize_axes(name, axis, x.ndim)
    if initial is None and builtins.any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{name}: zero-size reduction over axis {axis} of shape {x.shape} has "
                         "no identity; pass initial=")
    y = prim_fn(x, axes)
    if dtypes.is_complex(x.dtype) and axes:
        y = _first_nan_or(x, axes, y)
    if initial is not None:
        y = (elt.maximum if name in ("max", "amax") else elt.minimum)(y, initial)
    return _keep(y, x.shape, axes, keepdims)


def _first_nan_or(x, axes, y):
    """``y`` (complex max/min over ``axes``), or the first element with a NaN part where
    there is one, as NumPy: compiled complex max/min skipped NaN elements."""
    from funcgrad.numpy._indexing import take_along_axis
    from funcgrad.numpy._shape import moveaxis

    kept = [d for d in range(x.ndim) if d not in axes]
    count = math.prod(x.shape[a] for a in axes)
    rows = reshape(moveaxis(x, axes, list(range(len(kept), x.ndim))),
                   (*[x.shape[d] for d in kept], count))
    nan = elt.isnan(elt.real(rows)) | elt.isnan(elt.imag(rows))
    first = argmax(nan, axis=-1)
    picked = take_along_axis(rows, reshape(first, (*first.shape, 1)), axis=-1)
    return elt.where(reshape(any(nan, axis=-1), y.shape),
                     reshape(picked, y.shape), y)


def max(x, axis=None, keepdims: bool = False, initial=None, *, where=None):  # noqa: A001
    """Largest element over ``axis`` (NaN propagates); ``where`` needs ``initial``.

    >>> fnp.max(fg.tensor([1.0, 5.0, 2.0]))
    tensor(5., dtype=float32)
    """
    return _extremum("max", red.reduce_max, x, axis, keepdims, initial, where)


def min(x, axis=None, keepdims: bool = False, initial=None, *, where=None):  # noqa: A001
    """Smallest element over ``axis`` (NaN propagates); ``where`` needs ``initial``."""
    return _extremum("min", red.reduce_min, x, axis, keepdims, initial, where)


amax, amin = max, min


def _arg(name, prim_fn, x, axis, keepdims):
    x = asarray(x)
    if axis is None:
        flat = reshape(x, (x.size,))
        if x.size == 0:
            raise ValueError(f"{name}: attempt to get {name} of an empty tensor")
        out = prim_fn(flat, 0)
        return reshape(out, (1,) * x.ndim) if keepdims else out
    axis = normalize_axis(name, axis, x.ndim)
    if x.shape[axis] == 0:
        raise ValueError(f"{name}: attempt to get {name} of an empty axis (shape {x.shape})")
    return _keep(prim_fn(x, axis), x.shape, (axis,), keepdims)


def argmax(x, axis=None, keepdims: bool = False):
    """Index of the largest element (first on ties), over the flattened tensor by default.

    >>> fnp.argmax(fg.tensor([1.0, 5.0, 2.0]))
    tensor(1, dtype=int32)
    """
    return _arg("argmax", red.argmax, x, axis, keepdims)


def argmin(x, axis=None, keepdims: bool = False):
    """Index of the smallest element (first on ties)."""
    return _arg("argmin", red.argmin, x, axis, keepdims)


def all(x, axis=None, keepdims: bool = False, *, where=None):  # noqa: A001
    """True if every element over ``axis`` (where ``where`` holds) is truthy."""
    x = _masked("all", elt._truth(x), where, True)
    axes = normalize_axes("all", axis, x.ndim)
    return _keep(red.reduce_and(x, axes), x.shape, axes, keepdims)


def any(x, axis=None, keepdims: bool = False, *, where=None):  # noqa: A001
    """True if some element over ``axis`` (where ``where`` holds) is truthy."""
    x = _masked("any", elt._truth(x), where, False)
    axes = normalize_axes("any", axis, x.ndim)
    return _keep(red.reduce_or(x, axes), x.shape, axes, keepdims)


def count_nonzero(x, axis=None, keepdims: bool = False):
    """Number of non-zero elements over ``axis``."""
    return sum(elt._truth(x), axis=axis, keepdims=keepdims)


def _count(x_shape, axes):
    n = 1
    for a in axes:
        n *= x_shape[a]
    return n


def mean(x, axis=None, dtype=None, keepdims: bool = False, *, where=None):
    """Arithmetic mean over ``axis`` (integers average in float32), of the elements where
    ``where`` holds.

    >>> fnp.mean(fg.tensor([1, 2, 3, 4]))
    tensor(2.5, dtype=float32)
    """
    x = asarray(x)
    axes = normalize_axes("mean", axis, x.ndim)
    target = dtypes.float_dtype_for(x.dtype) if dtype is None else dtypes.canonicalize(dtype)
    wide, weak = _upcast(target), x.weak_type and dtype is None  # see _accumulated
    total = sum(ew.convert_element_type(x, wide, weak_type=weak), axis=axes,
                keepdims=keepdims, where=where)
    return ew.convert_element_type(total / _counted(x.shape, axes, keepdims, where, wide),
                                   target, weak_type=weak)


def _counted(shape, axes, keepdims, where, dtype):
    """How many elements a reduction over ``axes`` takes: all of them, or those where
    ``where`` holds (a tensor of counts)."""
    if where is None:
        return _count(shape, axes)
    ones = ew.convert_element_type(_mask("mean", where, shape), dtype)
    return sum(ones, axis=axes, keepdims=keepdims)


def var(x, axis=None, dtype=None, ddof: int = 0, keepdims: bool = False, *,
        correction=None, where=None):
    """Variance over ``axis`` with ``ddof`` delta degrees of freedom (``correction``, the
    array API's name, replaces it when given); inf or NaN when ``ddof`` >= the count.

    >>> fnp.var(fg.tensor([1.0, 2.0, 3.0, 4.0]))
    tensor(1.25, dtype=float32)
    """
    ddof = _ddof("var", ddof, correction)
    x = asarray(x)
    axes = normalize_axes("var", axis, x.ndim)
    target = dtypes.float_dtype_for(x.dtype) if dtype is None else dtypes.canonicalize(dtype)
    weak = x.weak_type and dtype is None  # see _accumulated
    if _upcast(target) != target:
        wide = var(ew.convert_element_type(x, _upcast(target), weak_type=weak), axis=axes,
                   ddof=ddof, keepdims=keepdims, where=where)
        return ew.convert_element_type(wide, target, weak_type=weak)
    x = ew.convert_element_type(x, target, weak_type=weak)
    centered = x - mean(x, axis=axes, keepdims=True, where=where)
    if dtypes.is_complex(x.dtype):
        squared = elt.real(centered * elt.conjugate(centered))
    else:
        squared = centered * centered
    count = _counted(x.shape, axes, keepdims, where, squared.dtype)
    # as NumPy: the divisor is never negative
    n = builtins.max(count - ddof, 0) if where is None else elt.maximum(count - ddof, 0)
    return sum(squared, axis=axes, keepdims=keepdims, where=where) / n


def _ddof(name, ddof, correction):
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError(f"{name}: pass ddof or correction, not both")
    return correction


def std(x, axis=None, dtype=None, ddof: int = 0, keepdims: bool = False, *, correction=None,
        where=None):
    """Standard deviation over ``axis`` (square root of ``var``)."""
    ddof = _ddof("std", ddof, correction)
    x = asarray(x)
    normalize_axes("std", axis, x.ndim)  # so a bad axis is reported as std's
    return elt.sqrt(var(x, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where))


def average(x, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
    """Weighted mean over ``axis``."""
    if weights is None:
        avg = mean(x, axis=axis, keepdims=keepdims)
        if returned:
            x = asarray(x)
            axes = normalize_axes("average", axis, x.ndim)
            return avg, elt.full_like(avg, _count(x.shape, axes))
        return avg
    # both in the promoted inexact dtype first, as JAX: float32 weights of float64 data
    # were summed in float32
    x, weights = promote("average", x, weights, to_inexact=True)
    if weights.shape != x.shape:
        if axis is None or weights.ndim != 1:
            raise ValueError(f"average: weights of shape {weights.shape} must match x's "
                             f"shape {x.shape}, or be 1-d along the given axis")
        ax = normalize_axis("average", axis, x.ndim)
        weights = broadcast_in_dim(weights, x.shape, (ax,))
    total = sum(weights, axis=axis, keepdims=keepdims)
    avg = sum(x * weights, axis=axis, keepdims=keepdims) / total
    return (avg, total) if returned else avg


def ptp(x, axis=None, keepdims: bool = False):
    """max - min over ``axis``."""
    return max(x, axis=axis, keepdims=keepdims) - min(x, axis=axis, keepdims=keepdims)


def _cumulative_dtype(dtype):
    """JAX's result dtype of cumsum/cumprod: the input's, bools counted in int32 (unlike
    ``sum``, small integers are not widened: an int8 cumsum wraps around, as in JAX)."""
    return dtypes.int32 if dtype == dtypes.bool_ else dtype


def _cumulative(name, prim_fn, x, axis, dtype):
    x = asarray(x)
    axis = None if axis is None else normalize_axis(name, axis, x.ndim)
    if axis is None or x.ndim == 0:  # flattened; a 0-d x as one of shape (1,) (NumPy)
        x = reshape(x, (x.size,))
        axis = 0
    target = _cumulative_dtype(x.dtype) if dtype is None else dtypes.canonicalize(dtype)
    return _accumulated(prim_fn, x, target, axis)


def cumsum(x, axis=None, dtype=None):
    """Running sum along ``axis`` (over the flattened tensor by default), in x's dtype
    (bools: int32) unless ``dtype`` is given, as JAX.

    >>> fnp.cumsum(fg.tensor([1, 2, 3]))
    tensor([1, 3, 6], dtype=int32)
    """
    return _cumulative("cumsum", red.cumsum, x, axis, dtype)


def cumprod(x, axis=None, dtype=None):
    """Running product along ``axis`` (over the flattened tensor by default), in x's
    dtype (bools: int32) unless ``dtype`` is given, as JAX.

    >>> fnp.cumprod(fg.tensor([1, 2, 3]))
    tensor([1, 2, 6], dtype=int32)
    """
    return _cumulative("cumprod", red.cumprod, x, axis, dtype)


def logsumexp(x, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
    """log(sum(b * exp(x))) over ``axis``, computed without overflow; ``x``, ``b`` and
    ``where`` (the entries taking part) broadcast together.  ``return_sign``:
    ``(log|sum|, sign(sum))``, for weights ``b`` that make the sum negative (otherwise
    its log is NaN).  Arguments in ``jax.scipy.special.logsumexp``'s order.

    >>> fnp.logsumexp(fg.tensor([1000.0, 1000.0]))
    tensor(1000.6932, dtype=float32)
    """
    x = asarray(x)
    if not dtypes.is_inexact(x.dtype):
        x = ew.convert_element_type(x, dtypes.float_dtype_for(x.dtype))
    if b is not None:
        b = asarray(b)
        shape = broadcast_shapes("logsumexp", x.shape, b.shape)
        x, b = broadcast_to(x, shape), broadcast_to(b, shape)
    if where is not None:
        where = asarray(where)
        if where.dtype != dtypes.bool_:
            raise TypeError(f"logsumexp: where must be a bool mask, got {where.dtype.name}")
        shape = broadcast_shapes("logsumexp", x.shape, where.shape)
        x = elt.where(broadcast_to(where, shape), broadcast_to(x, shape), float("-inf"))
        b = None if b is None else broadcast_to(b, shape)
    axes = normalize_axes("logsumexp", axis, x.ndim)
    peak = red.reduce_max(x, axes) if x.size else elt.full_like(
        sum(x, axis=axes), float("-inf"))
    peak = elt.where(elt.isfinite(peak), peak, elt.full_like(peak, 0))
    # the result does not depend on the shift (its derivative cancels exactly), but in
    # float16 the two terms cancelled only to ~1e-3 and the max entry's gradient was 14% off
    from funcgrad.transforms.custom import stop_gradient

    peak = stop_gradient(peak)
    from funcgrad.core.prims.structural import broadcast_in_dim as _bcast

    kept = tuple(i for i in range(x.ndim) if i not in axes)
    shifted = elt.exp(x - _bcast(peak, x.shape, kept))
    if b is not None:
        shifted = shifted * b
    total = sum(shifted, axis=axes)
    if not return_sign:
        return _keep(elt.log(total) + peak, x.shape, axes, keepdims)
    out = _keep(elt.log(elt.abs(total)) + peak, x.shape, axes, keepdims)
    return out, _keep(elt.sign(total), x.shape, axes, keepdims)


def nansum(x, axis=None, dtype=None, keepdims: bool = False):
    """Sum ignoring NaNs (0 for an all-NaN slice)."""
    x = asarray(x)
    return sum(x, axis=axis, dtype=dtype, keepdims=keepdims, where=_not_nan(x))


def nanmean(x, axis=None, dtype=None, keepdims: bool = False):
    """Mean ignoring NaNs (NaN for an all-NaN slice)."""
    x = asarray(x)
    return mean(x, axis=axis, dtype=dtype, keepdims=keepdims, where=_not_nan(x))


def nanvar(x, axis=None, dtype=None, ddof: int = 0, keepdims: bool = False):
    """Variance ignoring NaNs."""
    x = asarray(x)
    kept = _not_nan(x)
    if kept is not None:
        # the NaNs replaced too, not only masked: (NaN - mean)**2's derivative times the
        # mask's 0 made every gradient NaN
        x = elt.where(kept, x, elt.full_like(x, 0))
    return var(x, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=kept)


def nanstd(x, axis=None, dtype=None, ddof: int = 0, keepdims: bool = False):
    """Standard deviation ignoring NaNs."""
    return elt.sqrt(nanvar(x, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims))


def nanmax(x, axis=None, keepdims: bool = False):
    """Largest element ignoring NaNs (NaN for an all-NaN slice)."""
    return _nan_extremum("nanmax", max, x, axis, keepdims, float("-inf"))


def nanmin(x, axis=None, keepdims: bool = False):
    """Smallest element ignoring NaNs (NaN for an all-NaN slice)."""
    return _nan_extremum("nanmin", min, x, axis, keepdims, float("inf"))


def _not_nan(x):
    return elt.logical_not(elt.isnan(x)) if dtypes.is_inexact(x.dtype) else None


def _nan_extremum(name, reduce, x, axis, keepdims, ignore):
    x = asarray(x)
    if not dtypes.is_inexact(x.dtype):
        return reduce(x, axis=axis, keepdims=keepdims)
    nan = elt.isnan(x)
    out = reduce(elt.where(nan, ignore, x), axis=axis, keepdims=keepdims)
    return elt.where(all(nan, axis=axis, keepdims=keepdims), float("nan"), out)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether every element of ``a`` is close to ``b`` (``isclose``), as a bool tensor."""
    return all(elt.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a, b, equal_nan: bool = False):
    """Whether ``a`` and ``b`` have one shape and equal elements (a bool tensor)."""
    a, b = asarray(a), asarray(b)
    if a.shape != b.shape:
        return asarray(False)
    same = elt.equal(a, b)
    if equal_nan and dtypes.is_inexact(a.dtype):
        same = elt.logical_or(same, elt.logical_and(elt.isnan(a), elt.isnan(b)))
    return all(same)


# the public names are this module's own functions (not the helpers it imports)
__all__ = [_name for _name, _value in list(globals().items()) if not _name.startswith("_")
           and getattr(_value, "__module__", None) == __name__]
