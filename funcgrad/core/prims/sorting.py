"""sort: sorts several same-shaped operands along one axis by the first ``num_keys``."""

from __future__ import annotations

import math

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.primitive import Primitive
from funcgrad.core.prims.structural import broadcast_in_dim, iota, moveaxis
from funcgrad.lowering import rules

sort_p = Primitive("sort", multiple_results=True)


def _sort_impl(*operands, dimension, num_keys):
    # NumPy does not sort ml_dtypes' bfloat16 NaNs last (nor around them): float32 does
    keys = [k.astype(np.float32) if k.dtype == dtypes.bfloat16 else k
            for k in operands[:num_keys]]
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


# IREE 3.13's CPU stablehlo.sort takes time quadratic in the row length (about 6 ns per
# row times length squared: 5.8 s for 1000x1000, 5 s for a 30k vector); the network below
# runs faster from rows of 4 on (1000x1000: 31 ms) but compiles 0.3-2 s longer (one
# dispatch per stage: 0.7 s for rows of 16, 2.3 s for a 1M vector, against 0.35 s). So
# it is used where IREE's sort would take over ~6 ms a call (rows * length**2 of 2**20:
# a 1024 vector, 4096 rows of 16), from rows of 16 on
_NETWORK_MIN_LENGTH = 16
_NETWORK_MIN_WORK = 2**20


def _lower_sort(ctx, args, in_avals, out_avals, *, dimension, num_keys):
    """A bitonic sorting network for long rows, and for complex keys (IREE 3.13 crashes
    compiling their stablehlo.sort); stablehlo.sort for short ones (see above)."""
    shape = in_avals[0].shape
    length = shape[dimension] if shape else 1
    complex_key = any(dtypes.is_complex(a.dtype) for a in in_avals[:num_keys])
    long_rows = length >= _NETWORK_MIN_LENGTH and math.prod(shape) * length >= _NETWORK_MIN_WORK
    if shape and 0 not in shape and (long_rows or complex_key):
        return _lower_sort_network(ctx, args, in_avals, dimension, num_keys)
    return _lower_sort_comparator(ctx, args, in_avals, dimension, num_keys)


def _lower_sort_network(ctx, args, in_avals, dimension, num_keys):
    """Sorts rows by one integer word per element (or a few, compared in order) packing the
    keys, mapped to order-preserving bits, above the position: every element's word
    differs, so the network's order is the stable one, and a min/max pair is a whole
    compare-exchange. The operands are then gathered by the sorted positions (NaN
    payloads and the sign of zero survive), so the network never touches the caller's
    buffers. The sort axis goes last: 3x faster than sorting along a strided axis."""
    shape = in_avals[0].shape
    ndim = len(shape)
    to_last = (*range(dimension), *range(dimension + 1, ndim), dimension)
    moved_shape = tuple(shape[d] for d in to_last)
    length = shape[dimension]
    rows = (math.prod(moved_shape[:-1]), length)
    flat = []
    for value, aval in zip(args, in_avals, strict=True):
        if dimension != ndim - 1:
            value = ctx.op1("stablehlo.transpose", [value], ShapedArray(moved_shape, aval.dtype),
                            {"permutation": ctx.i64_array(to_last)})
        flat.append(ctx.op1("stablehlo.reshape", [value], ShapedArray(rows, aval.dtype)))
    fields = []
    for value, aval in zip(flat[:num_keys], in_avals[:num_keys], strict=True):
        fields += _key_fields(ctx, value, ShapedArray(rows, aval.dtype))
    padded = 1 << (length - 1).bit_length()
    positions = ShapedArray(rows, dtypes.uint32)
    position_bits = max((padded - 1).bit_length(), 1)
    fields.append((ctx.op1("stablehlo.iota", [], positions, {"iota_dimension": ctx.i64_attr(1)}),
                   positions, position_bits))
    # padding sorts after every element: all ones, where an element's position field is
    # below its maximum (or there is no padding)
    words, words_aval = _bitonic_sort(ctx, *_pad_rows(ctx, *_packed_words(ctx, fields), padded))
    count = words_aval.shape[2]
    word_aval = words_aval.update(shape=(*rows, 1))
    last = ctx.op1("stablehlo.slice", [words], word_aval, {
        "start_indices": ctx.i64_array([0, 0, count - 1]),
        "limit_indices": ctx.i64_array([*rows, count]), "strides": ctx.i64_array([1, 1, 1])})
    word_aval = word_aval.update(shape=rows)
    last = ctx.op1("stablehlo.reshape", [last], word_aval)
    order = ctx.op1("stablehlo.and", [last, ctx.full((1 << position_bits) - 1, word_aval)],
                    word_aval)
    order = ctx.op1("stablehlo.convert", [order], ShapedArray(rows, dtypes.int32))
    order = ctx.op1("stablehlo.reshape", [order], ShapedArray((*rows, 1), dtypes.int32))
    numbers = ctx.attr(
        "#stablehlo.gather<offset_dims = [], collapsed_slice_dims = [1], "
        "operand_batching_dims = [0], start_indices_batching_dims = [0], "
        "start_index_map = [1], index_vector_dim = 2>")
    from_last = tuple(int(d) for d in np.argsort(to_last))
    results = []
    for value, aval in zip(flat, in_avals, strict=True):
        value = ctx.op1("stablehlo.gather", [value, order], ShapedArray(rows, aval.dtype), {
            "dimension_numbers": numbers, "slice_sizes": ctx.i64_array([1, 1]),
            "indices_are_sorted": ctx.bool_attr(False)})
        value = ctx.op1("stablehlo.reshape", [value], ShapedArray(moved_shape, aval.dtype))
        if dimension != ndim - 1:
            value = ctx.op1("stablehlo.transpose", [value], aval.strip_weak(),
                            {"permutation": ctx.i64_array(from_last)})
        results.append(value)
    return results


