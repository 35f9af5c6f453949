"""Gather and scatter: reading and functionally writing elements picked by index arrays.

``gather(x, indices, axes)``: ``indices`` has shape ``(*batch, len(axes))``; the result has
shape ``batch + (dims of x not in axes)``, element ``[b..., r...]`` being ``x`` with the
``axes`` set to ``indices[b..., :]``.  Indices are clamped into range (as compiled code
does).  ``scatter`` writes ``updates`` (shaped like a gather's result) into a copy of ``x``
with a ``mode`` of set, add, mul, min or max; out-of-range indices are dropped.
Everything else (NumPy-style indexing, ``.at[]``, take, dynamic slices) composes these.
"""

from __future__ import annotations

import math

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.primitive import Primitive, is_undefined
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims.structural import (
    broadcast_in_dim,
    concatenate,
    full,
    iota,
    moveaxis,
    reshape,
    zeros_like,
)


def _rest_dims(shape, axes):
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _check_indices(name, operand, indices, axes):
    if indices.dtype.kind not in "iu":
        raise TypeError(f"{name}: indices must be integers, got {indices.dtype.name}")
    if indices.ndim < 1 or indices.shape[-1] != len(axes):
        raise ValueError(f"{name}: indices of shape {indices.shape} must end in "
                         f"len(axes)={len(axes)}")
    if any(not 0 <= a < operand.ndim for a in axes) or len(set(axes)) != len(axes):
        raise ValueError(f"{name}: axes {axes} invalid for operand shape {operand.shape}")


def _index_tuple(shape, indices, axes, clamp: bool):
    idx = []
    for i, a in enumerate(axes):
        col = indices[..., i].astype(np.intp)
        if clamp:
            col = np.clip(col, 0, max(shape[a] - 1, 0))
        idx.append(col)
    return tuple(idx)


# --- gather ------------------------------------------------------------------------------

gather_p = Primitive("gather")


def _gather_impl(operand, indices, *, axes):
    k = len(axes)
    moved = np.moveaxis(operand, axes, tuple(range(k)))
    if operand.size == 0 and indices.size:
        shape = indices.shape[:-1] + _rest_dims(operand.shape, axes)
        return np.zeros(shape, operand.dtype)
    return moved[_index_tuple(operand.shape, indices, axes, clamp=True)]


def _gather_rule(operand, indices, *, axes):
    _check_indices("gather", operand, indices, axes)
    shape = indices.shape[:-1] + _rest_dims(operand.shape, axes)
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _gather_jvp(primals, tangents, *, axes):
    operand, indices = primals
    out = gather(operand, indices, axes)
    return out, None if tangents[0] is None else gather(tangents[0], indices, axes)


def _gather_transpose(ct, operand, indices, *, axes):
    if is_undefined(indices):
        raise TypeError("gather: indices are not linear")
    if ct is None:
        return [None, None]
    zeros = broadcast_in_dim(np.zeros((), ct.dtype), operand.aval.shape, ())
    return [scatter(zeros, indices, ct, axes, "add"), None]


def _batch_index_column(indices, axis_size):
    """Prepend the batch position as an extra index column: (B, *b, k) -> (B, *b, k+1)."""
    column = iota(indices.dtype, indices.shape[:-1] + (1,), 0)
    return concatenate((column, indices), indices.ndim - 1)


def _to_front_or_broadcast(x, dim, axis_size):
    if dim is None:
        return broadcast_in_dim(x, (axis_size, *x.shape), tuple(range(1, x.ndim + 1)))
    return x if dim == 0 else moveaxis(x, dim, 0)


def _gather_batch(axis_size, args, dims, *, axes):
    operand, indices = args
    od, idim = dims
    if idim is None:
        operand = _to_front_or_broadcast(operand, od, axis_size)
        out = gather(operand, indices, tuple(a + 1 for a in axes))
        # rest dims keep their order; the batch dim is the first of them
        return out, indices.ndim - 1
    indices = _to_front_or_broadcast(indices, idim, axis_size)
    if od is None:
        return gather(operand, indices, axes), 0
    operand = _to_front_or_broadcast(operand, od, axis_size)
    full = _batch_index_column(indices, axis_size)
    return gather(operand, full, (0, *(a + 1 for a in axes))), 0


gather_p.impl = _gather_impl
gather_p.abstract_eval = _gather_rule
gather_p.jvp = _gather_jvp
gather_p.transpose = _gather_transpose
gather_p.batch = _gather_batch
gather_p.linear = True


def gather(operand, indices, axes):
    return gather_p.bind(operand, indices, axes=tuple(int(a) for a in axes))


# --- scatter -----------------------------------------------------------------------------

SCATTER_MODES = ("set", "add", "mul", "min", "max")
scatter_p = Primitive("scatter")
_UFUNC_AT = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _scatter_impl(operand, indices, updates, *, axes, mode):
    out = np.array(operand, copy=True)
    k = len(axes)
    moved = np.moveaxis(out, axes, tuple(range(k)))
    idx = _index_tuple(operand.shape, indices, axes, clamp=False)
    valid = np.ones(indices.shape[:-1], dtype=bool)
    for col, a in zip(idx, axes, strict=False):
        valid &= (col >= 0) & (col < operand.shape[a])
    if not valid.all():
        idx = tuple(col[valid] for col in idx)
        updates = updates[valid]
    if mode == "set":
        moved[idx] = updates
    else:
        _UFUNC_AT[mode].at(moved, idx, updates)
    return out


