"""Reductions over axes (sum, max, min, prod, and/or, argmax/argmin) and cumulative scans."""

from __future__ import annotations

import math

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.primitive import Primitive
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims.structural import (
    broadcast_in_dim,
    full,
    full_like,
    moveaxis,
    pad,
    reshape,
    rev,
    slice_,
    zeros_like,
)


def _reduced_shape(name, shape, axes):
    if any(not 0 <= a < len(shape) for a in axes) or len(set(axes)) != len(axes):
        raise ValueError(f"{name}: axes {axes} invalid for shape {shape}")
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _shift_axes(axes, batch_dim):
    return tuple(a + (a >= batch_dim) for a in axes)


def _out_batch_dim(axes, batch_dim):
    return batch_dim - sum(1 for a in axes if a < batch_dim)


def _expand_back(y, in_shape, axes):
    """Broadcast a reduced value back over the reduced axes."""
    kept = tuple(i for i in range(len(in_shape)) if i not in axes)
    return broadcast_in_dim(y, in_shape, kept)


def _reduction(name, impl, kinds, *, linear=False):
    prim = Primitive(name, linear=linear)

    def rule(x, *, axes):
        ew._check_kind(name, x.dtype, kinds)
        return ShapedArray(_reduced_shape(name, x.shape, axes), x.dtype, x.weak_type)

    def batch(axis_size, args, dims, *, axes):
        d = dims[0]
        return prim.bind(args[0], axes=_shift_axes(axes, d)), _out_batch_dim(axes, d)

    prim.impl = impl
    prim.abstract_eval = rule
    prim.batch = batch
    return prim


def accumulation_dtype(dtype) -> np.dtype:
    """The dtype sums and products of ``dtype`` accumulate in: float32 for float16 and
    bfloat16 (as XLA on CPU and GPU), the dtype itself otherwise.  Every sum, also the
    transposes of broadcasts in gradients: a bfloat16 bias gradient summed over 4096
    rows in bfloat16 stopped at 256 (the true sum was 2453)."""
    return dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype


def _sum_impl(x, *, axes):
    return np.sum(x, axis=axes, dtype=accumulation_dtype(x.dtype)).astype(x.dtype, copy=False)


def _prod_impl(x, *, axes):
    return np.prod(x, axis=axes, dtype=accumulation_dtype(x.dtype)).astype(x.dtype, copy=False)


def _max_impl(x, *, axes):
    return np.max(x, axis=axes, initial=_lowest(x.dtype)) if x.size == 0 else np.max(x, axis=axes)


def _min_impl(x, *, axes):
    return np.min(x, axis=axes, initial=_highest(x.dtype)) if x.size == 0 else np.min(x, axis=axes)


def _lowest(dtype):
    if dtype == np.bool_:
        return False
    return -np.inf if dtypes.is_inexact(dtype) else np.iinfo(dtype).min


def _highest(dtype):
    if dtype == np.bool_:
        return True
    return np.inf if dtypes.is_inexact(dtype) else np.iinfo(dtype).max


reduce_sum_p = _reduction("reduce_sum", _sum_impl, ew.NUMBER, linear=True)
reduce_max_p = _reduction("reduce_max", _max_impl, ew.ANY)
reduce_min_p = _reduction("reduce_min", _min_impl, ew.ANY)
reduce_prod_p = _reduction("reduce_prod", _prod_impl, ew.NUMBER)
reduce_and_p = _reduction("reduce_and", lambda x, *, axes: np.all(x, axis=axes), ew.BOOL)
reduce_or_p = _reduction("reduce_or", lambda x, *, axes: np.any(x, axis=axes), ew.BOOL)


def reduce_sum(x, axes):
    return reduce_sum_p.bind(x, axes=tuple(axes)) if axes else x


def reduce_max(x, axes):
    return reduce_max_p.bind(x, axes=tuple(axes)) if axes else x


def reduce_min(x, axes):
    return reduce_min_p.bind(x, axes=tuple(axes)) if axes else x