def _key_fields(ctx, value, aval):
    """``(value, aval, bits)`` unsigned fields whose order is the eager sort's order of
    ``value``: NaNs last, -0.0 equal to 0.0, complex numbers as NumPy orders them."""
    dtype = aval.dtype
    width = dtype.itemsize * 8
    if dtype == np.bool_:
        small = aval.update(dtype=dtypes.uint8)
        return [(rules.select(ctx, value, ctx.full(1, small), ctx.full(0, small), small),
                 small, 1)]
    if dtype.kind == "u":
        return [(value, aval, width)]
    if dtype.kind == "c":
        # NumPy: real, then imaginary part, within classes [R + Rj, R + nanj, nan + Rj,
        # nan + nanj]
        part = aval.update(dtype=dtypes.real_dtype(dtype))
        real = _key_fields(ctx, ctx.op1("stablehlo.real", [value], part), part)
        imag = _key_fields(ctx, ctx.op1("stablehlo.imag", [value], part), part)
        small = aval.update(dtype=dtypes.uint8)
        ones = ctx.full(np.iinfo(real[0][1].dtype).max, real[0][1])
        nan_class = ctx.op1("stablehlo.add", [
            rules.select(ctx, rules.compare(ctx, real[0][0], ones, real[0][1], "EQ"),
                         ctx.full(2, small), ctx.full(0, small), small),
            rules.select(ctx, rules.compare(ctx, imag[0][0], ones, imag[0][1], "EQ"),
                         ctx.full(1, small), ctx.full(0, small), small)], small)
        return [(nan_class, small, 2), *real, *imag]
    unsigned = aval.update(dtype=np.dtype(f"uint{width}"))
    bits = ctx.op1("stablehlo.bitcast_convert", [value], unsigned)
    sign = ctx.full(1 << (width - 1), unsigned)
    if dtype.kind == "i":
        return [(ctx.op1("stablehlo.xor", [bits, sign], unsigned), unsigned, width)]
    # floats, tested on their bits (compiled compares flush subnormals to zero): negative
    # ones with all bits flipped (larger magnitudes first), the others with the sign bit
    # set (after every negative), zeros as +0.0, NaNs as all ones (last)
    ones = ctx.full(np.iinfo(unsigned.dtype).max, unsigned)
    magnitude = ctx.op1("stablehlo.and", [bits, ctx.full((1 << (width - 1)) - 1, unsigned)],
                        unsigned)
    infinity = np.asarray(np.inf, dtype).view(unsigned.dtype)
    negative = rules.compare(ctx, bits, sign, unsigned, "GE")
    ordered = ctx.op1("stablehlo.xor", [bits, rules.select(ctx, negative, ones, sign, unsigned)],
                      unsigned)
    zero = rules.compare(ctx, magnitude, ctx.full(0, unsigned), unsigned, "EQ")
    ordered = rules.select(ctx, zero, sign, ordered, unsigned)
    nan = rules.compare(ctx, magnitude, ctx.full(infinity, unsigned), unsigned, "GT")
    return [(rules.select(ctx, nan, ones, ordered, unsigned), unsigned, width)]