def _scatter_rule(operand, indices, updates, *, axes, mode):
    _check_indices("scatter", operand, indices, axes)
    if mode not in SCATTER_MODES:
        raise ValueError(f"scatter: mode {mode!r} not one of {SCATTER_MODES}")
    want = indices.shape[:-1] + _rest_dims(operand.shape, axes)
    if updates.shape != want:
        raise ValueError(f"scatter: updates of shape {updates.shape} do not match the "
                         f"indexed shape {want}")
    if updates.dtype != operand.dtype:
        raise TypeError(f"scatter: updates dtype {updates.dtype.name} differs from operand "
                        f"dtype {operand.dtype.name}")
    return ShapedArray(operand.shape, operand.dtype, operand.weak_type)


def _scatter_jvp(primals, tangents, *, axes, mode):
    operand, indices, updates = primals
    g_op, _, g_up = tangents
    out = scatter(operand, indices, updates, axes, mode)
    if g_op is None and g_up is None:
        return out, None
    g_op = zeros_like(operand) if g_op is None else g_op
    g_up = zeros_like(updates) if g_up is None else g_up
    if mode in ("set", "add"):
        return out, scatter(g_op, indices, g_up, axes, mode)
    if mode == "mul":
        total = scatter(g_op, indices, updates, axes, "mul")
        if tangents[2] is not None:
            # out[p] = x[p] * prod_j u_j over the updates j landing on p, so
            # d out[p] = x[p] * sum_j g_j * prod_{k != j} u_k (no division: zeros are fine)
            others = _product_of_colliding_others(indices, updates)
            zeros = zeros_like(operand)
            total = total + operand * scatter(zeros, indices, g_up * others, axes, "add")
        return out, total
    # min / max: the tangent comes from whichever value won, shared evenly among ties
    one_op = ew.convert_element_type(ew.eq(out, operand), operand.dtype)
    won = ew.convert_element_type(ew.eq(updates, gather(out, indices, axes)), operand.dtype)
    count = scatter(one_op, indices, won, axes, "add")
    total = scatter(g_op * one_op, indices, g_up * won, axes, "add")
    return out, total / count


def _product_of_colliding_others(indices, updates):
    """For each update, the product of the *other* updates written to the same position
    (1 where none): exact with zero updates.  Indices known to be unique skip the O(n^2)
    pairwise comparison."""
    batch = indices.shape[:-1]
    n = math.prod(batch)
    rows = _concrete_rows(indices)
    if rows is not None and _distinct(rows):
        return full(updates.shape, 1, updates.dtype)
    from funcgrad.core.prims.reductions import reduce_and, reduce_prod

    rest = updates.shape[len(batch):]
    idx = reshape(indices, (n, indices.shape[-1]))
    same = reduce_and(ew.eq(broadcast_in_dim(idx, (n, n, idx.shape[1]), (0, 2)),
                            broadcast_in_dim(idx, (n, n, idx.shape[1]), (1, 2))), (2,))
    other = ew.and_p.bind(same, ew.ne(iota(dtypes.int32, (n, n), 0), iota(dtypes.int32, (n, n), 1)))
    ups = reshape(updates, (n, *rest))
    grid = (n, n, *rest)
    tail = tuple(range(2, 2 + len(rest)))
    picked = ew.select_n(broadcast_in_dim(other, grid, (0, 1)),
                         full(grid, 1, updates.dtype),
                         broadcast_in_dim(ups, grid, (1, *tail)))
    return reshape(reduce_prod(picked, (1,)), updates.shape)


def _scatter_transpose(ct, operand, indices, updates, *, axes, mode):
    if mode == "mul" and is_undefined(operand) and not is_undefined(updates) \
            and not is_undefined(indices):
        # linear in the operand: a diagonal scaling by the product of the updates (self-adjoint)
        return [None if ct is None else scatter(ct, indices, updates, axes, "mul"), None, None]
    if mode not in ("set", "add") or is_undefined(indices):
        raise TypeError(f"scatter {mode}: not linear")
    if ct is None:
        return [None, None, None]
    ct_op = None
    if is_undefined(operand):
        if mode == "add":
            ct_op = ct
        else:
            zeros = broadcast_in_dim(np.zeros((), ct.dtype), updates_shape(updates), ())
            ct_op = scatter(ct, indices, zeros, axes, "set")
    ct_up = None
    if is_undefined(updates):
        ct_up = gather(ct, indices, axes)
        landed = _landed_updates(indices, axes, ct.shape, overwrite=mode == "set")
        if landed is not None:
            mask = broadcast_in_dim(landed, ct_up.shape, tuple(range(landed.ndim)))
            ct_up = ew.select_n(mask, zeros_like(ct_up), ct_up)
    return [ct_op, None, ct_up]


def _concrete_rows(indices):
    """The index rows (shape (n, k)) of concrete ``indices`` on the host; None when traced."""
    from funcgrad.core.tensor import Tensor

    if type(indices) is not Tensor:
        return None
    return indices._host().reshape(-1, indices.shape[-1])


def _distinct(rows) -> bool:
    """Whether no two index rows are equal (no two updates land on one position)."""
    return len({tuple(row) for row in rows.tolist()}) == len(rows)