def reduce_prod(x, axes):
    return reduce_prod_p.bind(x, axes=tuple(axes)) if axes else x


def reduce_and(x, axes):
    return reduce_and_p.bind(x, axes=tuple(axes)) if axes else x


def reduce_or(x, axes):
    return reduce_or_p.bind(x, axes=tuple(axes)) if axes else x


def _sum_jvp(primals, tangents, *, axes):
    out = reduce_sum(primals[0], axes)
    return out, None if tangents[0] is None else reduce_sum(tangents[0], axes)


def _sum_transpose(ct, x, *, axes):
    return [None if ct is None else _expand_back(ct, x.aval.shape, axes)]


def _extremum_jvp(prim):
    # the tangent is shared evenly among the positions attaining the extremum
    def jvp(primals, tangents, *, axes):
        (x,), (g,) = primals, tangents
        out = prim.bind(x, axes=axes)
        if g is None:
            return out, None
        hits = ew.convert_element_type(ew.eq(x, _expand_back(out, x.shape, axes)), g.dtype)
        count = reduce_sum(hits, axes)
        return out, reduce_sum(g * hits, axes) / count

    return jvp


def _prod_jvp(primals, tangents, *, axes):
    (x,), (g,) = primals, tangents
    out = reduce_prod(x, axes)
    if g is None:
        return out, None
    if not x.size:  # a product of nothing is 1, whatever x is: its tangent is 0
        return out, full_like(out, 0)
    # d prod = sum_i g_i * prod_{j != i} x_j, computed without dividing by x (zeros are fine)
    moved = x
    for k, a in enumerate(sorted(axes)):
        moved = moveaxis(moved, a, x.ndim - 1 - (len(axes) - 1 - k))
    lead = moved.shape[: x.ndim - len(axes)]
    n = math.prod([x.shape[a] for a in axes])
    from funcgrad.core.prims.structural import reshape

    flat = reshape(moved, (*lead, n))
    gmoved = g
    for k, a in enumerate(sorted(axes)):
        gmoved = moveaxis(gmoved, a, x.ndim - 1 - (len(axes) - 1 - k))
    gflat = reshape(gmoved, (*lead, n))
    axis = len(lead)
    ones = full_like(slice_(flat, (0,) * flat.ndim, (*lead, 1)), 1)
    left = cumprod(concatenate_last(ones, slice_(flat, (0,) * flat.ndim, (*lead, n - 1))), axis)
    right = cumprod(concatenate_last(slice_(flat, (0,) * axis + (1,), flat.shape), ones), axis,
                    reverse=True)
    return out, reduce_sum(gflat * left * right, (axis,))


def concatenate_last(a, b):
    from funcgrad.core.prims.structural import concatenate

    return concatenate((a, b), a.ndim - 1)


reduce_sum_p.jvp = _sum_jvp
reduce_sum_p.transpose = _sum_transpose
reduce_max_p.jvp = _extremum_jvp(reduce_max_p)
reduce_min_p.jvp = _extremum_jvp(reduce_min_p)
reduce_prod_p.jvp = _prod_jvp
for _p in (reduce_and_p, reduce_or_p):
    _p.differentiable = False
    _p.jvp = (lambda prim: lambda primals, tangents, **k: (prim.bind(*primals, **k), None))(_p)


# --- argmax / argmin ---------------------------------------------------------------------


def _arg_reduction(name, np_fn):
    prim = Primitive(name, keeps_weak=False, differentiable=False)

    def impl(x, *, axis, index_dtype):
        if x.dtype.kind in "fc":
            # NaN wins, as in NumPy and JAX
            return np_fn(x, axis=axis).astype(index_dtype)
        return np_fn(x, axis=axis).astype(index_dtype)

    def rule(x, *, axis, index_dtype):
        if not 0 <= axis < x.ndim:
            raise ValueError(f"{name}: axis {axis} out of range for shape {x.shape}")
        if x.shape[axis] == 0:
            raise ValueError(f"{name}: cannot take {name} of an empty axis (shape {x.shape})")
        return ShapedArray(_reduced_shape(name, x.shape, (axis,)), index_dtype)

    prim.impl = impl
    prim.abstract_eval = rule
    prim.jvp = lambda primals, tangents, **p: (prim.bind(*primals, **p), None)
    prim.batch = lambda axis_size, args, dims, *, axis, index_dtype: (
        prim.bind(args[0], axis=axis + (axis >= dims[0]), index_dtype=index_dtype),
        dims[0] - (axis < dims[0]))
    return prim


