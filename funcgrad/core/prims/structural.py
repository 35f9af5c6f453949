"""Structural primitives: broadcast, reshape, transpose, slice, pad, concatenate, rev, iota.

All are linear, so each has a transpose rule; eager impls return NumPy views where they
can (tensors are immutable, so sharing memory is safe).
"""

from __future__ import annotations

import math

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.primitive import Primitive, is_undefined


def _linear_jvp(prim):
    """JVP of a primitive linear in its first operand (others are static or zero-tangent)."""

    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if tangents[0] is None:
            return out, None
        return out, prim.bind(tangents[0], *primals[1:], **params)

    return jvp


def _move_to_front(x, dim):
    return x if dim == 0 else moveaxis(x, dim, 0)


# --- broadcast_in_dim ------------------------------------------------------------------

broadcast_in_dim_p = Primitive("broadcast_in_dim", linear=True)


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    if x.ndim == 0:
        # a filled tensor (zeros, ones, full): materialized, contiguous and 64-byte aligned,
        # because NumPy computes on stride-0 views at half speed and jit calls can only
        # alias aligned, contiguous memory
        from funcgrad.core.tensor import aligned_empty

        out = aligned_empty(shape, x.dtype)
        out.fill(x)
        return out
    expanded = [1] * len(shape)
    for src, dst in enumerate(broadcast_dimensions):
        expanded[dst] = x.shape[src]
    return np.broadcast_to(x.reshape(expanded), shape)


def _broadcast_in_dim_rule(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise ValueError(f"broadcast_in_dim: operand of rank {x.ndim} needs {x.ndim} "
                         f"broadcast_dimensions, got {broadcast_dimensions}")
    for src, dst in enumerate(broadcast_dimensions):
        if not 0 <= dst < len(shape) or x.shape[src] not in (1, shape[dst]):
            raise ValueError(f"broadcast_in_dim: cannot broadcast shape {x.shape} to {shape} "
                             f"with broadcast_dimensions={broadcast_dimensions}")
    if list(broadcast_dimensions) != sorted(broadcast_dimensions):
        raise ValueError("broadcast_in_dim: broadcast_dimensions must be increasing")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    if ct is None:
        return [None]
    from funcgrad.core.prims.reductions import reduce_sum

    in_shape = x.aval.shape
    summed = tuple(d for d in range(len(shape)) if d not in broadcast_dimensions)
    kept_ones = tuple(dst for src, dst in enumerate(broadcast_dimensions)
                      if in_shape[src] == 1 and shape[dst] != 1)
    out = reduce_sum(ct, tuple(sorted(summed + kept_ones)))
    return [reshape(out, in_shape)]


def _broadcast_in_dim_batch(axis_size, args, dims, *, shape, broadcast_dimensions):
    x = _move_to_front(args[0], dims[0])
    return broadcast_in_dim(x, (axis_size, *shape),
                            (0, *(d + 1 for d in broadcast_dimensions))), 0


broadcast_in_dim_p.impl = _broadcast_in_dim_impl
broadcast_in_dim_p.abstract_eval = _broadcast_in_dim_rule
broadcast_in_dim_p.jvp = _linear_jvp(broadcast_in_dim_p)
broadcast_in_dim_p.transpose = _broadcast_in_dim_transpose
broadcast_in_dim_p.batch = _broadcast_in_dim_batch


def broadcast_in_dim(x, shape, broadcast_dimensions):
    shape, broadcast_dimensions = tuple(shape), tuple(broadcast_dimensions)
    if x.shape == shape and broadcast_dimensions == tuple(range(len(shape))):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=broadcast_dimensions)


def broadcast_to_rank_shape(x, shape):
    """Broadcast ``x`` to ``shape`` with NumPy's right-aligned rule."""
    shape = tuple(shape)
    lead = len(shape) - x.ndim
    return broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


# --- reshape ---------------------------------------------------------------------------

reshape_p = Primitive("reshape", linear=True)


def _reshape_rule(x, *, new_sizes):
    if math.prod(new_sizes) != x.size:
        raise ValueError(f"reshape: cannot reshape shape {x.shape} ({x.size} elements) into "
                         f"{new_sizes}")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


reshape_p.impl = lambda x, *, new_sizes: x.reshape(new_sizes)
reshape_p.abstract_eval = _reshape_rule
reshape_p.jvp = _linear_jvp(reshape_p)
reshape_p.transpose = lambda ct, x, *, new_sizes: [
    None if ct is None else reshape(ct, x.aval.shape)]
