"""dot_general: contraction of two tensors over chosen axes, with shared batch axes.

``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``; the result
has the batch axes, then lhs's free axes, then rhs's free axes (as XLA's DotGeneral).
"""

from __future__ import annotations

import math

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.primitive import Primitive, is_undefined
from funcgrad.core.prims.structural import moveaxis, transpose

dot_general_p = Primitive("dot_general", linear=True)


def _free(ndim, contract, batch):
    return [i for i in range(ndim) if i not in contract and i not in batch]


def _dot_rule(lhs, rhs, *, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise ValueError(f"dot_general: dimension numbers {dimension_numbers} pair up unequal "
                         "numbers of axes")
    for name, x, axes in (("lhs", lhs, lc + lb), ("rhs", rhs, rc + rb)):
        if any(not 0 <= a < x.ndim for a in axes) or len(set(axes)) != len(axes):
            raise ValueError(f"dot_general: {name} axes {axes} invalid for shape {x.shape}")
    for a, b in zip(lc, rc, strict=False):
        if lhs.shape[a] != rhs.shape[b]:
            raise ValueError(f"dot_general: shapes {lhs.shape} and {rhs.shape} do not align: "
                             f"contracting axis {a} has size {lhs.shape[a]}, axis {b} has "
                             f"{rhs.shape[b]} ({lhs.shape[a]} != {rhs.shape[b]})")
    for a, b in zip(lb, rb, strict=False):
        if lhs.shape[a] != rhs.shape[b]:
            raise ValueError(f"dot_general: batch axes of shapes {lhs.shape} and {rhs.shape} "
                             f"differ ({lhs.shape[a]} != {rhs.shape[b]})")
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"dot_general: dtypes {lhs.dtype.name} and {rhs.dtype.name} differ")
    shape = (tuple(lhs.shape[a] for a in lb)
             + tuple(lhs.shape[a] for a in _free(lhs.ndim, lc, lb))
             + tuple(rhs.shape[a] for a in _free(rhs.ndim, rc, rb)))
    dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
    return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


_HALF_FLOATS = (dtypes.float16, dtypes.bfloat16)


