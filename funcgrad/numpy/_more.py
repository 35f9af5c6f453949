"""More of jax.numpy's API: histograms in several dimensions, piecewise and choice
selection, out-of-place ``put``, ``resize``, bit packing, floating-point neighbours,
polynomial division and roots, phase unwrapping, zero trimming and the ``float_``/``int_``
aliases; each a composition of funcgrad.numpy functions, so it differentiates, batches and
compiles like them wherever its output shape does not depend on its values.

``float_`` and ``int_`` are, as in JAX, the ``float64`` and ``int64`` scalar types
(``jnp.float_ is jnp.float64``); tensors built without a dtype still default to float32 and
int32."""

from __future__ import annotations

import builtins
import math

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.prims.bitcast import bitcast_convert_type
from funcgrad.core.tensor import Tensor
from funcgrad.numpy import _creation as cre
from funcgrad.numpy import _elementwise as elt
from funcgrad.numpy import _reductions as red
from funcgrad.numpy import _shape as shp
from funcgrad.numpy._indexing import searchsorted, take_along_axis
from funcgrad.numpy._scalar_types import SCALAR_TYPES
from funcgrad.numpy._signal import _static_int, bincount, histogram_bin_edges
from funcgrad.numpy._statistics import no_out
from funcgrad.numpy._util import (
    asarray,
    axis_or_flattened,
    broadcast_exactly,
    broadcast_shapes,
    broadcast_to,
    is_concrete,
    normalize_axes,
    normalize_axis,
    promote,
)
from funcgrad.transforms.custom import stop_gradient

__all__ = [
    "histogram2d", "histogramdd", "piecewise", "choose", "put", "put_along_axis", "resize",
    "packbits", "unpackbits", "nextafter", "spacing", "polydiv", "roots", "unwrap",
    "trim_zeros", "float_", "int_",
]

# the same objects as fnp.float64 and fnp.int64, as jnp.float_ is jnp.float64
float_ = SCALAR_TYPES["float64"]
int_ = SCALAR_TYPES["int64"]


def _is_sequence(value) -> bool:
    """True for a list or tuple, or a NumPy array or tensor with at least one axis."""
    if isinstance(value, (list, tuple)):
        return True
    return np.ndim(value) > 0 if not isinstance(value, Tensor) else value.ndim > 0


