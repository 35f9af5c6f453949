"""Shape manipulation in funcgrad.numpy: reshape, transpose, stacking, splitting, padding."""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.interpreter import Tracer
from funcgrad.core.prims import structural as st
from funcgrad.core.tensor import Tensor, tensor
from funcgrad.numpy._util import (
    asarray,
    axis_or_flattened,
    broadcast_shapes,
    normalize_axes,
    normalize_axis,
    promote,
)
from funcgrad.numpy._util import broadcast_to as _broadcast_to


def _resolve_shape(name, shape, size):
    if isinstance(shape, (int, np.integer)) or (isinstance(shape, Tensor) and shape.ndim == 0):
        shape = (shape,)
    for d in shape if isinstance(shape, (tuple, list)) else ():
        if isinstance(d, Tracer):  # shapes must be known when tracing: say how
            raise d._concretization_error(f"{name}: use as a shape")
    try:
        shape = [operator.index(d) for d in shape]
    except TypeError:
        raise TypeError(f"{name}: shape must be a sequence of ints, got {tuple(shape)}") from None
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1:
        raise ValueError(f"{name}: can only specify one unknown dimension (-1), got {shape}")
    if unknown:
        known = math.prod([d for d in shape if d != -1])
        if known == 0 or size % known:
            raise ValueError(f"{name}: cannot reshape a tensor of size {size} into shape "
                             f"{tuple(shape)}")
        shape[unknown[0]] = size // known
    if math.prod(shape) != size or builtins.any(d < 0 for d in shape):
        raise ValueError(f"{name}: cannot reshape a tensor of size {size} into shape "
                         f"{tuple(shape)}")
    return tuple(shape)


def reshape(x, shape, order: str = "C"):
    """Same elements in a new shape (one entry may be -1); ``order="F"`` reads and writes
    them first index fastest, as NumPy.

    >>> fnp.reshape(fnp.arange(6), (2, -1))
    tensor([[0, 1, 2],
            [3, 4, 5]], dtype=int32)
    """
    if order not in ("C", "F"):
        raise ValueError(f"reshape: order must be 'C' or 'F', got {order!r}")
    x = asarray(x)
    shape = _resolve_shape("reshape", shape, x.size)
    if order == "F":  # C order on reversed axes
        flat = st.reshape(transpose(x), shape[::-1])
        return transpose(flat)
    return st.reshape(x, shape)


def ravel(x, order: str = "C"):
    """The elements as a 1-d tensor; ``order="F"`` first index fastest, as NumPy.

    >>> fnp.ravel(fnp.arange(6).reshape(2, 3), order="F")
    tensor([0, 3, 1, 4, 2, 5], dtype=int32)
    """
    return reshape(x, (-1,), order)


def transpose(x, axes=None):
    """Permute axes (reverse them by default).

    >>> fnp.transpose(fnp.ones((2, 3))).shape
    (3, 2)
    """
    x = asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))[::-1]
    axes = tuple(normalize_axis("transpose", a, x.ndim) for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"transpose: axes {axes} are not a permutation of {x.ndim} axes")
    return st.transpose(x, axes)


def permute_dims(x, axes):
    """Array-API name of ``transpose``."""
    return transpose(x, axes)


def swapaxes(x, axis1: int, axis2: int):
    """Exchange two axes."""
    x = asarray(x)
    a, b = normalize_axis("swapaxes", axis1, x.ndim), normalize_axis("swapaxes", axis2, x.ndim)
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return st.transpose(x, perm)


