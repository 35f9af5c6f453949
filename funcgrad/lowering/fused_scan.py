"""Recurrences as one CPU kernel: a scan whose step is one matrix-vector product plus
elementwise work runs all of its steps inside a single IREE dispatch.

IREE runs a ``stablehlo.while`` on the host, one dispatch per step (about 1.5 us each on
this machine, more than the arithmetic of a 128-wide RNN step).  Here the loop is an
``scf.for`` inside a ``flow.dispatch.region``, so the compiled kernel loops by itself
(RNN of 1000 steps, hidden 128: 1.7 ms -> about 0.6 ms, see benchmarks/RESULTS.md).

What makes IREE 3.13 accept and compile such a kernel well (each was measured):
- the carried values live in a ``2 x shape`` ping-pong buffer (the step reads row
  ``t % 2`` and writes row ``1 - t % 2``): a loop-carried tensor must be updated in
  place, and a step cannot overwrite the vector its product is still reading;
- the product is a ``linalg.generic`` with an explicit ``compilation_info``: no
  distribution over workgroups (a distributed product inside a sequential loop is
  refused), and 128 rows per vector tile with a reduction tile of one, which on a
  matrix stored (contracted axis, free axis) is a broadcast-FMA per column: 0.6 ms
  against 1.3 ms for IREE's default tiles, 10 ms on a (free, contracted) layout;
  the lowering therefore transposes the loop-invariant matrix once, before the loop.

Anything else (several products, reductions, other dtypes) keeps the host loop of
``control_flow._lower_scan``; a fused scan IREE still refuses makes jit
lower the program again without fusion (``funcgrad.transforms.jit``).
"""

from __future__ import annotations

from dataclasses import dataclass

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray

# per-step work small enough that the host loop's dispatches dominate
_MAX_CARRY_ELEMENTS = 16384
_MAX_MATRIX_ELEMENTS = 1 << 22
_ROW_TILE = 128
# besides elementwise primitives; slices split an LSTM's gates out of its one product
# (500 steps, hidden 64: 1.17 -> 0.39 ms)
_STRUCTURAL = {"reshape", "broadcast_in_dim", "convert_element_type", "select_n",
               "integer_pow", "slice"}


@dataclass(frozen=True)
class Plan:
    """How a scan's one matrix-vector product is laid out: ``matrix`` is the position of
    the matrix among the body's inputs (a scan constant); ``transpose`` whether it must
    be transposed once so that the contracted axis comes first."""

    matrix: int
    transpose: bool


def plan(ctx, body, num_consts: int, num_carry: int, length: int, in_avals,
         out_avals) -> Plan | None:
    """A ``Plan`` when the scan can run as one kernel, else None."""
    if ctx.platform != "cpu" or not ctx.fuse_scans:
        return None
    if length < 2 or num_carry == 0:
        return None
    carry_avals = in_avals[num_consts:num_consts + num_carry]
    if sum(a.size for a in carry_avals) > _MAX_CARRY_ELEMENTS:
        return None
    if any(a.dtype not in (dtypes.float32, dtypes.bool_) for a in out_avals):
        return None
    dots = []
    for eqn in body.equations:
        name = eqn.prim.name
        if name == "dot_general":
            dots.append(eqn)
        elif not (hasattr(eqn.prim, "arity") or name in _STRUCTURAL):
            return None
        if any(v.aval.dtype not in (dtypes.float32, dtypes.bool_) for v in eqn.outputs):
            return None
    if len(dots) != 1:
        return None
    return _matvec_plan(dots[0], body, num_consts)