argmax_p = _arg_reduction("argmax", np.argmax)
argmin_p = _arg_reduction("argmin", np.argmin)


def argmax(x, axis: int, index_dtype=dtypes.int32):
    return argmax_p.bind(x, axis=int(axis), index_dtype=dtypes.canonicalize(index_dtype))


def argmin(x, axis: int, index_dtype=dtypes.int32):
    return argmin_p.bind(x, axis=int(axis), index_dtype=dtypes.canonicalize(index_dtype))


# --- cumulative scans --------------------------------------------------------------------


def _cumulative(name, np_fn, kinds, *, linear=False):
    prim = Primitive(name, linear=linear)

    def impl(x, *, axis, reverse):
        if reverse:
            x = np.flip(x, axis)
        out = np_fn(x, axis=axis)
        out = out.astype(x.dtype, copy=False)
        return np.flip(out, axis) if reverse else out

    def rule(x, *, axis, reverse):
        ew._check_kind(name, x.dtype, kinds)
        if not 0 <= axis < x.ndim:
            raise ValueError(f"{name}: axis {axis} out of range for shape {x.shape}")
        return x

    prim.impl = impl
    prim.abstract_eval = rule
    prim.batch = lambda axis_size, args, dims, *, axis, reverse: (
        prim.bind(args[0], axis=axis + (axis >= dims[0]), reverse=reverse), dims[0])
    return prim


def _np_cumsum(x, axis):
    return np.cumsum(x, axis=axis, dtype=accumulation_dtype(x.dtype))


def _np_cumprod(x, axis):
    return np.cumprod(x, axis=axis, dtype=accumulation_dtype(x.dtype))


cumsum_p = _cumulative("cumsum", _np_cumsum, ew.NUMBER, linear=True)
cumprod_p = _cumulative("cumprod", _np_cumprod, ew.NUMBER)
cummax_p = _cumulative("cummax", np.maximum.accumulate, ew.NUMBER)
cummin_p = _cumulative("cummin", np.minimum.accumulate, ew.NUMBER)


def cumsum(x, axis: int, reverse: bool = False):
    return cumsum_p.bind(x, axis=int(axis), reverse=bool(reverse))


def cumprod(x, axis: int, reverse: bool = False):
    return cumprod_p.bind(x, axis=int(axis), reverse=bool(reverse))


def cummax(x, axis: int, reverse: bool = False):
    return cummax_p.bind(x, axis=int(axis), reverse=bool(reverse))


def cummin(x, axis: int, reverse: bool = False):
    return cummin_p.bind(x, axis=int(axis), reverse=bool(reverse))


cumsum_p.jvp = lambda primals, tangents, *, axis, reverse: (
    cumsum(primals[0], axis, reverse),
    None if tangents[0] is None else cumsum(tangents[0], axis, reverse))
cumsum_p.transpose = lambda ct, x, *, axis, reverse: [
    None if ct is None else cumsum(ct, axis, not reverse)]


def _cumprod_jvp(primals, tangents, *, axis, reverse):
    # d cumprod_k = sum_{i<=k} g_i prod_{j<=k, j!=i} x_j; via cumsum of g/x where x != 0 is
    # unsafe, so use the exact O(n^2) formulation on the (usually short) scanned axis.
    (x,), (g,) = primals, tangents
    out = cumprod(x, axis, reverse)
    if g is None:
        return out, None
    n = x.shape[axis]
    from funcgrad.core.prims.structural import concatenate

    pieces = []
    for k in range(n):
        idx = range(k, n) if reverse else range(k + 1)
        total = None
        for i in idx:
            term = _take1(g, axis, i)
            for j in idx:
                if j != i:
                    term = term * _take1(x, axis, j)
            total = term if total is None else total + term
        pieces.append(total)
    return out, concatenate(pieces, axis)