def _dot_impl(lhs, rhs, *, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    out_dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
    if out_dtype != lhs.dtype and np.promote_types(lhs.dtype, out_dtype) == out_dtype:
        # accumulate in the wider preferred type (as XLA and the compiled dot do): int8
        # products must not wrap, float32 products summed in float64 keep their digits
        lhs, rhs = lhs.astype(out_dtype), rhs.astype(out_dtype)
    elif lhs.dtype in _HALF_FLOATS:  # summed in float32, as JAX (half sums stop at 2048)
        out = _dot_impl(lhs.astype(np.float32), rhs.astype(np.float32),
                        dimension_numbers=dimension_numbers)
        return out.astype(out_dtype)
    if not lb and lc == (lhs.ndim - 1,) and rc == (0,) and rhs.ndim <= 2 and lhs.ndim <= 2:
        out = np.matmul(lhs, rhs) if lhs.ndim and rhs.ndim else lhs * rhs
        return np.asarray(out).astype(out_dtype, copy=False)
    lf, rf = _free(lhs.ndim, lc, lb), _free(rhs.ndim, rc, rb)
    if lhs.dtype.kind == "f" and all(lhs.shape[a] == 1 for a in lc):
        # outer products (per-example weight gradients, contracting at most size-1 axes):
        # einsum writes the result once; a K=1 matmul is several times slower
        letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        lhs_names = [next(letters) for _ in range(lhs.ndim)]
        rhs_names = [next(letters) for _ in range(rhs.ndim)]
        for a, b in zip(lb + lc, rb + rc, strict=False):
            rhs_names[b] = lhs_names[a]
        out_names = ([lhs_names[a] for a in lb] + [lhs_names[a] for a in lf]
                     + [rhs_names[a] for a in rf])
        spec = f"{''.join(lhs_names)},{''.join(rhs_names)}->{''.join(out_names)}"
        # strided (transposed) operands make einsum's inner loop crawl; they are small
        lhs = lhs if lhs.flags.c_contiguous else lhs.copy()
        rhs = rhs if rhs.flags.c_contiguous else rhs.copy()
        return np.einsum(spec, lhs, rhs).astype(out_dtype, copy=False)
    size = lambda x, axes: math.prod([x.shape[a] for a in axes])
    batch_shape = tuple(lhs.shape[a] for a in lb)
    a = np.transpose(lhs, (*lb, *lf, *lc)).reshape(size(lhs, lb), size(lhs, lf), size(lhs, lc))
    b = np.transpose(rhs, (*rb, *rc, *rf)).reshape(size(rhs, rb), size(rhs, rc), size(rhs, rf))
    out = np.matmul(a, b)
    shape = batch_shape + tuple(lhs.shape[i] for i in lf) + tuple(rhs.shape[i] for i in rf)
    return out.reshape(shape).astype(out_dtype, copy=False)


def _ranges_like(*lists):
    start = 0
    for xs in lists:
        yield list(range(start, start + len(xs)))
        start += len(xs)


def _transpose_lhs(ct, x_aval, y, dimension_numbers, swap_ans=False):
    (xc, yc), (xb, yb) = dimension_numbers
    x_kept = _free(x_aval.ndim, xc, xb)
    y_kept = _free(y.ndim, yc, yb)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(xb, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(xb, x_kept, y_kept)
    if all(y.shape[d] == 1 for d in y_kept):
        ans_x = [d for d in range(ct.ndim) if d not in ans_batch and d not in ans_y]
        return _outer_into_layout(ct, y, x_aval, xb, xc, x_kept, yb, yc, ans_batch, ans_x)
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(ans_batch), tuple(yb)))
    x_contract_by_y = [xc[i] for i in np.argsort(yc)]
    out_axes = [int(a) for a in np.argsort(list(xb) + x_kept + x_contract_by_y)]
    # dot_general(ct, y) comes out as (batch, ct's free, y's free); with the operands swapped
    # it comes out as (batch, y's free, ct's free).  When that is x's layout already, the
    # swapped product needs no transpose (weight gradients dW = x^T g): a compiled
    # transpose after a matmul costs a dispatch and a pass over the result.
    nb, n_ct = len(ans_batch), len(x_kept)
    position_if_swapped = (list(range(nb)) + [nb + len(x_contract_by_y) + j for j in range(n_ct)]
                           + [nb + j for j in range(len(x_contract_by_y))])
    if [position_if_swapped[a] for a in out_axes] == list(range(len(out_axes))):
        swapped = ((tuple(y_kept), tuple(ans_y)), (tuple(yb), tuple(ans_batch)))
        return dot_general(y, ct, swapped)
    return transpose(dot_general(ct, y, dims), tuple(out_axes))


def _outer_into_layout(ct, y, x_aval, xb, xc, x_kept, yb, yc, ans_batch, ans_x):
    """A transposed product that contracts nothing (per-example weight gradients: the
    cotangent times the input) as one broadcast multiply written straight in x's layout,
    instead of an outer-product dot_general and a transpose: a single pass over the (large)
    result, eagerly and compiled."""
    from funcgrad.core.prims.elementwise import mul
    from funcgrad.core.prims.structural import broadcast_in_dim, reshape

    def place(value, axis_of_dim):
        # drop the dims that map nowhere (size 1), order the rest by their target axis
        keep = [d for d in range(value.ndim) if axis_of_dim[d] is not None]
        value = reshape(value, [value.shape[d] for d in keep]) if len(keep) != value.ndim \
            else value
        targets = [axis_of_dim[d] for d in keep]
        order = [int(i) for i in np.argsort(targets)]
        value = transpose(value, order)
        return broadcast_in_dim(value, x_aval.shape, sorted(targets))

    ct_axes = [None] * ct.ndim
    for i, d in enumerate(ans_batch):
        ct_axes[d] = xb[i]
    for j, d in enumerate(ans_x):
        ct_axes[d] = x_kept[j]
    y_axes = [None] * y.ndim
    for i, d in enumerate(yb):
        y_axes[d] = xb[i]
    for k, d in enumerate(yc):
        y_axes[d] = xc[k]
    return mul(place(ct, ct_axes), place(y, y_axes))