def _landed_updates(indices, axes, shape, overwrite: bool):
    """Which updates reach the result (bool, shape ``indices.shape[:-1]``), or None when
    all do: dropped (out-of-range) ones do not, and with ``overwrite`` (mode set) of
    several updates to one position only the one written last, found as JAX does by
    scattering each update's number and reading back which number stayed."""
    from funcgrad.core.prims.reductions import reduce_and

    batch = indices.shape[:-1]
    n = math.prod(batch)
    space = tuple(shape[a] for a in axes)
    rows = _concrete_rows(indices)
    if rows is not None:  # concrete: skip the mask when every update lands
        in_range = ((rows >= 0) & (rows < np.array(space, np.int64))).all()
        if in_range and (not overwrite or _distinct(rows)):
            return None
    if overwrite and n > 1:  # one update cannot be overwritten: only its range matters
        ids = reshape(iota(dtypes.int32, (n,), 0), batch)
        stayed = scatter(full(space, -1, dtypes.int32), indices, ids, tuple(range(len(axes))))
        return ew.eq(gather(stayed, indices, tuple(range(len(axes)))), ids)
    bounds = broadcast_in_dim(np.array(space, indices.dtype), indices.shape, (indices.ndim - 1,))
    inside = ew.and_p.bind(ew.ge(indices, zeros_like(indices)), ew.lt(indices, bounds))
    return reduce_and(inside, (indices.ndim - 1,))


def updates_shape(updates):
    return updates.aval.shape if is_undefined(updates) else updates.shape


def _scatter_batch(axis_size, args, dims, *, axes, mode):
    operand, indices, updates = args
    od, idim, ud = dims
    operand = _to_front_or_broadcast(operand, od, axis_size)
    updates = _to_front_or_broadcast(updates, ud, axis_size)
    if idim is None:
        # the same indices for every batch element: index the rest dims after the batch
        updates = moveaxis(updates, 0, indices.ndim - 1)
        return scatter(operand, indices, updates, tuple(a + 1 for a in axes), mode), 0
    indices = _to_front_or_broadcast(indices, idim, axis_size)
    full = _batch_index_column(indices, axis_size)
    return scatter(operand, full, updates, (0, *(a + 1 for a in axes)), mode), 0


scatter_p.impl = _scatter_impl
scatter_p.abstract_eval = _scatter_rule
scatter_p.jvp = _scatter_jvp
scatter_p.transpose = _scatter_transpose
scatter_p.batch = _scatter_batch
scatter_p.linear = True


def scatter(operand, indices, updates, axes, mode: str = "set"):
    return scatter_p.bind(operand, indices, updates, axes=tuple(int(a) for a in axes),
                          mode=mode)


# --- dynamic slices ----------------------------------------------------------------------
# A window of static size at traced start positions: x[i] in a loop, a row of a matrix.
# A gather would do, but compiles as one (a dispatch of its own); these lower to
# stablehlo.dynamic_slice / dynamic_update_slice, which IREE turns into views and in-place
# copies.  Starts are clamped so the window fits, as XLA and the gather path do.

dynamic_slice_p = Primitive("dynamic_slice", linear=True)
dynamic_update_slice_p = Primitive("dynamic_update_slice", linear=True)


def _check_count(name, x, starts):
    if len(starts) != x.ndim:
        raise ValueError(f"{name}: an operand of shape {x.shape} needs {x.ndim} start "
                         f"indices, got {len(starts)}")


def _check_starts(name, x, starts):
    _check_count(name, x, starts)
    for s in starts:
        if s.ndim != 0 or s.dtype.kind not in "iu":
            raise TypeError(f"{name}: start indices must be integer scalars, got "
                            f"{s.dtype.name}{list(s.shape)}")


def _check_window(name, shape, sizes):
    if len(sizes) != len(shape) or any(not 0 <= n <= d for n, d in zip(sizes, shape,
                                                                        strict=True)):
        raise ValueError(f"{name}: a window of shape {tuple(sizes)} does not fit in an "
                         f"operand of shape {tuple(shape)}")


def _check_update_dtype(x, update):
    if update.dtype != x.dtype:
        raise TypeError(f"dynamic_update_slice: update dtype {update.dtype.name} differs "
                        f"from operand dtype {x.dtype.name}; cast it with .astype")


def _clamped(shape, starts, sizes):
    return tuple(min(max(int(s), 0), d - n) for s, d, n in zip(starts, shape, sizes,
                                                               strict=True))


def _window(starts, sizes):
    return tuple(slice(s, s + n) for s, n in zip(starts, sizes, strict=True))


def _dynamic_slice_impl(x, *starts, slice_sizes):
    return x[_window(_clamped(x.shape, starts, slice_sizes), slice_sizes)]


def _dynamic_slice_rule(x, *starts, slice_sizes):
    _check_starts("dynamic_slice", x, starts)
    _check_window("dynamic_slice", x.shape, slice_sizes)
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    x, *starts = primals
    out = dynamic_slice(x, starts, slice_sizes)
    return out, None if tangents[0] is None else dynamic_slice(tangents[0], starts,
                                                                slice_sizes)


def _dynamic_slice_transpose(ct, x, *starts, slice_sizes):
    if any(is_undefined(s) for s in starts):
        raise TypeError("dynamic_slice: start indices are not linear")
    if ct is None:
        return [None] * (1 + len(starts))
    zeros = broadcast_in_dim(np.zeros((), ct.dtype), x.aval.shape, ())
    return [dynamic_update_slice(zeros, ct, starts)] + [None] * len(starts)