# --- histograms in several dimensions --------------------------------------------------------


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """Histogram of ``N`` points in ``D`` dimensions (``sample`` of shape ``(N, D)``):
    ``(hist, edges)``, ``edges`` a list of ``D`` edge tensors, as ``jax.numpy.histogramdd``.

    Arguments:
        sample: the points, shape ``(N, D)``.
        bins: one int (bins per dimension), or one int or 1-d edges per dimension.
        range: ``None``, or one ``None`` or ``(lo, hi)`` pair per dimension.
        weights: ``None`` (counts, int32 as JAX; NumPy counts in float64), or one weight per
            point (the histogram then has their dtype).
        density: normalize so that the histogram integrates to 1 over the bins.

    Each bin is half-open ``[lo, hi)`` except the last along each axis, which includes its
    right edge; points outside the edges are not counted.

    >>> hist, edges = fnp.histogramdd(fg.tensor([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]]), bins=2)
    >>> hist
    tensor([[1, 0],
            [1, 1]], dtype=int32)
    """
    if weights is None:
        (sample,) = promote("histogramdd", sample, to_inexact=True)
    else:
        sample, weights = promote("histogramdd", sample, weights, to_inexact=True)
    if sample.ndim != 2:
        raise ValueError(f"histogramdd: sample must be 2-d, shape (N points, D dimensions), "
                         f"got shape {sample.shape}")
    n, d = sample.shape
    if weights is not None and weights.shape != (n,):
        raise ValueError(f"histogramdd: weights must have one weight per point, shape ({n},), "
                         f"got shape {weights.shape}")
    if isinstance(bins, str):
        raise NotImplementedError("histogramdd: string values for bins are not supported; "
                                  "pass ints or edges")
    if _is_sequence(bins):
        if len(bins) != d:
            raise ValueError(f"histogramdd: bins must be an int or one entry (an int or 1-d "
                             f"edges) per dimension ({d}), got {len(bins)} entries")
        bins_per_dim = list(bins)
    else:
        bins_per_dim = [bins] * d
    if range is None:
        range = [None] * d  # noqa: A001
    elif len(range) != d or builtins.any(r is not None and np.shape(r) != (2,) for r in range):
        raise ValueError(f"histogramdd: range must be None or one None or (lo, hi) pair per "
                         f"dimension ({d}), got {range!r}")
    edges, flat, stride = [], 0, 1
    for axis in builtins.range(d - 1, -1, -1):  # the last axis varies fastest
        column = sample[:, axis]
        axis_edges = histogram_bin_edges(column, bins_per_dim[axis], range[axis])
        index = searchsorted(axis_edges, column, side="right")
        # the last bin includes its right edge; outside values land in bins 0 and -1
        index = elt.where(column == axis_edges[-1], index - 1, index)
        flat = flat + index * stride
        stride *= axis_edges.shape[0] + 1
        edges.insert(0, axis_edges)
    sizes = tuple(e.shape[0] + 1 for e in edges)
    if not isinstance(flat, Tensor):  # no dimensions: every point in one bin
        flat = cre.zeros((n,), dtypes.int32)
    hist = shp.reshape(bincount(flat, weights, length=math.prod(sizes)), sizes)
    hist = hist[(slice(1, -1),) * d]
    if density:
        hist = hist.astype(sample.dtype)
        hist = hist / red.sum(hist)
        for axis, axis_edges in enumerate(edges):
            shape = [1] * d
            shape[axis] = axis_edges.shape[0] - 1
            hist = hist / shp.reshape(shp.diff(axis_edges), tuple(shape))
    return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """Histogram of the points ``(x[i], y[i])``: ``(hist, xedges, yedges)``, as
    ``jax.numpy.histogram2d`` (see ``histogramdd``).

    ``bins``: an int, a pair (an int or edges for each of ``x`` and ``y``), or one 1-d
    sequence of edges (of any other length) shared by both.

    >>> hist, xedges, yedges = fnp.histogram2d(fg.tensor([0.0, 1.0, 1.0]),
    ...                                        fg.tensor([0.0, 1.0, 0.0]), bins=2)
    >>> hist
    tensor([[1, 0],
            [1, 1]], dtype=int32)
    """
    x, y = promote("histogram2d", x, y)
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"histogram2d: x and y must be 1-d of equal length, got shapes "
                         f"{x.shape} and {y.shape}")
    if _is_sequence(bins) and len(bins) not in (1, 2):
        bins = [bins, bins]  # one sequence of edges for both coordinates
    hist, edges = histogramdd(shp.stack([x, y], axis=1), bins, range, weights, density)
    return hist, edges[0], edges[1]


# --- selecting by condition or index ---------------------------------------------------------


def _conditions(x, condlist):
    """The conditions of ``piecewise`` as boolean tensors of ``x``'s shape."""
    if isinstance(condlist, (list, tuple)):
        if condlist and x.ndim and not _is_sequence(condlist[0]):
            conds = [asarray(condlist)]  # a flat list of bools is one condition (NumPy)
        else:
            conds = [asarray(c) for c in condlist]
    else:
        stacked = asarray(condlist)
        if stacked.ndim == x.ndim:
            conds = [stacked]
        elif stacked.ndim == x.ndim + 1:
            conds = [stacked[i] for i in builtins.range(stacked.shape[0])]
        else:
            raise ValueError(f"piecewise: condlist of shape {stacked.shape} must be a list of "
                             f"conditions of x's shape {x.shape}, or a tensor stacking them")
    return [broadcast_exactly("piecewise", c if c.dtype == dtypes.bool_ else
                               c.astype(dtypes.bool_), x.shape, f"condition {i}", "x's")
            for i, c in enumerate(conds)]


