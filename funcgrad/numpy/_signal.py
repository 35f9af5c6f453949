"""Signal processing, binning, statistics of pairs, windows, polynomials and ``vectorize``:
NumPy's functions built from funcgrad.numpy operations (gathers, matmuls, searchsorted,
scatter-adds), so they differentiate, batch and compile wherever their output shape is
static.  Result dtypes follow JAX (integers promote to float32 where JAX's do)."""

from __future__ import annotations

import functools
import operator
import re

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.prims import structural as st
from funcgrad.core.tensor import Tensor
from funcgrad.numpy import _creation, _reductions, _shape
from funcgrad.numpy import _elementwise as elt
from funcgrad.numpy._indexing import argsort, searchsorted, take
from funcgrad.numpy._linear import matmul
from funcgrad.numpy._util import asarray, is_concrete, normalize_axes, promote

__all__ = [
    "bartlett", "bincount", "blackman", "convolve", "corrcoef", "correlate", "cov",
    "digitize", "gradient", "hamming", "hanning", "histogram", "histogram_bin_edges", "i0",
    "interp", "kaiser", "polyadd", "polyder", "polyfit", "polyint", "polymul", "polysub",
    "polyval", "vectorize",
]


def _static_int(name, arg, value):
    """``value`` as a Python int, or a TypeError naming ``name`` and ``arg``."""
    if isinstance(value, Tensor) and not is_concrete(value):
        raise TypeError(f"{name}: {arg} must be a static int (it fixes the result's shape), "
                        "got a traced value")
    try:
        return operator.index(value.item() if hasattr(value, "item") else value)
    except TypeError:
        raise TypeError(f"{name}: {arg} must be an int, got {value!r}") from None


def _inexact(name, *args):
    return promote(name, *args, to_inexact=True)


def _one_d(name, arg, x):
    if x.ndim != 1:
        raise ValueError(f"{name}: {arg} must be 1-d, got ndim {x.ndim} (shape {x.shape})")


# --- convolution -----------------------------------------------------------------------------

_CONV_MODES = ("full", "same", "valid")


def _convolve(name, a, v, mode):
    if mode not in _CONV_MODES:
        raise ValueError(f"{name}: mode must be one of {_CONV_MODES}, got {mode!r}")
    a, v = _inexact(name, a, v)
    _one_d(name, "a", a)
    _one_d(name, "v", v)
    n, m = a.shape[0], v.shape[0]
    if n == 0 or m == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {a.shape} and {v.shape}")
    if m > n:  # convolution commutes: gather the longer one
        a, v, n, m = v, a, m, n
    length = n + m - 1
    # full[k] = sum_j a[k - j] v[j]: gather a (zero-padded) at k - j, then contract with v
    padded = _shape.pad(a, (m - 1, m - 1))
    index = (np.arange(length)[:, None] - np.arange(m)[None, :] + (m - 1)).astype(np.int32)
    full = matmul(padded[index], v)
    if mode == "full":
        return full
    if mode == "same":
        start = (m - 1) // 2
        return full[start:start + n]
    return full[m - 1:n]


def convolve(a, v, mode: str = "full"):
    """Discrete linear convolution of two 1-d tensors (``mode``: ``"full"``, ``"same"`` or
    ``"valid"``, as ``numpy.convolve``); integers give float32, as JAX.

    >>> fnp.convolve(fg.tensor([1.0, 2.0, 3.0]), fg.tensor([0.0, 1.0, 0.5]))
    tensor([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
    """
    return _convolve("convolve", a, v, mode)


def correlate(a, v, mode: str = "valid"):
    """Cross-correlation of two 1-d tensors, ``c[k] = sum_n a[n + k] * conj(v[n])``, as
    ``numpy.correlate`` (default mode ``"valid"``).

    >>> fnp.correlate(fg.tensor([1.0, 2.0, 3.0]), fg.tensor([0.0, 1.0, 0.5]))
    tensor([3.5], dtype=float32)
    """
    if mode not in _CONV_MODES:
        raise ValueError(f"correlate: mode must be one of {_CONV_MODES}, got {mode!r}")
    a, v = _inexact("correlate", a, v)
    _one_d("correlate", "a", a)
    _one_d("correlate", "v", v)
    if v.shape[0] > a.shape[0]:
        # NumPy: swap the operands and reverse (and conjugate) the result
        out = _convolve("correlate", v, _shape.flip(elt.conjugate(a)), mode)
        return elt.conjugate(_shape.flip(out))
    return _convolve("correlate", a, _shape.flip(elt.conjugate(v)), mode)


# --- covariance ------------------------------------------------------------------------------