def _take1(x, axis, i):
    start = [0] * x.ndim
    limit = list(x.shape)
    start[axis], limit[axis] = i, i + 1
    return slice_(x, start, limit)


def _cumextremum_jvp(prim):
    def jvp(primals, tangents, *, axis, reverse):
        (x,), (g,) = primals, tangents
        out = prim.bind(x, axis=axis, reverse=reverse)
        if g is None:
            return out, None
        # the tangent follows the element that currently holds the running extremum
        n = x.shape[axis]
        idx = ew.convert_element_type(
            _iota_like(x, axis), dtypes.int32)
        hit = ew.eq(x, out)
        pos = ew.select_n(hit, full_like(idx, -1 if not reverse else n), idx)
        src = (cummin if reverse else cummax)(pos, axis, reverse)
        from funcgrad.core.prims.indexing import take_along_axis

        return out, take_along_axis(g, src, axis)

    return jvp


def _iota_like(x, axis):
    from funcgrad.core.prims.structural import iota

    return iota(dtypes.int32, x.shape, axis)


cumprod_p.jvp = _cumprod_jvp
cummax_p.jvp = _cumextremum_jvp(cummax_p)
cummin_p.jvp = _cumextremum_jvp(cummin_p)

__all__ = ["zeros_like", "rev"]


# --- MLIR lowering ------------------------------------------------------------------------------


def _declare_lowerings():
    from funcgrad.lowering import rules

    reduce_sum_p.lower = _widened(reduce_sum_p, _lower_sum(
        rules.reduction("stablehlo.add", lambda d: 0), rules.via(_staged_sum)))
    reduce_prod_p.lower = _widened(reduce_prod_p,
                                   rules.reduction("stablehlo.multiply", lambda d: 1))
    reduce_max_p.lower = rules.reduction("stablehlo.maximum", rules.lowest)
    reduce_min_p.lower = rules.reduction("stablehlo.minimum", rules.highest)
    reduce_and_p.lower = rules.reduction("stablehlo.and", lambda d: True)
    reduce_or_p.lower = rules.reduction("stablehlo.or", lambda d: False)
    argmax_p.lower = _arg_lowering("GT")
    argmin_p.lower = _arg_lowering("LT")
    # running reductions lower as log-depth prefix scans built from slices and pads
    cumsum_p.lower = _widened(cumsum_p, _lower_prefix_scan(ew.add))
    cumprod_p.lower = _widened(cumprod_p, _lower_prefix_scan(ew.mul))
    cummax_p.lower = _lower_prefix_scan(ew.max)
    cummin_p.lower = _lower_prefix_scan(ew.min)


def _lower_prefix_scan(combine):
    """The lowering of a running reduction as ``_prefix_scan``.  For CUDA its operand goes
    behind a barrier first: IREE 3.13 could not compile a scan step's concatenate fused
    with a collapsing reshape and a convert before it (cumsum of ``x.reshape(-1)`` for a
    float16 ``x``: "'memref.copy' op write affecting operations on global resources...")."""
    from funcgrad.lowering import rules

    lower = rules.via(lambda x, *, axis, reverse: _prefix_scan(x, axis, reverse, combine))

    def rule(ctx, args, in_avals, out_avals, **params):
        if ctx.platform == "cuda":
            args = rules.fusion_barrier(ctx, args, [a.strip_weak() for a in in_avals])
        return lower(ctx, args, in_avals, out_avals, **params)

    return rule


def _widened(prim, rule):
    """``rule``, except for dtypes that accumulate wider (``accumulation_dtype``): those
    are converted, reduced by ``prim`` in the wider dtype, and converted back."""
    from funcgrad.lowering import rules

    def on_wide(x, **params):
        wide = ew.convert_element_type(x, accumulation_dtype(x.dtype))
        return ew.convert_element_type(prim.bind(wide, **params), x.dtype)

    widened = rules.via(on_wide)

    def lower(ctx, args, in_avals, out_avals, **params):
        if accumulation_dtype(in_avals[0].dtype) != in_avals[0].dtype:
            return widened(ctx, args, in_avals, out_avals, **params)
        return rule(ctx, args, in_avals, out_avals, **params)

    return lower