def piecewise(x, condlist, funclist, *args, **kw):
    """Per element of ``x``, the function (or constant) of the last true condition, as
    ``jax.numpy.piecewise``.

    Arguments:
        x: the input.
        condlist: boolean tensors of ``x``'s shape (a list, or one tensor stacking them).
        funclist: one function or constant per condition, and optionally one more used where
            no condition holds (0 otherwise).  Functions are called as
            ``f(x, *args, **kw)`` on the whole of ``x`` (they must act elementwise, as JAX
            calls them on each element) and their results cast to ``x``'s dtype.

    >>> x = fg.tensor([-2.0, 0.5, 3.0])
    >>> fnp.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v * 10, 7.0])
    tensor([ 2.,  7., 30.], dtype=float32)
    """
    x = asarray(x)
    conds = _conditions(x, condlist)
    funclist = list(funclist)
    nc, nf = len(conds), len(funclist)
    if nf == nc + 1:
        otherwise, funcs = funclist[-1], funclist[:-1]
    elif nf == nc:
        otherwise, funcs = 0, funclist
    else:
        raise ValueError(f"piecewise: with {nc} condition(s), funclist must have {nc} or "
                         f"{nc + 1} entries, got {nf}")

    # which function each element takes: the last true condition's (0: otherwise)
    chosen = cre.zeros(x.shape, dtypes.int32)
    for i, cond in enumerate(conds):
        chosen = elt.where(cond, i + 1, chosen)

    def evaluate(label, f, number):
        if not callable(f):
            value = asarray(f)
        else:
            # each function differentiates only where it is taken (as JAX): elsewhere its
            # input is a constant, so sqrt of the negatives another branch handles gives no
            # NaN gradient
            own = elt.where(chosen == number, x, stop_gradient(x))
            value = asarray(f(own, *args, **kw))
        return broadcast_exactly("piecewise", value.astype(x.dtype), x.shape,
                                  f"the value of {label}", "x's")

    out = evaluate(f"funclist[{nf - 1}]", otherwise, 0)
    for i, f in enumerate(funcs):
        out = elt.where(chosen == i + 1, evaluate(f"funclist[{i}]", f, i + 1), out)
    return out


def choose(a, choices, out=None, mode: str = "raise"):
    """Per element, ``choices[a[...]][...]`` (``a`` and the choices broadcast together), as
    ``jax.numpy.choose``.

    ``mode``: ``"raise"`` (an index outside ``[0, len(choices))`` is a ValueError; this
    needs a concrete ``a``, so under jit/vmap use another mode), ``"wrap"`` (indices taken
    modulo ``len(choices)``) or ``"clip"`` (clamped into range).

    >>> fnp.choose(fg.tensor([0, 1, 0]), [fg.tensor([1, 2, 3]), fg.tensor([10, 20, 30])])
    tensor([ 1, 20,  3], dtype=int32)
    """
    no_out("choose", out)
    a = asarray(a)
    if not dtypes.is_integer(a.dtype):
        raise TypeError(f"choose: a must be integers, got {a.dtype.name}")
    if isinstance(choices, (Tensor, np.ndarray)):
        choices = [choices[i] for i in builtins.range(choices.shape[0])]
    choices = list(choices)
    n = len(choices)
    if n == 0:
        raise ValueError("choose: choices must not be empty")
    if mode == "raise":
        if not is_concrete(a):
            raise TypeError("choose: mode='raise' checks the values of a, which is traced "
                            "here (jit/vmap/grad); pass mode='wrap' or mode='clip'")
        values = np.asarray(a)
        if np.any((values < 0) | (values >= n)):
            raise ValueError(f"choose: a has entries outside [0, {n}) for {n} choices; pass "
                             "mode='wrap' or mode='clip' to map them into range")
        index = a
    elif mode == "wrap":
        index = elt.remainder(a, n)
    elif mode == "clip":
        index = elt.clip(a, 0, n - 1)
    else:
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    choices = promote("choose", *choices)
    shape = broadcast_shapes("choose", a.shape, *(c.shape for c in choices))
    stacked = shp.stack([broadcast_to(c, shape) for c in choices])
    index = broadcast_to(index.astype(dtypes.int32), shape)
    return take_along_axis(stacked, index[None], axis=0)[0]


def _immutable(name):
    return ValueError(f"{name}: funcgrad tensors are immutable, so inplace=True is not "
                      "possible; pass inplace=False and use the returned tensor")