def moveaxis(x, source, destination):
    """Move axes to new positions, keeping the order of the others.

    >>> fnp.moveaxis(fnp.ones((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    x = asarray(x)
    src = [normalize_axis("moveaxis", a, x.ndim) for a in np.atleast_1d(source)]
    dst = [normalize_axis("moveaxis", a, x.ndim) for a in np.atleast_1d(destination)]
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination need the same number of axes")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src, strict=False)):
        order.insert(d, s)
    return st.transpose(x, order)


def expand_dims(x, axis):
    """Insert length-1 axes at the positions ``axis`` (int or tuple).

    >>> fnp.expand_dims(fnp.ones(3), 0).shape
    (1, 3)
    """
    x = asarray(x)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = x.ndim + len(axes)
    positions = sorted(normalize_axis("expand_dims", a, ndim) for a in axes)
    if len(set(positions)) != len(positions):
        raise ValueError(f"expand_dims: repeated axis in {tuple(axes)} (for a result of rank "
                         f"{ndim})")
    shape = list(x.shape)
    for p in positions:
        shape.insert(p, 1)
    return st.reshape(x, shape)


def squeeze(x, axis=None):
    """Remove length-1 axes (all of them by default)."""
    x = asarray(x)
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = normalize_axes("squeeze", axis, x.ndim)
        for a in axes:
            if x.shape[a] != 1:
                raise ValueError(f"squeeze: cannot squeeze axis {a} of size {x.shape[a]} "
                                 f"(shape {x.shape})")
    return st.reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def broadcast_to(x, shape):
    """``x`` broadcast to ``shape`` with NumPy's rules.

    >>> fnp.broadcast_to(fg.tensor([1.0, 2.0]), (3, 2)).shape
    (3, 2)
    """
    x = asarray(x)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if len(shape) < x.ndim or broadcast_shapes("broadcast_to", x.shape, shape) != shape:
        raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    return _broadcast_to(x, shape)


def broadcast_arrays(*xs):
    """All arguments broadcast to their common shape."""
    xs = [asarray(x) for x in xs]
    shape = broadcast_shapes("broadcast_arrays", *(x.shape for x in xs))
    return [_broadcast_to(x, shape) for x in xs]


def atleast_1d(*xs):
    """Each argument with at least one axis."""
    out = [reshape(x, (1,)) if asarray(x).ndim == 0 else asarray(x) for x in xs]
    return out[0] if len(out) == 1 else out


def atleast_2d(*xs):
    """Each argument with at least two axes (new axes in front)."""
    out = []
    for x in xs:
        x = asarray(x)
        out.append(st.reshape(x, (1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x)
    return out[0] if len(out) == 1 else out


def concatenate(arrays, axis: int | None = 0, dtype=None):
    """Join tensors along an existing axis (flattened first if ``axis`` is None).

    >>> fnp.concatenate([fnp.ones(2), fnp.zeros(3)]).shape
    (5,)
    """
    arrays = list(arrays)
    if not arrays:
        raise ValueError("concatenate: need at least one tensor")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    arrays = promote("concatenate", *arrays)
    if dtype is not None:
        arrays = [asarray(a, dtype) for a in arrays]
    ndim = arrays[0].ndim
    if ndim == 0:
        raise ValueError("concatenate: zero-dimensional tensors cannot be concatenated")
    axis = normalize_axis("concatenate", axis, ndim)
    for a in arrays[1:]:
        if a.ndim != ndim:
            raise ValueError(f"concatenate: tensors of shapes {arrays[0].shape} and {a.shape} "
                             f"have different numbers of dimensions ({ndim} and {a.ndim}); "
                             "every tensor needs the same rank (reshape or expand_dims first, "
                             "or use fnp.stack for a new axis)")
        if a.shape[:axis] != arrays[0].shape[:axis] or \
                a.shape[axis + 1:] != arrays[0].shape[axis + 1:]:
            raise ValueError(f"concatenate: shapes {arrays[0].shape} and {a.shape} differ "
                             f"outside axis {axis}")
    return st.concatenate(arrays, axis)


concat = concatenate


def stack(arrays, axis: int = 0, dtype=None):
    """Join same-shaped tensors along a new axis (converted to ``dtype`` when given).

    >>> fnp.stack([fnp.ones(2), fnp.zeros(2)]).shape
    (2, 2)
    """
    arrays = [asarray(a) if dtype is None else asarray(a).astype(dtype) for a in arrays]
    if not arrays:
        raise ValueError("stack: need at least one tensor")
    shape = arrays[0].shape
    for a in arrays[1:]:
        if a.shape != shape:
            raise ValueError(f"stack: all tensors need one shape, got {shape} and {a.shape}")
    axis = normalize_axis("stack", axis, len(shape) + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis)


def hstack(arrays, dtype=None):
    """Concatenate along axis 1 (axis 0 for 1-d inputs)."""
    arrays = [atleast_1d(a) for a in arrays]
    return concatenate(arrays, 0 if arrays[0].ndim == 1 else 1, dtype=dtype)


def vstack(arrays, dtype=None):
    """Concatenate along axis 0, treating 1-d inputs as rows."""
    return concatenate([atleast_2d(a) for a in arrays], 0, dtype=dtype)


def column_stack(arrays):
    """Stack 1-d tensors as columns of a 2-d tensor."""
    cols = [asarray(a) for a in arrays]
    cols = [st.reshape(c, (c.shape[0], 1)) if c.ndim == 1 else c for c in cols]
    return concatenate(cols, 1)


def split(x, indices_or_sections, axis: int = 0):
    """Split into pieces along ``axis``: N equal sections or at the given indices.

    >>> [p.shape for p in fnp.split(fnp.ones(6), 3)]
    [(2,), (2,), (2,)]
    """
    x = asarray(x)
    axis = normalize_axis("split", axis, x.ndim)
    n = x.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0 or n % sections:
            raise ValueError(f"split: axis {axis} of size {n} does not split into {sections} "
                             "equal sections (use array_split)")
        bounds = [i * (n // sections) for i in range(sections + 1)]
    else:
        try:
            points = [operator.index(i) for i in indices_or_sections]
        except TypeError:
            raise TypeError(f"split: indices_or_sections must be an int (the number of equal "
                            f"sections) or a sequence of int split points, got "
                            f"{indices_or_sections!r:.60}") from None
        # NumPy slices x[lo:hi] between the indices, so negative ones count from the end
        bounds = [0, *[builtins.min(builtins.max(i + n if i < 0 else i, 0), n)
                       for i in points], n]
    return [
        _take_range(x, axis, lo, builtins.max(lo, hi))
        for lo, hi in zip(bounds, bounds[1:], strict=False)
    ]


def array_split(x, indices_or_sections, axis: int = 0):
    """Split into N nearly equal pieces (the first ``size % N`` one longer), or at the
    given indices as :func:`split`.

    >>> [p.shape for p in fnp.array_split(fnp.ones(7), 3)]
    [(3,), (2,), (2,)]
    """
    x = asarray(x)
    axis = normalize_axis("array_split", axis, x.ndim)
    if not isinstance(indices_or_sections, (int, np.integer)):
        return split(x, indices_or_sections, axis)
    sections = int(indices_or_sections)
    if sections <= 0:
        raise ValueError(f"array_split: the number of sections must be positive, got "
                         f"{sections}")
    base, extra = divmod(x.shape[axis], sections)
    sizes = [base + (i < extra) for i in range(sections)]
    return split(x, np.cumsum(sizes)[:-1].tolist(), axis)


def _take_range(x, axis, lo, hi):
    start = [0] * x.ndim
    limit = list(x.shape)
    start[axis], limit[axis] = lo, hi
    return st.slice_(x, start, limit)


def flip(x, axis=None):
    """Reverse the order of elements along ``axis`` (all axes by default)."""
    x = asarray(x)
    return st.rev(x, normalize_axes("flip", axis, x.ndim))


def fliplr(x):
    """Reverse along axis 1."""
    return flip(x, 1)


def flipud(x):
    """Reverse along axis 0."""
    return flip(x, 0)


def roll(x, shift, axis=None):
    """Shift elements along ``axis`` cyclically (flattened if ``axis`` is None).

    >>> fnp.roll(fnp.arange(5), 2)
    tensor([3, 4, 0, 1, 2], dtype=int32)
    """
    x = asarray(x)
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), x.shape)
    axes = [normalize_axis("roll", a, x.ndim) for a in np.atleast_1d(axis).tolist()]
    if isinstance(shift, Tensor) and type(shift) is not Tensor:  # traced: gather
        if shift.ndim != 0 or len(axes) != 1:
            raise NotImplementedError("roll: a traced shift must be one scalar for one axis")
        n = x.shape[axes[0]]
        if n == 0:
            return x
        from funcgrad.numpy._elementwise import remainder
        from funcgrad.numpy._indexing import take

        positions = st.iota(dtypes.int32, (n,), 0) - shift.astype(dtypes.int32)
        return take(x, remainder(positions, n), axis=axes[0])
    shifts = np.atleast_1d(np.asarray(shift)).tolist()
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:  # several shifts of one axis add up (NumPy broadcasts the axis)
        shifts = [sum(shifts)]
    if len(shifts) != len(axes):
        raise ValueError(f"roll: {len(shifts)} shifts {tuple(shifts)} for {len(axes)} axes "
                         f"{tuple(axes)}; pass one shift per axis")
    for s, a in zip(shifts, axes, strict=False):
        n = x.shape[a]
        if n == 0:
            continue
        s = int(s) % n
        if s:
            x = st.concatenate((_take_range(x, a, n - s, n), _take_range(x, a, 0, n - s)), a)
    return x


def rot90(x, k: int = 1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes``."""
    x = asarray(x)
    a, b = (normalize_axis("rot90", ax, x.ndim) for ax in axes)
    k %= 4
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a), b)
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return st.transpose(flip(x, b), perm) if k == 1 else flip(st.transpose(x, perm), b)