# IREE 3.13's CPU code adds up each result's elements one after another: jit(sum) of 16M
# float32 values was 15% off (NumPy's pairwise sum: 1e-8), and took 17 ms (JAX: 5 ms, its
# result as accurate as NumPy's).  On the CPU, float sums of more than SUM_BLOCK elements
# per result go in stages of at most SUM_BLOCK (a long axis split into blocks), which also
# spreads them over the cores; float32 and narrower sums of more than _WIDE_SUM elements
# accumulate in float64.  16M float32 values: exact in float32, 8-9 ms (blocks in float32
# only: 5-7 ms, 1e-6 off for random values and 6e-5 for equal ones)
SUM_BLOCK = 4096
_WIDE_SUM = 256


def _lower_sum(plain, staged):
    from funcgrad.lowering import rules

    by_parts = rules.via(_sum_by_parts)

    def rule(ctx, args, in_avals, out_avals, *, axes):
        aval = in_avals[0]
        if ctx.platform == "cuda" and aval.dtype.kind == "c":
            return by_parts(ctx, args, in_avals, out_avals, axes=axes)
        count = math.prod(aval.shape[a] for a in axes)
        if ctx.platform != "cpu" or aval.dtype.kind != "f" or count <= _WIDE_SUM or \
                (count <= SUM_BLOCK and aval.dtype.itemsize >= 8):
            return plain(ctx, args, in_avals, out_avals, axes=axes)
        return staged(ctx, args, in_avals, out_avals, axes=axes)

    return rule


def _sum_by_parts(x, *, axes):
    """A complex sum as the sums of its real and imaginary parts: IREE 3.13 crashed
    compiling a complex reduction for CUDA that kept partial sums in shared memory
    (ConvertSharedMemAllocOp asks a complex type for its bit width)."""
    return ew.complex_(reduce_sum_p.bind(ew.real(x), axes=axes),
                       reduce_sum_p.bind(ew.imag(x), axes=axes))


