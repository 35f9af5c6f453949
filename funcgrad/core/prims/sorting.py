"""sort: sorts several same-shaped operands along one axis by the first ``num_keys``."""

from __future__ import annotations

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.primitive import Primitive
from funcgrad.core.prims.structural import broadcast_in_dim, iota, moveaxis

sort_p = Primitive("sort", multiple_results=True)


def _sort_impl(*operands, dimension, num_keys):
    keys = operands[:num_keys]
    if num_keys == 1:
        order = np.argsort(keys[0], axis=dimension, kind="stable")
    else:
        moved = [np.moveaxis(k, dimension, -1) for k in keys]
        order = np.lexsort(moved[::-1], axis=-1)
        order = np.moveaxis(order, -1, dimension)
    return [np.take_along_axis(x, order, axis=dimension) for x in operands]


def _sort_rule(*operands, dimension, num_keys):
    first = operands[0]
    if not 0 <= dimension < max(first.ndim, 1):
        raise ValueError(f"sort: axis {dimension} out of range for shape {first.shape}")
    if any(o.shape != first.shape for o in operands):
        raise ValueError(f"sort: operands must share one shape, got "
                         f"{[o.shape for o in operands]}")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys={num_keys} out of range")
    return [o for o in operands]


def _sort_jvp(primals, tangents, *, dimension, num_keys):
    from funcgrad.core.prims.indexing import take_along_axis

    positions = iota(dtypes.int32, primals[0].shape, dimension)
    *outs, perm = sort_p.bind(*primals, positions, dimension=dimension, num_keys=num_keys)
    out_tangents = [None if t is None else take_along_axis(t, perm, dimension)
                    for t in tangents]
    return outs, out_tangents


def _sort_batch(axis_size, args, dims, *, dimension, num_keys):
    moved = []
    for x, d in zip(args, dims, strict=False):
        if d is None:
            x = broadcast_in_dim(x, (axis_size, *x.shape), tuple(range(1, x.ndim + 1)))
        elif d != 0:
            x = moveaxis(x, d, 0)
        moved.append(x)
    outs = sort_p.bind(*moved, dimension=dimension + 1, num_keys=num_keys)
    return outs, [0] * len(outs)


sort_p.impl = _sort_impl
sort_p.abstract_eval = _sort_rule
sort_p.jvp = _sort_jvp
sort_p.batch = _sort_batch


def sort(operands, dimension: int = -1, num_keys: int = 1):
    operands = tuple(operands)
    ndim = operands[0].ndim
    dimension = int(dimension) % max(ndim, 1)
    return sort_p.bind(*operands, dimension=dimension, num_keys=int(num_keys))


def _lower_sort(ctx, args, in_avals, out_avals, *, dimension, num_keys):
    """stablehlo.sort with a lexicographic comparator over the keys; NaNs sort last.
    Stable as the eager sort: IREE 3.13 ignores ``is_stable``, so the positions are one
    more operand, the comparator's last key."""
    from funcgrad.lowering import rules

    positions = ShapedArray(in_avals[0].shape, dtypes.int32)
    args = [*args, ctx.op1("stablehlo.iota", [], positions,
                           {"iota_dimension": ctx.i64_attr(dimension)})]
    in_avals = [*in_avals, positions]
    tie = len(args) - 1
    # IREE sorts its operands' buffers in place, even the caller's input tensor or a
    # constant ("write affecting operations on global resources"): every operand is first
    # copied into one element more along the sort axis, a value that sorts last (the
    # largest key, the largest position), sliced off afterwards
    length = in_avals[0].shape[dimension]
    grown = [_grown(a, dimension) for a in in_avals]
    args = [_pad_last(ctx, v, a, g, dimension,
                      length if k == tie else _sorts_last(a.dtype) if k < num_keys else 0)
            for k, (v, a, g) in enumerate(zip(args, in_avals, grown, strict=True))]
    final_avals, in_avals = in_avals, grown
    op = ctx.op("stablehlo.sort", args, [a.strip_weak() for a in in_avals],
                {"dimension": ctx.i64_attr(dimension), "is_stable": ctx.bool_attr(True)},
                regions=1)
    scalars = []
    for aval in in_avals:
        s = ShapedArray((), aval.dtype)
        scalars += [s, s]
    block = ctx.block(op.regions[0], scalars)
    bool_scalar = ShapedArray((), dtypes.bool_)
    with ctx.ir.InsertionPoint(block):
        result = None
        for k in reversed([*range(num_keys), tie]):
            a, b = block.arguments[2 * k], block.arguments[2 * k + 1]
            s = scalars[2 * k]
            less = rules.compare(ctx, a, b, s, "LT")
            if dtypes.is_inexact(s.dtype):
                a_nan = rules.compare(ctx, a, a, s, "NE")
                b_nan = rules.compare(ctx, b, b, s, "NE")
                not_a_nan = ctx.op1("stablehlo.not", [a_nan], bool_scalar)
                less = ctx.op1("stablehlo.or", [less, ctx.op1("stablehlo.and", [
                    not_a_nan, b_nan], bool_scalar)], bool_scalar)
                equal = ctx.op1("stablehlo.or", [rules.compare(ctx, a, b, s, "EQ"), ctx.op1(
                    "stablehlo.and", [a_nan, b_nan], bool_scalar)], bool_scalar)
            else:
                equal = rules.compare(ctx, a, b, s, "EQ")
            if result is None:
                result = less
            else:
                result = ctx.op1("stablehlo.or", [less, ctx.op1("stablehlo.and", [
                    equal, result], bool_scalar)], bool_scalar)
        ctx.op("stablehlo.return", [result], [])
    # every sorted operand is kept: one the program does not use (the positions, when only
    # the values are wanted) IREE 3.13 sorts in a stack temporary, whole sort rows of it
    # (400 KB for a 100k vector: over the stack limit, compile failed; 1M never finished)
    sorted_ = rules.fusion_barrier(ctx, list(op.results), [a.strip_weak() for a in in_avals])
    results = [ctx.op1("stablehlo.slice", [r], a.strip_weak(), {
        "start_indices": ctx.i64_array([0] * a.ndim), "limit_indices": ctx.i64_array(a.shape),
        "strides": ctx.i64_array([1] * a.ndim)}) for r, a in zip(sorted_, final_avals,
                                                                  strict=True)]
    return results[:-1]


def _grown(aval, dimension):
    shape = list(aval.shape)
    shape[dimension] += 1
    return ShapedArray(tuple(shape), aval.dtype)


def _pad_last(ctx, value, aval, grown, dimension, fill):
    high = [0] * aval.ndim
    high[dimension] = 1
    return ctx.op1("stablehlo.pad", [value, ctx.constant(np.asarray(fill, aval.dtype))],
                   grown.strip_weak(), {"edge_padding_low": ctx.i64_array([0] * aval.ndim),
                                        "edge_padding_high": ctx.i64_array(high),
                                        "interior_padding": ctx.i64_array([0] * aval.ndim)})


def _sorts_last(dtype):
    """A key no other key sorts after (NaN sorts last among floats; ties go by position)."""
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtype == np.bool_:
        return True
    return np.iinfo(dtype).max


sort_p.lower = _lower_sort