def put(a, ind, v, mode=None, *, inplace: bool = False):
    """A copy of ``a`` with the elements at the flat indices ``ind`` replaced by ``v``
    (repeated to ``ind``'s length), as ``jax.numpy.put(..., inplace=False)``.

    ``mode``: ``None`` (negative indices count from the end; others out of range are
    clipped), ``"clip"`` (indices clamped into ``[0, a.size)``, so no negative indexing) or
    ``"wrap"`` (indices taken modulo ``a.size``).  ``inplace=True`` is an error (tensors are
    immutable); unlike JAX, ``inplace`` defaults to False.

    >>> fnp.put(fnp.zeros(5, dtype=fnp.int32), fg.tensor([0, 2]), fg.tensor([7, 9]))
    tensor([7, 0, 9, 0, 0], dtype=int32)
    """
    if inplace:
        raise _immutable("put")
    a, ind, v = asarray(a), shp.ravel(asarray(ind)), shp.ravel(asarray(v))
    if not dtypes.is_integer(ind.dtype):
        raise TypeError(f"put: ind must be integers, got {ind.dtype.name}")
    if mode not in (None, "clip", "wrap"):
        if mode == "raise":
            raise NotImplementedError("put: mode='raise' is not supported (as in JAX); use "
                                      "mode=None, 'clip' or 'wrap'")
        raise ValueError(f"put: mode must be None, 'clip' or 'wrap', got {mode!r}")
    if a.size == 0 or ind.size == 0 or v.size == 0:
        return a
    size = a.size
    if v.size != ind.size:
        v = shp.tile(v, -(-ind.size // v.size))[:ind.size]
    if mode is None:
        ind = elt.clip(ind, -size, size - 1)
        ind = elt.where(ind < 0, ind + size, ind)
    elif mode == "clip":
        ind = elt.clip(ind, 0, size - 1)
    else:
        ind = elt.remainder(ind, size)
    return shp.reshape(shp.ravel(a).at[ind].set(v), a.shape)


def put_along_axis(arr, indices, values, axis, inplace: bool = False, *, mode=None):
    """A copy of ``arr`` with ``values`` written at ``indices`` along ``axis`` (the inverse
    of ``take_along_axis``; ``axis=None`` works on the flattened ``arr``), as
    ``jax.numpy.put_along_axis(..., inplace=False)``.

    ``indices`` has ``arr``'s rank and broadcasts against it off ``axis``; ``values``
    broadcasts to ``indices``' shape.  ``mode`` is that of ``.at[].set``: ``None``,
    ``"clip"``, ``"drop"`` or ``"promise_in_bounds"``.  ``inplace=True`` is an error (tensors
    are immutable); unlike JAX, ``inplace`` defaults to False.

    >>> x = fnp.zeros((2, 3))
    >>> fnp.put_along_axis(x, fg.tensor([[2], [0]]), 5.0, axis=1)
    tensor([[0., 0., 5.],
            [5., 0., 0.]], dtype=float32)
    """
    if inplace:
        raise _immutable("put_along_axis")
    arr, indices, values = asarray(arr), asarray(indices), asarray(values)
    if not dtypes.is_integer(indices.dtype):
        raise TypeError(f"put_along_axis: indices must be integers, got {indices.dtype.name}")
    shape = arr.shape
    if axis is None:
        arr, axis = shp.ravel(arr), 0
    if indices.ndim != arr.ndim:
        raise ValueError(f"put_along_axis: indices must have arr's rank {arr.ndim}"
                         f"{' (arr flattened, axis=None)' if arr.shape != shape else ''}, got "
                         f"shape {indices.shape}")
    axis = normalize_axis("put_along_axis", axis, arr.ndim)
    values = broadcast_exactly("put_along_axis", values, indices.shape, "values", "indices'")
    index = []
    for i, size in enumerate(arr.shape):
        if i == axis:
            index.append(indices)
        else:
            spot = [1] * arr.ndim
            spot[i] = size
            index.append(shp.reshape(cre.arange(size, dtype=dtypes.int32), tuple(spot)))
    out = arr.at[tuple(index)].set(values, mode=mode)
    return shp.reshape(out, shape)


def resize(a, new_shape):
    """``a``'s elements, flattened and repeated as often as needed, in ``new_shape``, as
    ``jax.numpy.resize`` (an empty ``a`` gives zeros).

    >>> fnp.resize(fg.tensor([1, 2, 3]), (2, 4))
    tensor([[1, 2, 3, 1],
            [2, 3, 1, 2]], dtype=int32)
    """
    a = asarray(a)
    if _is_sequence(new_shape):
        new_shape = tuple(_static_int("resize", "new_shape", s) for s in new_shape)
    else:
        new_shape = (_static_int("resize", "new_shape", new_shape),)
    if builtins.any(s < 0 for s in new_shape):
        raise ValueError(f"resize: new_shape must be non-negative, got {new_shape}")
    flat = shp.ravel(a)
    new_size = math.prod(new_shape)
    if flat.size == 0 or new_size == 0:
        return cre.zeros(new_shape, a.dtype)
    repeats = -(-new_size // flat.size)
    return shp.reshape(shp.tile(flat, repeats)[:new_size], new_shape)


# --- bit packing -----------------------------------------------------------------------------


def _bit_order(name, bitorder):
    if bitorder not in ("big", "little"):
        raise ValueError(f"{name}: bitorder must be 'big' or 'little', got {bitorder!r}")
    # the weight of each of a byte's 8 bits, in the order they are stored
    shifts = np.arange(8, dtype=np.uint8)
    return shifts[::-1].copy() if bitorder == "big" else shifts


def packbits(a, axis=None, bitorder: str = "big"):
    """Pack the truth (non-zero) of each element of an integer or boolean tensor into the
    bits of uint8 bytes, 8 elements per byte along ``axis`` (the flattened ``a`` when
    None), zero-padded at the end, as ``jax.numpy.packbits``.

    >>> fnp.packbits(fg.tensor([1, 0, 1, 1, 0, 0, 0, 1, 1]))
    tensor([177, 128], dtype=uint8)
    """
    a = asarray(a)
    if not (dtypes.is_integer(a.dtype) or a.dtype == dtypes.bool_):
        raise TypeError(f"packbits: a must be integers or booleans, got {a.dtype.name}")
    shifts = _bit_order("packbits", bitorder)
    a, axis = axis_or_flattened("packbits", a, axis)
    bits = shp.moveaxis(elt.not_equal(a, 0).astype(dtypes.uint8), axis, -1)
    length = bits.shape[-1]
    if length % 8:
        bits = shp.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, 8 - length % 8)])
    bits = shp.reshape(bits, bits.shape[:-1] + (bits.shape[-1] // 8, 8))
    weights = asarray((np.uint8(1) << shifts).astype(np.uint8))
    packed = red.sum(bits * weights, axis=-1, dtype=dtypes.uint8)
    return shp.moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder: str = "big"):
    """Unpack each uint8 of ``a`` into its 8 bits (0 or 1, uint8) along ``axis`` (the
    flattened ``a`` when None), keeping the first ``count`` bits (all when None; a negative
    ``count`` drops that many from the end; past the end pads with zeros), as
    ``jax.numpy.unpackbits``.

    >>> fnp.unpackbits(fg.tensor([177], dtype=fnp.uint8))
    tensor([1, 0, 1, 1, 0, 0, 0, 1], dtype=uint8)
    """
    a = asarray(a)
    if a.dtype != dtypes.uint8:
        raise TypeError(f"unpackbits: a must be uint8, got {a.dtype.name}")
    shifts = _bit_order("unpackbits", bitorder)
    a, axis = axis_or_flattened("unpackbits", a, axis)
    moved = shp.moveaxis(a, axis, -1)
    bits = elt.bitwise_and(elt.right_shift(moved[..., None], asarray(shifts)), np.uint8(1))
    bits = shp.reshape(bits, moved.shape[:-1] + (moved.shape[-1] * 8,))
    if count is not None:
        count = _static_int("unpackbits", "count", count)
        total = bits.shape[-1]
        if count < -total:
            raise ValueError(f"unpackbits: count={count} drops more than the {total} bits "
                             "there are")
        if count > total:
            bits = shp.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, count - total)])
        else:
            bits = bits[..., :count]
    return shp.moveaxis(bits, -1, axis)