reshape_p.batch = lambda axis_size, args, dims, *, new_sizes: (
    reshape(_move_to_front(args[0], dims[0]), (axis_size, *new_sizes)), 0)


def reshape(x, new_sizes):
    new_sizes = tuple(int(d) for d in new_sizes)
    if x.shape == new_sizes:
        return x
    return reshape_p.bind(x, new_sizes=new_sizes)


# --- transpose -------------------------------------------------------------------------

transpose_p = Primitive("transpose", linear=True)


def _transpose_rule(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise ValueError(f"transpose: permutation {permutation} is not a permutation of the "
                         f"{x.ndim} axes of shape {x.shape}")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


def _transpose_transpose(ct, x, *, permutation):
    if ct is None:
        return [None]
    return [transpose(ct, tuple(np.argsort(permutation)))]


def _transpose_batch(axis_size, args, dims, *, permutation):
    d = dims[0]
    # keep the batch axis where it is; permute the others around it
    others = [p if p < d else p + 1 for p in permutation]
    return transpose(args[0], tuple([d] + others)), 0


transpose_p.impl = lambda x, *, permutation: np.transpose(x, permutation)
transpose_p.abstract_eval = _transpose_rule
transpose_p.jvp = _linear_jvp(transpose_p)
transpose_p.transpose = _transpose_transpose
transpose_p.batch = _transpose_batch


def transpose(x, permutation):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(x.ndim)):
        return x
    return transpose_p.bind(x, permutation=permutation)


def moveaxis(x, source: int, destination: int):
    order = [d for d in range(x.ndim) if d != source]
    order.insert(destination, source)
    return transpose(x, order)


# --- slice -----------------------------------------------------------------------------

slice_p = Primitive("slice", linear=True)