def _matvec_plan(eqn, body, num_consts) -> Plan | None:
    """A product of a scan constant (a matrix) with a vector: the other operand's axes
    other than the contracted one all have size 1 (``W @ h`` traces as (M, K) x (K, 1))."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    if lb or rb or len(lc) != 1:
        return None
    lhs, rhs = eqn.inputs
    if (lhs.aval.dtype, rhs.aval.dtype, eqn.outputs[0].aval.dtype) != (dtypes.float32,) * 3:
        return None
    consts = body.in_vars[:num_consts]
    for matrix, contracted, vector in ((lhs, lc[0], rhs), (rhs, rc[0], lhs)):
        if matrix in consts and matrix.aval.ndim == 2 and vector.aval.size == \
                matrix.aval.shape[contracted] and matrix.aval.size <= _MAX_MATRIX_ELEMENTS:
            break
    else:
        return None
    # the kernel sees the matrix in its own layout: no other use may read it
    uses = sum(x is matrix for e in body.equations for x in e.inputs)
    if uses != 1 or matrix in body.outputs:
        return None
    return Plan(matrix=consts.index(matrix), transpose=contracted == 1)


def lower(ctx, args, in_avals, out_avals, *, body, num_consts, num_carry, length, reverse,
          scan_plan: Plan):
    """Emit the scan as ``flow.dispatch.region { scf.for ... }``; returns the carries,
    then the stacked per-step outputs (written in place, row by row, in the loop)."""
    ctx.fused_scans += 1
    ir = ctx.ir
    consts = list(args[:num_consts])
    carry = list(args[num_consts:num_consts + num_carry])
    xs = list(args[num_consts + num_carry:])
    carry_avals = [a.strip_weak() for a in in_avals[num_consts:num_consts + num_carry]]
    x_avals = [a.strip_weak() for a in in_avals[num_consts + num_carry:]]
    matrix_aval = in_avals[scan_plan.matrix].strip_weak()
    if scan_plan.transpose:
        rows, cols = matrix_aval.shape
        consts[scan_plan.matrix] = ctx.op1(
            "stablehlo.transpose", [consts[scan_plan.matrix]],
            ShapedArray((cols, rows), matrix_aval.dtype),
            {"permutation": ctx.i64_array((1, 0))})

    y_avals = [a.strip_weak() for a in out_avals[num_carry:]]
    index = ir.IndexType.get()
    state_avals = [ShapedArray((2, *a.shape), a.dtype) for a in carry_avals]
    loop_avals = state_avals + y_avals
    region_op = ir.Operation.create(
        "flow.dispatch.region", results=[ctx.tensor_type(a) for a in carry_avals + y_avals],
        operands=[], attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0])},
        regions=2)
    with ir.InsertionPoint(region_op.regions[0].blocks.append()):
        def const_index(value):
            return _index_op(ir, "arith.constant", [], {
                "value": ir.IntegerAttr.get(index, int(value))})

        zero, one, two = const_index(0), const_index(1), const_index(2)
        states = [ctx.op1("stablehlo.concatenate", [_as_row(ctx, h, a)] * 2, s,
                          {"dimension": ctx.i64_attr(0)})
                  for h, a, s in zip(carry, carry_avals, state_avals, strict=True)]
        stacks = [ir.Operation.create("tensor.empty", results=[ctx.tensor_type(a)]).result
                  for a in y_avals]
        loop = ir.Operation.create(
            "scf.for", results=[ctx.tensor_type(s) for s in loop_avals],
            operands=[zero, const_index(length), one, *states, *stacks], regions=1)
        block = loop.regions[0].blocks.append(index, *[ctx.tensor_type(s)
                                                       for s in loop_avals])
        with ir.InsertionPoint(block):
            t = block.arguments[0]
            states_t = list(block.arguments)[1:1 + num_carry]
            stacks_t = list(block.arguments)[1 + num_carry:]
            cur = _index_op(ir, "arith.remui", [t, two])
            nxt = _index_op(ir, "arith.subi", [one, cur])
            step = _index_op(ir, "arith.subi", [const_index(length - 1), t]) if reverse else t
            h = [_extract_row(ctx, s, cur, a) for s, a in zip(states_t, carry_avals,
                                                               strict=True)]
            x_t = [_extract_row(ctx, x, step, ShapedArray(a.shape[1:], a.dtype))
                   for x, a in zip(xs, x_avals, strict=True)]
            ctx.rule_overrides["dot_general"] = _matvec_rule(consts[scan_plan.matrix])
            try:
                new = ctx.lower_ir(body, consts + h + x_t)
            finally:
                del ctx.rule_overrides["dot_general"]
            updated = [_insert_row(ctx, v, s, nxt, a, sa)
                       for v, s, a, sa in zip(new[:num_carry], states_t, carry_avals, state_avals,
                                              strict=True)]
            updated += [_insert_row(ctx, y, s, step, ShapedArray(a.shape[1:], a.dtype), a)
                        for y, s, a in zip(new[num_carry:], stacks_t, y_avals, strict=True)]
            ir.Operation.create("scf.yield", operands=updated)
        last = const_index(length % 2)
        results = list(loop.results)
        finals = [_extract_row(ctx, s, last, a) for s, a in zip(results[:num_carry],
                                                                 carry_avals, strict=True)]
        ir.Operation.create("flow.return", operands=finals + results[num_carry:])
    return list(region_op.results)


def _index_op(ir, name, operands, attributes=None):
    return ir.Operation.create(name, results=[ir.IndexType.get()], operands=operands,
                               attributes=attributes or {}).result


def _as_row(ctx, value, aval):
    return ctx.op1("stablehlo.reshape", [value], ShapedArray((1, *aval.shape), aval.dtype))


def _slice_attrs(ctx, aval):
    ir = ctx.ir
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    return {"static_offsets": ctx.i64_array([dynamic] + [0] * aval.ndim),
            "static_sizes": ctx.i64_array([1, *aval.shape]),
            "static_strides": ctx.i64_array([1] * (aval.ndim + 1))}


def _extract_row(ctx, source, row, aval):
    """``source[row]`` (a rank-reducing ``tensor.extract_slice``) of type ``aval``."""
    ir = ctx.ir
    attrs = _slice_attrs(ctx, aval)
    attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([1, 1, 0, 0])
    return ir.Operation.create("tensor.extract_slice", results=[ctx.tensor_type(aval)],
                               operands=[source, row], attributes=attrs).result


def _insert_row(ctx, value, dest, row, aval, dest_aval):
    """``dest`` with ``dest[row] = value`` (an in-place ``tensor.insert_slice``)."""
    ir = ctx.ir
    attrs = _slice_attrs(ctx, aval)
    attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([1, 1, 1, 0, 0])
    return ir.Operation.create("tensor.insert_slice", results=[ctx.tensor_type(dest_aval)],
                               operands=[value, dest, row], attributes=attrs).result


def _matvec_rule(matrix_value):
    """The dot_general rule inside the kernel: a ``linalg.generic`` over the matrix
    (``matrix_value``, laid out (contracted, free)) and the vector, with the tile sizes
    measured best (module docstring)."""

    def rule(ctx, args, in_avals, out_avals, *, dimension_numbers,
             preferred_element_type=None):
        matrix_first = args[0] == matrix_value
        matrix, vector = (args[0], args[1]) if matrix_first else (args[1], args[0])
        vector_aval = in_avals[1] if matrix_first else in_avals[0]
        result_aval = out_avals[0].strip_weak()
        rows = result_aval.size
        out_aval = ShapedArray((rows,), result_aval.dtype)
        if vector_aval.ndim != 1:
            vector = ctx.op1("stablehlo.reshape", [vector],
                             ShapedArray((vector_aval.size,), vector_aval.dtype))
        init = ctx.linalg_zeros(out_aval)
        tile = min(rows, _ROW_TILE)
        attrs = {
            "indexing_maps": ctx.attr("[affine_map<(i, j) -> (j, i)>, "
                                      "affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i)>]"),
            "iterator_types": ctx.attr("[#linalg.iterator_type<parallel>, "
                                       "#linalg.iterator_type<reduction>]"),
            "compilation_info": ctx.attr(
                "#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<"
                f"distribution = [0, 0], vector_common_parallel = [{tile}, 0], "
                "vector_reduction = [0, 1]>, translation_info = "
                "#iree_codegen.translation_info<pipeline = "
                "#iree_cpu.pipeline<DoubleTilingExpert>>>"),
        }
        product = ctx.linalg_multiply_add(matrix, vector, init, out_aval, attrs)
        if result_aval.ndim == 1:
            return [product]
        return [ctx.op1("stablehlo.reshape", [product], result_aval)]

    return rule