# --- floating-point neighbours ---------------------------------------------------------------

# per float dtype: the signed integer of its width and its number of mantissa bits
_FLOAT_LAYOUT = {
    np.dtype(dtypes.float16): (np.dtype(np.int16), 10),
    np.dtype(dtypes.bfloat16): (np.dtype(np.int16), 7),
    np.dtype(np.float32): (np.dtype(np.int32), 23),
    np.dtype(np.float64): (np.dtype(np.int64), 52),
}


def _real_float(name, *xs):
    xs = promote(name, *xs, to_inexact=True)
    if dtypes.is_complex(xs[0].dtype):
        raise TypeError(f"{name}: arguments must be real, got {xs[0].dtype.name}")
    return xs


def nextafter(x1, x2):
    """The next representable float after ``x1`` in the direction of ``x2`` (``x2`` where
    they are equal; NaN where either is NaN), as ``jax.numpy.nextafter``; integers become
    float32.

    Computed on the bits, so subnormal results are exact also where compiled code flushes
    subnormal arithmetic to zero.  The result is piecewise constant: its gradient is zero.

    >>> fnp.nextafter(fg.tensor(1.0), 2.0) - 1.0
    tensor(1.1920929e-07, dtype=float32)
    """
    x1, x2 = _real_float("nextafter", x1, x2)
    shape = broadcast_shapes("nextafter", x1.shape, x2.shape)
    x1, x2 = broadcast_to(x1, shape), broadcast_to(x2, shape)
    int_dtype, _ = _FLOAT_LAYOUT[x1.dtype]
    sign = int(np.iinfo(int_dtype).min)  # the sign bit alone

    def ordered(bits):
        """|x| as bits, and an integer ordered as the float x is (both zeros map to 0)."""
        magnitude = elt.bitwise_and(bits, ~sign)
        return magnitude, elt.where(bits < 0, -magnitude, magnitude)

    bits1 = bitcast_convert_type(x1, int_dtype)
    bits2 = bitcast_convert_type(x2, int_dtype)
    (magnitude1, key1), (_, key2) = ordered(bits1), ordered(bits2)
    away_from_zero = elt.equal(key1 < key2, key1 > 0)
    step = elt.where(away_from_zero, bits1 + 1, bits1 - 1)
    tiniest = elt.bitwise_or(elt.bitwise_and(bits2, sign), 1)  # from zero: x2's sign
    bits = elt.where(magnitude1 == 0, tiniest, step)
    bits = elt.where(key1 == key2, bits2, bits)
    out = bitcast_convert_type(bits, x1.dtype)
    return elt.where(elt.isnan(x1) | elt.isnan(x2), np.nan, out)