def _packed_words(ctx, fields):
    """The fields packed, most significant first, into as few words as hold them, stacked
    on a last axis: ``(rows, length, words)``. 32-bit words where the fields fit (half the
    memory traffic of 64). Words are signed, their sign bit flipped so that signed order
    is the fields' unsigned order: IREE 3.13 fails to compile a reverse of unsigned
    integers."""
    groups, used = [], 64
    for field in fields:
        if used + field[2] > 64:
            groups.append([])
            used = 0
        groups[-1].append(field)
        used += field[2]
    width = 32 if all(sum(f[2] for f in group) <= 32 for group in groups) else 64
    shape = fields[0][1].shape
    words_aval = ShapedArray((*shape, len(groups)), np.dtype(f"int{width}"))
    words = []
    for group in groups:
        group_width = 32 if sum(f[2] for f in group) <= 32 else 64
        unsigned = ShapedArray(shape, np.dtype(f"uint{group_width}"))
        word_aval = unsigned.update(dtype=np.dtype(f"int{group_width}"))
        word = None
        for value, aval, bits in group:
            if aval.dtype != unsigned.dtype:
                value = ctx.op1("stablehlo.convert", [value], unsigned)
            value = ctx.op1("stablehlo.bitcast_convert", [value], word_aval)
            if word is not None:
                shifted = ctx.op1("stablehlo.shift_left", [word, ctx.full(bits, word_aval)],
                                  word_aval)
                value = ctx.op1("stablehlo.or", [shifted, value], word_aval)
            word = value
        word = ctx.op1("stablehlo.xor", [word, ctx.full(np.iinfo(word_aval.dtype).min,
                                                        word_aval)], word_aval)
        if word_aval.dtype != words_aval.dtype:  # sign extension keeps the order
            word = ctx.op1("stablehlo.convert", [word], word_aval.update(dtype=words_aval.dtype))
        words.append(ctx.op1("stablehlo.reshape", [word], words_aval.update(shape=(*shape, 1))))
    if len(words) > 1:
        return ctx.op1("stablehlo.concatenate", words, words_aval,
                       {"dimension": ctx.i64_attr(2)}), words_aval
    return words[0], words_aval


def _pad_rows(ctx, words, aval, padded):
    """``words`` with all-ones words appended to each row up to ``padded``. A concatenate,
    not stablehlo.pad: IREE 3.13 failed to compile two pads of words made from one
    complex operand ("'stream.yield' op used resource not listed in explicit captures")."""
    rows, length, count = aval.shape
    grown = aval.update(shape=(rows, padded, count))
    if padded == length:
        return words, grown
    ones = ctx.full(np.iinfo(aval.dtype).max, aval.update(shape=(rows, padded - length, count)))
    return ctx.op1("stablehlo.concatenate", [words, ones], grown,
                   {"dimension": ctx.i64_attr(1)}), grown


