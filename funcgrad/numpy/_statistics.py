"""Order statistics: median, quantile and percentile, from a sort along the axis (so they
differentiate, batch and compile like ``sort``); NumPy's default "linear" interpolation."""

from __future__ import annotations

from funcgrad.core import dtypes
from funcgrad.core.prims import structural as st
from funcgrad.core.prims.structural import full_like
from funcgrad.numpy import _elementwise as elt
from funcgrad.numpy._indexing import sort, take
from funcgrad.numpy._util import asarray, normalize_axes

_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def quantile(a, q, axis=None, out=None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False):
    """The ``q``-th quantiles (``q`` in [0, 1], a scalar or a tensor whose shape leads the
    result) over ``axis``; NaN where the slice holds a NaN, as ``numpy.quantile`` (its
    argument order; ``out`` must be None, ``overwrite_input`` changes nothing).

    >>> fnp.quantile(fg.tensor([1.0, 2.0, 3.0, 4.0]), 0.5)
    tensor(2.5, dtype=float32)
    """
    no_out("quantile", out)
    if method not in _METHODS:
        raise ValueError(f"quantile: method must be one of {_METHODS}, got {method!r}")
    a = asarray(a)
    if not dtypes.is_inexact(a.dtype):  # float64 for 64-bit integers, as NumPy and JAX
        a = a.astype(dtypes.float_dtype_for(a.dtype))
    q = asarray(q, a.dtype)  # Python numbers straight to a's precision (0.1 not via float32)
    axes = normalize_axes("quantile", axis, a.ndim)
    kept = [d for d in range(a.ndim) if d not in axes]
    # the reduced axes flattened into one last axis
    moved = st.transpose(a, (*kept, *axes))
    n = 1
    for d in axes:
        n *= a.shape[d]
    if n == 0:
        raise ValueError("quantile: the reduced axes are empty")
    rows = st.reshape(moved, (*[a.shape[d] for d in kept], n))
    ordered = sort(rows, axis=-1)
    # (ordered axes..., q shape...)
    value = interpolate(ordered, q * (n - 1), method, lambda x, i: take(x, i, axis=-1))
    # sort puts NaNs last: the last entry says whether a slice holds one (a reduction
    # over the rows instead met an IREE 3.13 fusion failure beside the gathers, 'vector.store'
    # outside a workgroup context, for the last axis of 3-d input)
    has_nan = elt.isnan(take(ordered, -1, axis=-1))
    has_nan = st.reshape(has_nan, (*has_nan.shape, *[1] * q.ndim))
    value = elt.where(has_nan, float("nan"), value)
    # q's axes lead, as NumPy
    value = st.transpose(value, (*range(len(kept), value.ndim), *range(len(kept))))
    if keepdims:
        shape = list(a.shape)
        for d in axes:
            shape[d] = 1
        value = st.reshape(value, (*q.shape, *shape))
    return value


def interpolate(ordered, position, method: str, pick):
    """The value at the fractional ``position`` of the sorted ``ordered`` by ``method``
    (one of ``_METHODS``, as NumPy); ``pick(ordered, integer positions)`` reads entries."""
    lower, upper = elt.floor(position), elt.ceil(position)
    if method == "lower":
        upper = lower
    elif method == "higher":
        lower = upper
    elif method == "nearest":  # NumPy rounds half to even
        lower = upper = elt.round(position)
    low = pick(ordered, lower.astype(dtypes.int32))
    if method in ("lower", "higher", "nearest"):
        return low
    high = pick(ordered, upper.astype(dtypes.int32))
    if method == "midpoint":
        return (low + high) * 0.5
    weight = position - lower
    # weighted, as JAX: an infinite neighbour gives that infinity, not inf - inf = NaN;
    # at a whole position (weight 0) the entry itself: an infinite high * 0 would be NaN
    high = elt.where(weight == 0, full_like(high, 0), high)
    return low * (1 - weight) + high * weight


def percentile(a, q, axis=None, out=None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False):
    """The ``q``-th percentiles (``q`` in [0, 100]); see ``quantile``."""
    no_out("percentile", out)
    a = asarray(a)
    dtype = dtypes.float_dtype_for(a.dtype)
    return quantile(a, asarray(q, dtype) / 100.0, axis=axis, keepdims=keepdims, method=method)


def median(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """The median over ``axis`` (the mean of the two middle values for an even count);
    NaN where the slice holds a NaN (NumPy's argument order; ``out`` must be None).

    >>> fnp.median(fg.tensor([3.0, 1.0, 2.0, 10.0]))
    tensor(2.5, dtype=float32)
    """
    no_out("median", out)
    return quantile(a, 0.5, axis=axis, keepdims=keepdims)


def no_out(name, out):
    """Refuse NumPy's ``out=`` (tensors are immutable)."""
    if out is not None:
        raise NotImplementedError(f"{name}: the out argument is not supported (tensors are "
                                  "immutable); use the returned tensor")


# the public names are this module's own functions (not the helpers it imports)
__all__ = [_name for _name, _value in list(globals().items()) if not _name.startswith("_")
           and getattr(_value, "__module__", None) == __name__
           and _name not in ("interpolate", "no_out")]
