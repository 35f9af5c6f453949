"""More of NumPy's API: array-API aliases, stacking and splitting helpers, integer and
floating-point math, cumulative and NaN-ignoring reductions, index helpers and vector
products; each a composition of funcgrad.numpy functions, so it differentiates, batches
and compiles like them."""

from __future__ import annotations

import builtins
import math

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.prims import structural as st
from funcgrad.core.prims.bitcast import bitcast_convert_type
from funcgrad.core.tensor import Tensor
from funcgrad.numpy import _elementwise as elt
from funcgrad.numpy import _reductions as red
from funcgrad.numpy import _shape as shp
from funcgrad.numpy._creation import arange, linspace, ones_like
from funcgrad.numpy._indexing import tril_indices, triu_indices
from funcgrad.numpy._linear import matmul
from funcgrad.numpy._util import (
    asarray,
    broadcast_shapes,
    broadcast_to,
    is_concrete,
    normalize_axis,
    promote,
)
from funcgrad.transforms.custom import custom_jvp

__all__ = [
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "fabs",
    "matrix_transpose", "unstack", "rollaxis", "atleast_3d", "dstack", "hsplit", "vsplit",
    "dsplit", "append", "ediff1d",
    "logaddexp2", "gcd", "lcm", "modf", "frexp", "ldexp", "trapezoid", "geomspace", "vander",
    "cumulative_sum", "cumulative_prod", "nancumsum", "nancumprod", "nanprod", "nanargmax",
    "nanargmin",
    "isscalar", "iscomplexobj", "isrealobj", "iscomplex", "isreal",
    "indices", "diag_indices", "diag_indices_from", "tril_indices_from", "triu_indices_from",
    "diagflat", "ix_", "unravel_index", "ravel_multi_index",
    "matvec", "vecmat", "vecdot",
    "partition", "argpartition", "lexsort", "union1d", "intersect1d", "setdiff1d", "setxor1d",
]


# --- array-API names of the inverse trigonometric functions ----------------------------------


# the same functions as arccos ... arctan2 (fnp.acos is fnp.arccos), as in jax.numpy
acos, acosh, asin, asinh = elt.arccos, elt.arccosh, elt.arcsin, elt.arcsinh
atan, atan2, atanh = elt.arctan, elt.arctan2, elt.arctanh


def fabs(x):
    """Absolute value as a float (integers and bools become float32), as ``numpy.fabs``;
    complex input is a TypeError.

    >>> fnp.fabs(fg.tensor([-2, 3]))
    tensor([2., 3.], dtype=float32)
    """
    (x,) = promote("fabs", x, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise TypeError(f"fabs: x must be real, got {x.dtype.name} (use abs)")
    return elt.abs(x)


# --- shapes: transposes, stacking and splitting ---------------------------------------------


def matrix_transpose(x):
    """Swap the last two axes (a batch of matrices transposed).

    >>> fnp.matrix_transpose(fnp.ones((5, 2, 3))).shape
    (5, 3, 2)
    """
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 axes, got ndim={x.ndim} "
                         f"(shape {x.shape})")
    return shp.swapaxes(x, -1, -2)


def unstack(x, axis: int = 0):
    """The slices of ``x`` along ``axis``, as a tuple (the inverse of ``stack``).

    >>> [t.shape for t in fnp.unstack(fnp.ones((2, 3)), axis=1)]
    [(2,), (2,), (2,)]
    """
    x = asarray(x)
    if x.ndim == 0:
        raise ValueError("unstack: x must have at least 1 axis, got a 0-d tensor")
    axis = normalize_axis("unstack", axis, x.ndim)
    out_shape = x.shape[:axis] + x.shape[axis + 1:]
    pieces = []
    for i in range(x.shape[axis]):
        start = [0] * x.ndim
        limit = list(x.shape)
        start[axis], limit[axis] = i, i + 1
        pieces.append(st.reshape(st.slice_(x, start, limit), out_shape))
    return tuple(pieces)


def rollaxis(a, axis: int, start: int = 0):
    """Move ``axis`` to sit before position ``start`` (NumPy's older ``moveaxis``).

    >>> fnp.rollaxis(fnp.ones((2, 3, 4)), 2).shape
    (4, 2, 3)
    """
    a = asarray(a)
    n = a.ndim
    axis = normalize_axis("rollaxis", axis, n)
    if not isinstance(start, (int, np.integer)) or isinstance(start, bool):
        raise TypeError(f"rollaxis: start must be an int, got {type(start).__name__}")
    if not -n <= start <= n:
        raise ValueError(f"rollaxis: start {start} must be in [{-n}, {n}] for a tensor of "
                         f"rank {n}")
    start = int(start) + n if start < 0 else int(start)
    if axis < start:
        start -= 1
    return a if axis == start else shp.moveaxis(a, axis, start)


def atleast_3d(*arys):
    """Each argument with at least three axes: (N,) becomes (1, N, 1), (M, N) becomes
    (M, N, 1); a list for several arguments.

    >>> fnp.atleast_3d(fnp.ones(3)).shape
    (1, 3, 1)
    """
    out = []
    for x in arys:
        x = asarray(x)
        if x.ndim == 0:
            x = st.reshape(x, (1, 1, 1))
        elif x.ndim == 1:
            x = st.reshape(x, (1, x.shape[0], 1))
        elif x.ndim == 2:
            x = st.reshape(x, (*x.shape, 1))
        out.append(x)
    return out[0] if len(out) == 1 else out


def dstack(tup, dtype=None):
    """Concatenate along the third axis (inputs made at least 3-d first).

    >>> fnp.dstack([fnp.ones(3), fnp.zeros(3)]).shape
    (1, 3, 2)
    """
    arrays = [atleast_3d(a) for a in tup]
    if not arrays:
        raise ValueError("dstack: need at least one tensor")
    return shp.concatenate(arrays, 2, dtype=dtype)