def _rows(name, arg, x, rowvar):
    if x.ndim > 2:
        raise ValueError(f"{name}: {arg} must be 1-d or 2-d, got ndim {x.ndim}")
    x = _shape.atleast_2d(x)
    if not rowvar and x.shape[0] != 1:
        x = _shape.transpose(x)
    return x


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof=None, fweights=None,
        aweights=None):
    """Covariance matrix of the variables in the rows of ``m`` (columns if
    ``rowvar=False``), with ``y``'s variables appended, as ``numpy.cov``.

    >>> fnp.cov(fg.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    tensor([[ 1., -1.],
            [-1.,  1.]], dtype=float32)
    """
    if ddof is not None:
        ddof = _static_int("cov", "ddof", ddof)
    args = [m] if y is None else [m, y]
    tensors = _inexact("cov", *args)
    x = _rows("cov", "m", tensors[0], rowvar)
    if y is not None:
        x = _shape.concatenate([x, _rows("cov", "y", tensors[1], rowvar)], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = x.shape[1]
    weights = None
    aw = None
    if fweights is not None:
        fw = asarray(fweights)
        if fw.ndim != 1 or fw.shape[0] != n:
            raise ValueError(f"cov: fweights must be 1-d of length {n}, got shape {fw.shape}")
        if is_concrete(fw):
            values = np.asarray(fw)
            if np.any(values != np.around(values)):
                raise TypeError("cov: fweights must be integers")
            if np.any(values < 0):
                raise ValueError("cov: fweights cannot be negative")
        weights = fw.astype(x.dtype)
    if aweights is not None:
        aw = asarray(aweights)
        if aw.ndim != 1 or aw.shape[0] != n:
            raise ValueError(f"cov: aweights must be 1-d of length {n}, got shape {aw.shape}")
        if is_concrete(aw) and np.any(np.asarray(aw) < 0):
            raise ValueError("cov: aweights cannot be negative")
        aw = aw.astype(x.dtype)
        weights = aw if weights is None else weights * aw
    if weights is None:
        avg = _reductions.mean(x, axis=1)
        fact = n - ddof
    else:
        avg, w_sum = _reductions.average(x, axis=1, weights=weights, returned=True)
        w_sum = w_sum[0]
        if ddof == 0:
            fact = w_sum
        elif aw is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * _reductions.sum(weights * aw) / w_sum
    fact = elt.maximum(fact, 0) if isinstance(fact, Tensor) else max(fact, 0)
    centered = x - avg[:, None]
    right = centered if weights is None else centered * weights
    c = matmul(centered, elt.conjugate(_shape.transpose(right))) / fact
    return _shape.squeeze(c)


def corrcoef(x, y=None, rowvar: bool = True):
    """Pearson correlation coefficients (``cov`` normalized by the standard deviations, real
    parts clipped to [-1, 1]), as ``numpy.corrcoef``.

    >>> fnp.corrcoef(fg.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    tensor([[ 1., -1.],
            [-1.,  1.]], dtype=float32)
    """
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return c / c
    d = _shape.diagonal(c)
    stddev = elt.sqrt(elt.real(d))
    c = c / stddev[:, None] / stddev[None, :]
    if dtypes.is_complex(c.dtype):
        return elt.clip(elt.real(c), -1, 1) + 1j * elt.clip(elt.imag(c), -1, 1)
    return elt.clip(c, -1, 1)


# --- interpolation and binning ---------------------------------------------------------------


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points (``xp``, ``fp``) at ``x`` (``xp``
    increasing; ``left``/``right`` beyond the ends, ``fp[0]``/``fp[-1]`` by default;
    ``period`` for periodic ``xp``), as ``numpy.interp``.

    >>> fnp.interp(fg.tensor([0.5, 2.5]), fg.tensor([0.0, 1.0, 2.0]), fg.tensor([0.0, 2.0, 3.0]))
    tensor([1., 3.], dtype=float32)
    """
    fp_t = asarray(fp)
    if dtypes.is_complex(fp_t.dtype):
        real = interp(x, xp, elt.real(fp_t), None if left is None else elt.real(asarray(left)),
                      None if right is None else elt.real(asarray(right)), period)
        imag = interp(x, xp, elt.imag(fp_t), None if left is None else elt.imag(asarray(left)),
                      None if right is None else elt.imag(asarray(right)), period)
        return real + 1j * imag
    x, xp, fp = _inexact("interp", x, xp, fp)
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape != fp.shape:
        raise ValueError(f"interp: xp and fp must be 1-d of equal length, got shapes "
                         f"{xp.shape} and {fp.shape}")
    if xp.shape[0] == 0:
        raise ValueError("interp: xp and fp must not be empty")
    if period is not None:
        if is_concrete(period) and float(np.asarray(period)) == 0:
            raise ValueError("interp: period must be a non-zero value")
        period = elt.abs(asarray(period, x.dtype))
        x = elt.remainder(x, period)
        xp = elt.remainder(xp, period)
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        xp = _shape.concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = _shape.concatenate([fp[-1:], fp, fp[:1]])
    n = xp.shape[0]
    if n == 1:
        f = _shape.broadcast_to(fp[0], x.shape)
    else:
        i = elt.clip(searchsorted(xp, x, side="right"), 1, n - 1)
        df = take(fp, i) - take(fp, i - 1)
        dx = take(xp, i) - take(xp, i - 1)
        delta = x - take(xp, i - 1)
        eps = np.spacing(dtypes.finfo(xp.dtype).eps)
        tiny = elt.abs(dx) <= eps  # equal xp: no division, no NaN gradient
        f = elt.where(tiny, take(fp, i - 1),
                      take(fp, i - 1) + delta / elt.where(tiny, 1, dx) * df)
    if period is None:
        f = elt.where(x < xp[0], fp[0] if left is None else left, f)
        f = elt.where(x > xp[-1], fp[-1] if right is None else right, f)
    return asarray(f, fp.dtype)


def digitize(x, bins, right: bool = False):
    """Indices of the ``bins`` (monotonically increasing or decreasing) that each ``x``
    falls in, as ``numpy.digitize`` (int32).

    >>> fnp.digitize(fg.tensor([0.5, 1.5, 3.0]), fg.tensor([1.0, 2.0, 3.0]))
    tensor([0, 1, 3], dtype=int32)
    """
    x, bins = asarray(x), asarray(bins)
    _one_d("digitize", "bins", bins)
    side = "left" if right else "right"
    n = bins.shape[0]
    if n == 0:
        return _creation.zeros(x.shape, dtypes.int32)
    if is_concrete(bins):
        values = np.asarray(bins)
        steps = np.diff(values)
        if np.all(steps >= 0):
            return searchsorted(bins, x, side=side)
        if np.all(steps <= 0):
            return n - searchsorted(_shape.flip(bins), x, side=side)
        raise ValueError("digitize: bins must be monotonically increasing or decreasing")
    # traced bins: the direction from the end points (as JAX)
    return elt.where(bins[-1] >= bins[0], searchsorted(bins, x, side=side),
                     n - searchsorted(_shape.flip(bins), x, side=side))


def bincount(x, weights=None, minlength: int = 0, *, length=None):
    """Counts (or summed ``weights``) of each non-negative int in the 1-d ``x``, as
    ``numpy.bincount``.

    The result's length is ``length`` when given (values at or past it are dropped), else
    ``max(max(x) + 1, minlength)``, which needs a concrete ``x``: under ``jit``/``vmap``
    pass a static ``length=``.  As JAX (unlike NumPy, which raises), negative values are
    clipped to 0 and so counted in bin 0.

    >>> fnp.bincount(fg.tensor([0, 1, 1, 3]))
    tensor([1, 2, 0, 1], dtype=int32)
    """
    x = asarray(x)
    if not dtypes.is_integer(x.dtype):
        raise TypeError(f"bincount: x must be integers, got {x.dtype.name}")
    _one_d("bincount", "x", x)
    minlength = _static_int("bincount", "minlength", minlength)
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    if length is None:
        if not is_concrete(x):
            raise TypeError("bincount: x is traced, so the output length is unknown; pass a "
                            "static length= (the number of bins) under jit/vmap")
        values = np.asarray(x)
        length = max(minlength, int(values.max()) + 1 if values.size else 0)
    else:
        length = _static_int("bincount", "length", length)
        if length < 0:
            raise ValueError(f"bincount: length must be non-negative, got {length}")
    if weights is None:
        weights = _creation.ones(x.shape, dtypes.int32)
    else:
        weights = asarray(weights)
        if weights.shape != x.shape:
            raise ValueError(f"bincount: weights must have x's shape {x.shape}, got "
                             f"{weights.shape}")
    index = elt.maximum(x, 0)
    return _creation.zeros((length,), weights.dtype).at[index].add(weights, mode="drop")


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """The bin edges ``histogram`` uses: ``bins + 1`` evenly spaced over ``range`` (the data's
    min and max by default, widened by 0.5 each way when they are equal), or ``bins`` itself
    when it is a 1-d sequence.

    >>> fnp.histogram_bin_edges(fg.tensor([0.0, 1.0, 4.0]), bins=4)
    tensor([0., 1., 2., 3., 4.], dtype=float32)
    """
    if isinstance(bins, str):
        raise NotImplementedError("histogram_bin_edges: string values for bins are not "
                                  "supported; pass an int or the edges")
    a = asarray(a)
    dtype = dtypes.float_dtype_for(a.dtype)
    if dtypes.is_complex(dtype):
        raise TypeError("histogram_bin_edges: a must be real")
    a = _shape.ravel(a)
    if np.ndim(bins) == 1 or (isinstance(bins, Tensor) and bins.ndim == 1):
        return asarray(bins, dtype)
    count = _static_int("histogram_bin_edges", "bins", bins)
    if count < 1:
        raise ValueError(f"histogram_bin_edges: bins must be a positive int, got {count}")
    if range is None:
        if a.size == 0:
            lo, hi = asarray(0.0, dtype), asarray(1.0, dtype)
        else:
            lo, hi = _reductions.min(a).astype(dtype), _reductions.max(a).astype(dtype)
    else:
        r = asarray(range, dtype)
        if r.shape != (2,):
            raise ValueError(f"histogram_bin_edges: range must be None or a pair (lo, hi), "
                             f"got shape {r.shape}")
        if is_concrete(r) and not np.asarray(r)[0] <= np.asarray(r)[1]:
            raise ValueError("histogram_bin_edges: range must have lo <= hi")
        lo, hi = r[0], r[1]
    same = lo == hi
    lo, hi = elt.where(same, lo - 0.5, lo), elt.where(same, hi + 0.5, hi)
    return _creation.linspace(lo, hi, count + 1, dtype=dtype)


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """Histogram of the flattened ``a``: ``(hist, bin_edges)``, each bin half-open
    ``[lo, hi)`` except the last, which includes its right edge, as ``numpy.histogram``;
    values outside the edges are not counted.  ``hist`` has the (inexact) dtype of
    ``weights``, or of ``a``, as JAX (NumPy counts in int64).

    >>> fnp.histogram(fg.tensor([1.0, 2.0, 2.0, 3.0]), bins=2)
    (tensor([1., 3.], dtype=float32), tensor([1., 2., 3.], dtype=float32))
    """
    a = asarray(a)
    shape = a.shape
    edges = histogram_bin_edges(a, bins, range, weights)
    a = _shape.ravel(a)
    if weights is None:
        weights = _creation.ones(a.shape, edges.dtype)
    else:
        weights = asarray(weights)
        if weights.shape != shape:
            raise ValueError(f"histogram: weights must have a's shape {shape}, got "
                             f"{weights.shape}")
        weights = _shape.ravel(weights)
        if not dtypes.is_inexact(weights.dtype):
            weights = weights.astype(dtypes.float32)
    n = edges.shape[0]
    index = searchsorted(edges, a, side="right")
    index = elt.where(a == edges[-1], n - 1, index)  # the last bin includes its right edge
    counts = _creation.zeros((n,), weights.dtype).at[index].add(weights, mode="drop")[1:]
    if density:
        widths = _shape.diff(edges)
        counts = counts / widths / _reductions.sum(counts)
    return counts, edges


# --- gradient --------------------------------------------------------------------------------


def _expand_along(v, axis, ndim):
    """A 1-d ``v`` shaped to broadcast along ``axis`` of an ``ndim``-d tensor."""
    shape = [1] * ndim
    shape[axis] = v.shape[0]
    return _shape.reshape(v, tuple(shape))


def gradient(f, *varargs, axis=None, edge_order: int = 1):
    """Derivative estimate of ``f`` along each axis: second-order central differences inside,
    ``edge_order`` (1 or 2) one-sided differences at the ends, as ``numpy.gradient``.

    ``varargs``: the spacing, one scalar for every axis, or one per axis (a scalar, or the
    1-d coordinates along that axis).  One axis gives a tensor, several a list (as JAX).

    >>> fnp.gradient(fg.tensor([1.0, 2.0, 4.0, 7.0]))
    tensor([1. , 1.5, 2.5, 3. ], dtype=float32)
    """
    f = asarray(f)
    if not dtypes.is_inexact(f.dtype):
        f = f.astype(dtypes.float32)
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order!r}")
    axes = normalize_axes("gradient", axis, f.ndim)
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError(f"gradient: expected 0, 1 or {len(axes)} spacings (one per axis), got "
                        f"{len(varargs)}")
    out = []
    for ax, spacing in zip(axes, spacings, strict=True):
        size = f.shape[ax]
        if size < edge_order + 1:
            raise ValueError(f"gradient: axis {ax} has {size} elements; at least edge_order + "
                             f"1 = {edge_order + 1} are needed")
        out.append(_gradient_axis(f, ax, spacing, edge_order))
    return out[0] if len(out) == 1 else out


def _gradient_axis(f, ax, spacing, edge_order):
    ndim = f.ndim

    def part(start, stop):
        return _shape._slice_axis(f, ax, start, stop)

    d = None
    if np.ndim(spacing) == 1 or (isinstance(spacing, Tensor) and spacing.ndim == 1):
        coords = asarray(spacing)
        if coords.shape[0] != f.shape[ax]:
            raise ValueError(f"gradient: coordinates for axis {ax} must have length "
                             f"{f.shape[ax]}, got {coords.shape[0]}")
        dx = _shape.diff(coords).astype(f.dtype)
        if is_concrete(dx) and np.all(np.asarray(dx) == np.asarray(dx)[0]):
            d = dx[0]  # uniform coordinates: the scalar formulas, as NumPy
    elif np.ndim(spacing) == 0:
        d = promote("gradient", f, spacing)[1]  # a Python number at f's precision
    else:
        raise ValueError(f"gradient: the spacing for axis {ax} must be a scalar or 1-d")
    if d is not None:
        interior = (part(2, None) - part(None, -2)) / (2.0 * d)
        if edge_order == 1:
            first = (part(1, 2) - part(0, 1)) / d
            last = (part(-1, None) - part(-2, -1)) / d
        else:
            first = (-1.5 * part(0, 1) + 2.0 * part(1, 2) - 0.5 * part(2, 3)) / d
            last = (0.5 * part(-3, -2) - 2.0 * part(-2, -1) + 1.5 * part(-1, None)) / d
        return _shape.concatenate([first, interior, last], axis=ax)
    dx1 = _expand_along(dx[:-1], ax, ndim)
    dx2 = _expand_along(dx[1:], ax, ndim)
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    interior = a * part(None, -2) + b * part(1, -1) + c * part(2, None)
    if edge_order == 1:
        first = (part(1, 2) - part(0, 1)) / dx[0]
        last = (part(-1, None) - part(-2, -1)) / dx[-1]
    else:
        h1, h2 = dx[0], dx[1]
        first = (-(2.0 * h1 + h2) / (h1 * (h1 + h2)) * part(0, 1)
                 + (h1 + h2) / (h1 * h2) * part(1, 2)
                 - h1 / (h2 * (h1 + h2)) * part(2, 3))
        h1, h2 = dx[-2], dx[-1]
        last = (h2 / (h1 * (h1 + h2)) * part(-3, -2)
                - (h2 + h1) / (h1 * h2) * part(-2, -1)
                + (2.0 * h2 + h1) / (h2 * (h1 + h2)) * part(-1, None))
    return _shape.concatenate([first, interior, last], axis=ax)


# --- windows and i0 --------------------------------------------------------------------------


def _window(name, M, formula):
    M = _static_int(name, "M", M)
    if M < 1:
        return _creation.zeros((0,), dtypes.float32)
    if M == 1:
        return _creation.ones((1,), dtypes.float32)
    n = np.arange(1 - M, M, 2, dtype=np.float64)
    return asarray(formula(n, M).astype(np.float32))


def hamming(M):
    """The Hamming window of ``M`` points (float32), as ``numpy.hamming``.

    >>> fnp.hamming(3)
    tensor([0.08, 1.  , 0.08], dtype=float32)
    """
    return _window("hamming", M, lambda n, M: 0.54 + 0.46 * np.cos(np.pi * n / (M - 1)))


def hanning(M):
    """The Hann window of ``M`` points (float32), as ``numpy.hanning``.

    >>> fnp.hanning(3)
    tensor([0., 1., 0.], dtype=float32)
    """
    return _window("hanning", M, lambda n, M: 0.5 + 0.5 * np.cos(np.pi * n / (M - 1)))


def blackman(M):
    """The Blackman window of ``M`` points (float32), as ``numpy.blackman``.

    >>> fnp.blackman(5)
    tensor([-1.3877788e-17,  3.4000000e-01,  1.0000000e+00,  3.4000000e-01,
            -1.3877788e-17], dtype=float32)
    """
    return _window("blackman", M, lambda n, M: 0.42 + 0.5 * np.cos(np.pi * n / (M - 1))
                   + 0.08 * np.cos(2.0 * np.pi * n / (M - 1)))


def bartlett(M):
    """The Bartlett (triangular) window of ``M`` points (float32), as ``numpy.bartlett``.

    >>> fnp.bartlett(5)
    tensor([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
    """
    return _window("bartlett", M, lambda n, M: np.where(n <= 0, 1 + n / (M - 1),
                                                        1 - n / (M - 1)))


def kaiser(M, beta):
    """The Kaiser window of ``M`` points with shape ``beta`` (differentiable in ``beta``),
    as ``numpy.kaiser``.

    >>> fnp.kaiser(3, 5.0)
    tensor([0.03671089, 1.        , 0.03671089], dtype=float32)
    """
    M = _static_int("kaiser", "M", M)
    (beta,) = _inexact("kaiser", beta)
    if beta.ndim != 0:
        raise ValueError(f"kaiser: beta must be a scalar, got shape {beta.shape}")
    if M < 1:
        return _creation.zeros((0,), beta.dtype)
    if M == 1:
        return _creation.ones((1,), beta.dtype)
    alpha = (M - 1) / 2.0
    ratio = (np.arange(M, dtype=np.float64) - alpha) / alpha
    root = asarray(np.sqrt(np.maximum(1.0 - ratio ** 2, 0.0)), beta.dtype)
    return i0(beta * root) / i0(beta)


# Cephes' Chebyshev coefficients for exp(-x) i0(x): on [0, 8] in x/2 - 2 (_I0_A), and for
# x > 8 of exp(-x) sqrt(x) i0(x) in 32/x - 2 (_I0_B), as numpy.i0
_I0_A = (
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1,
)
_I0_B = (
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1,
)


def _chbevl(t, coeffs):
    """Clenshaw's sum of the Chebyshev series ``coeffs`` at ``t`` (Cephes' ``chbevl``)."""
    b0 = st.full(t.shape, coeffs[0], t.dtype)
    b1 = b2 = st.full(t.shape, 0.0, t.dtype)
    for c in coeffs[1:]:
        b2 = b1
        b1 = b0
        b0 = t * b1 - b2 + c
    return 0.5 * (b0 - b2)


def i0(x):
    """The modified Bessel function of the first kind of order 0 (real input; integers give
    float32), as ``numpy.i0``.

    >>> fnp.i0(fg.tensor([1.0, 2.0]))
    tensor([1.2660661, 2.2795851], dtype=float32)
    """
    (x,) = _inexact("i0", x)
    if dtypes.is_complex(x.dtype):
        raise TypeError("i0: complex input is not supported")
    ax = elt.abs(x)
    small = ax <= 8.0
    near = elt.where(small, ax, 0.0)  # each branch sees only arguments in its range
    far = elt.where(small, 8.0, ax)
    inner = elt.exp(near) * _chbevl(near * 0.5 - 2.0, _I0_A)
    half = elt.exp(far * 0.5)  # exp(x/2)**2, not exp(x): finite for x just past float max log
    outer = half * (_chbevl(32.0 / far - 2.0, _I0_B) / elt.sqrt(far)) * half
    return elt.where(small, inner, outer)


# --- polynomials -----------------------------------------------------------------------------


def _poly(name, arg, p):
    p = asarray(p)
    if p.ndim != 1:
        raise ValueError(f"{name}: {arg} must be a 1-d coefficient sequence, got ndim {p.ndim}")
    return p


def polyval(p, x):
    """The polynomial with coefficients ``p`` (highest power first) at ``x``, by Horner's
    rule, as ``numpy.polyval``.

    >>> fnp.polyval(fg.tensor([1.0, 2.0, 3.0]), 2.0)
    tensor(11., dtype=float32)
    """
    p, x = promote("polyval", p, x)
    _poly("polyval", "p", p)
    y = _creation.zeros(x.shape, x.dtype)
    for i in range(p.shape[0]):
        y = y * x + p[i]
    return y


def _padded_pair(name, a1, a2):
    a1, a2 = promote(name, a1, a2)
    a1 = _poly(name, "a1", _shape.atleast_1d(a1))
    a2 = _poly(name, "a2", _shape.atleast_1d(a2))
    n = max(a1.shape[0], a2.shape[0])
    return (_shape.pad(a1, (n - a1.shape[0], 0)), _shape.pad(a2, (n - a2.shape[0], 0)))


def polyadd(a1, a2):
    """The sum of two polynomials (coefficients highest power first), as ``numpy.polyadd``.

    >>> fnp.polyadd(fg.tensor([1, 2]), fg.tensor([1, 0, 3]))
    tensor([1, 1, 5], dtype=int32)
    """
    a1, a2 = _padded_pair("polyadd", a1, a2)
    return a1 + a2


def polysub(a1, a2):
    """The difference of two polynomials, as ``numpy.polysub``.

    >>> fnp.polysub(fg.tensor([1, 2]), fg.tensor([1, 0, 3]))
    tensor([-1,  1, -1], dtype=int32)
    """
    a1, a2 = _padded_pair("polysub", a1, a2)
    return a1 - a2


def polymul(a1, a2):
    """The product of two polynomials (their convolution; float32 for integers, as JAX).

    >>> fnp.polymul(fg.tensor([1.0, 1.0]), fg.tensor([1.0, -1.0]))
    tensor([ 1.,  0., -1.], dtype=float32)
    """
    a1, a2 = promote("polymul", a1, a2)
    return convolve(_shape.atleast_1d(a1), _shape.atleast_1d(a2))


def polyder(p, m: int = 1):
    """The ``m``-th derivative of a polynomial (float32 for integers, as JAX).

    >>> fnp.polyder(fg.tensor([1.0, 2.0, 3.0]))
    tensor([2., 2.], dtype=float32)
    """
    m = _static_int("polyder", "m", m)
    if m < 0:
        raise ValueError(f"polyder: m (the order of the derivative) must be >= 0, got {m}")
    (p,) = _inexact("polyder", p)
    p = _poly("polyder", "p", p)
    for _ in range(m):
        n = p.shape[0] - 1
        if n <= 0:
            return _creation.zeros((0,), p.dtype)
        p = p[:-1] * asarray(np.arange(n, 0, -1), p.dtype)
    return p


def polyint(p, m: int = 1, k=None):
    """The ``m``-th antiderivative of a polynomial, with integration constants ``k`` (a
    scalar, or one per integration, the first applied first), as ``numpy.polyint``.

    >>> fnp.polyint(fg.tensor([3.0, 2.0, 1.0]))
    tensor([1., 1., 1., 0.], dtype=float32)
    """
    m = _static_int("polyint", "m", m)
    if m < 0:
        raise ValueError(f"polyint: m (the order of the integral) must be >= 0, got {m}")
    if k is None:
        (p,) = _inexact("polyint", p)
        k = _creation.zeros((m,), p.dtype)
    else:
        p, k = _inexact("polyint", p, k)
        k = _shape.atleast_1d(k)
        if k.ndim != 1:
            raise ValueError(f"polyint: k must be a scalar or 1-d, got shape {k.shape}")
        if k.shape[0] == 1 and m > 1:
            k = _shape.broadcast_to(k, (m,))
        if k.shape[0] < m:
            raise ValueError(f"polyint: k must be a scalar or have length >= m = {m}, got "
                             f"length {k.shape[0]}")
    p = _poly("polyint", "p", p)
    for i in range(m):
        n = p.shape[0]
        p = _shape.concatenate([p / asarray(np.arange(n, 0, -1), p.dtype), k[i:i + 1]])
    return p


def polyfit(x, y, deg, rcond=None, full: bool = False, w=None, cov: bool = False):
    """Least-squares polynomial fit of degree ``deg`` (coefficients highest power first; a
    2-d ``y`` fits each column), with optional weights ``w``, as ``numpy.polyfit``
    (``full``/``cov`` outputs are not supported).

    >>> fnp.polyfit(fg.tensor([0.0, 1.0, 2.0]), fg.tensor([1.0, 3.0, 5.0]), 1)
    tensor([1.9999998, 1.0000001], dtype=float32)
    """
    from funcgrad.numpy.linalg import lstsq

    if full or cov:
        raise NotImplementedError("polyfit: full=True and cov=True are not supported")
    deg = _static_int("polyfit", "deg", deg)
    if deg < 0:
        raise ValueError(f"polyfit: deg must be >= 0, got {deg}")
    x, y = _inexact("polyfit", x, y)
    if x.ndim != 1:
        raise TypeError(f"polyfit: x must be 1-d, got ndim {x.ndim}")
    if x.shape[0] == 0:
        raise TypeError("polyfit: x must not be empty")
    if y.ndim not in (1, 2):
        raise TypeError(f"polyfit: y must be 1-d or 2-d, got ndim {y.ndim}")
    if x.shape[0] != y.shape[0]:
        raise TypeError(f"polyfit: x and y must have the same length, got {x.shape[0]} and "
                        f"{y.shape[0]}")
    if rcond is None:
        rcond = x.shape[0] * float(dtypes.finfo(x.dtype).eps)
    powers = asarray(np.arange(deg, -1, -1), x.dtype)
    lhs = x[:, None] ** powers[None, :]  # the Vandermonde matrix
    rhs = y
    if w is not None:
        w = asarray(w, x.dtype)
        if w.ndim != 1 or w.shape[0] != x.shape[0]:
            raise TypeError(f"polyfit: w must be 1-d of x's length {x.shape[0]}, got shape "
                            f"{w.shape}")
        lhs = lhs * w[:, None]
        rhs = rhs * (w if rhs.ndim == 1 else w[:, None])
    scale = elt.sqrt(_reductions.sum(lhs * lhs, axis=0))
    scale = elt.where(scale == 0, 1.0, scale)
    c = lstsq(lhs / scale, rhs, rcond=rcond)[0]
    return c / scale if c.ndim == 1 else c / scale[:, None]


# --- vectorize -------------------------------------------------------------------------------

_DIM = r"\w+"
_CORE = rf"(?:{_DIM}(?:,{_DIM})*)?"
_ARGS = rf"\({_CORE}\)(?:,\({_CORE}\))*"
_SIGNATURE = rf"^{_ARGS}->{_ARGS}$"


def _parse_signature(signature):
    compact = re.sub(r"\s+", "", signature)
    if not re.match(_SIGNATURE, compact):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r} (expected "
                         "e.g. '(m,n),(n)->(m)')")
    inputs, outputs = compact.split("->")

    def groups(part):
        return [tuple(d for d in g.split(",") if d) for g in re.findall(r"\(([^)]*)\)", part)]

    return groups(inputs), groups(outputs)


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """``pyfunc`` (written for scalars, or for the core shapes of a gufunc ``signature``
    such as ``"(n),(n)->()"``) applied with broadcasting over the leading axes of its
    arguments by nested ``vmap``, as ``jax.numpy.vectorize``.

    ``excluded``: positions (ints) or keyword names (strs) passed through unvectorized;
    keyword arguments are always passed through unvectorized.

    >>> add = fnp.vectorize(lambda a, b: a + b)
    >>> add(fg.ones((2, 1)), fg.ones(3)).shape
    (2, 3)
    """
    from funcgrad.transforms.batching import vmap

    if any(not isinstance(e, (int, str)) or isinstance(e, bool) for e in excluded):
        raise TypeError(f"vectorize: excluded must hold ints or strs, got {excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"vectorize: excluded={excluded!r} contains negative numbers")
    parsed = None if signature is None else _parse_signature(signature)

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        static = {i: a for i, a in enumerate(args) if i in excluded or a is None}
        dynamic = [asarray(a) for i, a in enumerate(args) if i not in static]

        def call(*dyn):
            full, it = [], iter(dyn)
            for i in range(len(args)):
                full.append(static[i] if i in static else next(it))
            return pyfunc(*full, **kwargs)

        if parsed is None:
            in_core = [()] * len(dynamic)
            out_core = None
        else:
            in_core, out_core = parsed
            in_core = [c for i, c in enumerate(in_core) if i not in static]
            if len(in_core) != len(dynamic):
                raise TypeError(f"vectorize: signature {signature!r} has {len(parsed[0])} "
                                f"inputs, got {len(args)} arguments")
        sizes = {}
        loop_shapes = []
        for a, core in zip(dynamic, in_core, strict=True):
            if a.ndim < len(core):
                raise ValueError(f"vectorize: input with shape {a.shape} does not have enough "
                                 f"dimensions for its core dimensions {core} (signature "
                                 f"{signature!r})")
            core_shape = a.shape[a.ndim - len(core):]
            for name, size in zip(core, core_shape, strict=True):
                if sizes.setdefault(name, size) != size:
                    raise ValueError(f"vectorize: core dimension {name!r} has inconsistent "
                                     f"sizes {sizes[name]} and {size}")
            loop_shapes.append(a.shape[:a.ndim - len(core)])
        loop = tuple(np.broadcast_shapes(*loop_shapes)) if loop_shapes else ()
        operands = [_shape.broadcast_to(a, loop + a.shape[a.ndim - len(core):])
                    for a, core in zip(dynamic, in_core, strict=True)]

        def checked(*dyn):
            out = call(*dyn)
            if out_core is None:
                return out
            outs = out if isinstance(out, tuple) else (out,)
            if len(outs) != len(out_core):
                raise ValueError(f"vectorize: pyfunc returned {len(outs)} outputs, the "
                                 f"signature {signature!r} names {len(out_core)}")
            for o, core in zip(outs, out_core, strict=True):
                o_shape = asarray(o).shape
                if len(o_shape) != len(core):
                    raise ValueError(f"vectorize: output shape {o_shape} does not match the "
                                     f"core dimensions {core} of signature {signature!r}")
                for name, size in zip(core, o_shape, strict=True):
                    if sizes.setdefault(name, size) != size:
                        raise ValueError(f"vectorize: output core dimension {name!r} has size"
                                         f" {size}, expected {sizes[name]}")
            return out

        fn = checked
        for _ in loop:
            fn = vmap(fn)
        return fn(*operands)

    return wrapped