def _dot_transpose(ct, lhs, rhs, *, dimension_numbers, preferred_element_type=None):
    if is_undefined(lhs) and is_undefined(rhs):
        raise TypeError("dot_general: transpose of a product of two linear values")
    if ct is None:
        return [None, None]
    (lc, rc), (lb, rb) = dimension_numbers
    # with a preferred_element_type the cotangent's dtype is not the operands' (float32
    # inputs, float64 products): the known operand is widened to it for the product
    if is_undefined(lhs):
        out = _transpose_lhs(ct, lhs.aval, _widened_to(rhs, ct.dtype), dimension_numbers)
        return [_cast(out, lhs.aval.dtype), None]
    swapped = ((rc, lc), (rb, lb))
    out = _transpose_lhs(ct, rhs.aval, _widened_to(lhs, ct.dtype), swapped, swap_ans=True)
    return [None, _cast(out, rhs.aval.dtype)]


def _widened_to(x, dtype):
    return x if x.dtype == dtype else _cast(x, dtype)


def _cast(x, dtype):
    from funcgrad.core.prims.elementwise import convert_element_type

    return convert_element_type(x, dtype)


def _dot_jvp(primals, tangents, **params):
    lhs, rhs = primals
    glhs, grhs = tangents
    out = dot_general_p.bind(lhs, rhs, **params)
    total = None
    if glhs is not None:
        total = dot_general_p.bind(glhs, rhs, **params)
    if grhs is not None:
        term = dot_general_p.bind(lhs, grhs, **params)
        total = term if total is None else total + term
    return out, total


def _dot_batch(axis_size, args, dims, *, dimension_numbers, preferred_element_type=None):
    lhs, rhs = args
    ld, rd = dims
    (lc, rc), (lb, rb) = dimension_numbers
    shift = lambda axes: tuple(a + 1 for a in axes)
    params = dict(preferred_element_type=preferred_element_type)
    if ld is not None and rd is not None:
        lhs, rhs = moveaxis(lhs, ld, 0), moveaxis(rhs, rd, 0)
        numbers = ((shift(lc), shift(rc)), ((0, *shift(lb)), (0, *shift(rb))))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=numbers, **params), 0
    if ld is not None:
        lhs = moveaxis(lhs, ld, 0)
        numbers = ((shift(lc), rc), (shift(lb), rb))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=numbers, **params), len(lb)
    rhs = moveaxis(rhs, rd, 0)
    numbers = ((lc, shift(rc)), (lb, shift(rb)))
    lhs_free = lhs.ndim - len(lc) - len(lb)
    return (dot_general_p.bind(lhs, rhs, dimension_numbers=numbers, **params),
            len(lb) + lhs_free)


dot_general_p.impl = _dot_impl
dot_general_p.abstract_eval = _dot_rule
dot_general_p.jvp = _dot_jvp
dot_general_p.transpose = _dot_transpose
dot_general_p.batch = _dot_batch


def dot_general(lhs, rhs, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    numbers = ((tuple(int(a) for a in lc), tuple(int(a) for a in rc)),
               (tuple(int(a) for a in lb), tuple(int(a) for a in rb)))
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize(preferred_element_type)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=numbers,
                              preferred_element_type=preferred_element_type)


def _bool_dot(lhs, rhs, *, dimension_numbers, preferred_element_type=None):
    """A bool contraction: the int32 count of true products, then whether it is nonzero."""
    from funcgrad.core.prims import elementwise as ew

    counts = dot_general_p.bind(ew.convert_element_type(lhs, dtypes.int32),
                                ew.convert_element_type(rhs, dtypes.int32),
                                dimension_numbers=dimension_numbers)
    return ew.convert_element_type(counts, dtypes.bool_)