def _dynamic_slice_batch(axis_size, args, dims, *, slice_sizes):
    x, *starts = args
    x = _to_front_or_broadcast(x, dims[0], axis_size)
    if all(d is None for d in dims[1:]):
        return dynamic_slice(x, (0, *starts), (axis_size, *slice_sizes)), 0
    # a window per batch element: a gather of each one's positions
    return gather(x, _window_positions(x.shape[1:], starts, slice_sizes, dims[1:],
                                       axis_size), tuple(range(x.ndim))), 0


def _dynamic_update_slice_impl(x, update, *starts):
    out = x.copy()
    out[_window(_clamped(x.shape, starts, update.shape), update.shape)] = update
    return out


def _dynamic_update_slice_rule(x, update, *starts):
    _check_starts("dynamic_update_slice", x, starts)
    _check_window("dynamic_update_slice", x.shape, update.shape)
    _check_update_dtype(x, update)
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _dynamic_update_slice_jvp(primals, tangents, **params):
    x, update, *starts = primals
    out = dynamic_update_slice(x, update, starts)
    gx, gu = tangents[:2]
    if gx is None and gu is None:
        return out, None
    gx = zeros_like(x) if gx is None else gx
    gu = zeros_like(update) if gu is None else gu
    return out, dynamic_update_slice(gx, gu, starts)


def _dynamic_update_slice_transpose(ct, x, update, *starts):
    if any(is_undefined(s) for s in starts):
        raise TypeError("dynamic_update_slice: start indices are not linear")
    none = [None] * len(starts)
    if ct is None:
        return [None, None] + none
    shape = updates_shape(update)
    ct_x = ct_u = None
    if is_undefined(x):
        # zeros in the window, selected rather than written in place: IREE 3.13 ordered
        # the in-place zeroing of ct before its other reads (ct_u, a matmul), so jit(grad)
        # of x.at[i].add(v) read zeros (random-program sweeps, seeds 9834 and 58)
        zeros = broadcast_in_dim(np.zeros((), ct.dtype), ct.shape, ())
        inside = _window_mask(ct.shape, starts, shape)
        ct_x = zeros if inside is None else ew.select_n(inside, ct, zeros)
    if is_undefined(update):
        ct_u = dynamic_slice(ct, starts, shape)
    return [ct_x, ct_u] + none


def _dynamic_update_slice_batch(axis_size, args, dims):
    x, update, *starts = args
    x = _to_front_or_broadcast(x, dims[0], axis_size)
    update = _to_front_or_broadcast(update, dims[1], axis_size)
    if all(d is None for d in dims[2:]):
        return dynamic_update_slice(x, update, (0, *starts)), 0
    indices = _window_positions(x.shape[1:], starts, update.shape[1:], dims[2:], axis_size)
    return scatter(x, indices, update, tuple(range(x.ndim)), "set"), 0


def _clamped_start(s, size, n):
    """int32 start(s) ``s`` of a window of ``n`` clamped into an axis of ``size``, as XLA
    clamps them."""
    return ew.max(ew.min(s, full(s.shape, size - n, dtypes.int32)),
                  full(s.shape, 0, dtypes.int32))


def _window_mask(shape, starts, sizes):
    """Where the window of ``sizes`` at the (clamped) ``starts`` lies in an array of
    ``shape``: a bool array, or None when the window is the whole array."""
    mask = None
    for k, (s, size, n) in enumerate(zip(starts, shape, sizes, strict=True)):
        if n == size:  # the whole axis: the start clamps to 0
            continue
        s = _clamped_start(ew.convert_element_type(_as_tensor(s), dtypes.int32), size, n)
        position = iota(dtypes.int32, shape, k)
        low = broadcast_in_dim(s, shape, ())
        high = broadcast_in_dim(ew.add(s, full((), n, dtypes.int32)), shape, ())
        inside = ew.and_p.bind(ew.ge(position, low), ew.lt(position, high))
        mask = inside if mask is None else ew.and_p.bind(mask, inside)
    return mask


def _window_positions(shape, starts, sizes, dims=None, axis_size=None):
    """The positions of a window of ``sizes`` in an operand of ``shape`` at the (clamped)
    ``starts``: int32 of shape ``(*sizes, len(shape))``.  With ``axis_size``, one window per
    batch element, the starts batched along ``dims`` (``None``: shared), batch position
    first: ``(axis_size, *sizes, 1 + len(shape))``."""
    lead = () if axis_size is None else (axis_size,)
    grid = (*lead, *sizes)
    columns = [iota(dtypes.int32, (*grid, 1), 0)] if lead else []
    dims = (None,) * len(starts) if dims is None else dims
    for k, (s, d, size, n) in enumerate(zip(starts, dims, shape, sizes, strict=True)):
        s = ew.convert_element_type(_as_tensor(s), dtypes.int32)
        s = _clamped_start(s if d is None else moveaxis(s, d, 0), size, n)
        s = broadcast_in_dim(s, (*grid, 1), () if d is None else (0,))
        position = reshape(iota(dtypes.int32, grid, len(lead) + k), (*grid, 1))
        columns.append(ew.add(position, s))
    return concatenate(columns, len(grid))


dynamic_slice_p.impl = _dynamic_slice_impl
dynamic_slice_p.abstract_eval = _dynamic_slice_rule
dynamic_slice_p.jvp = _dynamic_slice_jvp
dynamic_slice_p.transpose = _dynamic_slice_transpose
dynamic_slice_p.batch = _dynamic_slice_batch
dynamic_update_slice_p.impl = _dynamic_update_slice_impl
dynamic_update_slice_p.abstract_eval = _dynamic_update_slice_rule
dynamic_update_slice_p.jvp = _dynamic_update_slice_jvp
dynamic_update_slice_p.transpose = _dynamic_update_slice_transpose
dynamic_update_slice_p.batch = _dynamic_update_slice_batch