def _staged_sum(x, *, axes):
    """reduce_sum of a float ``x`` over ``axes`` in stages of at most SUM_BLOCK elements
    per result (a longer last axis split into blocks, zero-padded to a multiple of one when
    no divisor near SUM_BLOCK divides it), float32 and narrower accumulated in float64."""
    dtype = x.dtype
    if dtype.itemsize < 8:
        x = ew.convert_element_type(x, dtypes.float64)
    axes = sorted(axes)
    while math.prod(x.shape[a] for a in axes) > SUM_BLOCK:
        last = axes[-1]
        n = x.shape[last]
        if n > SUM_BLOCK:
            block = _block_dividing(n)
            if block is None:
                block = SUM_BLOCK
                padding = [(0, 0, 0)] * x.ndim
                padding[last] = (0, -n % block, 0)
                x = pad(x, full((), 0.0, x.dtype), padding)
            shape = x.shape
            x = reshape(x, shape[:last] + (shape[last] // block, block) + shape[last + 1:])
            x = reduce_sum_p.bind(x, axes=(last + 1,))
            continue
        stage, size = [], 1  # the innermost reduced axes holding at most a block
        for a in reversed(axes):
            if stage and size * x.shape[a] > SUM_BLOCK:
                break
            stage.append(a)
            size *= x.shape[a]
        x = reduce_sum_p.bind(x, axes=tuple(sorted(stage)))
        axes = [a - sum(s < a for s in stage) for a in axes if a not in stage]
    x = reduce_sum_p.bind(x, axes=tuple(axes))
    return ew.convert_element_type(x, dtype) if x.dtype != dtype else x


def _block_dividing(n: int):
    """The largest divisor of ``n`` between SUM_BLOCK / 4 and SUM_BLOCK, or None."""
    return next((b for b in range(SUM_BLOCK, SUM_BLOCK // 4, -1) if n % b == 0), None)


def _prefix_scan(x, axis, reverse, combine):
    """Inclusive scan by doubling: after step k each position combines 2^k predecessors."""
    from funcgrad.core.prims.structural import concatenate

    if reverse:
        x = rev(x, (axis,))
    n = x.shape[axis]
    shift = 1
    while shift < n:
        start = [0] * x.ndim
        limit = list(x.shape)
        limit[axis] = n - shift
        head_limit = list(x.shape)
        head_limit[axis] = shift
        head = slice_(x, [0] * x.ndim, head_limit)
        shifted = slice_(x, start, limit)
        tail_start = [0] * x.ndim
        tail_start[axis] = shift
        tail = slice_(x, tail_start, x.shape)
        x = concatenate((head, combine(tail, shifted)), axis)
        shift *= 2
    return rev(x, (axis,)) if reverse else x


def _arg_lowering(direction):
    """argmax/argmin as a two-operand stablehlo.reduce over (value, index), NaN first and
    the smallest index on ties, as NumPy."""

    def rule(ctx, args, in_avals, out_avals, *, axis, index_dtype):
        from funcgrad.core.abstract import ShapedArray
        from funcgrad.lowering import rules

        (x,), (aval,), (out,) = args, in_avals, out_avals
        index_aval = ShapedArray(aval.shape, index_dtype)
        indices = ctx.op1("stablehlo.iota", [], index_aval, {"iota_dimension": ctx.i64_attr(axis)})
        init_value = ctx.constant(np.asarray(rules.lowest(aval.dtype) if direction == "GT"
                                             else rules.highest(aval.dtype), aval.dtype))
        init_index = ctx.constant(np.asarray(0, index_dtype))
        value_out = ShapedArray(out.shape, aval.dtype)
        op = ctx.op("stablehlo.reduce", [x, indices, init_value, init_index], [value_out, out],
                    {"dimensions": ctx.i64_array([axis])}, regions=1)
        sv, si = ShapedArray((), aval.dtype), ShapedArray((), index_dtype)
        block = ctx.block(op.regions[0], [sv, si, sv, si])
        with ctx.ir.InsertionPoint(block):
            a, ai, b, bi = block.arguments
            better = rules.compare(ctx, a, b, sv, direction)
            if dtypes.is_inexact(aval.dtype):
                a_nan = rules.compare(ctx, a, a, sv, "NE")
                b_nan = rules.compare(ctx, b, b, sv, "NE")
                better = ctx.op1("stablehlo.or", [better, ctx.op1(
                    "stablehlo.and", [a_nan, ctx.op1("stablehlo.not", [b_nan], ShapedArray(
                        (), dtypes.bool_))], ShapedArray((), dtypes.bool_))],
                    ShapedArray((), dtypes.bool_))
            tie = rules.compare(ctx, a, b, sv, "EQ")
            if dtypes.is_inexact(aval.dtype):  # two NaNs tie: the first one wins, as NumPy
                tie = ctx.op1("stablehlo.or", [tie, ctx.op1("stablehlo.and", [a_nan, b_nan],
                                                            ShapedArray((), dtypes.bool_))],
                              ShapedArray((), dtypes.bool_))
            lower = rules.compare(ctx, ai, bi, si, "LT")
            take_a = ctx.op1("stablehlo.or", [better, ctx.op1("stablehlo.and", [tie, lower],
                                                               ShapedArray((), dtypes.bool_))],
                             ShapedArray((), dtypes.bool_))
            ctx.op("stablehlo.return", [rules.select(ctx, take_a, a, b, sv),
                                        rules.select(ctx, take_a, ai, bi, si)], [])
        # a fusion boundary: IREE 3.13 fails to compile this two-result reduce fused with
        # a consumer that transposes it ("expected number of yield values (2) to match")
        (index,) = rules.fusion_barrier(ctx, [op.results[1]], [out])
        return [index]

    return rule


_declare_lowerings()