def tile(x, reps):
    """Repeat the whole tensor ``reps`` times along each axis.

    >>> fnp.tile(fg.tensor([1, 2]), 2)
    tensor([1, 2, 1, 2], dtype=int32)
    """
    x = asarray(x)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    if builtins.any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must be non-negative, got {reps}")
    ndim = builtins.max(x.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    x = st.reshape(x, (1,) * (ndim - x.ndim) + x.shape)
    interleaved = []
    for r, d in zip(reps, x.shape, strict=False):
        interleaved += [r, d]
    expanded = st.broadcast_in_dim(x, tuple(interleaved), tuple(range(1, 2 * ndim, 2)))
    return st.reshape(expanded, tuple(r * d for r, d in zip(reps, x.shape, strict=False)))


def repeat(x, repeats, axis=None, *, total_repeat_length=None):
    """Repeat each element ``repeats`` times along ``axis`` (flattened by default).

    ``repeats`` may be a traced tensor (under ``jit``/``vmap``) when
    ``total_repeat_length`` fixes the result's length, as in JAX: a longer sum of repeats
    is cut there, a shorter one is filled with the last element.

    >>> fnp.repeat(fg.tensor([1, 2]), 2)
    tensor([1, 1, 2, 2], dtype=int32)
    >>> fnp.repeat(fg.tensor([1, 2, 3]), fg.tensor([2, 0, 1]), total_repeat_length=4)
    tensor([1, 1, 3, 3], dtype=int32)
    """
    x = asarray(x)
    x, axis = axis_or_flattened("repeat", x, axis)
    if total_repeat_length is not None:
        return _repeat_to_length(x, repeats, axis, total_repeat_length)
    if isinstance(repeats, Tracer):
        raise TypeError("repeat: repeats is a traced value, so the result's length is "
                        "unknown; pass total_repeat_length= (or concrete repeats)")
    if not isinstance(repeats, (int, np.integer)) and np.size(repeats) == 1:
        repeats = int(np.asarray(repeats).reshape(()))  # [2] or a 0-d array: as 2 (NumPy)
    if isinstance(repeats, (int, np.integer)):
        r = int(repeats)
        if r < 0:
            raise ValueError(f"repeat: repeats must be non-negative, got {r}")
        shape = x.shape[: axis + 1] + (r,) + x.shape[axis + 1:]
        dims = tuple(i if i <= axis else i + 1 for i in range(x.ndim))
        expanded = st.broadcast_in_dim(x, shape, dims)
        out = list(x.shape)
        out[axis] *= r
        return st.reshape(expanded, out)
    counts = np.asarray(repeats)
    if counts.size and counts.min() < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got {repeats}")
    if counts.shape != (x.shape[axis],):
        raise ValueError(f"repeat: repeats of shape {counts.shape} must match axis size "
                         f"{x.shape[axis]}")
    from funcgrad.numpy._indexing import take

    return take(x, np.repeat(np.arange(x.shape[axis]), counts).astype(np.int32), axis=axis)


def _repeat_to_length(x, repeats, axis, total):
    """repeat with a fixed result length: element i fills the positions from the sum of the
    repeats before it up to its own (a search in the running sum), the last element any
    positions past the whole sum."""
    from funcgrad.numpy._elementwise import minimum
    from funcgrad.numpy._indexing import searchsorted, take
    from funcgrad.numpy._reductions import cumsum

    if not isinstance(total, (int, np.integer)) or total < 0:
        raise ValueError(f"repeat: total_repeat_length must be a non-negative int, got "
                         f"{total!r}")
    n = x.shape[axis]
    counts = broadcast_to(asarray(repeats), (n,))
    if not dtypes.is_integer(counts.dtype):
        raise TypeError(f"repeat: repeats must be integers, got {counts.dtype}")
    if n == 0:
        if total:
            raise ValueError("repeat: cannot fill a positive total_repeat_length from an "
                             "empty axis")
        return x
    ends = cumsum(counts.astype(dtypes.int32))
    positions = asarray(np.arange(total, dtype=np.int32))
    index = searchsorted(ends, positions, side="right").astype(dtypes.int32)
    return take(x, minimum(index, n - 1), axis=axis)


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "maximum", "minimum",
              "mean", "median", "linear_ramp", "empty")