def _start_tensors(start_indices):
    return [_as_tensor(s) for s in start_indices]


def dynamic_slice(x, start_indices, slice_sizes):
    """``x[s0:s0+n0, s1:s1+n1, ...]`` for traced starts, clamped so the window fits.

    >>> dynamic_slice(fnp.arange(5), (fnp.int32(3),), (2,))
    tensor([3, 4], dtype=int32)
    """
    sizes = tuple(int(s) for s in slice_sizes)
    _check_count("dynamic_slice", x, start_indices)
    _check_window("dynamic_slice", x.shape, sizes)
    if x.ndim == 0:
        return x
    return dynamic_slice_p.bind(x, *_start_tensors(start_indices), slice_sizes=sizes)


def dynamic_update_slice(x, update, start_indices):
    """``x`` with ``update`` written at the traced ``start_indices`` (clamped to fit)."""
    _check_count("dynamic_update_slice", x, start_indices)
    _check_window("dynamic_update_slice", x.shape, update.shape)
    _check_update_dtype(x, update)
    if x.ndim == 0:
        return update
    return dynamic_update_slice_p.bind(x, update, *_start_tensors(start_indices))


# --- compositions used across the library --------------------------------------------------


def take_along_axis(x, idx, axis: int):
    """``out[..., i, ...] = x[..., idx[..., i, ...], ...]`` along ``axis`` (shapes equal
    except along ``axis``)."""
    shape = idx.shape
    cols = []
    for d in range(x.ndim):
        col = idx if d == axis else iota(idx.dtype, shape, d)
        cols.append(reshape(col, (*shape, 1)))
    return gather(x, concatenate(cols, len(shape)), tuple(range(x.ndim)))


def dynamic_slice_by_gather(x, *starts, slice_sizes):
    """``dynamic_slice`` as a gather of the window's positions (its ONNX export)."""
    return gather(x, _window_positions(x.shape, starts, slice_sizes), tuple(range(x.ndim)))


def dynamic_update_slice_by_scatter(x, update, *starts):
    """``dynamic_update_slice`` as a scatter to the window's positions (its ONNX export)."""
    indices = _window_positions(x.shape, starts, update.shape)
    return scatter(x, indices, update, tuple(range(x.ndim)), "set")


def _as_tensor(v):
    from funcgrad.core.tensor import Tensor, wrap

    return v if isinstance(v, Tensor) else wrap(np.asarray(v, np.int32))


# --- MLIR lowering ------------------------------------------------------------------------------


def _dimension_lists(operand, indices, axes):
    """The four lists both gather and scatter numbers are made of: the window dims (after
    the index batch dims), the indexed axes sorted and in index order, the batch rank."""
    batch_rank = indices.ndim - 1
    rest = [d for d in range(operand.ndim) if d not in axes]
    join = lambda xs: ", ".join(map(str, xs))  # noqa: E731
    return (join(batch_rank + i for i in range(len(rest))), join(sorted(axes)), join(axes),
            batch_rank)


def _index_bounds(ctx, operand, indices, axes, offset: int):
    """Per index column, ``dim - 1 + offset`` for the column's axis, broadcast to the
    indices' shape."""
    bound = ctx.constant(np.array([max(operand.shape[a] - 1, 0) + offset for a in axes],
                                  indices.dtype))
    return ctx.op1("stablehlo.broadcast_in_dim", [bound], indices,
                   {"broadcast_dimensions": ctx.i64_array([indices.ndim - 1])})


def _lower_gather(ctx, args, in_avals, out_avals, *, axes):
    operand, indices = in_avals
    if not operand.size or not out_avals[0].size:
        # nothing to gather (an empty result), or nothing to gather from: stablehlo cannot
        # express a window of 1 in an empty axis
        return [ctx.full(0, out_avals[0].strip_weak())]
    if _is_splat(args[0]):
        # every element is the same, so is every gathered one: broadcast the first. IREE
        # 3.13 miscompiles a gather from a splat followed by a reduction (sum(ones(4)[i])
        # was 1, and so were gradients of .at[i].set(b))
        first = ctx.op1("stablehlo.slice", [args[0]], operand.update(shape=(1,) * operand.ndim),
                        {"start_indices": ctx.i64_array([0] * operand.ndim),
                         "limit_indices": ctx.i64_array([1] * operand.ndim),
                         "strides": ctx.i64_array([1] * operand.ndim)})
        scalar = ctx.op1("stablehlo.reshape", [first], operand.update(shape=()))
        return [ctx.op1("stablehlo.broadcast_in_dim", [scalar], out_avals[0],
                        {"broadcast_dimensions": ctx.i64_array([])})]
    window, collapsed, index_map, batch_rank = _dimension_lists(operand, indices, axes)
    numbers = ctx.attr(
        f"#stablehlo.gather<offset_dims = [{window}], collapsed_slice_dims = [{collapsed}], "
        f"start_index_map = [{index_map}], index_vector_dim = {batch_rank}>")
    sizes = [1 if d in axes else operand.shape[d] for d in range(operand.ndim)]
    # clamped here, as the eager impl does: IREE reads out of bounds otherwise (garbage, or
    # a segmentation fault), although StableHLO specifies clamping
    if math.prod(indices.shape[:-1]) == 1:
        # one index row: a dynamic_slice (its starts clamped as the gather's indices are).
        # IREE 3.13 fails to compile a gather of one row that it fuses as a 0-d consumer
        # into a reduction's dispatch ("'arith.select' op failed to verify", "'arith.cmpi'
        # op requires all operands to have the same type"): the gradient of x.at[1].set(v)
        # in a scan, random-program sweep seed 9225
        starts = _lowered_starts(ctx, _row_starts(ctx, args[1], operand, indices, axes),
                                 [indices.update(shape=())] * operand.ndim, operand.shape,
                                 sizes)
        window = ctx.op1("stablehlo.dynamic_slice", [args[0], *starts],
                         operand.update(shape=tuple(sizes)),
                         {"slice_sizes": ctx.i64_array(sizes)})
        return [ctx.op1("stablehlo.reshape", [window], out_avals[0])]
    clamped = ctx.op1("stablehlo.clamp", [ctx.full(0, indices), args[1],
                                          _index_bounds(ctx, operand, indices, axes, 0)],
                      indices)
    from funcgrad.lowering import rules

    (source,) = rules.unfused_from_slices(ctx, [args[0]], [operand])
    args = [source, clamped]
    return ctx.op("stablehlo.gather", args, out_avals, {
        "dimension_numbers": numbers, "slice_sizes": ctx.i64_array(sizes),
        "indices_are_sorted": ctx.bool_attr(False)})