def _bitonic_sort(ctx, words, aval):
    """Batcher's bitonic sort of ``(rows, 2**k, words)`` along axis 1, in the form whose
    every compare-exchange puts the smaller element first: each merge of sorted halves
    starts by comparing one half with the other reversed."""
    size = aval.shape[1]
    block = 2
    while block <= size:
        words = _compare_exchange(ctx, words, aval, block // 2, flip=True)
        half = block // 4
        while half >= 1:
            words = _compare_exchange(ctx, words, aval, half, flip=False)
            half //= 2
        block *= 2
    return words, aval


def _compare_exchange(ctx, words, aval, half, flip):
    """One stage: element ``i`` of each ``2 * half`` block against ``i + half`` (against
    ``2 * half - 1 - i`` when ``flip``), the smaller first. Written as one elementwise
    select between each element and its partner (a reverse of the block), all words in
    one tensor: IREE then compiles a stage to one dispatch (slices and a concatenate made
    four; a tensor per word, one per word)."""
    rows, size, count = aval.shape
    split = aval.update(shape=(rows, size // (2 * half), 2, half, count))
    value = ctx.op1("stablehlo.reshape", [words], split)
    partner = ctx.op1("stablehlo.reverse", [value], split,
                      {"dimensions": ctx.i64_array([2, 3] if flip else [2])})
    flags = split.update(dtype=dtypes.bool_)
    upper = ctx.op1("stablehlo.convert", [ctx.op1(
        "stablehlo.iota", [], split.update(dtype=dtypes.int32),
        {"iota_dimension": ctx.i64_attr(2)})], flags)
    if count == 1:
        # the lower element of a pair keeps the minimum, the upper one the maximum
        out = rules.select(ctx, upper, ctx.op1("stablehlo.maximum", [value, partner], split),
                           ctx.op1("stablehlo.minimum", [value, partner], split), split)
    else:
        word = split.update(shape=(*split.shape[:4], 1))
        less = equal = None
        for k in reversed(range(count)):
            pair = [ctx.op1("stablehlo.slice", [v], word, {
                "start_indices": ctx.i64_array([0, 0, 0, 0, k]),
                "limit_indices": ctx.i64_array([*split.shape[:4], k + 1]),
                "strides": ctx.i64_array([1] * 5)}) for v in (value, partner)]
            here = rules.compare(ctx, *pair, word, "LT")
            if less is not None:
                equal = rules.compare(ctx, *pair, word, "EQ")
                word_flags = word.update(dtype=dtypes.bool_)
                here = ctx.op1("stablehlo.or", [here, ctx.op1(
                    "stablehlo.and", [equal, less], word_flags)], word_flags)
            less = here
        less = ctx.op1("stablehlo.broadcast_in_dim", [less], flags,
                       {"broadcast_dimensions": ctx.i64_array(range(5))})
        # the upper element takes its partner when that is larger, the lower one when it is
        # smaller; only padding words are equal (all ones), and identical
        take = rules.compare(ctx, upper, less, flags, "EQ")
        out = rules.select(ctx, take, partner, value, split)
    return ctx.op1("stablehlo.reshape", [out], aval)


def _lower_sort_comparator(ctx, args, in_avals, dimension, num_keys):
    """stablehlo.sort with a lexicographic comparator over the keys; NaNs sort last.
    Stable as the eager sort: IREE 3.13 ignores ``is_stable``, so the positions are one
    more operand, the comparator's last key."""
    positions = ShapedArray(in_avals[0].shape, dtypes.int32)
    args = [*args, ctx.op1("stablehlo.iota", [], positions,
                           {"iota_dimension": ctx.i64_attr(dimension)})]
    in_avals = [*in_avals, positions]
    # IREE sorts its operands' buffers in place, and one buffer sorted twice fails to
    # compile ("write affecting operations on global resources"): operands that CSE would
    # merge (the positions twice, in a gradient) are sorted once
    operands, avals, which = [], [], []
    for value, aval in zip(args, in_avals, strict=True):
        k = next((i for i, v in enumerate(operands) if rules.same_value(ctx, v, value, None)),
                 len(operands))
        if k == len(operands):
            operands.append(value)
            avals.append(aval)
        which.append(k)
    keys, tie = which[:num_keys], which[-1]
    # IREE also sorts the caller's input tensor or a constant in place: every operand is
    # first copied into one element more along the sort axis, a value that sorts last (the
    # largest key, the largest position), sliced off afterwards.  Payloads pad with their
    # own number, so that equal ones stay apart after the padding
    length = in_avals[0].shape[dimension]
    grown = [_grown(a, dimension) for a in avals]
    padded = [_pad_last(ctx, v, a, g, dimension,
                        length if k == tie else _sorts_last(a.dtype) if k in keys else k)
              for k, (v, a, g) in enumerate(zip(operands, avals, grown, strict=True))]
    op = ctx.op("stablehlo.sort", padded, [a.strip_weak() for a in grown],
                {"dimension": ctx.i64_attr(dimension), "is_stable": ctx.bool_attr(True)},
                regions=1)
    scalars = []
    for aval in grown:
        s = ShapedArray((), aval.dtype)
        scalars += [s, s]
    block = ctx.block(op.regions[0], scalars)
    bool_scalar = ShapedArray((), dtypes.bool_)
    with ctx.ir.InsertionPoint(block):
        result = None
        for k in reversed([*keys, tie]):
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
    sorted_ = rules.fusion_barrier(ctx, list(op.results), [a.strip_weak() for a in grown])
    results = [ctx.op1("stablehlo.slice", [r], a.strip_weak(), {
        "start_indices": ctx.i64_array([0] * a.ndim), "limit_indices": ctx.i64_array(a.shape),
        "strides": ctx.i64_array([1] * a.ndim)}) for r, a in zip(sorted_, avals, strict=True)]
    return [results[k] for k in which[:-1]]


def _grown(aval, dimension):
    shape = list(aval.shape)
    shape[dimension] += 1
    return ShapedArray(tuple(shape), aval.dtype)


def _pad_last(ctx, value, aval, grown, dimension, fill):
    if _padded(value):
        # IREE 3.13 folds the two pads into one, and then fails to sort the result in place
        # when it is computed ("write affecting operations on global resources":
        # sort(pad(sin(x))), sort(pad(sin(x))[None]))
        (value,) = rules.fusion_barrier(ctx, [value], [aval.strip_weak()])
    high = [0] * aval.ndim
    high[dimension] = 1
    return ctx.op1("stablehlo.pad", [value, ctx.constant(np.asarray(fill, aval.dtype))],
                   grown.strip_weak(), {"edge_padding_low": ctx.i64_array([0] * aval.ndim),
                                        "edge_padding_high": ctx.i64_array(high),
                                        "interior_padding": ctx.i64_array([0] * aval.ndim)})


def _padded(value) -> bool:
    """Whether the MLIR ``value`` is a ``stablehlo.pad`` result, maybe reshaped, sliced or
    transposed since."""
    return rules.producer_through(value, ("stablehlo.pad",), (
        "stablehlo.reshape", "stablehlo.slice", "stablehlo.transpose")) is not None


def _sorts_last(dtype):
    """A key no other key sorts after (NaN sorts last among floats; ties go by position)."""
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtype == np.bool_:
        return True
    return np.iinfo(dtype).max


sort_p.lower = _lower_sort