_PAD_STATISTICS = ("maximum", "minimum", "mean", "median")


def pad(x, pad_width, mode: str = "constant", constant_values=0, *, stat_length=None,
        end_values=0, reflect_type: str = "even"):
    """Pad with ``mode`` as ``numpy.pad``: constant, edge, reflect, symmetric (either
    ``reflect_type``: "even" mirrors the values, "odd" mirrors them through the edge value),
    wrap; the statistics maximum, minimum, mean, median (of ``stat_length`` values at each
    end, all by default); linear_ramp (to ``end_values``); empty (zeros here, as in JAX).

    >>> fnp.pad(fg.tensor([1.0, 2.0]), 1)
    tensor([0., 1., 2., 0.], dtype=float32)
    >>> fnp.pad(fg.tensor([1.0, 2.0, 6.0]), (2, 1), mode="mean")
    tensor([3., 3., 1., 2., 6., 3.], dtype=float32)
    """
    x = asarray(x)
    widths = _per_axis_pairs("pad_width", pad_width, x.shape)
    if builtins.any(w < 0 for pair in widths for w in pair):
        raise ValueError(f"pad: pad_width must be non-negative, got {pad_width}")
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode {mode!r} not supported; use one of {_PAD_MODES}")
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    if mode in ("reflect", "symmetric") and reflect_type == "odd":
        return _pad_odd(x, widths, mode)
    if mode == "empty":  # unspecified values in NumPy; zeros, as JAX
        mode, constant_values = "constant", 0
    if mode in _PAD_STATISTICS or mode == "linear_ramp":
        return _pad_computed(x, widths, mode, stat_length, end_values)
    if mode == "constant":
        value = asarray(constant_values, x.dtype)
        if not value.ndim:
            return st.pad(x, value, [(lo, hi, 0) for lo, hi in widths])
        # per-axis (before, after) values: padded axis by axis, so corners take the later
        # axis's value, as numpy.pad does
        try:
            values = broadcast_to(value, (x.ndim, 2))
        except ValueError:
            raise ValueError(f"pad: constant_values of shape {value.shape} does not fit a "
                             f"tensor of rank {x.ndim}; pass a scalar, a (before, after) "
                             "pair, or one pair per axis") from None
        for axis, (lo, hi) in enumerate(widths):
            for width, side in ((lo, 0), (hi, 1)):
                if width:
                    config = [(0, 0, 0)] * x.ndim
                    config[axis] = (width, 0, 0) if side == 0 else (0, width, 0)
                    x = st.pad(x, values[axis, side], config)
        return x
    for axis, (lo, hi) in enumerate(widths):
        n = x.shape[axis]
        if (lo or hi) and n == 0:
            raise ValueError(f"pad: cannot {mode}-pad an empty axis {axis}")
        parts = [_pad_side(x, axis, lo, mode, left=True), x,
                 _pad_side(x, axis, hi, mode, left=False)]
        x = st.concatenate([p for p in parts if p is not None and p.shape[axis]], axis)
    return x


