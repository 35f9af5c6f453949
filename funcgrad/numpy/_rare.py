"""The rest of jax.numpy's names: index tricks (``r_``, ``c_``, ``mgrid``...), assembling
and applying along axes, deleting, inserting and placing elements, NaN-ignoring order
statistics, the array-API ``unique_*`` functions, bit counts, and NumPy's printing, buffer
and file helpers; each a composition of funcgrad.numpy functions, so it differentiates,
batches and compiles like them wherever its output shape does not depend on its values.

``complex_`` and ``uint`` are, as in JAX, the ``complex128`` and ``uint64`` scalar types;
``s_``, ``index_exp``, ``ComplexWarning``, ``printoptions``, ``get_printoptions`` and
``set_printoptions`` are NumPy's own objects, as JAX re-exports them."""

from __future__ import annotations

import builtins
import math
from typing import NamedTuple

import numpy as np

from funcgrad.core import dtypes, gpu
from funcgrad.core.prims.bitcast import bitcast_convert_type
from funcgrad.core.tensor import Tensor
from funcgrad.core.tensor import tensor as _tensor
from funcgrad.numpy import _creation as cre
from funcgrad.numpy import _elementwise as elt
from funcgrad.numpy import _reductions as red
from funcgrad.numpy import _shape as shp
from funcgrad.numpy._einsum import _from_interleaved
from funcgrad.numpy._indexing import argsort, nonzero, sort, take, take_along_axis
from funcgrad.numpy._more import _immutable
from funcgrad.numpy._scalar_types import SCALAR_TYPES
from funcgrad.numpy._signal import _static_int
from funcgrad.numpy._statistics import _METHODS, interpolate, no_out
from funcgrad.numpy._util import (
    asarray,
    axis_or_flattened,
    broadcast_to,
    is_concrete,
    normalize_axes,
    normalize_axis,
    promote,
)
from funcgrad.numpy._util import broadcast_shapes as _broadcast_shapes

__all__ = [
    "euler_gamma", "ComplexWarning", "complex_", "uint",
    "bitwise_count", "bitwise_left_shift", "bitwise_right_shift",
    "s_", "index_exp", "mgrid", "ogrid", "r_", "c_",
    "block", "broadcast_shapes", "apply_along_axis", "apply_over_axes", "fromfunction",
    "array_equiv", "compress", "extract", "delete", "insert", "place", "fill_diagonal",
    "mask_indices",
    "nanquantile", "nanpercentile", "nanmedian", "poly", "sort_complex",
    "unique_all", "unique_counts", "unique_inverse", "unique_values",
    "iterable", "array_repr", "array_str", "printoptions", "get_printoptions",
    "set_printoptions", "from_dlpack", "frombuffer", "fromstring", "fromiter", "fromfile",
    "einsum_path", "save", "savez", "load",
]

euler_gamma = np.euler_gamma
ComplexWarning = np.exceptions.ComplexWarning
# the same objects as fnp.complex128 and fnp.uint64, as jnp.complex_ is jnp.complex128
complex_ = SCALAR_TYPES["complex128"]
uint = SCALAR_TYPES["uint64"]

# NumPy's own objects, as jax.numpy re-exports them
s_ = np.s_
index_exp = np.index_exp
printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions

# the same functions as left_shift and right_shift, as in jax.numpy
bitwise_left_shift = elt.left_shift
bitwise_right_shift = elt.right_shift


def _traced(x) -> bool:
    return isinstance(x, Tensor) and not is_concrete(x)


# --- bit counts ------------------------------------------------------------------------------


def bitwise_count(x, /):
    """The number of 1 bits in ``|x|`` (uint8), as ``jax.numpy.bitwise_count``.

    >>> fnp.bitwise_count(fg.tensor([0, 5, -1, 255]))
    tensor([0, 2, 1, 8], dtype=uint8)
    """
    x = asarray(x)
    if x.dtype == dtypes.bool_:
        return x.astype(dtypes.uint8)
    if not dtypes.is_integer(x.dtype):
        raise TypeError(f"bitwise_count: x must be integers or booleans, got {x.dtype.name}")
    width = x.dtype.itemsize
    if x.dtype.kind == "i":  # |x| as the unsigned integer of its bits (|int8 -128| is 128)
        x = bitcast_convert_type(elt.abs(x), np.dtype(f"uint{8 * width}"))

    def mask(byte: int):
        return int.from_bytes(bytes([byte]) * width, "little")

    # count the bits of every 2, then 4, then 8 bits in place; then add up the bytes
    x = x - elt.bitwise_and(elt.right_shift(x, 1), mask(0x55))
    x = elt.bitwise_and(x, mask(0x33)) + elt.bitwise_and(elt.right_shift(x, 2), mask(0x33))
    x = elt.bitwise_and(x + elt.right_shift(x, 4), mask(0x0F))
    shift = 8
    while shift < 8 * width:
        x = x + elt.right_shift(x, shift)
        shift *= 2
    return elt.bitwise_and(x, 0xFF).astype(dtypes.uint8)


# --- index tricks: mgrid, ogrid, r_, c_ ------------------------------------------------------


def _static_number(name, what, value):
    if _traced(value):
        raise TypeError(f"{name}: the slice {what} is traced here (jit/vmap/grad), but it "
                        "fixes the result's shape; use a Python number")
    return value.item() if isinstance(value, Tensor) else value


def _grid_1d(name, s: slice):
    """The points of one slice ``start:stop:step``; an imaginary step ``Nj`` means ``N``
    points from ``start`` to ``stop`` inclusive (``linspace``)."""
    start = _static_number(name, "start", s.start) or 0
    stop = _static_number(name, "stop", s.stop)
    step = _static_number(name, "step", s.step) or 1
    if stop is None:
        raise ValueError(f"{name}: each slice needs a stop, got {s}")
    if isinstance(step, complex) or np.iscomplexobj(step):
        return cre.linspace(start, stop, int(abs(step)))
    return cre.arange(start, stop, step)


def _grids(name, key):
    if isinstance(key, slice):
        return None
    if not isinstance(key, tuple) or not builtins.all(isinstance(k, slice) for k in key):
        raise TypeError(f"{name}: index with slices, e.g. {name}[0:3, 0:4], got {key!r}")
    return promote(name, *(_grid_1d(name, k) for k in key)) if key else []