def _slice_rule(x, *, start_indices, limit_indices, strides):
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise ValueError(f"slice: operand of rank {x.ndim} needs {x.ndim} start, limit and "
                         "stride values")
    shape = []
    for size, lo, hi, st in zip(x.shape, start_indices, limit_indices, strides, strict=False):
        if not (0 <= lo <= hi <= size) or st < 1:
            raise ValueError(f"slice: bounds start={start_indices} limit={limit_indices} "
                             f"strides={strides} out of range for shape {x.shape}")
        shape.append(max(0, -(-(hi - lo) // st)))
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice_impl(x, *, start_indices, limit_indices, strides):
    return x[tuple(slice(lo, hi, st) for lo, hi, st in zip(start_indices, limit_indices,
                                                             strides, strict=False))]


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    if ct is None:
        return [None]
    shape = x.aval.shape
    out_shape = ct.shape
    config = []
    for size, lo, st, n in zip(shape, start_indices, strides, out_shape, strict=False):
        used = lo + (n - 1) * st + 1 if n else lo
        config.append((lo, size - used, st - 1) if n else (size, 0, 0))
    zero = np.zeros((), ct.dtype)
    if any(n == 0 for n in out_shape):
        return [broadcast_in_dim(zero, shape, ())]
    return [pad(ct, zero, tuple(config))]


def _slice_batch(axis_size, args, dims, *, start_indices, limit_indices, strides):
    x = _move_to_front(args[0], dims[0])
    return slice_(x, (0, *start_indices), (axis_size, *limit_indices), (1, *strides)), 0


slice_p.impl = _slice_impl
slice_p.abstract_eval = _slice_rule
slice_p.jvp = _linear_jvp(slice_p)
slice_p.transpose = _slice_transpose
slice_p.batch = _slice_batch


def slice_(x, start_indices, limit_indices, strides=None):
    start = tuple(int(s) for s in start_indices)
    limit = tuple(int(s) for s in limit_indices)
    strides = (1,) * len(start) if strides is None else tuple(int(s) for s in strides)
    if start == (0,) * x.ndim and limit == tuple(x.shape) and strides == (1,) * x.ndim:
        return x
    return slice_p.bind(x, start_indices=start, limit_indices=limit, strides=strides)


# --- pad -------------------------------------------------------------------------------

pad_p = Primitive("pad", linear=True)


def _pad_rule(x, value, *, padding_config):
    if len(padding_config) != x.ndim:
        raise ValueError(f"pad: operand of rank {x.ndim} needs {x.ndim} (low, high, interior) "
                         f"triples, got {padding_config}")
    if value.shape != () or value.dtype != x.dtype:
        raise TypeError(f"pad: padding value must be a scalar of dtype {x.dtype.name}, got "
                        f"{value.dtype.name}{list(value.shape)}")
    shape = []
    for size, (lo, hi, interior) in zip(x.shape, padding_config, strict=False):
        if interior < 0:
            raise ValueError("pad: interior padding must be non-negative")
        n = lo + hi + size + max(size - 1, 0) * interior
        if n < 0:
            raise ValueError(f"pad: negative padding {padding_config} removes more than the "
                             f"shape {x.shape} has")
        shape.append(n)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _pad_impl(x, value, *, padding_config):
    grown = [max(lo, 0) + max(hi, 0) + size + max(size - 1, 0) * interior
             for size, (lo, hi, interior) in zip(x.shape, padding_config, strict=False)]
    out = np.full(grown, value, dtype=x.dtype)
    inner = tuple(slice(max(lo, 0), max(lo, 0) + (size - 1) * (interior + 1) + 1 if size else
                        max(lo, 0), interior + 1)
                  for size, (lo, hi, interior) in zip(x.shape, padding_config, strict=False))
    out[inner] = x
    crop = tuple(slice(-min(lo, 0), n + min(hi, 0)) for n, (lo, hi, _) in
                 zip(grown, padding_config, strict=False))
    return out[crop]


def _pad_jvp(primals, tangents, *, padding_config):
    x, value = primals
    gx, gv = tangents
    out = pad(x, value, padding_config)
    if gx is None and gv is None:
        return out, None
    gx = zeros_like(x) if gx is None else gx
    gv = zeros_like(value) if gv is None else gv
    return out, pad(gx, gv, padding_config)


def _pad_transpose(ct, x, value, *, padding_config):
    if ct is None:
        return [None, None]
    from funcgrad.core.prims.reductions import reduce_sum

    # undo negative padding by padding the cotangent with zeros, then take the strided part
    unneg = tuple((max(-lo, 0), max(-hi, 0), 0) for lo, hi, _ in padding_config)
    zero = np.zeros((), ct.dtype)
    full = pad(ct, zero, unneg) if any(a or b for a, b, _ in unneg) else ct
    starts = tuple(max(lo, 0) for lo, _, _ in padding_config)
    sizes = x.aval.shape if is_undefined(x) else x.shape
    limits = tuple(s + (n - 1) * (i + 1) + 1 if n else s for s, n, (_, _, i) in
                   zip(starts, sizes, padding_config, strict=False))
    strides = tuple(i + 1 for _, _, i in padding_config)
    ct_x = slice_(full, starts, limits, strides) if is_undefined(x) else None
    ct_value = None
    if is_undefined(value):
        ct_value = reduce_sum(ct, tuple(range(ct.ndim)))
        if ct_x is not None:
            ct_value = ct_value - reduce_sum(ct_x, tuple(range(ct_x.ndim)))
        else:
            inner = slice_(full, starts, limits, strides)
            ct_value = ct_value - reduce_sum(inner, tuple(range(inner.ndim)))
    return [ct_x, ct_value]


def _pad_batch(axis_size, args, dims, *, padding_config):
    x, value = args
    if dims[0] is None:
        x = broadcast_in_dim(x, (axis_size, *x.shape), tuple(range(1, x.ndim + 1)))
    else:
        x = _move_to_front(x, dims[0])
    config = ((0, 0, 0), *padding_config)
    if dims[1] is None:
        return pad(x, value, config), 0
    # a batched padding value (shape (B,)): pad with zeros, then fill the padding positions
    # (marked by padding an all-false mask with true) with each example's value
    from funcgrad.core.prims.elementwise import select_n

    zero = np.zeros((), x.dtype)
    padded = pad(x, zero, config)
    is_pad = pad(full(x.shape, False, np.bool_), np.ones((), np.bool_), config)
    fill = broadcast_in_dim(value, padded.shape, (0,))
    return select_n(is_pad, padded, fill), 0


pad_p.impl = _pad_impl
pad_p.abstract_eval = _pad_rule
pad_p.jvp = _pad_jvp
pad_p.transpose = _pad_transpose
pad_p.batch = _pad_batch


def pad(x, value, padding_config):
    config = tuple((int(lo), int(hi), int(i)) for lo, hi, i in padding_config)
    return pad_p.bind(x, value, padding_config=config)


# --- concatenate -----------------------------------------------------------------------

concatenate_p = Primitive("concatenate", linear=True)


def _concatenate_rule(*xs, dimension):
    first = xs[0]
    if not 0 <= dimension < first.ndim:
        raise ValueError(f"concatenate: axis {dimension} out of range for rank {first.ndim}")
    for other in xs[1:]:
        if other.dtype != first.dtype:
            raise TypeError(f"concatenate: dtypes {first.dtype.name} and {other.dtype.name} "
                            "differ")
        if (other.ndim != first.ndim or other.shape[:dimension] != first.shape[:dimension]
                or other.shape[dimension + 1:] != first.shape[dimension + 1:]):
            raise ValueError(f"concatenate: shapes {first.shape} and {other.shape} differ "
                             f"outside axis {dimension}")
    shape = list(first.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, first.dtype, all(x.weak_type for x in xs))


def _concatenate_jvp(primals, tangents, *, dimension):
    out = concatenate(primals, dimension)
    if all(t is None for t in tangents):
        return out, None
    filled = [zeros_like(p) if t is None else t for p, t in zip(primals, tangents, strict=False)]
    return out, concatenate(filled, dimension)


def _concatenate_transpose(ct, *xs, dimension):
    outs, offset = [], 0
    for x in xs:
        shape = x.aval.shape if is_undefined(x) else x.shape
        size = shape[dimension]
        if is_undefined(x) and ct is not None:
            start = [0] * len(shape)
            limit = list(ct.shape)
            start[dimension], limit[dimension] = offset, offset + size
            outs.append(slice_(ct, start, limit))
        else:
            outs.append(None)
        offset += size
    return outs


def _concatenate_batch(axis_size, args, dims, *, dimension):
    moved = []
    for x, d in zip(args, dims, strict=False):
        if d is None:
            x = broadcast_in_dim(x, (axis_size, *x.shape), tuple(range(1, x.ndim + 1)))
        else:
            x = _move_to_front(x, d)
        moved.append(x)
    return concatenate(moved, dimension + 1), 0


concatenate_p.impl = lambda *xs, dimension: np.concatenate(xs, axis=dimension)
concatenate_p.abstract_eval = _concatenate_rule
concatenate_p.jvp = _concatenate_jvp
concatenate_p.transpose = _concatenate_transpose
concatenate_p.batch = _concatenate_batch


def concatenate(xs, dimension: int):
    xs = tuple(xs)
    if len(xs) == 1:
        return xs[0]
    return concatenate_p.bind(*xs, dimension=int(dimension))


# --- rev -------------------------------------------------------------------------------

rev_p = Primitive("rev", linear=True)


def _rev_rule(x, *, dimensions):
    if any(not 0 <= d < x.ndim for d in dimensions):
        raise ValueError(f"rev: dimensions {dimensions} out of range for rank {x.ndim}")
    return x


rev_p.impl = lambda x, *, dimensions: np.flip(x, dimensions) if dimensions else x
rev_p.abstract_eval = _rev_rule
rev_p.jvp = _linear_jvp(rev_p)
rev_p.transpose = lambda ct, x, *, dimensions: [None if ct is None else rev(ct, dimensions)]
rev_p.batch = lambda axis_size, args, dims, *, dimensions: (
    rev(args[0], tuple(d + (d >= dims[0]) for d in dimensions)), dims[0])


def rev(x, dimensions):
    dimensions = tuple(int(d) for d in dimensions)
    return rev_p.bind(x, dimensions=dimensions) if dimensions else x


# --- iota: 0, 1, 2, ... along one axis of a shape ---------------------------------------

iota_p = Primitive("iota", keeps_weak=False, differentiable=False)


def _iota_impl(*, dtype, shape, dimension):
    line = np.arange(shape[dimension], dtype=dtype)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.broadcast_to(line.reshape(view), shape)


iota_p.impl = _iota_impl
iota_p.abstract_eval = lambda *, dtype, shape, dimension: ShapedArray(shape, dtype)
iota_p.jvp = lambda primals, tangents, **params: (iota_p.bind(**params), None)
iota_p.batch = lambda axis_size, args, dims, **params: (iota_p.bind(**params), None)


def iota(dtype, shape, dimension: int = 0):
    shape = tuple(int(s) for s in shape)
    return iota_p.bind(dtype=dtypes.canonicalize(dtype), shape=shape, dimension=int(dimension))


# --- constants built from primitives (so they trace) ------------------------------------


def full(shape, value, dtype):
    """A tensor of ``shape`` filled with the Python scalar ``value`` (traceable)."""
    dtype = dtypes.canonicalize(dtype)
    return broadcast_in_dim_p.bind(np.asarray(value, dtype=dtype), shape=tuple(shape),
                                   broadcast_dimensions=())


def zeros_like(x):
    return full(x.shape, 0, x.dtype)


def full_like(x, value):
    return full(x.shape, value, x.dtype)


# --- MLIR lowering ------------------------------------------------------------------------------


def _lower_broadcast(ctx, args, in_avals, out_avals, *, shape, broadcast_dimensions):
    attrs = {"broadcast_dimensions": ctx.i64_array(broadcast_dimensions)}
    if in_avals[0].dtype == np.complex128:
        # of a constant, the parts go through a barrier: IREE 3.13 folds them back into a
        # complex128 splat otherwise, and inside a loop that splat failed to compile
        # ("'stream.async.dispatch' op ... expected to be in an execution region")
        constant = getattr(getattr(args[0], "owner", None), "name", None) == "stablehlo.constant"
        return _on_complex_parts(ctx, "stablehlo.broadcast_in_dim", args, in_avals,
                                 out_avals[0], attrs, barrier=constant)
    return ctx.op("stablehlo.broadcast_in_dim", args, out_avals, attrs)


def _lower_reshape(ctx, args, in_avals, out_avals, *, new_sizes):
    if getattr(args[0].owner, "name", None) == "stablehlo.reverse" and \
            _drop_ones(in_avals[0].shape) != _drop_ones(out_avals[0].shape):
        # IREE 3.13 compiled the gradient of sin(sin(x[:, ::-1].reshape(4, -1))) (float64)
        # for longer than ten minutes: a reverse merged into other axes gets a buffer
        from funcgrad.lowering import rules

        args = rules.fusion_barrier(ctx, args, [in_avals[0].strip_weak()])
    return ctx.op("stablehlo.reshape", args, out_avals)


def _drop_ones(shape) -> tuple:
    return tuple(d for d in shape if d != 1)


def _lower_transpose(ctx, args, in_avals, out_avals, *, permutation):
    return ctx.op("stablehlo.transpose", args, out_avals,
                  {"permutation": ctx.i64_array(permutation)})


def _lower_slice(ctx, args, in_avals, out_avals, *, start_indices, limit_indices, strides):
    attrs = {"start_indices": ctx.i64_array(start_indices),
             "limit_indices": ctx.i64_array(limit_indices), "strides": ctx.i64_array(strides)}
    if ctx.platform == "cuda" and dtypes.is_complex(in_avals[0].dtype):
        # IREE 3.13's CUDA kernels read a slice of a complex value computed in the same
        # kernel with a padding value it cannot make ("'vector.transfer_read' op requires
        # valid padding vector elemental type": triu(r)[:4], complex64 qr of a tall r)
        return _on_complex_parts(ctx, "stablehlo.slice", args, in_avals, out_avals[0], attrs)
    return ctx.op("stablehlo.slice", args, out_avals, attrs)


def _on_complex_parts(ctx, op_name, args, in_avals, out_aval, attrs, barrier=False):
    """``op_name`` applied to the real and the imaginary parts of complex operands, then
    recombined: for the data-movement ops IREE 3.13 cannot compile on complex values
    (a broadcast complex128 becomes an i128 splat; pads have their own, in _lower_pad)."""
    real = np.dtype(dtypes.real_dtype(out_aval.dtype))
    parts = []
    for part_op in ("stablehlo.real", "stablehlo.imag"):
        inputs = [ctx.op1(part_op, [a], ShapedArray(av.shape, real))
                  for a, av in zip(args, in_avals, strict=True)]
        parts.append(ctx.op1(op_name, inputs, ShapedArray(out_aval.shape, real), attrs))
    if barrier:
        from funcgrad.lowering import rules

        return rules.to_complex(ctx, parts, [ShapedArray(out_aval.shape, real)] * 2,
                                [out_aval.strip_weak()])
    return [ctx.op1("stablehlo.complex", parts, out_aval.strip_weak())]


def _lower_pad(ctx, args, in_avals, out_avals, *, padding_config):
    attrs = {"edge_padding_low": ctx.i64_array([lo for lo, _, _ in padding_config]),
             "edge_padding_high": ctx.i64_array([hi for _, hi, _ in padding_config]),
             "interior_padding": ctx.i64_array([i for _, _, i in padding_config])}
    if dtypes.is_complex(in_avals[0].dtype):
        # the parts are padded as real arrays (a complex pad crashes iree-compile), under
        # the same barrier rules: without them the gradient of x[:, ::2][:, 1:3] was wrong
        in_parts = [a.update(dtype=dtypes.real_dtype(a.dtype)).strip_weak() for a in in_avals]
        out_part = in_parts[0].update(shape=out_avals[0].shape)
        parts = [_lower_pad(ctx, [ctx.op1(f"stablehlo.{name}", [a], av)
                                  for a, av in zip(args, in_parts, strict=True)],
                            in_parts, [out_part], padding_config=padding_config)[0]
                 for name in ("real", "imag")]
        return [ctx.op1("stablehlo.complex", parts, out_avals[0].strip_weak())]
    if _pad_needs_a_buffer(args[0], padding_config):
        from funcgrad.lowering import rules

        (operand,) = rules.fusion_barrier(ctx, [args[0]], [in_avals[0].strip_weak()])
        args = [operand, *args[1:]]
    return ctx.op("stablehlo.pad", args, out_avals, attrs)


def _pad_needs_a_buffer(operand, padding_config) -> bool:
    """Whether the MLIR ``operand`` of a pad must go to a buffer of its own (an
    optimization barrier) because IREE 3.13 mishandles the pad fused with its producer:
    - a pad with interior padding (the transpose of a strided slice) of a computed value,
      and a pad of a pad with interior padding (through reshapes and slices, which IREE
      folds into it): values at the wrong offsets, silently (pad(pad(x, low=1),
      interior=1) put x[0] at 2, not 3; the gradients of x[0::2][k] with a traced k, a
      dynamic_update_slice padded, and of x[:, 1::2][:, 3:4] padded);
    - a reshape of a slice: fails to compile ("expected rank to be smaller or equal to the
      other rank": x[2:3].reshape(1, 1) padded on both axes, the gradient of x[0, 0, 7:8])."""
    from funcgrad.lowering import rules

    if any(i for _, _, i in padding_config) and getattr(operand.owner, "name", None):
        return True
    inner = rules.producer_through(operand, ("stablehlo.pad",), (
        "stablehlo.reshape", "stablehlo.slice", "stablehlo.real", "stablehlo.imag",
        "stablehlo.complex"))  # (a complex pad is a pad of each part: see _lower_pad)
    if inner is not None and any(list(inner.attributes["interior_padding"])):
        return True
    return getattr(operand.owner, "name", None) == "stablehlo.reshape" and \
        rules.producer_through(operand, ("stablehlo.slice",), ("stablehlo.reshape",)) is not None


def _lower_concatenate(ctx, args, in_avals, out_avals, *, dimension):
    return ctx.op("stablehlo.concatenate", args, out_avals,
                  {"dimension": ctx.i64_attr(dimension)})


def _lower_rev(ctx, args, in_avals, out_avals, *, dimensions):
    from funcgrad.lowering import rules

    aval = in_avals[0]
    args = rules.unfused_from_slices(ctx, args, in_avals)
    if aval.dtype.kind == "u":
        # IREE 3.13 cannot legalize a reverse of unsigned integers (uint8 images flipped):
        # reverse the same bits as signed integers
        signed = ShapedArray(aval.shape, np.dtype(f"int{aval.dtype.itemsize * 8}"))
        bits = ctx.op1("stablehlo.bitcast_convert", args, signed)
        flipped = ctx.op1("stablehlo.reverse", [bits], signed,
                          {"dimensions": ctx.i64_array(dimensions)})
        return [ctx.op1("stablehlo.bitcast_convert", [flipped], out_avals[0].strip_weak())]
    return ctx.op("stablehlo.reverse", args, out_avals,
                  {"dimensions": ctx.i64_array(dimensions)})


def _lower_iota(ctx, args, in_avals, out_avals, *, dtype, shape, dimension):
    (aval,) = out_avals
    if aval.dtype == np.bool_ or not aval.shape:
        # stablehlo.iota needs rank >= 1 and a numeric type
        line = np.broadcast_to(_iota_impl(dtype=dtype, shape=shape, dimension=dimension), shape)
        return [ctx.constant(np.ascontiguousarray(line))]
    return ctx.op("stablehlo.iota", [], out_avals, {"iota_dimension": ctx.i64_attr(dimension)})


broadcast_in_dim_p.lower = _lower_broadcast
reshape_p.lower = _lower_reshape
transpose_p.lower = _lower_transpose
slice_p.lower = _lower_slice
pad_p.lower = _lower_pad
concatenate_p.lower = _lower_concatenate
rev_p.lower = _lower_rev
iota_p.lower = _lower_iota