def spacing(x):
    """The distance from ``x`` to the next float away from zero (negative for negative
    ``x``; the smallest subnormal at zero; NaN at infinities), as ``jax.numpy.spacing``;
    integers become float32.  For float16, as NumPy, the distance to the next float
    towards +inf.

    >>> fnp.spacing(fg.tensor([1.0, -1.0]))
    tensor([ 1.1920929e-07, -1.1920929e-07], dtype=float32)
    """
    (x,) = _real_float("spacing", x)
    if x.dtype == dtypes.float16:  # NumPy's float16 spacing steps towards +inf
        return elt.where(elt.isinf(x), np.nan, nextafter(x, np.inf) - x)
    int_dtype, mantissa = _FLOAT_LAYOUT[x.dtype]
    width = 8 * int_dtype.itemsize
    sign = int(np.iinfo(int_dtype).min)
    all_ones = (1 << (width - 1 - mantissa)) - 1  # the exponent field of inf and NaN
    bits = bitcast_convert_type(x, int_dtype)
    magnitude = elt.bitwise_and(bits, ~sign)
    field = elt.right_shift(magnitude, mantissa)
    # one unit in the last place of x's binade, built as bits: a normal float when its
    # exponent is in range, else the subnormal 2**(field - 1) units of the smallest one
    normal = elt.left_shift(elt.maximum(field - mantissa, 0), mantissa)
    subnormal = elt.left_shift(asarray(1, int_dtype), elt.clip(field - 1, 0, mantissa))
    unit = elt.where(field > mantissa, normal, subnormal)
    negative = (bits < 0) & (magnitude != 0)
    out = bitcast_convert_type(elt.where(negative, elt.bitwise_or(unit, sign), unit), x.dtype)
    largest = (all_ones << mantissa) - 1  # the largest finite magnitude steps to inf
    out = elt.where(magnitude == largest, elt.where(negative, -np.inf, np.inf), out)
    return elt.where(field == all_ones, np.nan, out)


# --- polynomials -----------------------------------------------------------------------------