def _pad_odd(x, widths, mode):
    """reflect/symmetric padding with reflect_type="odd": ``2 * edge - mirrored``, in
    chunks of at most one period (n - 1 values for reflect, n for symmetric), each mirrored
    through the edge the previous chunk left, as numpy.pad."""
    for axis, (lo, hi) in enumerate(widths):
        n = x.shape[axis]
        if (lo or hi) and n == 0:
            raise ValueError(f"pad: cannot {mode}-pad an empty axis {axis}")
        skip = 1 if mode == "reflect" and n > 1 else 0  # reflect leaves the edge out
        period = builtins.max(n - skip, 1)
        while lo or hi:
            size = x.shape[axis]
            left = right = None
            if lo:
                k = builtins.min(lo, period)
                edge = _slice_axis(x, axis, 0, 1)
                left = 2 * edge - flip(_slice_axis(x, axis, skip, skip + k), axis)
                lo -= k
            if hi:
                k = builtins.min(hi, period)
                edge = _slice_axis(x, axis, size - 1, size)
                right = 2 * edge - flip(_slice_axis(x, axis, size - skip - k, size - skip),
                                        axis)
                hi -= k
            x = st.concatenate([p for p in (left, x, right) if p is not None], axis)
    return x


def _per_axis_pairs(name, value, shape):
    """``value`` (an int, a (before, after) pair or one pair per axis) as a pair per axis."""
    try:
        given = np.asarray(value)
        if given.dtype.kind not in "iub":  # 1.5 was cut to 1
            raise TypeError(f"pad: {name} must be integers, got {value!r}")
        return np.broadcast_to(given.astype(np.int64), (len(shape), 2)).tolist()
    except ValueError:
        raise ValueError(f"pad: {name} {value!r} does not fit a tensor of shape {shape}; "
                         "pass an int, a (before, after) pair, or one pair per axis") from None