class _MGrid:
    """Dense coordinate grids from slices, as ``jax.numpy.mgrid`` (a complex step ``Nj``
    means ``N`` points, stop included).

    >>> fnp.mgrid[0:2, 0:3]
    tensor([[[0, 0, 0],
             [1, 1, 1]],
    <BLANKLINE>
            [[0, 1, 2],
             [0, 1, 2]]], dtype=int32)
    """

    def __getitem__(self, key):
        grids = _grids("mgrid", key)
        if grids is None:
            return _grid_1d("mgrid", key)
        if not grids:
            return cre.arange(0)
        return shp.stack(cre.meshgrid(*grids, indexing="ij"))

    def __repr__(self):
        return "fnp.mgrid"


class _OGrid:
    """Open (broadcastable) coordinate grids from slices: a list of tensors, each varying
    along its own axis, as ``jax.numpy.ogrid``.

    >>> [g.shape for g in fnp.ogrid[0:2, 0:3]]
    [(2, 1), (1, 3)]
    """

    def __getitem__(self, key):
        grids = _grids("ogrid", key)
        if grids is None:
            return _grid_1d("ogrid", key)
        n = len(grids)
        return [shp.reshape(g, (1,) * i + (g.shape[0],) + (1,) * (n - i - 1))
                for i, g in enumerate(grids)]

    def __repr__(self):
        return "fnp.ogrid"


mgrid = _MGrid()
ogrid = _OGrid()


def _at_least(x, ndmin: int):
    return shp.reshape(x, (1,) * (ndmin - x.ndim) + x.shape) if x.ndim < ndmin else x