def _trim_leading(name, arg, p, tolerance):
    """``p`` without its leading entries of magnitude below ``tolerance`` (keeping one)."""
    if not is_concrete(p):
        raise TypeError(f"{name}: {arg} is traced here (jit/vmap/grad), so its length after "
                        "trimming is unknown; pass trim_leading_zeros=False")
    small = np.abs(np.asarray(p)) < tolerance
    start = int(np.argmin(small)) if not small.all() else p.shape[0] - 1
    return p[start:]


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """Quotient and remainder of the polynomial division ``u / v`` (coefficients highest
    power first), as ``jax.numpy.polydiv``.

    The remainder keeps ``u``'s length (leading zeros included) so that the shape is
    static; ``trim_leading_zeros=True`` drops its leading entries below ``sqrt(eps)`` in
    magnitude (keeping one, as NumPy), which needs concrete input.

    >>> q, r = fnp.polydiv(fg.tensor([3.0, 5.0, 2.0]), fg.tensor([2.0, 1.0]))
    >>> q, r
    (tensor([1.5 , 1.75], dtype=float32), tensor([0.  , 0.  , 0.25], dtype=float32))
    """
    u, v = promote("polydiv", u, v, to_inexact=True)
    u, v = shp.atleast_1d(u), shp.atleast_1d(v)
    for arg, p in (("u", u), ("v", v)):
        if p.ndim != 1:
            raise ValueError(f"polydiv: {arg} must be 0-d or 1-d, got shape {p.shape}")
    if v.shape[0] == 0 or u.shape[0] == 0:
        raise ValueError(f"polydiv: u and v must not be empty, got shapes {u.shape} and "
                         f"{v.shape}")
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / v[0]
    quotient = []
    remainder = u
    for k in builtins.range(m - n + 1):
        d = scale * remainder[k]
        quotient.append(d)
        remainder = remainder.at[k:k + n + 1].add(-d * v)
    q = shp.stack(quotient) if quotient else cre.zeros((1,), u.dtype)
    if trim_leading_zeros:
        tolerance = float(np.sqrt(dtypes.finfo(u.dtype).eps))
        remainder = _trim_leading("polydiv", "u or v", remainder, tolerance)
    return q, remainder


def roots(p, *, strip_zeros: bool = True):
    """The complex roots of the polynomial with coefficients ``p`` (highest power first),
    as the eigenvalues of its companion matrix, as ``jax.numpy.roots`` (complex64, or
    complex128 for float64/complex128 input).

    ``strip_zeros=True`` drops leading zero coefficients (the degree shrinks), so ``p``
    must be concrete; with False the roots keep their number, which works under
    jit/vmap/grad (on the CPU, as ``eig``), and a zero leading coefficient gives NaN
    roots, as in JAX.

    >>> fnp.roots(fg.tensor([1.0, -3.0, 2.0]))
    tensor([2.+0.j, 1.+0.j], dtype=complex64)
    """
    (p,) = promote("roots", p, to_inexact=True)
    p = shp.atleast_1d(p)
    if p.ndim != 1:
        raise ValueError(f"roots: p must be 0-d or 1-d, got shape {p.shape}")
    if not is_concrete(p):
        if strip_zeros:
            raise TypeError("roots: p is traced here (jit/vmap/grad), and strip_zeros=True "
                            "makes the number of roots depend on its values; pass "
                            "strip_zeros=False (leading zeros then give NaN roots)")
        return _companion_roots(p)
    dtype = dtypes.complex_dtype(p.dtype)
    values = np.asarray(p)
    if values.dtype.itemsize < 4:  # float16, bfloat16: NumPy's eigenvalues need float32
        values = values.astype(np.float32)
    if values.size < 2:
        return asarray(np.zeros(0, dtype))
    nonzero = np.flatnonzero(values)
    leading = int(nonzero[0]) if nonzero.size else values.size
    found = np.roots(values[leading:]) if leading < values.size - 1 else np.zeros(0)
    if not strip_zeros:
        found = np.concatenate([found, np.full(values.size - 1 - found.size, np.nan + 0j)])
    return asarray(found.astype(dtype))