def _pad_computed(x, widths, mode, stat_length, end_values):
    """The statistic and linear_ramp modes: axis by axis, each axis padded from the result
    of the previous ones (so corners are computed from padded values, as numpy.pad)."""
    from funcgrad.numpy import _reductions as red
    from funcgrad.numpy import _statistics as stats

    statistic = {"maximum": red.max, "minimum": red.min, "mean": red.mean,
                 "median": stats.median}.get(mode)
    lengths = (_per_axis_pairs("stat_length", stat_length, x.shape)
               if stat_length is not None else None)
    if lengths is not None and builtins.any(n < 0 for pair in lengths for n in pair):
        raise ValueError(f"pad: stat_length must be non-negative, got {stat_length}")
    ends = None
    if mode == "linear_ramp":
        if isinstance(end_values, (Tensor, Tracer)):
            raise TypeError("pad: end_values must be Python numbers or a NumPy array")
        ends = np.broadcast_to(np.asarray(end_values), (x.ndim, 2))
    for axis, (lo, hi) in enumerate(widths):
        n = x.shape[axis]
        if not (lo or hi):
            continue
        if n == 0:
            raise ValueError(f"pad: cannot {mode}-pad an empty axis {axis}")
        sides = []
        for width, left in ((lo, True), (hi, False)):
            if not width:
                sides.append(None)
                continue
            if statistic is not None:
                count = n if lengths is None else builtins.min(lengths[axis][0 if left else 1], n)
                if count == 0:
                    raise ValueError(f"pad: stat_length of 0 for axis {axis} leaves no values "
                                     f"to take the {mode} of")
                chunk = _slice_axis(x, axis, 0, count) if left else \
                    _slice_axis(x, axis, n - count, n)
                value = statistic(chunk, axis=axis, keepdims=True)
                if not dtypes.is_inexact(x.dtype):
                    value = value.round() if mode in ("mean", "median") else value
                side = broadcast_to(value.astype(x.dtype),
                                    x.shape[:axis] + (width,) + x.shape[axis + 1:])
            else:
                edge = _slice_axis(x, axis, 0, 1) if left else _slice_axis(x, axis, n - 1, n)
                side = _ramp(edge, ends[axis][0 if left else 1], width, axis, left, x.dtype)
            sides.append(side)
        parts = [sides[0], x, sides[1]]
        x = st.concatenate([p for p in parts if p is not None], axis)
    return x