def _row_starts(ctx, index, operand, indices, axes):
    """The 0-d start of every operand dimension for the one row of ``index`` (shape
    ``indices.shape``), not clamped: its columns for the indexed ``axes``, 0 for the
    others."""
    scalar = indices.update(shape=())
    starts = []
    for d in range(operand.ndim):
        if d not in axes:
            starts.append(ctx.full(0, scalar))
            continue
        k = axes.index(d)
        column = ctx.op1("stablehlo.slice", [index], indices.update(shape=(1,) * indices.ndim),
                         {"start_indices": ctx.i64_array([0] * (indices.ndim - 1) + [k]),
                          "limit_indices": ctx.i64_array([1] * (indices.ndim - 1) + [k + 1]),
                          "strides": ctx.i64_array([1] * indices.ndim)})
        starts.append(ctx.op1("stablehlo.reshape", [column], scalar))
    return starts


# elementwise operations: of splats, a splat
_ELEMENTWISE_OPS = frozenset(f"stablehlo.{name}" for name in (
    "add", "subtract", "multiply", "divide", "negate", "convert", "maximum", "minimum",
    "exponential", "log", "sqrt", "abs", "select", "compare", "and", "or", "not"))


def _is_splat(value, depth: int = 8) -> bool:
    """Whether the MLIR ``value`` has one value in every element: a broadcast of a 0-d
    value, a splat constant, or elementwise operations on such."""
    owner = getattr(value, "owner", None)
    name = getattr(owner, "name", None)
    if name == "stablehlo.broadcast_in_dim":
        return not owner.operands[0].type.shape
    if name == "stablehlo.constant":
        from funcgrad.lowering import rules

        return rules.is_splat_constant(owner)
    if name in _ELEMENTWISE_OPS and depth:
        return all(_is_splat(v, depth - 1) for v in owner.operands)
    return False


def _rows_in_range(ctx, index_arg, operand, indices, axes):
    """A bool tensor of the index batch shape: whether every column of a row is in range."""
    from funcgrad.lowering import rules

    bool_ = dtypes.bool_
    rows = ShapedArray(indices.shape[:-1], bool_)
    lower_ok = rules.compare(ctx, index_arg, ctx.full(0, indices), indices, "GE")
    upper_ok = rules.compare(ctx, index_arg, _index_bounds(ctx, operand, indices, axes, 0),
                             indices, "LE")
    in_range = ctx.op1("stablehlo.and", [lower_ok, upper_ok],
                       ShapedArray(indices.shape, bool_))
    valid = None
    column = ShapedArray((*indices.shape[:-1], 1), bool_)
    for c in range(len(axes)):
        start = [0] * indices.ndim
        start[-1] = c
        piece = ctx.op1("stablehlo.slice", [in_range], column, {
            "start_indices": ctx.i64_array(start),
            "limit_indices": ctx.i64_array([*indices.shape[:-1], c + 1]),
            "strides": ctx.i64_array([1] * indices.ndim)})
        piece = ctx.op1("stablehlo.reshape", [piece], rows)
        valid = piece if valid is None else ctx.op1("stablehlo.and", [valid, piece], rows)
    return valid


def _broadcast_rows(ctx, valid, aval):
    """Row validity (the leading dims of ``aval``) broadcast to ``aval``'s shape."""
    return ctx.op1("stablehlo.broadcast_in_dim", [valid], ShapedArray(aval.shape, dtypes.bool_),
                   {"broadcast_dimensions": ctx.i64_array(range(valid.type.rank))})