def _companion_roots(p):
    """``roots(p, strip_zeros=False)`` for traced ``p``: the eigenvalues of a companion
    matrix (what ``np.roots`` computes), with one NaN root per leading zero coefficient
    (those are moved to the end, where they add zero roots that become the NaNs)."""
    from funcgrad.numpy import _indexing, linalg

    size = p.shape[0]
    if size < 2:
        return asarray(np.zeros(0, dtypes.complex_dtype(p.dtype)))
    if p.dtype.itemsize < 4:  # float16, bfloat16: LAPACK needs float32
        p = p.astype(np.float32)
    nonzero = p != 0
    leading = elt.where(red.any(nonzero), red.argmax(nonzero), size - 1)
    p = elt.where(red.any(nonzero), p, 1)  # all zero: every root NaN below
    p = p[(cre.arange(size) + leading) % size]
    below = np.eye(size - 1, k=-1, dtype=p.dtype)[1:]  # the companion's subdiagonal ones
    companion = shp.concatenate([(-p[1:] / p[0])[None, :], asarray(below)], axis=0)
    found = linalg.eigvals(companion)
    found = found[_indexing.argsort((found == 0).astype(np.int32))]  # zero roots last
    return elt.where(cre.arange(size - 1) >= size - 1 - leading, np.nan, found)


# --- unwrap and trim_zeros -------------------------------------------------------------------


def unwrap(p, discont=None, axis: int = -1, period=2 * math.pi):
    """``p`` with jumps between neighbours along ``axis`` larger than ``discont`` (default
    ``period / 2``) replaced by their remainder modulo ``period``, as
    ``jax.numpy.unwrap`` (integers become float32).

    >>> fnp.unwrap(fg.tensor([0.0, 1.0, 5.0, 6.0]), period=4.0)
    tensor([0., 1., 1., 2.], dtype=float32)
    """
    (p,) = promote("unwrap", p, to_inexact=True)
    if dtypes.is_complex(p.dtype):
        raise ValueError(f"unwrap: p must be real, got {p.dtype.name}")
    if p.ndim == 0:
        raise ValueError("unwrap: p must have at least 1 axis, got a 0-d tensor")
    axis = normalize_axis("unwrap", axis, p.ndim)
    if p.shape[axis] == 0:
        return p
    if discont is None:
        discont = period / 2
    interval = period / 2
    dd = shp.diff(p, axis=axis)
    ddmod = elt.remainder(dd + interval, period) - interval
    # a jump of exactly +interval stays +interval (as NumPy), not -interval
    ddmod = elt.where((ddmod == -interval) & (dd > 0), interval, ddmod)
    correction = elt.where(elt.abs(dd) < discont, 0, ddmod - dd)
    first = shp._slice_axis(p, axis, 0, 1)
    rest = shp._slice_axis(p, axis, 1, None) + red.cumsum(correction, axis=axis)
    return shp.concatenate([first, rest], axis=axis).astype(p.dtype)


def trim_zeros(filt, trim: str = "fb", axis=None):
    """``filt`` without its leading (``"f"`` in ``trim``) and/or trailing (``"b"``) zeros
    along each of the axes ``axis`` (all by default: the smallest box holding the non-zero
    elements), as ``jax.numpy.trim_zeros``.

    Eager only: the result's shape depends on the values, so ``filt`` must be concrete.

    >>> fnp.trim_zeros(fg.tensor([0, 0, 2, 0, 1, 0]))
    tensor([2, 0, 1], dtype=int32)
    """
    filt = asarray(filt)
    if not isinstance(trim, str) or trim.lower() not in ("f", "b", "fb", "bf"):
        raise ValueError(f"trim_zeros: trim must be 'f' (front), 'b' (back) or 'fb' (both), "
                         f"got {trim!r}")
    if not is_concrete(filt):
        raise TypeError("trim_zeros: filt is traced here (jit/vmap/grad), but the result's "
                        "shape depends on its values; call it on concrete input")
    if filt.ndim == 0:
        raise ValueError("trim_zeros: filt must have at least 1 axis, got a 0-d tensor")
    axes = normalize_axes("trim_zeros", axis, filt.ndim)
    front, back = "f" in trim.lower(), "b" in trim.lower()
    nonzero = np.asarray(filt) != 0
    index = []
    for ax in builtins.range(filt.ndim):
        if ax not in axes:
            index.append(slice(None))
            continue
        mask = nonzero.any(axis=tuple(i for i in builtins.range(filt.ndim) if i != ax))
        if not mask.any():
            index.append(slice(0, 0))
            continue
        start = int(mask.argmax()) if front else None
        stop = mask.size - int(mask[::-1].argmax()) if back else None
        index.append(slice(start, stop))
    return filt[tuple(index)]