def _slice_axis(x, axis, start, stop):
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, stop)
    return x[tuple(index)]


def _ramp(edge, end, width, axis, left, dtype):
    """``width`` values from ``end`` towards ``edge`` (excluded), along ``axis``; reversed on
    the right, as numpy.pad's linear_ramp (integers truncated as numpy.linspace does)."""
    compute = dtype if dtypes.is_inexact(dtype) else np.dtype(np.float64)
    steps = np.arange(width, dtype=np.float64) / width  # 0 .. (width-1)/width
    shape = [1] * edge.ndim
    shape[axis] = width
    steps = asarray(steps.reshape(shape), compute)
    if not left:
        steps = flip(steps, axis)
    start = asarray(end, compute)
    ramp = start + (edge.astype(compute) - start) * steps
    return ramp.astype(dtype)


def _pad_side(x, axis, width, mode, left):
    if width == 0:
        return None
    n = x.shape[axis]
    if mode == "edge":
        idx = [0] * width if left else [n - 1] * width
    elif mode == "wrap":
        idx = [(i - width) % n for i in range(width)] if left else [i % n for i in range(width)]
    elif mode == "reflect":
        period = builtins.max(2 * (n - 1), 1)
        ref = lambda i: builtins.min(i % period, period - i % period) if n > 1 else 0
        idx = [ref(width - i) for i in range(width)] if left else \
            [ref(n - 1 + i + 1) for i in range(width)]
    else:  # symmetric
        period = 2 * n
        ref = lambda i: i % period if i % period < n else period - 1 - i % period
        idx = [ref(-width + i) for i in range(width)] if left else \
            [ref(n + i) for i in range(width)]
    from funcgrad.numpy._indexing import take

    return take(x, np.asarray(idx, dtype=np.int32), axis=axis)