def hsplit(ary, indices_or_sections):
    """Split along axis 1 (axis 0 for 1-d input); see ``split``.

    >>> [p.shape for p in fnp.hsplit(fnp.ones((2, 4)), 2)]
    [(2, 2), (2, 2)]
    """
    ary = asarray(ary)
    if ary.ndim == 0:
        raise ValueError("hsplit: ary must have at least 1 axis, got a 0-d tensor")
    return shp.split(ary, indices_or_sections, axis=1 if ary.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """Split along axis 0 (input at least 2-d); see ``split``.

    >>> [p.shape for p in fnp.vsplit(fnp.ones((4, 2)), 2)]
    [(2, 2), (2, 2)]
    """
    ary = asarray(ary)
    if ary.ndim < 2:
        raise ValueError(f"vsplit: ary must have at least 2 axes, got ndim={ary.ndim}")
    return shp.split(ary, indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
    """Split along axis 2 (input at least 3-d); see ``split``.

    >>> [p.shape for p in fnp.dsplit(fnp.ones((1, 2, 4)), 2)]
    [(1, 2, 2), (1, 2, 2)]
    """
    ary = asarray(ary)
    if ary.ndim < 3:
        raise ValueError(f"dsplit: ary must have at least 3 axes, got ndim={ary.ndim}")
    return shp.split(ary, indices_or_sections, axis=2)


def append(arr, values, axis=None):
    """``values`` joined after ``arr`` along ``axis`` (both flattened when None).

    >>> fnp.append(fg.tensor([1, 2]), fg.tensor([[3, 4]]))
    tensor([1, 2, 3, 4], dtype=int32)
    """
    arr, values = asarray(arr), asarray(values)
    if axis is None:
        return shp.concatenate([shp.ravel(arr), shp.ravel(values)], 0)
    return shp.concatenate([arr, values], axis)


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of consecutive elements of the flattened ``ary``, with ``to_begin`` and
    ``to_end`` (flattened, converted to ``ary``'s dtype as JAX) around them.

    >>> fnp.ediff1d(fg.tensor([1, 2, 4, 7]), to_begin=0)
    tensor([0, 1, 2, 3], dtype=int32)
    """
    flat = shp.ravel(asarray(ary))
    parts = [shp.diff(flat)]
    if to_begin is not None:
        parts.insert(0, shp.ravel(asarray(to_begin)).astype(flat.dtype))
    if to_end is not None:
        parts.append(shp.ravel(asarray(to_end)).astype(flat.dtype))
    return parts[0] if len(parts) == 1 else shp.concatenate(parts, 0)


# --- math ---------------------------------------------------------------------------------


def logaddexp2(x1, x2):
    """log2(2**x1 + 2**x2), computed without overflow.

    >>> fnp.logaddexp2(fg.tensor([1.0]), 1.0)
    tensor([2.], dtype=float32)
    """
    x1, x2 = promote("logaddexp2", x1, x2, to_inexact=True)
    if dtypes.is_complex(x1.dtype):
        raise TypeError(f"logaddexp2: real arguments only, got {x1.dtype.name}")
    ln2 = math.log(2.0)
    return elt.logaddexp(x1 * ln2, x2 * ln2) / ln2


def _integer_args(name, *xs):
    xs = promote(name, *xs)
    if not dtypes.is_integer(xs[0].dtype) or xs[0].dtype == dtypes.bool_:
        raise TypeError(f"{name}: arguments must be integers, got {xs[0].dtype.name}")
    return xs


def _gcd(a, b):
    from funcgrad.transforms.control_flow import while_loop

    dtype = a.dtype
    # in the unsigned type of the same width, where |INT_MIN| fits (abs(INT_MIN) is
    # INT_MIN: gcd(-2, -128) came out -2); the result cast back, as NumPy's
    unsigned = np.dtype(f"u{dtype.itemsize}")
    a, b = elt.abs(a).astype(unsigned), elt.abs(b).astype(unsigned)
    shape = broadcast_shapes("gcd", a.shape, b.shape)
    a, b = broadcast_to(a, shape), broadcast_to(b, shape)

    def step(ab):
        a, b = ab
        nonzero = elt.not_equal(b, 0)
        safe = elt.where(nonzero, b, 1)
        return elt.where(nonzero, b, a), elt.where(nonzero, elt.remainder(a, safe), 0)

    return while_loop(lambda ab: red.any(elt.not_equal(ab[1], 0)), step, (a, b))[0].astype(dtype)


def gcd(x1, x2):
    """Greatest common divisor of the absolute values (integers only; gcd(0, 0) is 0).

    >>> fnp.gcd(fg.tensor([12, -18]), 8)
    tensor([4, 2], dtype=int32)
    """
    x1, x2 = _integer_args("gcd", x1, x2)
    return _gcd(x1, x2)


def lcm(x1, x2):
    """Least common multiple of the absolute values (integers only; 0 if either is 0).

    >>> fnp.lcm(fg.tensor([4, -6]), 10)
    tensor([20, 30], dtype=int32)
    """
    x1, x2 = _integer_args("lcm", x1, x2)
    g = _gcd(x1, x2)
    zero = elt.equal(g, 0)
    # |x1| / g * |x2|, wrapping as NumPy's (the absolute value of the wrapped product was
    # taken before: lcm(-127, -2) in int8 came out 2, NumPy's is -2)
    return elt.where(zero, 0, elt.floor_divide(elt.abs(x1), elt.where(zero, 1, g)) * elt.abs(x2))


def modf(x):
    """The fractional and integral parts, ``(frac, int)``, both with x's sign (integers
    become float32), as ``numpy.modf``.

    >>> fnp.modf(fg.tensor([-3.5, 2.25]))
    (tensor([-0.5 ,  0.25], dtype=float32), tensor([-3.,  2.], dtype=float32))
    """
    (x,) = promote("modf", x, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise TypeError(f"modf: x must be real, got {x.dtype.name}")
    whole = elt.trunc(x)
    frac = elt.where(elt.isinf(x), 0.0, x - whole)
    return elt.copysign(frac, x), whole


# (integer dtype of the same width, mantissa bits, exponent bias) per float dtype
_FLOAT_BITS = {
    np.dtype(np.float32): (np.dtype(np.int32), 23, 127),
    np.dtype(np.float64): (np.dtype(np.int64), 52, 1023),
}


def _float_for_bits(name, x):
    """x as a float32/float64 tensor (integers become float32; float16/bfloat16 widen to
    float32), and the dtype the result returns to."""
    (x,) = promote(name, x, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise TypeError(f"{name}: x must be real, got {x.dtype.name}")
    out = x.dtype
    if x.dtype not in _FLOAT_BITS:
        x = x.astype(dtypes.float32)
    return x, out


def _frexp(x):
    """(mantissa in [0.5, 1), exponent) of a float32/float64 tensor; x and 0 for 0, inf
    and NaN.  Integer operations on the bits only, so that compiled code that flushes
    subnormals to zero still takes them apart exactly."""
    int_dtype, mant, bias = _FLOAT_BITS[x.dtype]
    width = 8 * int_dtype.itemsize
    frac_mask = (1 << mant) - 1
    field_mask = (1 << (width - 1 - mant)) - 1
    bits = bitcast_convert_type(x, int_dtype)
    sign = elt.bitwise_and(bits, -(1 << (width - 1)))  # the sign bit alone
    field = elt.bitwise_and(elt.right_shift(bits, mant), field_mask)
    frac = elt.bitwise_and(bits, frac_mask)
    subnormal = elt.logical_and(elt.equal(field, 0), elt.not_equal(frac, 0))
    # a subnormal is frac * 2**(1 - bias - mant): frac as a (normal) float, taken apart
    scaled = bitcast_convert_type(frac.astype(x.dtype), int_dtype)
    scaled_field = elt.bitwise_and(elt.right_shift(scaled, mant), field_mask)
    field = elt.where(subnormal, scaled_field + (1 - bias - mant), field)
    frac = elt.where(subnormal, elt.bitwise_and(scaled, frac_mask), frac)
    mantissa = bitcast_convert_type(
        elt.bitwise_or(elt.bitwise_or(frac, (bias - 1) << mant), sign), x.dtype)
    exponent = field - (bias - 1)
    special = elt.logical_or(elt.logical_and(elt.equal(field, 0), elt.equal(frac, 0)),
                             elt.equal(field, field_mask))  # zeros, infinities and NaNs
    return elt.where(special, x, mantissa), elt.where(special, 0, exponent), special


def frexp(x):
    """``(mantissa, exponent)`` with x = mantissa * 2**exponent and |mantissa| in [0.5, 1)
    (x itself and 0 for 0, inf and NaN); the exponent is int32, as JAX.

    >>> fnp.frexp(fg.tensor([8.0, -3.5]))
    (tensor([ 0.5  , -0.875], dtype=float32), tensor([4, 2], dtype=int32))
    """
    x, out = _float_for_bits("frexp", x)
    _, exponent, _ = _frexp(x)
    # the mantissa is x * 2**-exponent exactly (exponent 0 for 0, inf and NaN), computed so
    # that it differentiates to 2**-exponent, as JAX (the bit operations' derivative is 0)
    mantissa = _scale_by_power_of_two(x, -exponent)
    return mantissa.astype(out), exponent.astype(dtypes.int32)


def _power_of_two(k, dtype):
    """2.0**k exactly, for integer tensors k in the normal exponent range of ``dtype``."""
    int_dtype, mant, bias = _FLOAT_BITS[dtype]
    return bitcast_convert_type(elt.left_shift(k.astype(int_dtype) + bias, mant), dtype)


def ldexp(x1, x2):
    """x1 * 2**x2, exactly (one rounding, only where the result is subnormal; compiled
    code may flush such results to zero); ``x2`` must be integers.

    >>> fnp.ldexp(fg.tensor([1.5]), fg.tensor([3]))
    tensor([12.], dtype=float32)
    """
    x2 = asarray(x2)
    if not dtypes.is_integer(x2.dtype) or x2.dtype == dtypes.bool_:
        raise TypeError(f"ldexp: x2 must be integers, got {x2.dtype.name}")
    x1, out = _float_for_bits("ldexp", x1)
    shape = broadcast_shapes("ldexp", x1.shape, x2.shape)
    x1, x2 = broadcast_to(x1, shape), broadcast_to(x2, shape)
    return _scale_by_power_of_two(x1, x2).astype(out)


@custom_jvp
def _scale_by_power_of_two(x1, x2):
    """x1 * 2**x2 for float32/float64 ``x1`` and integer ``x2`` of one shape, on the bits."""
    int_dtype, mant, bias = _FLOAT_BITS[x1.dtype]
    # x1 = m * 2**e exactly; beyond +-limit the result is 0 or inf whatever m is, so the
    # exponent is clipped there and applied in three exact steps of at most limit / 3
    limit = 3 * (bias - 1)
    mantissa, e, special = _frexp(x1)
    # x2 clipped in its own dtype first: a uint32 2**32 - 3 cast to int32 first was -3
    info = np.iinfo(x2.dtype)
    x2 = elt.clip(x2, builtins.max(-2 * limit, int(info.min)),
                  builtins.min(2 * limit, int(info.max)))
    n = elt.clip(e.astype(int_dtype) + x2.astype(int_dtype), -limit, limit)
    third = elt.floor_divide(n, 3)
    rest = n - 2 * third
    y = mantissa * _power_of_two(third, x1.dtype)
    y = y * _power_of_two(third, x1.dtype)
    y = y * _power_of_two(rest, x1.dtype)
    return elt.where(special, x1, y)


@_scale_by_power_of_two.defjvp
def _scale_by_power_of_two_jvp(primals, tangents):
    # linear in x1 (the bit operations differentiated to 0): the tangent times 2**x2 (a
    # product with a primal-only factor, which reverse mode transposes)
    (x1, x2), (t1, _) = primals, tangents
    factor = _scale_by_power_of_two(ones_like(x1), x2)
    return _scale_by_power_of_two(x1, x2), t1 * factor


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """Integral of ``y`` along ``axis`` by the trapezoidal rule, at sample points ``x``
    (1-d, or of y's shape) or spacing ``dx``.

    >>> fnp.trapezoid(fg.tensor([1.0, 2.0, 3.0]))
    tensor(4., dtype=float32)
    """
    (y,) = promote("trapezoid", y, to_inexact=True)
    if y.ndim == 0:
        raise ValueError("trapezoid: y must have at least 1 axis, got a 0-d tensor")
    axis = normalize_axis("trapezoid", axis, y.ndim)
    if x is None:
        d = dx
    else:
        x = asarray(x)
        if x.ndim == 1:
            if x.shape[0] != y.shape[axis]:
                raise ValueError(f"trapezoid: x has {x.shape[0]} points but y has "
                                 f"{y.shape[axis]} along axis {axis}")
            d = shp.diff(x)
            shape = [1] * y.ndim
            shape[axis] = d.shape[0]
            d = st.reshape(d, tuple(shape))
        else:
            d = shp.diff(x, axis=axis)
    n = y.shape[axis]
    first = shp._take_range(y, axis, 1, builtins.max(n, 1))
    second = shp._take_range(y, axis, 0, builtins.max(n - 1, 0))
    return red.sum(d * (first + second) / 2.0, axis=axis)


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
    """``num`` numbers spaced evenly on a log scale from ``start`` to ``stop`` (both
    nonzero, of one sign; real values only), the ends exact.

    >>> fnp.geomspace(1.0, 1000.0, 4)
    tensor([   1.      ,   10.000001,  100.      , 1000.      ], dtype=float32)
    """
    if not isinstance(num, (int, np.integer)) or isinstance(num, bool):
        raise TypeError(f"geomspace: num must be an int, got {num!r}")
    if num < 0:
        raise ValueError(f"geomspace: num must be non-negative, got {num}")
    work = dtypes.float_dtype_for(dtypes.result_type(start, stop))
    if dtypes.is_complex(work):
        raise TypeError("geomspace: complex start/stop are not supported")
    start_t, stop_t = asarray(start, work), asarray(stop, work)
    for name, value in (("start", start_t), ("stop", stop_t)):
        if is_concrete(value) and np.any(np.asarray(value.numpy()) == 0):
            raise ValueError(f"geomspace: {name} must be nonzero, got {value.numpy()}")
    shape = broadcast_shapes("geomspace", start_t.shape, stop_t.shape)
    start_t, stop_t = broadcast_to(start_t, shape), broadcast_to(stop_t, shape)
    sign = elt.sign(start_t)
    lo, hi = start_t * sign, stop_t * sign  # |start|, and stop with start's sign removed
    out = elt.exp(linspace(elt.log(lo), elt.log(hi), num, endpoint=endpoint, dtype=work))
    if num > 0:  # the ends exactly
        ends = [st.reshape(lo, (1, *shape)), shp._take_range(out, 0, 1, num)]
        if endpoint and num > 1:
            ends = [ends[0], shp._take_range(out, 0, 1, num - 1), st.reshape(hi, (1, *shape))]
        out = shp.concatenate(ends, 0)
    out = out * st.reshape(sign, (1, *shape))
    if axis != 0:
        out = shp.moveaxis(out, 0, normalize_axis("geomspace", axis, out.ndim))
    return out if dtype is None else out.astype(dtype)


def vander(x, N=None, increasing: bool = False):
    """The Vandermonde matrix of a 1-d ``x``: columns x**(N-1), ..., x**0 (ascending
    powers when ``increasing``), products accumulated as NumPy does.

    >>> fnp.vander(fg.tensor([1, 2, 3]), 3)
    tensor([[1, 1, 1],
            [4, 2, 1],
            [9, 3, 1]], dtype=int32)
    """
    x = asarray(x)
    if x.ndim != 1:
        raise ValueError(f"vander: x must be 1-d, got shape {x.shape}")
    if x.dtype == dtypes.bool_:
        x = x.astype(dtypes.int32)
    n = x.shape[0] if N is None else N
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"vander: N must be a non-negative int, got {N!r}")
    if n == 0:
        return st.full((x.shape[0], 0), 0, x.dtype)
    columns = [elt.full_like(x, 1)]
    for _ in range(1, n):
        columns.append(columns[-1] * x)
    if not increasing:
        columns.reverse()
    return shp.stack(columns, axis=1)


# --- cumulative and NaN-ignoring reductions ------------------------------------------------


def _cumulative(name, fn, x, axis, dtype, include_initial, initial):
    x = asarray(x)
    if x.ndim == 0:
        raise ValueError(f"{name}: x must have at least 1 axis, got a 0-d tensor")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"{name}: axis must be given for a tensor of rank {x.ndim} "
                             "(it may be omitted only for 1-d input)")
        axis = 0
    axis = normalize_axis(name, axis, x.ndim)
    out = fn(x, axis=axis, dtype=dtype)
    if include_initial:
        shape = list(out.shape)
        shape[axis] = 1
        first = st.full(tuple(shape), initial, out.dtype)
        out = shp.concatenate([first, out], axis)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial: bool = False):
    """Running sum along ``axis`` (required unless x is 1-d), with a leading 0 when
    ``include_initial`` (the array API's ``cumsum``).

    >>> fnp.cumulative_sum(fg.tensor([1, 2, 3]), include_initial=True)
    tensor([0, 1, 3, 6], dtype=int32)
    """
    if dtype is None:  # as JAX's: widened as a sum is (cumsum keeps narrow ints)
        dtype = red._sum_dtype(asarray(x).dtype)
    return _cumulative("cumulative_sum", red.cumsum, x, axis, dtype, include_initial, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial: bool = False):
    """Running product along ``axis`` (required unless x is 1-d), with a leading 1 when
    ``include_initial``.

    >>> fnp.cumulative_prod(fg.tensor([1, 2, 3]), include_initial=True)
    tensor([1, 1, 2, 6], dtype=int32)
    """
    return _cumulative("cumulative_prod", red.cumprod, x, axis, dtype, include_initial, 1)


def _nan_filled(x, fill):
    x = asarray(x)
    return elt.where(elt.isnan(x), fill, x) if dtypes.is_inexact(x.dtype) else x


def nancumsum(a, axis=None, dtype=None):
    """Running sum treating NaNs as 0 (over the flattened tensor by default).

    >>> fnp.nancumsum(fg.tensor([1.0, float("nan"), 2.0]))
    tensor([1., 1., 3.], dtype=float32)
    """
    return red.cumsum(_nan_filled(a, 0), axis=axis, dtype=dtype)


def nancumprod(a, axis=None, dtype=None):
    """Running product treating NaNs as 1 (over the flattened tensor by default).

    >>> fnp.nancumprod(fg.tensor([2.0, float("nan"), 2.0]))
    tensor([2., 2., 4.], dtype=float32)
    """
    return red.cumprod(_nan_filled(a, 1), axis=axis, dtype=dtype)


def nanprod(a, axis=None, dtype=None, keepdims: bool = False):
    """Product ignoring NaNs (1 for an all-NaN slice).

    >>> fnp.nanprod(fg.tensor([2.0, float("nan"), 3.0]))
    tensor(6., dtype=float32)
    """
    return red.prod(_nan_filled(a, 1), axis=axis, dtype=dtype, keepdims=keepdims)


def _nan_arg(name, find, a, axis, keepdims):
    a = asarray(a)
    if not dtypes.is_inexact(a.dtype):
        return find(a, axis=axis, keepdims=keepdims)
    if dtypes.is_complex(a.dtype):
        raise TypeError(f"{name}: complex input is not supported")
    nan = elt.isnan(a)
    fill = float("-inf") if name == "nanargmax" else float("inf")
    extreme = (red.max if name == "nanargmax" else red.min)(
        elt.where(nan, fill, a), axis=axis, keepdims=True)
    # the first non-NaN position holding the extreme (a NaN filled with -inf never wins
    # over a real -inf that comes later)
    hit = elt.logical_and(elt.equal(a, extreme), elt.logical_not(nan)).astype(dtypes.int32)
    index = red.argmax(hit, axis=axis, keepdims=keepdims)
    return elt.where(red.all(nan, axis=axis, keepdims=keepdims), -1, index)


def nanargmax(a, axis=None, keepdims: bool = False):
    """Index of the largest element ignoring NaNs; -1 for an all-NaN slice (as JAX;
    NumPy raises).

    >>> fnp.nanargmax(fg.tensor([1.0, float("nan"), 3.0]))
    tensor(2, dtype=int32)
    """
    return _nan_arg("nanargmax", red.argmax, a, axis, keepdims)


def nanargmin(a, axis=None, keepdims: bool = False):
    """Index of the smallest element ignoring NaNs; -1 for an all-NaN slice (as JAX;
    NumPy raises).

    >>> fnp.nanargmin(fg.tensor([float("nan"), 3.0, 1.0]))
    tensor(2, dtype=int32)
    """
    return _nan_arg("nanargmin", red.argmin, a, axis, keepdims)


# --- predicates -----------------------------------------------------------------------------


def isscalar(element) -> bool:
    """Whether ``element`` is a scalar: a Python or NumPy scalar, or a 0-d tensor (as JAX;
    a 0-d NumPy array is not, as NumPy).

    >>> fnp.isscalar(1.0), fnp.isscalar(fg.tensor(1.0)), fnp.isscalar(fg.tensor([1.0]))
    (True, True, False)
    """
    if isinstance(element, Tensor):
        return element.ndim == 0
    return bool(np.isscalar(element))


def _dtype_of(x):
    if isinstance(x, Tensor):
        return x.dtype
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    return np.asarray(x).dtype


def iscomplexobj(x) -> bool:
    """Whether ``x`` has a complex dtype (whatever its values).

    >>> fnp.iscomplexobj(fg.tensor([1.0])), fnp.iscomplexobj(1j)
    (False, True)
    """
    return _dtype_of(x).kind == "c"


def isrealobj(x) -> bool:
    """Whether ``x`` has a non-complex dtype (whatever its values).

    >>> fnp.isrealobj(fg.tensor([1.0]))
    True
    """
    return not iscomplexobj(x)


def iscomplex(x):
    """True where the imaginary part is nonzero (all False for real dtypes).

    >>> fnp.iscomplex(fg.tensor([1 + 1j, 2 + 0j]))
    tensor([ True, False], dtype=bool)
    """
    x = asarray(x)
    return elt.not_equal(elt.imag(x), 0)


def isreal(x):
    """True where the imaginary part is zero (all True for real dtypes).

    >>> fnp.isreal(fg.tensor([1 + 1j, 2 + 0j]))
    tensor([False,  True], dtype=bool)
    """
    x = asarray(x)
    return elt.equal(elt.imag(x), 0)


# --- index helpers --------------------------------------------------------------------------


def _static_ints(name, arg, values):
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise TypeError(f"{name}: {arg} must be non-negative ints, got {values!r}")
        out.append(int(v))
    return tuple(out)


def indices(dimensions, dtype=None, sparse: bool = False):
    """Index grids of a tensor of shape ``dimensions``: stacked, of shape
    (len(dimensions), *dimensions), or a tuple of broadcastable tensors when ``sparse``.

    >>> fnp.indices((2, 3))[1]
    tensor([[0, 1, 2],
            [0, 1, 2]], dtype=int32)
    """
    dims = _static_ints("indices", "dimensions", tuple(dimensions))
    dtype = dtypes.int32 if dtype is None else dtypes.canonicalize(dtype)
    grids = []
    for i, n in enumerate(dims):
        shape = [1] * len(dims)
        shape[i] = n
        grid = st.reshape(arange(n, dtype=dtype), tuple(shape))
        grids.append(grid if sparse else broadcast_to(grid, dims))
    if sparse:
        return tuple(grids)
    if not grids:
        return st.full((0,), 0, dtype)
    return shp.stack(grids, 0)


def diag_indices(n: int, ndim: int = 2):
    """Indices of the main diagonal of an n x ... x n tensor: ``ndim`` copies of
    arange(n).

    >>> fnp.diag_indices(2)
    (tensor([0, 1], dtype=int32), tensor([0, 1], dtype=int32))
    """
    (n, ndim) = _static_ints("diag_indices", "n and ndim", (n, ndim))
    return tuple(arange(n, dtype=dtypes.int32) for _ in range(ndim))


def diag_indices_from(arr):
    """Indices of the main diagonal of ``arr`` (at least 2-d, all sides equal).

    >>> fnp.diag_indices_from(fnp.ones((2, 2)))
    (tensor([0, 1], dtype=int32), tensor([0, 1], dtype=int32))
    """
    arr = asarray(arr)
    if arr.ndim < 2:
        raise ValueError(f"diag_indices_from: arr must be at least 2-d, got ndim={arr.ndim}")
    if len(set(arr.shape)) != 1:
        raise ValueError(f"diag_indices_from: all sides of arr must be equal, got shape "
                         f"{arr.shape}")
    return diag_indices(arr.shape[0], arr.ndim)


def _indices_from(name, fn, arr, k):
    arr = asarray(arr)
    if arr.ndim != 2:
        raise ValueError(f"{name}: arr must be 2-d, got shape {arr.shape}")
    return fn(arr.shape[0], k, arr.shape[1])


def tril_indices_from(arr, k: int = 0):
    """Row and column indices of the lower triangle of a 2-d ``arr`` (int32).

    >>> fnp.tril_indices_from(fnp.ones((2, 2)))
    (tensor([0, 1, 1], dtype=int32), tensor([0, 0, 1], dtype=int32))
    """
    return _indices_from("tril_indices_from", tril_indices, arr, k)


def triu_indices_from(arr, k: int = 0):
    """Row and column indices of the upper triangle of a 2-d ``arr`` (int32).

    >>> fnp.triu_indices_from(fnp.ones((2, 2)))
    (tensor([0, 0, 1], dtype=int32), tensor([0, 1, 1], dtype=int32))
    """
    return _indices_from("triu_indices_from", triu_indices, arr, k)


def diagflat(v, k: int = 0):
    """A 2-d tensor with the flattened ``v`` on diagonal ``k``.

    >>> fnp.diagflat(fg.tensor([[1, 2]]))
    tensor([[1, 0],
            [0, 2]], dtype=int32)
    """
    return shp.diag(shp.ravel(asarray(v)), k)


def ix_(*args):
    """Open mesh from 1-d index sequences: the i-th result has shape (1, ..., n, ..., 1),
    so that ``x[fnp.ix_(rows, cols)]`` picks a cross product (boolean masks become their
    nonzero positions, eagerly only).

    >>> [t.shape for t in fnp.ix_(fg.tensor([0, 1]), fg.tensor([0, 2, 3]))]
    [(2, 1), (1, 3)]
    """
    out = []
    for i, a in enumerate(args):
        a = asarray(a)
        if a.ndim != 1:
            raise ValueError(f"ix_: argument {i} must be 1-d, got shape {a.shape}")
        if a.dtype == dtypes.bool_:
            if not is_concrete(a):
                raise TypeError(f"ix_: boolean argument {i} needs concrete values (its "
                                "number of True entries sets the shape); pass indices")
            a = asarray(np.nonzero(a.numpy())[0].astype(np.int32))
        elif not dtypes.is_integer(a.dtype):
            raise TypeError(f"ix_: argument {i} must be integer or boolean, got "
                            f"{a.dtype.name}")
        shape = [1] * len(args)
        shape[i] = a.shape[0]
        out.append(st.reshape(a, tuple(shape)))
    return tuple(out)


def unravel_index(indices, shape):
    """Convert flat indices into a tuple of coordinate tensors for ``shape`` (C order).
    Concrete out-of-range indices are a ValueError as NumPy; traced ones are wrapped once
    if negative and clipped into range, as JAX.

    >>> fnp.unravel_index(fg.tensor([5, 11]), (3, 4))
    (tensor([1, 2], dtype=int32), tensor([1, 3], dtype=int32))
    """
    indices = asarray(indices)
    if not dtypes.is_integer(indices.dtype) or indices.dtype == dtypes.bool_:
        raise TypeError(f"unravel_index: indices must be integers, got {indices.dtype.name}")
    dims = _static_ints("unravel_index", "shape", tuple(np.atleast_1d(shape).tolist())
                        if not isinstance(shape, (tuple, list)) else tuple(shape))
    size = math.prod(dims)
    if is_concrete(indices):
        values = np.asarray(indices.numpy())
        bad = (values < 0) | (values >= size)
        if bad.any():
            raise ValueError(f"unravel_index: index {values[bad].flat[0]} is out of bounds "
                             f"for shape {dims} (size {size})")
    else:
        indices = elt.where(elt.less(indices, 0), indices + size, indices)
        indices = elt.clip(indices, 0, builtins.max(size - 1, 0))
    out = []
    rest = indices
    for d in reversed(dims):
        out.append(elt.remainder(rest, d) if d > 0 else rest)
        rest = elt.floor_divide(rest, d) if d > 0 else rest
    return tuple(reversed(out))


def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C"):
    """Flat indices of the coordinates ``multi_index`` in a tensor of shape ``dims``.
    ``mode``: 'raise' (out-of-range is a ValueError; needs concrete indices), 'wrap'
    (modulo each dimension) or 'clip' (into range).

    >>> fnp.ravel_multi_index((fg.tensor([1, 2]), fg.tensor([1, 3])), (3, 4))
    tensor([ 5, 11], dtype=int32)
    """
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"ravel_multi_index: mode must be 'raise', 'wrap' or 'clip', got "
                         f"{mode!r}")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    dims = _static_ints("ravel_multi_index", "dims", tuple(dims))
    coords = list(multi_index)
    if len(coords) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(coords)} coordinate tensors for "
                         f"{len(dims)} dimensions")
    if not coords:
        raise ValueError("ravel_multi_index: need at least one dimension")
    coords = promote("ravel_multi_index", *coords)
    if not dtypes.is_integer(coords[0].dtype) or coords[0].dtype == dtypes.bool_:
        raise TypeError(f"ravel_multi_index: multi_index must be integers, got "
                        f"{coords[0].dtype.name}")
    shape = broadcast_shapes("ravel_multi_index", *(c.shape for c in coords))
    fixed = []
    for axis, (c, d) in enumerate(zip(coords, dims, strict=True)):
        if mode == "raise":
            if not is_concrete(c):
                raise TypeError("ravel_multi_index: mode='raise' needs concrete indices; "
                                "under jit/vmap use mode='clip' or mode='wrap'")
            values = np.asarray(c.numpy())
            if ((values < 0) | (values >= d)).any():
                raise ValueError(f"ravel_multi_index: coordinates along axis {axis} must be "
                                 f"in [0, {d}), got {values.min()}..{values.max()}")
        elif mode == "wrap":
            c = elt.remainder(c, builtins.max(d, 1))
        else:
            c = elt.clip(c, 0, builtins.max(d - 1, 0))
        fixed.append(broadcast_to(c, shape))
    order_axes = range(len(dims)) if order == "C" else reversed(range(len(dims)))
    out = None
    for i in order_axes:
        out = fixed[i] if out is None else out * dims[i] + fixed[i]
    return out


# --- vector products ------------------------------------------------------------------------


def _conj(x):
    return elt.conjugate(x) if dtypes.is_complex(x.dtype) else x


def _product_operands(name, x1, x2, ndims, contracted):
    """``x1``, ``x2`` promoted, checked to have at least ``ndims`` axes and equal sizes along
    their ``contracted`` axes."""
    x1, x2 = promote(name, x1, x2)
    if x1.ndim < ndims[0] or x2.ndim < ndims[1]:
        raise ValueError(f"{name}: x1 must be at least {ndims[0]}-d and x2 at least "
                         f"{ndims[1]}-d, got shapes {x1.shape} and {x2.shape}")
    a, b = contracted
    if x1.shape[a] != x2.shape[b]:
        raise ValueError(f"{name}: shapes {x1.shape} and {x2.shape} do not align "
                         f"({x1.shape[a]} != {x2.shape[b]})")
    return x1, x2


def matvec(x1, x2):
    """Matrix-vector product over the last axes: (..., m, n) with (..., n) gives (..., m),
    the leading axes broadcast.

    >>> fnp.matvec(fnp.ones((2, 3)), fg.tensor([1.0, 2.0, 3.0]))
    tensor([6., 6.], dtype=float32)
    """
    x1, x2 = _product_operands("matvec", x1, x2, (2, 1), (-1, -1))
    out = matmul(x1, st.reshape(x2, (*x2.shape, 1)))
    return st.reshape(out, out.shape[:-1])


def vecmat(x1, x2):
    """Vector-matrix product over the last axes, conjugating the vector: (..., m) with
    (..., m, n) gives (..., n).

    >>> fnp.vecmat(fg.tensor([1.0, 2.0]), fnp.ones((2, 3)))
    tensor([3., 3., 3.], dtype=float32)
    """
    x1, x2 = _product_operands("vecmat", x1, x2, (1, 2), (-1, -2))
    x1 = _conj(x1)
    out = matmul(st.reshape(x1, (*x1.shape[:-1], 1, x1.shape[-1])), x2)
    return st.reshape(out, (*out.shape[:-2], out.shape[-1]))


def vecdot(x1, x2, /, *, axis: int = -1):
    """Dot products of vectors along ``axis`` (conjugating x1), the other axes broadcast.

    >>> fnp.vecdot(fg.tensor([[1.0, 2.0], [3.0, 4.0]]), fg.tensor([1.0, 1.0]))
    tensor([3., 7.], dtype=float32)
    """
    x1, x2 = promote("vecdot", x1, x2)
    if x1.ndim < 1 or x2.ndim < 1:
        raise ValueError(f"vecdot: x1 and x2 must be at least 1-d, got shapes {x1.shape} "
                         f"and {x2.shape}")
    x1 = shp.moveaxis(x1, normalize_axis("vecdot", axis, x1.ndim), -1)
    x2 = shp.moveaxis(x2, normalize_axis("vecdot", axis, x2.ndim), -1)
    if x1.shape[-1] != x2.shape[-1]:
        raise ValueError(f"vecdot: sizes along axis {axis} differ: {x1.shape[-1]} != "
                         f"{x2.shape[-1]}")
    return red.sum(_conj(x1) * x2, axis=-1)


# --- partial sorts, several keys, sets ----------------------------------------------------------


def partition(a, kth: int, axis: int = -1):
    """``a`` with the ``kth`` element along ``axis`` where sorting would put it, smaller ones
    before and larger after, as ``numpy.partition`` (here: fully sorted, one valid answer).

    >>> fnp.partition(fg.tensor([5, 1, 4, 2, 3]), 2)[2]
    tensor(3, dtype=int32)
    """
    from funcgrad.numpy._indexing import sort

    _check_kth("partition", a, kth, axis)
    return sort(a, axis=axis)


def argpartition(a, kth: int, axis: int = -1):
    """Indices that partition ``a`` around its ``kth`` element along ``axis``, as
    ``numpy.argpartition`` (here: a stable argsort, one valid answer).

    >>> fnp.argpartition(fg.tensor([5, 1, 4, 2, 3]), 2)[2]
    tensor(4, dtype=int32)
    """
    from funcgrad.numpy._indexing import argsort

    _check_kth("argpartition", a, kth, axis)
    return argsort(a, axis=axis)


def _check_kth(name, a, kth, axis):
    a = asarray(a)
    n = a.shape[normalize_axis(name, axis, a.ndim)] if a.ndim else 1
    if not isinstance(kth, (int, np.integer)) or not -n <= kth < n:
        raise ValueError(f"{name}: kth must be an int in [-{n}, {n}) for an axis of size {n}, "
                         f"got {kth!r}")


def lexsort(keys, axis: int = -1):
    """Indices sorting by several keys, the last key the primary one, as ``numpy.lexsort``.

    >>> fnp.lexsort((fg.tensor([1, 1, 0]), fg.tensor([2, 1, 2])))
    tensor([1, 2, 0], dtype=int32)
    """
    from funcgrad.numpy._indexing import argsort, take_along_axis

    keys = [asarray(k) for k in (keys if isinstance(keys, (list, tuple)) else list(keys))]
    if not keys:
        raise ValueError("lexsort: needs at least one key")
    shape = np.broadcast_shapes(*[k.shape for k in keys])
    keys = [shp.broadcast_to(k, shape) for k in keys]
    order = argsort(keys[0], axis=axis)  # stable sorts from the least significant key up
    for key in keys[1:]:
        order = take_along_axis(order, argsort(take_along_axis(key, order, axis), axis=axis),
                                axis)
    return order


def _set_result(name, values, keep, size, fill_value, default_fill):
    """The kept ones of the sorted unique ``values``: all of them eagerly, or the first
    ``size`` padded with ``fill_value`` (``default_fill``: "smallest" or 0, as JAX)."""
    from funcgrad.numpy._indexing import nonzero, take

    if size is None:
        if not is_concrete(keep) or not is_concrete(values):
            raise TypeError(f"{name}: the result's size depends on the values; pass size= "
                            "(and fill_value=) under jit/vmap")
        return take(values, np.flatnonzero(np.asarray(keep)).astype(np.int32))
    (index,) = nonzero(keep, size=size, fill_value=0)
    out = take(values, index) if values.size else shp.broadcast_to(
        asarray(0, values.dtype), (size,))
    count = red.sum(keep.astype(dtypes.int32))
    if fill_value is None:
        fill_value = 0 if default_fill == 0 else elt.where(count > 0, out[0] if size else 0, 0)
    return elt.where(arange(size) < count, out, asarray(fill_value, values.dtype))


def _sorted_unique(name, *arrays):
    """The sorted distinct values of the flattened ``arrays`` (padded to their total length
    with a repeated value) and a mask of the real ones."""
    from funcgrad.numpy._indexing import unique

    flat = [shp.ravel(asarray(a)) for a in arrays]
    joined = st.concatenate(flat, 0) if len(flat) > 1 else flat[0]
    if joined.size == 0:
        return joined, asarray(np.zeros(0, np.bool_))
    values, counts = unique(joined, size=joined.size, return_counts=True)
    return values, counts > 0


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """Sorted distinct values found in either input, as ``numpy.union1d``; ``size`` as in
    ``fnp.unique`` (padded with the smallest value by default).

    >>> fnp.union1d(fg.tensor([3, 1]), fg.tensor([2, 3]))
    tensor([1, 2, 3], dtype=int32)
    """
    values, real = _sorted_unique("union1d", *promote("union1d", ar1, ar2))
    return _set_result("union1d", values, real, size, fill_value, "smallest")


def intersect1d(ar1, ar2, assume_unique: bool = False, *, size=None, fill_value=None):
    """Sorted distinct values found in both inputs, as ``numpy.intersect1d``
    (``assume_unique`` accepted and not needed; padded with the smallest result).

    >>> fnp.intersect1d(fg.tensor([5, 1, 4]), fg.tensor([4, 7, 1]))
    tensor([1, 4], dtype=int32)
    """
    from funcgrad.numpy._indexing import isin

    ar1, ar2 = promote("intersect1d", ar1, ar2)
    values, real = _sorted_unique("intersect1d", ar1)
    keep = elt.logical_and(real, isin(values, ar2))
    return _set_result("intersect1d", values, keep, size, fill_value, "smallest")


def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size=None, fill_value=None):
    """Sorted distinct values of ``ar1`` not in ``ar2``, as ``numpy.setdiff1d`` (padded with
    0 by default, as JAX).

    >>> fnp.setdiff1d(fg.tensor([5, 1, 4, 9]), fg.tensor([4, 7, 1]))
    tensor([5, 9], dtype=int32)
    """
    from funcgrad.numpy._indexing import isin

    ar1, ar2 = promote("setdiff1d", ar1, ar2)
    values, real = _sorted_unique("setdiff1d", ar1)
    keep = elt.logical_and(real, isin(values, ar2, invert=True))
    return _set_result("setdiff1d", values, keep, size, fill_value, 0)


def setxor1d(ar1, ar2, assume_unique: bool = False, *, size=None, fill_value=None):
    """Sorted distinct values in exactly one of the inputs, as ``numpy.setxor1d`` (padded
    with the smallest result by default).

    >>> fnp.setxor1d(fg.tensor([5, 1, 4]), fg.tensor([4, 7, 1]))
    tensor([5, 7], dtype=int32)
    """
    from funcgrad.numpy._indexing import isin

    ar1, ar2 = promote("setxor1d", ar1, ar2)
    values, real = _sorted_unique("setxor1d", ar1, ar2)
    keep = elt.logical_and(real, elt.not_equal(isin(values, ar1), isin(values, ar2)))
    return _set_result("setxor1d", values, keep, size, fill_value, "smallest")