def _lower_dot_general(ctx, args, in_avals, out_avals, *, dimension_numbers,
                       preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    lhs_aval, rhs_aval = in_avals
    if any(lhs_aval.shape[a] == 0 for a in lc) or not out_avals[0].size:
        # a sum of no products (IREE 3.13 fails to compile a contraction of length 0)
        return [ctx.full(0, out_avals[0].strip_weak())]
    if all(lhs_aval.shape[a] == 1 for a in lc):
        return [_lower_outer_product(ctx, args, in_avals, out_avals[0], dimension_numbers)]
    if any(x.shape[a] == 1 for x, c, b in ((lhs_aval, lc, lb), (rhs_aval, rc, rb))
           for a in _free(x.ndim, c, b)):
        # size-1 free axes (vmap of matrix-vector code leaves them) make IREE 3.13's data
        # tiling build oversized vectors; contract without them, then restore the shape
        lhs, lhs_aval, lc, lb = _drop_unit_free(ctx, args[0], lhs_aval, lc, lb)
        rhs, rhs_aval, rc, rb = _drop_unit_free(ctx, args[1], rhs_aval, rc, rb)
        shape = (tuple(lhs_aval.shape[a] for a in lb)
                 + tuple(lhs_aval.shape[a] for a in _free(lhs_aval.ndim, lc, lb))
                 + tuple(rhs_aval.shape[a] for a in _free(rhs_aval.ndim, rc, rb)))
        inner = ShapedArray(shape, out_avals[0].dtype)
        (out,) = _lower_dot_general(ctx, [lhs, rhs], [lhs_aval, rhs_aval], [inner],
                                    dimension_numbers=((lc, rc), (lb, rb)),
                                    preferred_element_type=preferred_element_type)
        return ctx.op("stablehlo.reshape", [out], out_avals)
    if lhs_aval.dtype == dtypes.bool_:
        # OR of ANDs, as NumPy: counted in int32, then nonzero (an i1 contraction summed
        # modulo 2: [[1, 1], [0, 1]] @ its transpose gave False where two products met)
        from funcgrad.lowering import rules

        return rules.via(_bool_dot)(ctx, args, in_avals, out_avals,
                                    dimension_numbers=dimension_numbers,
                                    preferred_element_type=preferred_element_type)
    if lhs_aval.dtype in _HALF_FLOATS:  # accumulate in float32 (see _dot_impl)
        wide_in = [ShapedArray(a.shape, dtypes.float32) for a in in_avals]
        wide_out = ShapedArray(out_avals[0].shape, dtypes.float32)
        up = [ctx.op1("stablehlo.convert", [v], a) for v, a in zip(args, wide_in, strict=True)]
        (out,) = _lower_dot_general(ctx, up, wide_in, [wide_out],
                                    dimension_numbers=dimension_numbers)
        return [ctx.op1("stablehlo.convert", [out], out_avals[0])]
    if ctx.platform == "cpu" and _long_and_narrow(lhs_aval, out_avals[0], lc):
        from funcgrad.lowering import rules

        return rules.via(_long_dot)(ctx, args, in_avals, out_avals,
                                    dimension_numbers=dimension_numbers,
                                    preferred_element_type=preferred_element_type)
    if ctx.platform == "cuda":
        from funcgrad.lowering.gpu_matmul import tiled_matmul

        tiled = tiled_matmul(ctx, args, in_avals, out_avals[0], lc, rc, lb, rb)
        if tiled is not None:
            return [tiled]
    numbers = ctx.attr(
        "#stablehlo.dot<lhs_batching_dimensions = [{}], rhs_batching_dimensions = [{}], "
        "lhs_contracting_dimensions = [{}], rhs_contracting_dimensions = [{}]>".format(
            ", ".join(map(str, lb)), ", ".join(map(str, rb)), ", ".join(map(str, lc)),
            ", ".join(map(str, rc))))
    return ctx.op("stablehlo.dot_general", args, out_avals, {"dot_dimension_numbers": numbers})


# IREE 3.13 adds up a product's terms one after another: x @ x of 1M float32 values of 0.1
# was 1.3% off.  A product of few results from many terms (long vectors, a few long rows
# times a vector) is lowered as a multiply and a sum instead, which sums in stages and
# float32 in float64 (reductions._staged_sum); matmuls keep IREE's kernels
_LONG_DOT_RESULTS = 64


def _long_and_narrow(lhs_aval, out_aval, contract) -> bool:
    from funcgrad.core.prims.reductions import SUM_BLOCK

    return (lhs_aval.dtype.kind == "f" and out_aval.dtype == lhs_aval.dtype
            and out_aval.size <= _LONG_DOT_RESULTS
            and math.prod(lhs_aval.shape[a] for a in contract) > SUM_BLOCK)


def _long_dot(lhs, rhs, *, dimension_numbers, preferred_element_type=None):
    """dot_general as a multiply of the operands broadcast to (batch, lhs free, rhs free,
    contracted) and a sum over the contracted axes."""
    from funcgrad.core.prims.reductions import reduce_sum
    from funcgrad.core.prims.structural import broadcast_in_dim

    (lc, rc), (lb, rb) = dimension_numbers
    lf, rf = _free(lhs.ndim, lc, lb), _free(rhs.ndim, rc, rb)
    nb, nl, nr = len(lb), len(lf), len(rf)
    lhs = transpose(lhs, (*lb, *lf, *lc))
    rhs = transpose(rhs, (*rb, *rf, *rc))
    shape = lhs.shape[:nb + nl] + rhs.shape[nb:nb + nr] + lhs.shape[nb + nl:]
    contracted = tuple(range(nb + nl + nr, len(shape)))
    lhs = broadcast_in_dim(lhs, shape, tuple(range(nb + nl)) + contracted)
    rhs = broadcast_in_dim(rhs, shape, tuple(range(nb)) + tuple(range(nb + nl, len(shape))))
    return reduce_sum(lhs * rhs, contracted)


def _drop_unit_free(ctx, value, aval, contract, batch):
    """``value`` without its size-1 free axes, and the axis numbers renumbered."""
    unit = [a for a in _free(aval.ndim, contract, batch) if aval.shape[a] == 1]
    if not unit:
        return value, aval, contract, batch
    keep = [a for a in range(aval.ndim) if a not in unit]
    renumber = {a: i for i, a in enumerate(keep)}
    smaller = ShapedArray([aval.shape[a] for a in keep], aval.dtype)
    value = ctx.op1("stablehlo.reshape", [value], smaller)
    return (value, smaller, tuple(renumber[a] for a in contract),
            tuple(renumber[a] for a in batch))


def _lower_outer_product(ctx, args, in_avals, out_aval, dimension_numbers):
    """A contraction over nothing (or over size-1 axes) is a broadcast multiply.  As a
    K=1 matmul it is slow, and with data tiling IREE 3.13 rejects large ones (per-example
    weight gradients produce exactly these)."""
    (lc, rc), (lb, rb) = dimension_numbers
    nb = len(lb)
    lf, rf = _free(in_avals[0].ndim, lc, lb), _free(in_avals[1].ndim, rc, rb)
    positions = (list(range(nb)), list(range(nb, nb + len(lf))),
                 list(range(nb + len(lf), out_aval.ndim)))

    def spread(value, aval, batch, free, out_dims):
        # batch axes then free axes (contracted size-1 axes dropped), placed in the output
        order = list(batch) + list(free) + [a for a in range(aval.ndim) if a not in batch
                                            and a not in free]
        if order != list(range(aval.ndim)):
            value = ctx.op1("stablehlo.transpose", [value], ShapedArray(
                [aval.shape[a] for a in order], aval.dtype),
                {"permutation": ctx.i64_array(order)})
        kept = ShapedArray([aval.shape[a] for a in list(batch) + list(free)], aval.dtype)
        value = ctx.op1("stablehlo.reshape", [value], kept)
        target = ShapedArray(out_aval.shape, aval.dtype)
        value = ctx.op1("stablehlo.broadcast_in_dim", [value], target,
                        {"broadcast_dimensions": ctx.i64_array(out_dims)})
        if aval.dtype != out_aval.dtype:
            value = ctx.op1("stablehlo.convert", [value], out_aval)
        return value

    lhs = spread(args[0], in_avals[0], lb, lf, positions[0] + positions[1])
    rhs = spread(args[1], in_avals[1], rb, rf, positions[0] + positions[2])
    return ctx.op1("stablehlo.multiply", [lhs, rhs], out_aval)


dot_general_p.lower = _lower_dot_general