def diagonal(x, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The diagonal of the (axis1, axis2) planes, as a last axis."""
    x = asarray(x)
    a = normalize_axis("diagonal", axis1, x.ndim)
    b = normalize_axis("diagonal", axis2, x.ndim)
    x = moveaxis(x, (a, b), (-2, -1))
    rows, cols = x.shape[-2:]
    i = np.arange(builtins.max(0, builtins.min(rows, cols - offset) if offset >= 0 else
                               builtins.min(rows + offset, cols)))
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    from funcgrad.core.prims.indexing import gather

    idx = np.stack([r, c], axis=-1).astype(np.int32)
    out = gather(x, asarray(idx), (x.ndim - 2, x.ndim - 1))
    return moveaxis(out, 0, -1)


def trace(x, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """Sum of the diagonal."""
    from funcgrad.numpy._reductions import sum as _sum

    return _sum(diagonal(x, offset, axis1, axis2), axis=-1)


def diag(v, k: int = 0):
    """Diagonal of a 2-d tensor, or a 2-d tensor with ``v`` on its diagonal."""
    v = asarray(v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f"diag: input must be 1-d or 2-d, got shape {v.shape}")
    n = v.shape[0] + builtins.abs(k)
    from funcgrad.numpy._creation import eye, zeros_like

    mask = eye(n, k=k, dtype=dtypes.bool_)
    positions = np.arange(v.shape[0])
    from funcgrad.numpy._indexing import take

    col = positions + builtins.max(k, 0)
    src = np.zeros((n, n), np.int32)
    src[positions + builtins.max(-k, 0), col] = positions
    picked = take(v, asarray(src))
    from funcgrad.numpy._elementwise import where

    return where(mask, picked, zeros_like(picked))  # v's dtype: a bool 0 stays bool


def tril(x, k: int = 0):
    """Lower triangle of the last two axes (zeros above diagonal ``k``)."""
    x = asarray(x)
    from funcgrad.numpy._creation import tri, zeros_like
    from funcgrad.numpy._elementwise import where

    mask = tri(x.shape[-2], x.shape[-1], k, dtype=dtypes.bool_)
    return where(mask, x, zeros_like(x))  # x's dtype: a bool 0 stays bool


def triu(x, k: int = 0):
    """Upper triangle of the last two axes (zeros below diagonal ``k``)."""
    x = asarray(x)
    from funcgrad.numpy._creation import tri, zeros_like
    from funcgrad.numpy._elementwise import where

    mask = tri(x.shape[-2], x.shape[-1], k - 1, dtype=dtypes.bool_)
    return where(mask, zeros_like(x), x)  # x's dtype: a bool 0 stays bool


def diff(x, n: int = 1, axis: int = -1, prepend=None, append=None):
    """``n``-th differences along ``axis`` (``prepend``/``append`` values first), as
    ``numpy.diff``.

    >>> fnp.diff(fg.tensor([1, 4, 9, 16]))
    tensor([3, 5, 7], dtype=int32)
    """
    x = asarray(x)
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    axis = normalize_axis("diff", axis, x.ndim)
    def edge(values):  # a scalar becomes one slice of x's shape
        # (tensor(): a Python number stays weak, so int16 data with append=0 stays int16)
        values = values if isinstance(values, Tensor) else tensor(values)
        shape = list(x.shape)
        shape[axis] = 1 if values.ndim == 0 else values.shape[axis]
        return _broadcast_to(values, tuple(shape))

    if prepend is not None or append is not None:
        x = concatenate([*([edge(prepend)] if prepend is not None else []), x,
                         *([edge(append)] if append is not None else [])], axis=axis)
    # booleans differ where they change (as JAX; NumPy refuses bool subtraction)
    step = operator.ne if x.dtype == dtypes.bool_ else operator.sub
    for _ in range(n):
        size = x.shape[axis]
        # (a zero-length axis stays one: slicing [1:0] is out of range when traced)
        x = step(_take_range(x, axis, builtins.min(1, size), size),
                 _take_range(x, axis, 0, builtins.max(size - 1, 0)))
    return x


def copy(a):
    """A copy of ``a`` in a buffer of its own, as ``jnp.copy``: it stays valid when ``a``
    is donated to a jit call (``donate_argnums``), and changing a NumPy array afterwards
    does not change it.  Traced values are returned as they are (values are immutable).

    >>> fnp.copy(fg.tensor([1.0, 2.0]))
    tensor([1., 2.], dtype=float32)
    """
    if type(a) is Tensor:
        from funcgrad.core.tensor import wrap

        return wrap(a._buf.copy(), a._weak)
    return a if isinstance(a, Tensor) else tensor(a)


def astype(x, dtype):
    """``x`` converted to ``dtype`` (the array API's function form of ``x.astype``)."""
    return asarray(x).astype(dtype)


# the public names are this module's own functions (not the helpers it imports)
__all__ = [_name for _name, _value in list(globals().items()) if not _name.startswith("_")
           and getattr(_value, "__module__", None) == __name__]


def shape(x) -> tuple:
    """The shape of ``x`` (anything ``fnp.asarray`` accepts)."""
    return tuple(asarray(x).shape)


def ndim(x) -> int:
    """The number of axes of ``x``."""
    return asarray(x).ndim


def size(x, axis=None) -> int:
    """The number of elements of ``x`` (along ``axis`` if given)."""
    x = asarray(x)
    return x.size if axis is None else x.shape[normalize_axis("size", axis, x.ndim)]


__all__ += ["shape", "ndim", "size"]