def _lower_scatter(ctx, args, in_avals, out_avals, *, axes, mode):
    """Two IREE 3.13 behaviours the lowering steers around: out-of-range updates are
    written out of bounds (corrupting memory) where they must be dropped, and a scatter
    updates its operand's buffer in place even when that buffer is the caller's input (a
    jit call then changed its argument tensors).  So the operand is first copied into a
    buffer one row longer on each indexed axis (a fresh buffer the scatter may update in
    place), out-of-range rows are sent to that spare row, and the spare row is sliced off."""
    operand, indices, updates = in_avals
    if list(axes) != list(range(len(axes))):
        # the indexed axes first (IREE 3.13 rejects scatters whose window dims come before
        # them: "expected indices to be equal to batch rank", e.g. the gradient of a
        # batched diagonal); the other axes keep their order, so updates keep theirs
        perm = list(axes) + [d for d in range(operand.ndim) if d not in axes]
        moved_aval = ShapedArray(tuple(operand.shape[d] for d in perm), operand.dtype)
        moved = ctx.op1("stablehlo.transpose", [args[0]], moved_aval,
                        {"permutation": ctx.i64_array(perm)})
        (out,) = _lower_scatter(ctx, [moved, args[1], args[2]],
                                [moved_aval, indices, updates], [moved_aval],
                                axes=tuple(range(len(axes))), mode=mode)
        return [ctx.op1("stablehlo.transpose", [out], out_avals[0].strip_weak(),
                        {"permutation": ctx.i64_array(np.argsort(perm))})]
    from funcgrad.lowering import rules

    target, index_arg, update_arg = args
    if ctx.platform == "cuda":
        # IREE 3.13's CUDA pipeline fails on a scatter fused with the producer of its updates
        # when that reads a gather (the float64 gradient of sum(x[i] ** 2), the float32
        # gradient of median): "failed to apply fusion + hoisting patterns (set 1)"
        (update_arg,) = rules.fusion_barrier(ctx, [update_arg], [updates.strip_weak()])
    valid = _broadcast_rows(ctx, _rows_in_range(ctx, index_arg, operand, indices, axes),
                            indices)
    spare = _index_bounds(ctx, operand, indices, axes, 1)
    index_arg = ctx.op1("stablehlo.select", [valid, index_arg, spare], indices)
    if not dtypes.is_complex(operand.dtype):
        combine = _REAL_COMBINE[mode]
        if operand.dtype == dtypes.bool_ and mode == "add":  # NumPy's bool add: an OR
            combine = _binary("stablehlo.or")  # (stablehlo.add of i1 is an XOR)
        (out,) = _padded_scatter(ctx, [target], index_arg, [update_arg], operand, indices,
                                 axes, combine)
        return [out]
    if mode not in ("set", "add"):
        return rules.via(_scatter_one_by_one)(ctx, args, in_avals, out_avals, axes=axes,
                                              mode=mode)
    # IREE 3.13 crashes compiling any scatter of complex numbers, and has no scatter of
    # several operands: scatter real arrays holding (real, imaginary) pairs along a last
    # axis of 2, so a repeated index writes both parts of the same update
    part = dtypes.real_dtype(operand.dtype)
    packed_operand = ShapedArray((*operand.shape, 2), part)
    (packed,) = _padded_scatter(ctx, [_pack_parts(ctx, target, operand)], index_arg,
                                [_pack_parts(ctx, update_arg, updates)], packed_operand,
                                indices, axes, _REAL_COMBINE[mode])
    part_aval = ShapedArray(operand.shape, part)
    real, imag = (_take_part(ctx, packed, packed_operand, k, part_aval) for k in (0, 1))
    return rules.to_complex(ctx, [real, imag], [part_aval, part_aval],
                            [out_avals[0].strip_weak()])


def _pack_parts(ctx, value, aval):
    """A complex ``value`` as a real array of shape ``aval.shape + (2,)``."""
    part = dtypes.real_dtype(aval.dtype)
    column = ShapedArray((*aval.shape, 1), part)
    parts = [ctx.op1("stablehlo.reshape",
                     [ctx.op1(f"stablehlo.{name}", [value], ShapedArray(aval.shape, part))],
                     column) for name in ("real", "imag")]
    return ctx.op1("stablehlo.concatenate", parts, ShapedArray((*aval.shape, 2), part),
                   {"dimension": ctx.i64_attr(len(aval.shape))})


def _take_part(ctx, packed, packed_aval, k, part_aval):
    ndim = packed_aval.ndim
    piece = ctx.op1("stablehlo.slice", [packed], ShapedArray((*part_aval.shape, 1),
                                                              part_aval.dtype), {
        "start_indices": ctx.i64_array([0] * (ndim - 1) + [k]),
        "limit_indices": ctx.i64_array([*part_aval.shape, k + 1]),
        "strides": ctx.i64_array([1] * ndim)})
    return ctx.op1("stablehlo.reshape", [piece], part_aval)


def _scatter_one_by_one(operand, indices, updates, *, axes, mode):
    """``scatter`` applying the updates in order, each by gather, combine and a ``set``:
    for complex mul, min and max, whose combination cannot be done part by part."""
    from funcgrad.numpy import _elementwise as elt
    from funcgrad.transforms.control_flow import fori_loop

    batch = indices.shape[:-1]
    n = math.prod(batch)
    rows = reshape(indices, (n, 1, indices.shape[-1]))
    rest = updates.shape[len(batch):]
    values = reshape(updates, (n, 1, *rest))

    def combine(old, new):
        if mode == "mul":
            return old * new
        smaller = (elt.real(new) < elt.real(old)) | (
            (elt.real(new) == elt.real(old)) & (elt.imag(new) < elt.imag(old)))
        picked = elt.where(smaller if mode == "min" else ~smaller & (new != old), new, old)
        # NaN wins as in np.minimum/np.maximum.at: the held one, else the update
        return elt.where(elt.isnan(old), old, elt.where(elt.isnan(new), new, picked))

    def step(k, x):
        index = dynamic_slice(rows, (k, 0, 0), (1, 1, indices.shape[-1]))[0]
        new = dynamic_slice(values, (k,) + (0,) * (len(rest) + 1), (1, 1, *rest))[0]
        return scatter(x, index, combine(gather(x, index, axes), new), axes, "set")

    return fori_loop(0, n, step, operand)