class _AxisConcatenator:
    """``r_`` and ``c_``: concatenate slices (as ``arange``/``linspace``), scalars and
    tensors; an optional leading string ``"axis,ndmin,trans1d"`` (or ``"r"``/``"c"``)
    directs how, as NumPy's and JAX's."""

    name: str
    axis: int
    ndmin: int
    trans1d: int

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, -1
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive in ("r", "c"):
                matrix = 0 if directive == "r" else 1
            else:
                params = [axis, ndmin, trans1d]  # the fields not given keep their defaults
                try:
                    numbers = [int(f) for f in directive.split(",")[:3]]
                except ValueError:
                    raise ValueError(f"{self.name}: could not understand the directive "
                                     f"{directive!r}; use 'axis,ndmin,trans1d' integers or "
                                     "'r'/'c'") from None
                params[:len(numbers)] = numbers
                axis, ndmin, trans1d = params
        pieces = []
        for item in items:
            if isinstance(item, str):
                raise ValueError(f"{self.name}: a string directive must come first, got "
                                 f"{item!r} later")
            if isinstance(item, slice):
                piece, item_ndim = _grid_1d(self.name, item), 0
            else:
                piece = asarray(item)
                item_ndim = piece.ndim
            piece = _at_least(piece, ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                # the item's own axes end at position trans1d (NumPy's rule)
                shifts = ndmin - builtins.abs(ndmin + trans1d + 1) % ndmin
                order = tuple(range(ndmin))
                piece = shp.transpose(piece, order[shifts:] + order[:shifts])
            pieces.append(piece)
        if not pieces:
            raise ValueError(f"{self.name}: nothing to concatenate")
        out = shp.concatenate(promote(self.name, *pieces), axis=axis)
        if matrix != -1 and out.ndim == 1:
            out = shp.expand_dims(out, matrix)
        return out

    def __len__(self):
        return 0

    def __repr__(self):
        return f"fnp.{self.name}"


class _RConcatenator(_AxisConcatenator):
    """Concatenate along the first axis, as ``jax.numpy.r_``.

    >>> fnp.r_[0:3, 7, fg.tensor([8, 9])]
    tensor([0, 1, 2, 7, 8, 9], dtype=int32)
    >>> fnp.r_["0,2", [1, 2], [3, 4]]
    tensor([[1, 2],
            [3, 4]], dtype=int32)
    """

    name, axis, ndmin, trans1d = "r_", 0, 1, -1


class _CConcatenator(_AxisConcatenator):
    """Stack 1-d inputs as columns (concatenate along the last axis, at least 2-d), as
    ``jax.numpy.c_``.

    >>> fnp.c_[fg.tensor([1, 2]), fg.tensor([3, 4])]
    tensor([[1, 3],
            [2, 4]], dtype=int32)
    """

    name, axis, ndmin, trans1d = "c_", -1, 2, 0


r_ = _RConcatenator()
c_ = _CConcatenator()


# --- assembling tensors and applying functions along axes -----------------------------------


def _block(arrays, path: str):
    """The assembled tensor of the nested lists ``arrays`` and their depth."""
    if isinstance(arrays, tuple):
        raise TypeError(f"block: {path} is a tuple; nest lists, not tuples")
    if not isinstance(arrays, list):
        return asarray(arrays), 1
    if not arrays:
        raise ValueError(f"block: {path} is an empty list")
    parts = [_block(a, f"{path}[{i}]") for i, a in enumerate(arrays)]
    depths = {depth for _, depth in parts}
    if len(depths) != 1:
        raise ValueError(f"block: the lists in {path} are nested to different depths "
                         f"{sorted(depths)}; every entry must be nested equally deep")
    depth = depths.pop()
    rank = builtins.max(depth, *(p.ndim for p, _ in parts))
    pieces = promote("block", *(_at_least(p, rank) for p, _ in parts))
    return shp.concatenate(pieces, axis=-depth), depth + 1


def block(arrays):
    """Assemble a tensor from nested lists of blocks: the innermost lists are joined along
    the last axis, the next ones along the one before, ..., as ``jax.numpy.block``.

    >>> fnp.block([[fnp.ones((2, 2)), fnp.zeros((2, 1))], [fnp.zeros((1, 3))]]).shape
    (3, 3)
    """
    out, _ = _block(arrays, "arrays")
    return out


def broadcast_shapes(*shapes) -> tuple:
    """The shape that ``shapes`` broadcast to (ints count as 1-d shapes), as
    ``jax.numpy.broadcast_shapes``.

    >>> fnp.broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    if not shapes:
        return ()
    shapes = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    for shape in shapes:
        if not builtins.all(isinstance(d, (int, np.integer)) and d >= 0 for d in shape):
            raise TypeError(f"broadcast_shapes: shapes must be tuples of non-negative ints, "
                            f"got {shape!r}")
    return tuple(int(d) for d in _broadcast_shapes("broadcast_shapes", *shapes))


def apply_along_axis(func1d, axis: int, arr, *args, **kwargs):
    """``func1d(v, *args, **kwargs)`` on each 1-d slice ``v`` of ``arr`` along ``axis``; the
    slice's axis is replaced by the axes of ``func1d``'s result, as
    ``jax.numpy.apply_along_axis`` (``func1d`` is batched by ``vmap``, not looped).

    >>> fnp.apply_along_axis(lambda v: v[0] + v[-1], 1, fg.tensor([[1, 2, 3], [4, 5, 6]]))
    tensor([ 4, 10], dtype=int32)
    """
    from funcgrad.transforms.batching import vmap

    arr = asarray(arr)
    axis = normalize_axis("apply_along_axis", axis, arr.ndim)
    func = lambda v: func1d(v, *args, **kwargs)
    for i in range(1, arr.ndim - axis):
        func = vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = vmap(func, in_axes=0, out_axes=0)
    return func(arr)


def apply_over_axes(func, a, axes):
    """Apply ``func(a, axis)`` for each axis in ``axes`` in turn, keeping the rank (a
    dropped axis comes back with length 1), as ``jax.numpy.apply_over_axes``.

    >>> fnp.apply_over_axes(fnp.sum, fg.tensor([[1, 2], [3, 4]]), [0, 1])
    tensor([[10]], dtype=int32)
    """
    a = asarray(a)
    for axis in ((axes,) if isinstance(axes, (int, np.integer)) else axes):
        b = asarray(func(a, axis))
        if b.ndim == a.ndim - 1:
            b = shp.expand_dims(b, axis)
        elif b.ndim != a.ndim:
            raise ValueError(f"apply_over_axes: func(a, {axis}) gave shape {b.shape} for a "
                             f"of shape {a.shape}; it must keep the rank or drop one axis")
        a = b
    return a


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function(i, j, ...)`` at every index of ``shape``, as ``jax.numpy.fromfunction``:
    ``function`` is batched by ``vmap`` over the coordinates (``dtype``: float32 by
    default), so it sees scalars; ``kwargs`` are passed to it unbatched.

    >>> fnp.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=int)
    tensor([[ 0,  1,  2],
            [10, 11, 12]], dtype=int32)
    """
    from funcgrad.transforms.batching import vmap

    sizes = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    sizes = tuple(_static_int("fromfunction", "shape", s) for s in sizes)
    if builtins.any(s < 0 for s in sizes):
        raise ValueError(f"fromfunction: shape must be non-negative, got {sizes}")
    dtype = dtypes.canonicalize(dtype)
    func = lambda *index: function(*index, **kwargs)
    for i in range(len(sizes)):
        in_axes = tuple(0 if j == len(sizes) - 1 - i else None for j in range(len(sizes)))
        func = vmap(func, in_axes=in_axes)
    return asarray(func(*(cre.arange(s, dtype=dtype) for s in sizes)))


# --- comparing, selecting, deleting and inserting -------------------------------------------


def array_equiv(a1, a2):
    """Whether ``a1`` and ``a2`` broadcast together and are equal everywhere (a bool
    tensor; False for shapes that do not broadcast), as ``jax.numpy.array_equiv``.

    >>> fnp.array_equiv(fg.tensor([1, 2]), fg.tensor([[1, 2], [1, 2]]))
    tensor(True, dtype=bool)
    """
    a1, a2 = asarray(a1), asarray(a2)
    try:
        _broadcast_shapes("array_equiv", a1.shape, a2.shape)
    except ValueError:
        return asarray(False)
    return red.all(elt.equal(a1, a2))


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """The slices of ``a`` along ``axis`` (of the flattened ``a`` when None) where the 1-d
    ``condition`` is true, as ``jax.numpy.compress``.

    Their number depends on the values, so a traced ``condition`` (jit, vmap) needs
    ``size``: the first ``size`` selected slices, padded with ``fill_value``.  A
    ``condition`` shorter than the axis selects among the first entries only; one longer
    must be false past the axis.

    >>> fnp.compress(fg.tensor([True, False, True]), fg.tensor([[1, 2, 3], [4, 5, 6]]), axis=1)
    tensor([[1, 3],
            [4, 6]], dtype=int32)
    """
    no_out("compress", out)
    condition, a = asarray(condition), asarray(a)
    if condition.ndim != 1:
        raise ValueError(f"compress: condition must be 1-d, got shape {condition.shape}")
    condition = elt.not_equal(condition, 0) if condition.dtype != dtypes.bool_ else condition
    a, axis = axis_or_flattened("compress", a, axis)
    moved = shp.moveaxis(a, axis, 0)
    length = moved.shape[0]
    condition, extra = condition[:length], condition[length:]
    moved = moved[:condition.shape[0]]
    if size is None:
        if _traced(condition):
            raise TypeError("compress: the result's shape depends on condition, which is "
                            "traced here (jit/vmap/grad); pass size= (and fill_value=)")
        if np.any(np.asarray(extra)):
            raise ValueError(f"compress: condition has true entries past the {length} "
                             f"entries of axis {axis}")
        chosen = np.flatnonzero(np.asarray(condition)).astype(np.int32)
        result = take(moved, asarray(chosen), axis=0)
    else:
        size = _static_int("compress", "size", size)
        if not 0 <= size <= moved.shape[0]:
            raise ValueError(f"compress: size must be in [0, {moved.shape[0]}] (the length "
                             f"of axis {axis}), got {size}")
        keep = shp.reshape(condition, condition.shape + (1,) * (moved.ndim - 1))
        moved = elt.where(keep, moved, asarray(fill_value, moved.dtype))
        order = argsort(condition.astype(dtypes.int32), stable=True, descending=True)
        result = take(moved, order[:size], axis=0)
    return shp.moveaxis(result, 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of ``arr`` where ``condition`` is true, flattened, as
    ``jax.numpy.extract`` (see ``compress`` for ``size`` and ``fill_value``).

    >>> fnp.extract(fg.tensor([[True, False], [False, True]]), fg.tensor([[1, 2], [3, 4]]))
    tensor([1, 4], dtype=int32)
    """
    return compress(shp.ravel(asarray(condition)), shp.ravel(asarray(arr)), size=size,
                    fill_value=fill_value)


def _static_indices(name, arg, values, length: int, axis: int, *, end: bool = False):
    """Concrete integer ``values`` made non-negative; an IndexError unless each is in
    ``[-length, length)`` (``[-length, length]`` with ``end``: positions to insert at)."""
    outside = (values < -length) | (values > length if end else values >= length)
    if np.any(outside):
        raise IndexError(f"{name}: {arg} index {int(values[outside][0])} is out of bounds "
                         f"for axis {axis} with size {length}")
    return np.where(values < 0, values + length, values)


def delete(arr, obj, axis=None, *, assume_unique_indices: bool = False):
    """``arr`` without the entries ``obj`` (an int, a slice, integer indices or a boolean
    mask) along ``axis`` (of the flattened ``arr`` when None), as ``jax.numpy.delete``.

    ``obj`` fixes the result's shape, so it must be concrete; under jit pass traced integer
    indices with ``assume_unique_indices=True`` (no duplicates; out-of-range ones are
    clipped, as JAX).

    >>> fnp.delete(fg.tensor([10, 20, 30, 40]), [0, 2])
    tensor([20, 40], dtype=int32)
    """
    a = asarray(arr)
    a, axis = axis_or_flattened("delete", a, axis)
    length = a.shape[axis]
    if isinstance(obj, slice):
        obj = np.arange(length)[obj]
    elif isinstance(obj, (bool, np.bool_)):
        raise TypeError("delete: obj must be integer indices, a slice or a boolean mask "
                        "tensor, got a bool")
    elif _traced(obj):
        indices = asarray(obj)
        if not (dtypes.is_integer(indices.dtype) and assume_unique_indices):
            raise TypeError("delete: obj is traced here (jit/vmap/grad), but it fixes the "
                            "result's shape; pass concrete indices, or unique traced integer "
                            "indices with assume_unique_indices=True")
        return _delete_unique(a, indices, axis)
    obj = np.asarray(obj)
    if obj.dtype == np.bool_:
        if obj.shape != (length,):
            raise ValueError(f"delete: a boolean obj must be a mask of shape ({length},) "
                             f"(axis {axis}), got shape {obj.shape}")
        keep = ~obj
    elif obj.dtype.kind in "iu" or obj.size == 0:
        if obj.ndim > 1:
            raise ValueError(f"delete: obj must be 0-d or 1-d, got shape {obj.shape}")
        keep = np.ones(length, np.bool_)
        keep[_static_indices("delete", "obj", obj.astype(np.int64), length, axis)] = False
    else:
        raise TypeError(f"delete: obj must be integer indices, a slice or a boolean mask, "
                        f"got {obj.dtype.name}")
    return take(a, asarray(np.flatnonzero(keep).astype(np.int32)), axis=axis)


def _delete_unique(a, indices, axis):
    """``a`` without the unique (traced) ``indices`` along ``axis``: the kept positions are
    ``0 .. n-k-1``, each shifted past the sorted deleted ones at or below it."""
    length = a.shape[axis]
    indices = shp.ravel(indices).astype(dtypes.int32)
    indices = elt.clip(elt.where(indices < 0, indices + length, indices), 0, length)
    count = indices.shape[0]
    shifted = sort(indices) - cre.arange(count, dtype=dtypes.int32)
    kept = cre.arange(length - count, dtype=dtypes.int32)
    kept = kept + red.sum((kept[None, :] >= shifted[:, None]).astype(dtypes.int32), axis=0)
    return take(a, kept, axis=axis)


def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before the positions ``obj`` (an int, a slice or
    integer indices, all into the original ``arr``) along ``axis`` (of the flattened
    ``arr`` when None), as ``jax.numpy.insert``; ``values`` are cast to ``arr``'s dtype.

    Works under jit with traced ``obj`` and ``values`` (traced out-of-range indices are
    clipped, as JAX; concrete ones raise IndexError).

    >>> fnp.insert(fg.tensor([1, 2, 3]), 1, fg.tensor([8, 9]))
    tensor([1, 8, 9, 2, 3], dtype=int32)
    """
    a = asarray(arr)
    a, axis = axis_or_flattened("insert", a, axis)
    length = a.shape[axis]
    if isinstance(obj, slice):
        indices = asarray(np.arange(*obj.indices(length), dtype=np.int32))
    else:
        indices = asarray(obj)
        if indices.ndim > 1:
            raise ValueError(f"insert: obj must be an int, a slice or 1-d indices, got shape "
                             f"{indices.shape}")
        if indices.size == 0 and not isinstance(obj, Tensor):
            indices = indices.astype(dtypes.int32)
        if not dtypes.is_integer(indices.dtype):
            raise TypeError(f"insert: obj must be integer indices, got {indices.dtype.name}")
        if is_concrete(indices):
            concrete = np.asarray(indices).astype(np.int64)
            _static_indices("insert", "obj", concrete, length, axis, end=True)
    values = asarray(values).astype(a.dtype)
    if values.ndim > a.ndim:
        raise ValueError(f"insert: values has shape {values.shape}, more axes than arr "
                         f"{a.shape}")
    values = _at_least(values, a.ndim)
    if indices.size == 1:
        index = shp.ravel(indices)[0]
        if indices.ndim == 0:  # one position: values' leading axis is the inserted one
            values = shp.moveaxis(values, 0, axis)
        indices = broadcast_to(shp.reshape(index, (1,)), (values.shape[axis],))
    count, given = indices.shape[0], values.shape[axis]
    if given not in (1, count):
        raise ValueError(f"insert: obj gives {count} positions but values has {given} "
                         f"entries along axis {axis}")
    block_shape = a.shape[:axis] + (count,) + a.shape[axis + 1:]
    try:
        values = broadcast_to(values, _broadcast_shapes("insert", values.shape, block_shape))
    except ValueError:
        values = None
    if values is None or values.shape != block_shape:
        raise ValueError(f"insert: values do not broadcast to the inserted block's shape "
                         f"{block_shape}")
    indices = indices.astype(dtypes.int32)
    indices = elt.clip(elt.where(indices < 0, indices + length, indices), 0, length)
    # each inserted entry lands after the originals before it and the inserted ones
    # sorted ahead of it
    spots = indices.at[argsort(indices)].add(cre.arange(count, dtype=dtypes.int32))
    keep = cre.ones((length + count,), dtypes.bool_).at[spots].set(False)
    (original_spots,) = nonzero(keep, size=length)
    lead = (slice(None),) * axis
    out = cre.zeros(a.shape[:axis] + (length + count,) + a.shape[axis + 1:], a.dtype)
    out = out.at[lead + (spots,)].set(values)
    return out.at[lead + (original_spots,)].set(a)


def _tile_to(x, n: int):
    """The 1-d ``x`` repeated cyclically to length ``n``."""
    if x.shape[0] < n:
        x = shp.tile(x, -(-n // x.shape[0]))
    return x[:n]


def place(arr, mask, vals, *, inplace: bool = True):
    """``arr`` with its entries where ``mask`` is true replaced, in order, by ``vals``
    (flattened, repeated cyclically as needed), as ``jax.numpy.place``: a new tensor, so
    pass ``inplace=False``.

    >>> fnp.place(fg.tensor([1, 2, 3, 4]), fg.tensor([True, False, True, True]),
    ...           fg.tensor([7, 8]), inplace=False)
    tensor([7, 2, 8, 7], dtype=int32)
    """
    if inplace:
        raise _immutable("place")
    data, mask, vals = asarray(arr), asarray(mask), shp.ravel(asarray(vals))
    if data.size != mask.size:
        raise ValueError(f"place: arr has {data.size} elements but mask has {mask.size}; "
                         "they must be the same size")
    if vals.size == 0:
        raise ValueError("place: vals must not be empty")
    if data.size == 0:
        return data
    # each masked entry takes the value of its rank among the masked ones (a gather, so
    # the gradient reaches exactly the values used)
    chosen = elt.not_equal(shp.ravel(mask), 0)
    rank = red.cumsum(chosen.astype(dtypes.int32)) - 1
    picked = take(vals.astype(data.dtype), elt.remainder(elt.maximum(rank, 0), vals.size))
    return shp.reshape(elt.where(chosen, picked, shp.ravel(data)), data.shape)


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
    """``a`` with its main diagonal (``a[i, i, ..., i]``) set to ``val`` (a scalar, or
    values repeated cyclically along it), as ``jax.numpy.fill_diagonal``: a new tensor,
    so pass ``inplace=False``.  ``wrap=True`` restarts the diagonal below a tall matrix's
    square top, as NumPy.

    >>> fnp.fill_diagonal(fnp.zeros((3, 3), dtype=fnp.int32), 5, inplace=False)
    tensor([[5, 0, 0],
            [0, 5, 0],
            [0, 0, 5]], dtype=int32)
    """
    if inplace:
        raise NotImplementedError("fill_diagonal: funcgrad tensors are immutable, so "
                                  "inplace=True is not possible; pass inplace=False and use "
                                  "the returned tensor")
    a, val = asarray(a), asarray(val)
    if a.ndim < 2:
        raise ValueError(f"fill_diagonal: a must have at least 2 axes, got shape {a.shape}")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise ValueError(f"fill_diagonal: a with more than 2 axes must have equal axes, got "
                         f"shape {a.shape}")
    if val.size == 0:
        raise ValueError("fill_diagonal: val must not be empty")
    # NumPy's rule on the flattened a: every (step)-th element from the first
    if a.ndim == 2:
        step = a.shape[1] + 1
        end = a.size if wrap else builtins.min(a.shape[1] * a.shape[1], a.size)
    else:
        step, end = 1 + int(np.cumprod(a.shape[:-1]).sum()), a.size
    spots = asarray(np.arange(0, end, step, dtype=np.int32))
    vals = shp.ravel(val).astype(a.dtype)
    flat = shp.ravel(a).at[spots].set(_tile_to(vals, spots.shape[0]))
    return shp.reshape(flat, a.shape)


def mask_indices(n: int, mask_func, k=0, *, size=None):
    """The (row, column) indices where ``mask_func(ones((n, n)), k)`` is non-zero, as
    ``jax.numpy.mask_indices`` (``size`` as in ``nonzero``).

    >>> fnp.mask_indices(3, fnp.triu, 1)
    (tensor([0, 0, 1], dtype=int32), tensor([1, 2, 2], dtype=int32))
    """
    n = _static_int("mask_indices", "n", n)
    mask = asarray(mask_func(cre.ones((n, n)), k))
    if mask.shape != (n, n):
        raise ValueError(f"mask_indices: mask_func must return shape ({n}, {n}), got "
                         f"{mask.shape}")
    rows, columns = nonzero(mask, size=size)
    return rows, columns


# --- NaN-ignoring order statistics -----------------------------------------------------------


def _unsupported(name, out, weights):
    no_out(name, out)
    if weights is not None:
        raise NotImplementedError(f"{name}: weights are not supported; drop them or repeat "
                                  "the samples")


def _nanquantile(name, a, q, axis, method, keepdims):
    """The ``q``-quantiles of ``a`` over ``axis`` among its non-NaN entries: sort (NaNs
    go last), count the non-NaN ones per slice, and interpolate between the two order
    statistics at ``q * (count - 1)``."""
    if method not in _METHODS:
        raise ValueError(f"{name}: method must be one of {_METHODS}, got {method!r}")
    a = asarray(a)
    if dtypes.is_complex(a.dtype):
        raise TypeError(f"{name}: a must be real, got {a.dtype.name}")
    if not dtypes.is_inexact(a.dtype):  # float64 for 64-bit integers, as quantile
        a = a.astype(dtypes.float_dtype_for(a.dtype))
    q = asarray(q, a.dtype)
    if is_concrete(q) and np.any((np.asarray(q) < 0) | (np.asarray(q) > 1)):
        raise ValueError(f"{name}: q must be in [0, 1] (percentiles in [0, 100])")
    axes = normalize_axes(name, axis, a.ndim)
    kept = [d for d in range(a.ndim) if d not in axes]
    n = math.prod(a.shape[d] for d in axes)
    if n == 0:
        raise ValueError(f"{name}: the reduced axes of a (shape {a.shape}) are empty")
    kept_shape = tuple(a.shape[d] for d in kept)
    rows = shp.reshape(shp.transpose(a, (*kept, *axes)), (*kept_shape, n))
    ordered = sort(rows, axis=-1)
    count = red.sum(elt.logical_not(elt.isnan(rows)), axis=-1, keepdims=True).astype(a.dtype)
    last = elt.maximum(count - 1, 0)  # the last non-NaN position (0 for all-NaN rows)
    position = shp.reshape(q, (1,) * len(kept) + (q.size,)) * last  # (kept..., q.size)
    value = interpolate(ordered, position, method,
                        lambda x, i: take_along_axis(x, i, axis=-1))
    value = elt.where(count == 0, np.nan, value)  # all-NaN slices
    value = shp.reshape(value, kept_shape + q.shape)
    # q's axes lead, as NumPy
    value = shp.transpose(value, (*range(len(kept), value.ndim), *range(len(kept))))
    if keepdims:
        shape = tuple(1 if d in axes else s for d, s in enumerate(a.shape))
        value = shp.reshape(value, q.shape + shape)
    return value


def nanquantile(a, q, axis=None, out=None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights=None):
    """The ``q``-th quantiles (``q`` in [0, 1]; its axes lead the result) over ``axis``,
    ignoring NaNs (NaN for a slice of only NaNs), as ``jax.numpy.nanquantile``.

    >>> fnp.nanquantile(fg.tensor([1.0, fnp.nan, 3.0, 4.0]), 0.5)
    tensor(3., dtype=float32)
    """
    del overwrite_input  # no effect: tensors are immutable
    _unsupported("nanquantile", out, weights)
    return _nanquantile("nanquantile", a, q, axis, method, keepdims)


def nanpercentile(a, q, axis=None, out=None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False, *, weights=None):
    """The ``q``-th percentiles (``q`` in [0, 100]) over ``axis``, ignoring NaNs, as
    ``jax.numpy.nanpercentile`` (see ``nanquantile``).

    >>> fnp.nanpercentile(fg.tensor([1.0, fnp.nan, 3.0]), 50)
    tensor(2., dtype=float32)
    """
    del overwrite_input
    _unsupported("nanpercentile", out, weights)
    a = asarray(a)
    dtype = a.dtype if dtypes.is_inexact(a.dtype) else dtypes.float32
    return _nanquantile("nanpercentile", a, asarray(q, dtype) / 100, axis, method, keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """The median over ``axis``, ignoring NaNs (NaN for a slice of only NaNs), as
    ``jax.numpy.nanmedian``.

    >>> fnp.nanmedian(fg.tensor([[1.0, fnp.nan], [2.0, 4.0]]), axis=1)
    tensor([1., 3.], dtype=float32)
    """
    del overwrite_input
    _unsupported("nanmedian", out, None)
    return _nanquantile("nanmedian", a, 0.5, axis, "linear", keepdims)


# --- polynomials from roots, complex sorting -------------------------------------------------


def poly(seq_of_zeros):
    """The coefficients (highest power first, leading 1) of the polynomial with roots
    ``seq_of_zeros`` (a scalar, a 1-d tensor, or a square matrix: its eigenvalues, eager
    only), as ``jax.numpy.poly``; integers become float32.

    >>> fnp.poly(fg.tensor([1.0, 2.0]))
    tensor([ 1., -3.,  2.], dtype=float32)
    """
    (zeros,) = promote("poly", seq_of_zeros, to_inexact=True)
    zeros = shp.atleast_1d(zeros)
    if zeros.ndim == 2 and zeros.shape[0] == zeros.shape[1] and zeros.shape[0]:
        from funcgrad.numpy import linalg

        zeros = linalg.eigvals(zeros)
    if zeros.ndim != 1:
        raise ValueError(f"poly: seq_of_zeros must be a scalar, 1-d or a non-empty square "
                         f"matrix, got shape {zeros.shape}")
    if zeros.shape[0] == 0:
        return cre.ones((), zeros.dtype)
    coefficients = cre.ones((1,), zeros.dtype)
    nothing = cre.zeros((1,), zeros.dtype)
    for k in range(zeros.shape[0]):  # multiply by (x - zeros[k])
        coefficients = (shp.concatenate([coefficients, nothing])
                        - zeros[k] * shp.concatenate([nothing, coefficients]))
    return coefficients


def sort_complex(a):
    """``a`` sorted along its last axis (by real part, then imaginary part) as complex
    numbers, as ``jax.numpy.sort_complex``.

    >>> fnp.sort_complex(fg.tensor([3, 1, 2]))
    tensor([1.+0.j, 2.+0.j, 3.+0.j], dtype=complex64)
    """
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("sort_complex: a must have at least 1 axis, got a 0-d tensor")
    ordered = sort(a, axis=-1)
    return ordered.astype(dtypes.complex_dtype(a.dtype))


# --- unique_all, unique_counts, unique_inverse, unique_values -------------------------------


class _UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class _UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class _UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def _unique(name, x, size, fill_value):
    """The sorted unique values of ``x`` (each NaN its own value, as the array API and
    JAX), the first index of each, every element's value number, and the counts.

    Sort, mark where a value differs from the one before, and gather the first ``size``
    marked ones; without ``size`` it is the number of marks (so ``x`` must be concrete).
    """
    x = asarray(x)
    n = x.size
    flat = shp.reshape(x, (n,))
    order = argsort(flat) if n else cre.zeros((0,), dtypes.int32)
    ordered = take(flat, order)
    differs = elt.not_equal(ordered[1:], ordered[:-1])  # NaN != NaN: NaNs stay apart
    first = shp.concatenate([asarray(np.ones(builtins.min(n, 1), np.bool_)), differs])
    if size is None:
        if _traced(x):
            raise TypeError(f"{name}: the number of unique values depends on x's values, and "
                            "x is traced here (jit/vmap/grad); pass size= (and fill_value=)")
        size = int(np.count_nonzero(np.asarray(first)))
    else:
        size = _static_int(name, "size", size)
        if size < 0:
            raise ValueError(f"{name}: size must be non-negative, got {size}")
        if n == 0 and size and fill_value is None:
            raise ValueError(f"{name}: an empty x has no smallest value to pad with; pass "
                             "fill_value=")
    (positions,) = nonzero(first, size=size, fill_value=0)
    # padding repeats the smallest value and its index (position 0), as JAX
    values = take(ordered, positions) if n else cre.zeros((size,), x.dtype)
    if fill_value is not None:
        found = cre.arange(size, dtype=dtypes.int32) < red.sum(first.astype(dtypes.int32))
        values = elt.where(found, values, asarray(fill_value, x.dtype))
    indices = take(order, positions) if n else cre.zeros((size,), dtypes.int32)
    group = red.cumsum(first.astype(dtypes.int32)) - 1
    inverse = shp.reshape(cre.zeros((n,), dtypes.int32).at[order].set(group), x.shape)
    counts = cre.zeros((size,), dtypes.int32).at[group].add(1, mode="drop")
    return _UniqueAllResult(values, indices, inverse, counts)


def unique_all(x, /, *, size=None, fill_value=None):
    """The sorted unique values of ``x``, the index of each one's first occurrence, the
    value number of every element (``x``'s shape) and each value's count, as
    ``jax.numpy.unique_all`` (a named tuple; NaNs are all distinct).

    Traced ``x`` (jit, vmap) needs ``size``: the first ``size`` values, padded with
    ``fill_value`` (default: the smallest value; its index pads ``indices``, 0 ``counts``).

    >>> fnp.unique_all(fg.tensor([3, 1, 3]))
    _UniqueAllResult(values=tensor([1, 3], dtype=int32), indices=tensor([1, 0], dtype=int32), \
inverse_indices=tensor([1, 0, 1], dtype=int32), counts=tensor([1, 2], dtype=int32))
    """
    return _unique("unique_all", x, size, fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
    """The sorted unique values of ``x`` and their counts, as ``jax.numpy.unique_counts``
    (a named tuple; see ``unique_all`` for ``size`` and ``fill_value``).

    >>> fnp.unique_counts(fg.tensor([3, 1, 3])).counts
    tensor([1, 2], dtype=int32)
    """
    result = _unique("unique_counts", x, size, fill_value)
    return _UniqueCountsResult(result.values, result.counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
    """The sorted unique values of ``x`` and the value number of every element (``x``'s
    shape), as ``jax.numpy.unique_inverse`` (a named tuple; see ``unique_all``).

    >>> fnp.unique_inverse(fg.tensor([3, 1, 3])).inverse_indices
    tensor([1, 0, 1], dtype=int32)
    """
    result = _unique("unique_inverse", x, size, fill_value)
    return _UniqueInverseResult(result.values, result.inverse_indices)


def unique_values(x, /, *, size=None, fill_value=None):
    """The sorted unique values of ``x``, as ``jax.numpy.unique_values`` (NaNs are all
    distinct; see ``unique_all`` for ``size`` and ``fill_value``).

    >>> fnp.unique_values(fg.tensor([3, 1, 3]), size=3, fill_value=0)
    tensor([1, 3, 0], dtype=int32)
    """
    return _unique("unique_values", x, size, fill_value).values


# --- printing --------------------------------------------------------------------------------


def _host(name, arg, x) -> np.ndarray:
    """A concrete ``x`` as a NumPy array, or a TypeError naming ``name`` and ``arg``."""
    if _traced(x):
        raise TypeError(f"{name}: {arg} is traced here (jit/vmap/grad), but {name} needs its "
                        "values; call it outside the transformation")
    return np.asarray(x)


def iterable(y) -> bool:
    """Whether ``y`` can be iterated over (a tensor with at least one axis, a list...),
    as ``numpy.iterable``.

    >>> fnp.iterable(fg.tensor([1, 2])), fnp.iterable(fg.tensor(1))
    (True, False)
    """
    if isinstance(y, Tensor):
        return y.ndim > 0
    return bool(np.iterable(y))


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None) -> str:
    """The text of ``repr(arr)`` (``tensor(..., dtype=...)``) with NumPy's formatting
    options, as ``jax.numpy.array_repr``.

    >>> fnp.array_repr(fg.tensor([1.0, 2.5]))
    'tensor([1. , 2.5], dtype=float32)'
    """
    values = _host("array_repr", "arr", arr)
    if values.dtype == dtypes.bfloat16:  # print like other floats (as Tensor's repr)
        values = values.astype(np.float32)
    body = np.array2string(values, max_line_width, precision, suppress_small,
                           separator=", ", prefix="tensor(")
    shape = f", shape={values.shape}" if values.size == 0 and values.ndim > 1 else ""
    return f"tensor({body}{shape}, dtype={np.asarray(arr).dtype.name})"


def array_str(a, max_line_width=None, precision=None, suppress_small=None) -> str:
    """The text of ``str(a)``, the values only, with NumPy's formatting options, as
    ``jax.numpy.array_str``.

    >>> fnp.array_str(fg.tensor([1.0, 2.5]))
    '[1.  2.5]'
    """
    return np.array_str(_host("array_str", "a", a), max_line_width, precision,
                        suppress_small)


# --- tensors from buffers, strings, DLPack and files ----------------------------------------


def from_dlpack(x, /, *, device=None, copy=None):
    """A tensor with the data of any object that supports DLPack (a NumPy, CuPy or Torch
    array...), as ``jax.numpy.from_dlpack``; CUDA data stays on the GPU (needs CuPy).

    The data is always copied (a tensor owns its memory), so ``copy=False`` is an error.

    >>> fnp.from_dlpack(np.arange(3))
    tensor([0, 1, 2], dtype=int64)
    """
    if copy is False:
        raise ValueError("from_dlpack: copy=False is not possible: a funcgrad tensor owns its "
                         "memory, so the data is copied; pass copy=None or copy=True")
    if isinstance(x, Tensor):
        return x if device is None else _tensor(x, device=device)
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: x must support the DLPack protocol (__dlpack__), got "
                        f"{type(x).__name__}")
    device_type, _ = x.__dlpack_device__()
    if device_type == 2:  # kDLCUDA
        data = gpu.cupy().from_dlpack(x)
    else:
        data = np.from_dlpack(x)
    return _tensor(data, device=device)


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0):
    """A 1-d tensor of the bytes of ``buffer`` read as NumPy reads ``dtype`` (``float`` as
    float64, ``int`` as int64), then converted to funcgrad's ``dtype`` (float32, int32 for
    those), as ``jax.numpy.frombuffer``.

    >>> fnp.frombuffer(b"\\x01\\x02\\x03", dtype=fnp.uint8)
    tensor([1, 2, 3], dtype=uint8)
    """
    values = np.frombuffer(buffer, dtype=np.dtype(dtype), count=count, offset=offset)
    return _tensor(values, dtypes.canonicalize(dtype))


def fromstring(string: str, dtype=float, count: int = -1, *, sep: str):
    """A 1-d tensor of the numbers in the text ``string`` separated by ``sep``, read as
    NumPy reads ``dtype`` and converted to funcgrad's ``dtype`` (``float`` is float32),
    as ``jax.numpy.fromstring``.

    >>> fnp.fromstring("1 2 3", dtype=int, sep=" ")
    tensor([1, 2, 3], dtype=int32)
    """
    values = np.fromstring(string, dtype=np.dtype(dtype), count=count, sep=sep)
    return _tensor(values, dtypes.canonicalize(dtype))


def fromiter(*args, **kwargs):
    """Not supported, as in JAX: consuming an iterator is a side effect that jit and the
    other transformations would not repeat.  Use ``fnp.asarray(np.fromiter(...))``.

    >>> fnp.fromiter(iter([1, 2]), dtype=int)
    Traceback (most recent call last):
    NotImplementedError: fromiter: ...
    """
    raise NotImplementedError("fromiter: not supported, as in jax.numpy (consuming the "
                              "iterator is a side effect that jit would not repeat); use "
                              "fnp.asarray(np.fromiter(...)) outside transformations")


def fromfile(*args, **kwargs):
    """Not supported, as in JAX: reading a file is a side effect that jit and the other
    transformations would not repeat.  Use ``fnp.load`` or ``fnp.asarray(np.fromfile(...))``.

    >>> fnp.fromfile("data.bin")
    Traceback (most recent call last):
    NotImplementedError: fromfile: ...
    """
    raise NotImplementedError("fromfile: not supported, as in jax.numpy (reading the file "
                              "is a side effect that jit would not repeat); use fnp.load, or "
                              "fnp.asarray(np.fromfile(...)) outside transformations")


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """The order in which to contract ``einsum``'s operands pairwise, and a text report
    of its cost, as ``jax.numpy.einsum_path``: ``(path, report)``, ``path`` a list of
    index pairs.  Only the operands' shapes are used (NumPy's ``einsum_path`` plans);
    ``optimize``: ``"auto"``/``True``/``"greedy"``, ``"optimal"``, ``False`` (left to
    right) or an explicit path.

    >>> fnp.einsum_path("ij,jk,kl->il", fnp.ones((2, 3)), fnp.ones((3, 4)), fnp.ones((4, 5)))[0]
    [(1, 2), (0, 1)]
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _from_interleaved(subscripts, operands)
    if not operands:
        raise ValueError("einsum_path: needs at least one operand")
    if optimize in ("auto", "optimize", True):
        optimize = "greedy"
    elif optimize is False:
        optimize = ["einsum_path"] + [(0, 1)] * (len(operands) - 1)
    elif isinstance(optimize, list) and optimize and optimize[0] != "einsum_path":
        optimize = ["einsum_path", *optimize]
    elif optimize not in ("greedy", "optimal") and not isinstance(optimize, list):
        raise ValueError(f"einsum_path: optimize must be 'auto', 'greedy', 'optimal', True, "
                         f"False or a path, got {optimize!r}")
    # stand-ins of the operands' shapes and dtypes (no memory: zero strides)
    shapes = [np.broadcast_to(np.zeros((), asarray(x).dtype), np.shape(x)) for x in operands]
    path, report = np.einsum_path(subscripts, *shapes, optimize=optimize)
    return [tuple(int(i) for i in step) for step in path[1:]], report


def save(file, arr, allow_pickle: bool = True) -> None:
    """Write ``arr`` (a tensor or anything array-like) to a ``.npy`` file, as
    ``jax.numpy.save`` (NumPy's ``save``).

    >>> import io; buffer = io.BytesIO(); fnp.save(buffer, fg.tensor([1, 2])); _ = buffer.seek(0)
    >>> fnp.load(buffer)
    tensor([1, 2], dtype=int32)
    """
    np.save(file, _host("save", "arr", arr), allow_pickle=allow_pickle)


def savez(file, *args, allow_pickle: bool = True, **kwds) -> None:
    """Write several arrays (tensors or array-likes) to an uncompressed ``.npz`` file,
    positional ones as ``arr_0``, ``arr_1``..., as ``jax.numpy.savez`` (NumPy's
    ``savez``); ``fnp.load`` reads them back as NumPy arrays.

    >>> import io; buffer = io.BytesIO(); fnp.savez(buffer, w=fg.tensor([1.5])); _ = buffer.seek(0)
    >>> fnp.load(buffer)["w"]
    array([1.5], dtype=float32)
    """
    args = [_host("savez", f"args[{i}]", a) if isinstance(a, Tensor) else a
            for i, a in enumerate(args)]
    kwds = {k: _host("savez", k, v) if isinstance(v, Tensor) else v for k, v in kwds.items()}
    np.savez(file, *args, allow_pickle=allow_pickle, **kwds)


def load(file, *args, **kwargs):
    """Read a ``.npy`` file as a tensor (bfloat16 restored from NumPy's 2-byte void type),
    or a ``.npz`` file as NumPy's lazy mapping of arrays, as ``jax.numpy.load``; the other
    arguments are NumPy's.

    >>> import io; buffer = io.BytesIO(); fnp.save(buffer, fnp.ones(2)); _ = buffer.seek(0)
    >>> fnp.load(buffer)
    tensor([1., 1.], dtype=float32)
    """
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray):
        if out.dtype == np.dtype("V2"):  # how NumPy stores an unknown 2-byte dtype
            out = out.view(dtypes.bfloat16)
        return _tensor(out)
    return out