def _padded_scatter(ctx, targets, index_arg, update_args, operand, indices, axes, combine):
    """Scatter into copies of ``targets`` (all of ``operand``'s shape) grown by the spare
    row, ``combine(ctx, scalar_aval, olds, news) -> results`` in the update region."""
    window, inserted, index_map, batch_rank = _dimension_lists(operand, indices, axes)
    numbers = ctx.attr(
        f"#stablehlo.scatter<update_window_dims = [{window}], inserted_window_dims = "
        f"[{inserted}], scatter_dims_to_operand_dims = [{index_map}], "
        f"index_vector_dim = {batch_rank}>")
    grown = ShapedArray(tuple(n + 1 if d in axes else n for d, n in enumerate(operand.shape)),
                        operand.dtype)
    padding = {"edge_padding_low": ctx.i64_array([0] * operand.ndim),
               "edge_padding_high": ctx.i64_array(
                   [1 if d in axes else 0 for d in range(operand.ndim)]),
               "interior_padding": ctx.i64_array([0] * operand.ndim)}
    zero = ctx.constant(np.zeros((), operand.dtype))
    padded = [ctx.op1("stablehlo.pad", [t, zero], grown, padding) for t in targets]
    n = len(targets)
    op = ctx.op("stablehlo.scatter", [*padded, index_arg, *update_args], [grown] * n, {
        "scatter_dimension_numbers": numbers, "indices_are_sorted": ctx.bool_attr(False),
        "unique_indices": ctx.bool_attr(False)}, regions=1)
    scalar = ShapedArray((), operand.dtype)
    block = ctx.block(op.regions[0], [scalar] * (2 * n))
    with ctx.ir.InsertionPoint(block):
        olds, news = list(block.arguments)[:n], list(block.arguments)[n:]
        ctx.op("stablehlo.return", combine(ctx, scalar, olds, news), [])
    return [ctx.op1("stablehlo.slice", [result], operand, {
        "start_indices": ctx.i64_array([0] * operand.ndim),
        "limit_indices": ctx.i64_array(operand.shape),
        "strides": ctx.i64_array([1] * operand.ndim)}) for result in op.results]


def _binary(name):
    return lambda ctx, aval, olds, news: [ctx.op1(name, [olds[0], news[0]], aval)]


_REAL_COMBINE = {"set": lambda ctx, aval, olds, news: news,
                 "add": _binary("stablehlo.add"), "mul": _binary("stablehlo.multiply"),
                 "min": _binary("stablehlo.minimum"), "max": _binary("stablehlo.maximum")}


def _lowered_starts(ctx, args, avals, shape, sizes):
    """The start indices as int32 scalars clamped so the window fits (StableHLO says
    dynamic slices clamp, but the gather lowering found IREE reading out of bounds)."""
    i32 = ShapedArray((), dtypes.int32)
    starts = []
    for arg, aval, d, n in zip(args, avals, shape, sizes, strict=True):
        if aval.dtype != dtypes.int32:
            arg = ctx.op1("stablehlo.convert", [arg], i32)
        starts.append(ctx.op1("stablehlo.clamp", [ctx.constant(np.int32(0)), arg,
                                                  ctx.constant(np.int32(d - n))], i32))
    return starts


def _lower_dynamic_slice(ctx, args, in_avals, out_avals, *, slice_sizes):
    starts = _lowered_starts(ctx, args[1:], in_avals[1:], in_avals[0].shape, slice_sizes)
    return [ctx.op1("stablehlo.dynamic_slice", [args[0], *starts], out_avals[0],
                    {"slice_sizes": ctx.i64_array(slice_sizes)})]


def _lower_dynamic_update_slice(ctx, args, in_avals, out_avals):
    from funcgrad.lowering import rules

    x, update = in_avals[:2]
    operand = args[0]
    if rules.may_alias_argument(ctx, operand):
        operand = rules.fresh_copy(ctx, operand, x)
    starts = _lowered_starts(ctx, args[2:], in_avals[2:], x.shape, update.shape)
    if dtypes.is_complex(x.dtype) and rules.from_constant(operand):
        # IREE 3.13 fails to compile an update of a complex64 splat constant ("'arith.
        # constant' op attribute 'value' failed to satisfy constraint", the gradient of
        # x[k]): the parts are updated instead
        x_part, update_part = (a.update(dtype=dtypes.real_dtype(a.dtype)) for a in (x, update))
        parts = [ctx.op1("stablehlo.dynamic_update_slice", [
            ctx.op1(f"stablehlo.{name}", [operand], x_part),
            ctx.op1(f"stablehlo.{name}", [args[1]], update_part), *starts], x_part.strip_weak())
            for name in ("real", "imag")]
        return rules.to_complex(ctx, parts, [x_part.strip_weak()] * 2, [out_avals[0]])
    return [ctx.op1("stablehlo.dynamic_update_slice", [operand, args[1], *starts],
                    out_avals[0])]


gather_p.lower = _lower_gather
scatter_p.lower = _lower_scatter
dynamic_slice_p.lower = _lower_dynamic_slice
dynamic_update_slice_p.lower = _lower_dynamic_update_slice
