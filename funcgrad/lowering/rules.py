"""Lowering-rule builders shared by the primitive families.

A lowering rule has the signature ``rule(ctx, args, in_avals, out_avals, **params)`` and
returns the MLIR values of the outputs (see ``funcgrad.lowering.mlir``).  The families
declare their rules next to their other rules using these builders; nothing here imports
IREE, so ``import funcgrad`` stays fast.
"""

from __future__ import annotations

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray


def elementwise(op_name: str):
    """A rule emitting one StableHLO/CHLO elementwise operation."""

    def rule(ctx, args, in_avals, out_avals, **params):
        return ctx.op(op_name, args, out_avals)

    rule.__name__ = f"lower_{op_name.split('.')[-1]}"
    return rule


def compare_type(dtype) -> str:
    if dtypes.is_inexact(dtype):
        return "FLOAT"
    if dtype.kind == "i":
        return "SIGNED"
    return "UNSIGNED"


def compare(ctx, a, b, aval: ShapedArray, direction: str):
    """``stablehlo.compare`` of two values of ``aval``'s dtype; a bool tensor."""
    out = ShapedArray(aval.shape, dtypes.bool_)
    return ctx.op1("stablehlo.compare", [a, b], out, {
        "comparison_direction": ctx.attr(f"#stablehlo<comparison_direction {direction}>"),
        "compare_type": ctx.attr(f"#stablehlo<comparison_type {compare_type(aval.dtype)}>"),
    })


def comparison(direction: str):
    def rule(ctx, args, in_avals, out_avals, **params):
        if dtypes.is_complex(in_avals[0].dtype) and direction not in ("EQ", "NE"):
            return [ordered_complex(ctx, args[0], args[1], in_avals[0], direction)]
        return [compare(ctx, args[0], args[1], in_avals[0], direction)]

    rule.__name__ = f"lower_compare_{direction.lower()}"
    return rule


def ordered_complex(ctx, a, b, aval: ShapedArray, direction: str):
    """``a < b`` (``direction`` LT, LE, GT or GE) for complex values in NumPy's order: by
    real part, then by imaginary part; a NaN imaginary part only compares through equal
    real parts (NumPy's CLT macros).  StableHLO orders complex values only for EQ/NE, and
    IREE compared the real parts alone (``1+1j >= 1+2j`` was True)."""
    part = ShapedArray(aval.shape, dtypes.real_dtype(aval.dtype))
    bools = ShapedArray(aval.shape, dtypes.bool_)
    (ar, ai), (br, bi) = ([ctx.op1(f"stablehlo.{p}", [v], part) for p in ("real", "imag")]
                          for v in (a, b))
    both = lambda x, y: ctx.op1("stablehlo.and", [x, y], bools)  # noqa: E731
    by_real = both(compare(ctx, ar, br, part, direction[0] + "T"),
                   both(compare(ctx, ai, ai, part, "EQ"), compare(ctx, bi, bi, part, "EQ")))
    by_imag = both(compare(ctx, ar, br, part, "EQ"), compare(ctx, ai, bi, part, direction))
    return ctx.op1("stablehlo.or", [by_real, by_imag], bools)


def select(ctx, pred, on_true, on_false, aval: ShapedArray):
    """``stablehlo.select``, or the value itself when both cases are one value (IREE folds
    it anyway, and the loop rules must see what is left: control_flow._read_arguments)."""
    if on_true == on_false:
        return on_true
    return ctx.op1("stablehlo.select", [pred, on_true, on_false], aval)


def integer_division(op_name: str, by_zero):
    """Integer div/rem guarded so division by zero gives XLA's values (``by_zero(x)``)
    instead of undefined behaviour; floats use the plain operation."""

    def rule(ctx, args, in_avals, out_avals, **params):
        x, y = args
        aval = out_avals[0]
        if dtypes.is_inexact(aval.dtype):
            return ctx.op(op_name, [x, y], out_avals)
        zero, one = ctx.full(0, aval), ctx.full(1, aval)
        is_zero = compare(ctx, y, zero, aval, "EQ")
        safe = select(ctx, is_zero, one, y, aval)
        out = ctx.op1(op_name, [x, safe], aval)
        if aval.dtype.kind == "i":
            # INT_MIN / -1 overflows in hardware; XLA gives INT_MIN (rem: 0)
            minimum = ctx.full(np.iinfo(aval.dtype).min, aval)
            minus_one = ctx.full(-1, aval)
            overflow = ctx.op1("stablehlo.and", [compare(ctx, x, minimum, aval, "EQ"),
                                                compare(ctx, y, minus_one, aval, "EQ")],
                               ShapedArray(aval.shape, dtypes.bool_))
            safe2 = select(ctx, overflow, one, safe, aval)
            out = ctx.op1(op_name, [x, safe2], aval)
            out = select(ctx, overflow, ctx.full(np.iinfo(aval.dtype).min if
                                                 op_name.endswith("divide") else 0, aval),
                         out, aval)
        return [select(ctx, is_zero, by_zero(ctx, x, aval), out, aval)]

    return rule


def reduce_region(ctx, op, dtype, combine_op: str):
    """Fill ``op``'s first region with ``combine_op`` of two scalars."""
    scalar = ShapedArray((), dtype)
    ctx.scalar_body(op.regions[0], dtype,
                    lambda a, b: ctx.op1(combine_op, [a, b], scalar))


def reduction(combine_op: str, init):
    """``stablehlo.reduce`` over ``axes`` with a scalar combiner and an init value
    (``init(dtype)`` gives it)."""

    def rule(ctx, args, in_avals, out_avals, *, axes):
        (x,), (aval,), (out,) = args, in_avals, out_avals
        if any(aval.shape[a] == 0 for a in axes):  # nothing to combine: the identity
            return [ctx.full(init(aval.dtype), out.strip_weak())]
        if computed_from_constants(ctx, x):
            # IREE 3.13 folds a constant computation into the reduction and then adds
            # one element per vector of 8 or 16 (jit of fnp.exp(fnp.ones(1000)).sum() gave
            # 340, not 2718; the gradient of a mean reduces a broadcast constant): in a
            # buffer of its own, the reduction reads the values
            (x,) = fusion_barrier(ctx, [x], [aval.strip_weak()])
        init_value = ctx.constant(np.asarray(init(aval.dtype), dtype=aval.dtype))
        op = ctx.op("stablehlo.reduce", [x, init_value], [out],
                    {"dimensions": ctx.i64_array(axes)}, regions=1)
        reduce_region(ctx, op, aval.dtype, combine_op)
        return list(op.results)

    return rule


def computed_from_constants(ctx, value) -> bool:
    """Whether the MLIR ``value`` is computed from constants alone (no function or block
    argument, no operation with regions, which IREE does not fold), so that IREE may fold
    its computation into a consumer."""
    memo = ctx.__dict__.setdefault("_from_constants", {})
    pending = [value]
    while pending:
        v = pending[-1]
        if v in memo:
            pending.pop()
            continue
        owner = v.maybe_downcast().owner
        if isinstance(v.maybe_downcast(), ctx.ir.BlockArgument) or len(owner.regions):
            memo[v] = False
            pending.pop()
            continue
        unknown = [x for x in owner.operands if x not in memo]
        if unknown:
            pending.extend(unknown)
            continue
        memo[v] = all(memo[x] for x in owner.operands)
        pending.pop()
    return memo[value]


def lowest(dtype):
    if dtype == np.bool_:
        return False
    if dtypes.is_inexact(dtype):
        return -np.inf
    return np.iinfo(dtype).min


def highest(dtype):
    if dtype == np.bool_:
        return True
    if dtypes.is_inexact(dtype):
        return np.inf
    return np.iinfo(dtype).max


def via(function):
    """A rule that lowers the IR of ``function(*args, **params)``: for primitives best
    expressed as compositions of others when compiled (scans, decompositions)."""

    def rule(ctx, args, in_avals, out_avals, **params):
        from funcgrad.transforms.tracing import trace_to_ir

        program = trace_to_ir(lambda *xs: _as_list(function(*xs, **params)),
                              [a.strip_weak() for a in in_avals], name="lowering")
        return ctx.lower_ir(program, args)

    rule.__name__ = f"lower_via_{getattr(function, '__name__', 'function')}"
    return rule


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def fusion_barrier(ctx, values, avals):
    """``stablehlo.optimization_barrier``: keeps producers and consumers in separate
    dispatches, and keeps values IREE 3.13 would otherwise mishandle in real buffers.
    Used where IREE fails: a float32 matmul fused with a consumer that makes complex<f32>
    with data tiling ('vector.transfer_read' op requires valid padding vector elemental
    type); argmax's two-result reduce fused with a transposing consumer; a sort whose
    unused operand it would sort in a stack temporary."""
    return ctx.op("stablehlo.optimization_barrier", values, avals)


# ops whose result is their first operand's elements moved: IREE fuses a chain of them
_MOVES = frozenset({"stablehlo.reshape", "stablehlo.transpose", "stablehlo.reverse",
                    "stablehlo.pad", "stablehlo.broadcast_in_dim"})


def producer_through(value, targets, through, depth: int = 8):
    """The operation named in ``targets`` that the MLIR ``value`` comes from, following
    first operands back through operations named in ``through``; None when another
    operation, or a block argument, comes first."""
    for _ in range(depth):
        owner = value.owner
        name = getattr(owner, "name", None)  # (a block argument's owner is a Block)
        if name in targets:
            return owner
        if name not in through:
            return None
        value = owner.operands[0]
    return None


def reads_a_slice(value) -> bool:
    """Whether the MLIR ``value`` is a ``stablehlo.slice`` result, maybe moved since
    (reshaped, transposed, reversed, padded, broadcast)."""
    return producer_through(value, ("stablehlo.slice",), _MOVES) is not None


def unfused_from_slices(ctx, values, avals):
    """``values``, those that read a slice put behind a barrier: IREE 3.13 fails to compile
    a gather or a reverse fused with a slice that leaves a strided innermost axis
    (``x[::2][i]``, ``flip(x[:, ::2])``, ``x[:, :, :1][i]``: "LLVM Translation failed for
    operation: builtin.unrealized_conversion_cast")."""
    return [fusion_barrier(ctx, [v], [a.strip_weak()])[0] if reads_a_slice(v) else v
            for v, a in zip(values, avals, strict=True)]


# IREE 3.13 writes an in-place update (dynamic_update_slice, a loop carrying one) into the
# buffer of a function argument, which is the caller's memory (IREE issue 16168): a jit call
# changed its input tensor, or failed with "buffer does not support ... DISCARD_WRITE".
# Such values are copied first; these ops pass their operand's buffer through unchanged.
_VIEW_OPS = frozenset({"stablehlo.reshape", "stablehlo.optimization_barrier",
                       "stablehlo.bitcast_convert"})


def may_alias_argument(ctx, value, depth: int = 32) -> bool:
    """Whether the MLIR ``value`` may be (a view of) a function argument's buffer.  The
    block arguments of a ``stablehlo.while`` do not count: a loop updating its carry in
    place starts from fresh copies (control_flow's while lowering)."""
    if depth == 0:
        return True
    value = value.maybe_downcast()
    if isinstance(value, ctx.ir.BlockArgument):
        return value.owner.owner.name != "stablehlo.while"
    op = value.owner
    if op.name in _VIEW_OPS or op.name == "stablehlo.while":
        return may_alias_argument(ctx, _passed_through(value), depth - 1)
    return op.name in ("stablehlo.if", "stablehlo.case", "func.call")


def _passed_through(result):
    """The operand whose buffer the op result ``result`` is: the one at the same position
    (a barrier, a loop's carry), or the only one (a reshape)."""
    op = result.owner
    return op.operands[result.result_number if len(op.operands) == len(op.results) else 0]


def _in_place_operands(operations, scatter_pads: bool = False):
    """(operation, operand number) of every operand that may be updated in place: a
    dynamic_update_slice's target, a nested loop's carries (also in nested regions, not
    inside nested loops); with ``scatter_pads``, the input of the pad a scatter writes
    into (a pad of a loop-invariant value is hoisted out of the loop by IREE 3.13, and the
    scatter then updates that one buffer in every iteration)."""
    for operation in operations:
        name = operation.name
        targets = range(len(operation.operands)) if name == "stablehlo.while" else \
            [0] if name == "stablehlo.dynamic_update_slice" else []
        for j in targets:
            yield operation, j
        if scatter_pads and name == "stablehlo.scatter":
            pad = getattr(operation.operands[0].maybe_downcast().owner, "operation", None)
            if pad is not None and pad.name == "stablehlo.pad":
                yield pad, 0
        if name != "stablehlo.while":
            for region in operation.regions:
                for inner in region.blocks:
                    yield from _in_place_operands(inner.operations, scatter_pads)


def updated_in_place(ctx, block) -> set:
    """The numbers of ``block``'s arguments (a loop body's carry) that a
    dynamic_update_slice in it may update in place (through views, also in nested regions),
    or that a nested loop carries."""
    found = {argument_behind(ctx, operation.operands[j], block)
             for operation, j in _in_place_operands(block.operations)}
    return found - {None}


def argument_behind(ctx, value, block):
    """The number of ``block``'s argument whose buffer ``value`` is (through views), or
    None."""
    value = _buffer_of(ctx, value)
    return value.arg_number if isinstance(value, ctx.ir.BlockArgument) and \
        value.owner == block else None


def copy_before_updates(ctx, block, positions, invariant=lambda value: False) -> None:
    """Make every in-place update (a dynamic_update_slice, a nested loop's carry, a
    scatter) of the loop body ``block``'s arguments at ``positions`` (carries handed on
    unchanged) work on a copy: otherwise IREE 3.13 writes into the carried buffer and the
    update outlives the iteration (``while_loop`` adding ``x.at[i].set(v)`` each step piled
    the updates up; so did ``x.at[i].mul(v)`` of a closed-over ``x``, whose padded copy
    IREE hoisted out of the loop: the input of a scatter's pad is copied when it is
    ``invariant(value)``, the same in every iteration)."""
    for operation, j in list(_in_place_operands(block.operations, scatter_pads=True)):
        value = operation.operands[j]
        if argument_behind(ctx, value, block) in positions or (
                operation.name == "stablehlo.pad" and invariant(value)):
            with ctx.ir.InsertionPoint(operation):
                operation.operands[j] = fresh_copy(ctx, value, ctx.aval_of(value), tag=j)


def updated_argument(ctx, value, block):
    """The number of ``block``'s argument that ``value`` is an in-place update of (a
    dynamic_update_slice of it, through views and further updates), or None."""
    for _ in range(32):
        value = value.maybe_downcast()
        if isinstance(value, ctx.ir.BlockArgument):
            return argument_behind(ctx, value, block)
        name = value.owner.name
        if name == "stablehlo.dynamic_update_slice" or name in _VIEW_OPS:
            value = value.owner.operands[0] if name == "stablehlo.dynamic_update_slice" \
                else _passed_through(value)
        else:
            return None
    return None


_SLICING_OPS = frozenset({"stablehlo.dynamic_slice", "stablehlo.slice", "stablehlo.gather"})


def isolate_reads(ctx, block, updated) -> None:
    """Put each slice that the loop body ``block`` reads from one of its ``updated``
    arguments (carries a dynamic_update_slice updates in place), or from an update of one,
    behind an optimization barrier.  IREE 3.13 clones such slices into the dispatches that
    consume them and then orders the read after the in-place update: the JVP of
    ``b.at[i].set(b[i] * a[j] + a[i])`` in a fori_loop read the updated ``b[i]``."""
    for operation in list(block.operations):
        if operation.name not in _SLICING_OPS or \
                updated_argument(ctx, operation.operands[0], block) not in updated:
            continue
        _reroute_through_barrier(ctx, operation.results[0], operation)


def isolate_reads_of_updated_values(ctx, block) -> None:
    """Put each slice of a value that a dynamic_update_slice in ``block`` (or in the
    regions of its control flow, recursively) updates in place behind an optimization
    barrier, unless it is behind one already.  IREE 3.13 clones such a slice into the
    dispatch that consumes it and may order it after the update, wherever the two are:
    ``jit(grad)`` of ``x.at[i].add(v)`` read zeros when the transpose still zeroed the
    cotangent at ``i`` in place and read it there (random-program sweep seed 9834, also
    outside loops; the barrier fixed that module).  The transpose selects now (indexing.
    _dynamic_update_slice_transpose); this keeps user code that reads and updates one
    value safe.  ``isolate_reads`` covers the carries of a loop, which the body updates."""
    for inner in _control_flow_blocks(block):
        operations = list(inner.operations)
        targets = {_buffer_of(ctx, operation.operands[0]) for operation in operations
                   if operation.name == "stablehlo.dynamic_update_slice"}
        for operation in operations:
            if operation.name in _SLICING_OPS and \
                    _buffer_of(ctx, operation.operands[0]) in targets and \
                    not _only_behind_barrier(operation.results[0]):
                _reroute_through_barrier(ctx, operation.results[0], operation)


def isolate_reductions(ctx, block) -> None:
    """Put the results of each ``stablehlo.reduce`` in ``block`` (or in the regions of its
    control flow) behind an optimization barrier, so that a reduction is never fused with
    its consumers; its producers still fuse into it.  For modules compiled with aggressive
    fusion: there IREE 3.13 fused a column sum, an elementwise consumer of it and a total
    into one dispatch and accumulated the sum once per row tile (wrong values for
    ``s = sum(x, axis=0); sin(s), sum(x + s)``, 2-D straight-line fuzz seed 33)."""
    for inner in _control_flow_blocks(block):
        for operation in list(inner.operations):
            if operation.name != "stablehlo.reduce":
                continue
            for result in operation.results:
                if not _only_behind_barrier(result):
                    _reroute_through_barrier(ctx, result, operation)


def copy_updated_values_read_elsewhere(ctx, block) -> None:
    """Give each dynamic_update_slice in ``block`` (or in the regions of its control flow,
    recursively) a copy of its target to update when another operation reads that value
    (through views; slices excepted, see above) without feeding the update.  IREE 3.13
    updated the target in place and ran such a read after it: ``jit(jacfwd(grad(f)))`` of
    ``v = x + x[argmax(x)]; y = v.at[i].add(v[0]); (v + y * y)`` added the updated ``v``
    (tangents of v, straight-line sweep seed 165)."""
    for inner in _control_flow_blocks(block):
        copies = 0
        for operation in list(inner.operations):
            if operation.name != "stablehlo.dynamic_update_slice":
                continue
            target = operation.operands[0]
            readers = _readers_of(ctx, _buffer_of(ctx, target), operation)
            if readers and not _all_feed(ctx, readers, operation):
                with ctx.ir.InsertionPoint(operation):
                    operation.operands[0] = fresh_copy(ctx, target, ctx.aval_of(target),
                                                       tag=copies)
                copies += 1


def _control_flow_blocks(block):
    """``block`` and the blocks of the while/if/case regions in it, recursively."""
    yield block
    for operation in list(block.operations):
        if operation.name in ("stablehlo.while", "stablehlo.if", "stablehlo.case"):
            for region in operation.regions:
                for inner in region.blocks:
                    yield from _control_flow_blocks(inner)


def _same_operation(a, b) -> bool:
    return getattr(a, "operation", a) == getattr(b, "operation", b)


def _readers_of(ctx, value, update) -> list:
    """The operations other than ``update`` that read ``value`` (through views), slices
    excepted."""
    readers, pending = [], [value]
    while pending:
        for use in pending.pop().uses:
            owner = use.owner
            if owner.name in _VIEW_OPS:
                pending.extend(owner.results)
            elif owner.name not in _SLICING_OPS and not _same_operation(owner, update):
                readers.append(owner)
    return readers


def _all_feed(ctx, readers, update) -> bool:
    """Whether every one of ``readers`` computes an operand of ``update`` (other than its
    target), so that it runs before the update."""
    feeding, pending = set(), list(update.operands[1:])
    while pending:
        value = pending.pop().maybe_downcast()
        if value in feeding or isinstance(value, ctx.ir.BlockArgument):
            continue
        feeding.add(value)
        pending.extend(value.owner.operands)
    return all(any(result in feeding for result in reader.results) for reader in readers)


def _buffer_of(ctx, value, depth: int = 32):
    """The value whose buffer ``value`` is, through views."""
    value = value.maybe_downcast()
    while depth and not isinstance(value, ctx.ir.BlockArgument) and \
            value.owner.name in _VIEW_OPS:
        value, depth = _passed_through(value).maybe_downcast(), depth - 1
    return value


def _reroute_through_barrier(ctx, value, operation) -> None:
    """Make every use of ``value`` (a result of ``operation``) read it through a new
    one-value optimization barrier placed right after ``operation``."""
    isolated = _behind_barrier(ctx, value, ctx.ir.InsertionPoint.after(operation))
    value.replace_all_uses_except(isolated, isolated.owner.operation)


def _only_behind_barrier(value) -> bool:
    uses = [use.owner for use in value.uses]
    return len(uses) == 1 and uses[0].name == "stablehlo.optimization_barrier"


def isolate_constant_updates(ctx, block, updated) -> None:
    """Put the update of each in-place dynamic_update_slice of the loop body ``block`` (of
    an ``updated`` argument) that is made from a constant (``x.at[i].set(1.5)``: a select
    of the constant) or computed from constants alone behind an optimization barrier.
    IREE 3.13 otherwise wrote one such update's constant for another's: the JVP of a
    fori_loop setting 1.5 wrote the tangent's 0.0 into the primal; and it failed to
    compile the unrolled steps of a scan writing ``-0.0`` (the cotangent of a carry the
    body ignores) into its ys ("'stream.async.fill' op has invalid Write access range",
    random-program sweep seed 9584)."""
    for operation in list(block.operations):
        if operation.name != "stablehlo.dynamic_update_slice" or \
                updated_argument(ctx, operation.operands[0], block) not in updated or not (
                    from_constant(operation.operands[1])
                    or computed_from_constants(ctx, operation.operands[1])):
            continue
        operation.operands[1] = _behind_barrier(ctx, operation.operands[1],
                                                ctx.ir.InsertionPoint(operation))


def _behind_barrier(ctx, value, where):
    """``value`` through a one-value optimization barrier created at insertion point
    ``where`` (fusion_barrier needs avals; these values come with MLIR types only)."""
    with where:
        return ctx.ir.Operation.create("stablehlo.optimization_barrier", results=[value.type],
                                       operands=[value]).results[0]


def from_constant(value, depth: int = 4) -> bool:
    """Whether ``value`` is a constant, or a view, broadcast or select of one."""
    owner = value.maybe_downcast().owner
    name = getattr(owner, "name", None)
    if name == "stablehlo.constant":
        return True
    if depth and name in (_VIEW_OPS | {"stablehlo.broadcast_in_dim", "stablehlo.select",
                                       "stablehlo.convert"}):
        return any(from_constant(x, depth - 1) for x in owner.operands)
    return False


def fresh_copy(ctx, value, aval: ShapedArray, tag: int = 0):
    """``value`` in a buffer of its own, made by a dispatch (padded by ``2 + tag`` elements,
    then sliced back): IREE elides a plain copy of a function argument (issue 16168).
    Copies of one value with different ``tag``s are different operations, which IREE's
    common-subexpression elimination keeps apart; so is a scatter's pad by one element
    (indexing._padded_scatter): merged with it, a copy shared the buffer the scatter then
    updated in place (grad of a one-step scan over carries (x, x, x) scattering into x).
    Complex values are rebuilt from their parts instead (IREE 3.13 crashes padding them)."""
    if dtypes.is_complex(aval.dtype):
        part = aval.update(dtype=dtypes.real_dtype(aval.dtype))
        parts = [fresh_copy(ctx, ctx.op1(f"stablehlo.{name}", [value], part), part, tag)
                 for name in ("real", "imag")]
        return to_complex(ctx, parts, [part, part], [aval])[0]
    shape = aval.shape or (1,)
    x = ctx.op1("stablehlo.reshape", [value], aval.update(shape=shape)) if not aval.shape \
        else value
    padded_aval = aval.update(shape=(shape[0] + 2 + tag, *shape[1:]))
    padded = ctx.op1("stablehlo.pad", [x, ctx.constant(np.zeros((), aval.dtype))],
                     padded_aval, {
                         "edge_padding_low": ctx.i64_array([0] * len(shape)),
                         "edge_padding_high": ctx.i64_array([2 + tag] + [0] * (len(shape) - 1)),
                         "interior_padding": ctx.i64_array([0] * len(shape))})
    # the barrier keeps IREE from folding the slice of the pad back into the argument
    (padded,) = fusion_barrier(ctx, [padded], [padded_aval])
    copy = ctx.op1("stablehlo.slice", [padded], aval.update(shape=shape), {
        "start_indices": ctx.i64_array([0] * len(shape)), "limit_indices": ctx.i64_array(shape),
        "strides": ctx.i64_array([1] * len(shape))})
    return copy if aval.shape else ctx.op1("stablehlo.reshape", [copy], aval)


def same_value(ctx, a, b, depth: int | None = 8) -> bool:
    """Whether MLIR values ``a`` and ``b`` are one value, or are computed by operations
    that common-subexpression elimination would merge (same operation, attributes and
    operands, looked at ``depth`` operations deep, or all the way with None; operations
    with regions never)."""
    pending, checked = [(a, b, depth)], set()
    while pending:
        a, b, depth = pending.pop()
        if a == b or (a, b, depth) in checked:
            continue
        checked.add((a, b, depth))
        a, b = a.maybe_downcast(), b.maybe_downcast()
        if depth == 0 or isinstance(a, ctx.ir.BlockArgument) or \
                isinstance(b, ctx.ir.BlockArgument):
            return False
        op_a, op_b = a.owner, b.owner
        if (op_a.name != op_b.name or a.result_number != b.result_number
                or len(op_a.regions) or len(op_a.operands) != len(op_b.operands)
                or a.type != b.type or _attributes(op_a) != _attributes(op_b)):
            return False
        inner = None if depth is None else depth - 1
        pending.extend((x, y, inner) for x, y in zip(op_a.operands, op_b.operands, strict=True))
    return True


def _attributes(op) -> dict:
    try:
        return {name: str(op.attributes[name]) for name in op.attributes}
    except TypeError:  # the Python bindings cannot read complex constants: compare the text
        return {"": str(op).split(" = ", 1)[-1]}


def to_complex(ctx, args, in_avals, out_avals, **params):
    """``stablehlo.complex`` of (real, imag) behind a fusion barrier (see above)."""
    return ctx.op("stablehlo.complex", fusion_barrier(ctx, args, in_avals), out_avals)


# IREE 3.13's CUDA run-time refuses a kernel with more than 16 buffer bindings ("binding_flags
# count 17 exceeds maximum of 16" when the module loads), and its compiler does not keep
# under that: a fused sum of 16 arrays, or the transpose of a 4 x 4 average pool, made one.
# A CUDA kernel here reads at most this many buffers (leaving room for its results).
CUDA_KERNEL_INPUTS = 8
# operations whose results IREE never fuses into a consumer's kernel: their results are
# buffers of their own
_MATERIALIZED = frozenset({"stablehlo.optimization_barrier", "stablehlo.while", "stablehlo.if",
                           "stablehlo.case", "stablehlo.custom_call"})
# operations that fuse with their consumers but not with their producers: their operands
# are buffers (as on GPUs without aggressive fusion, IREE's dispatch formation)
_UNFUSED_OPERANDS = frozenset({"stablehlo.dot_general", "stablehlo.convolution",
                               "stablehlo.sort", "stablehlo.scatter", "stablehlo.fft",
                               "stablehlo.gather", "stablehlo.dynamic_update_slice"})

# operations IREE may or may not give buffers of their own: a concatenate becomes copies
# into slices of one buffer; scalar slices of one value became 16 results of one kernel in
# the transpose of cumprod
_MAYBE_MATERIALIZED = frozenset({"stablehlo.concatenate", "stablehlo.pad", "stablehlo.slice",
                                 "stablehlo.dynamic_slice"})


def limit_kernel_inputs(ctx, block, limit: int = CUDA_KERNEL_INPUTS) -> None:
    """Keep every kernel IREE forms from ``block`` (and the regions of its control flow)
    reading at most about ``limit`` buffers.  Each value's *sources* are the buffers a
    kernel computing it by fusion could read: its own when it is materialized
    (``_MATERIALIZED``, arguments, non-splat constants), the operands of operations that
    do not fuse with their producers, else the union of its operands' sources (and its
    own for ``_MAYBE_MATERIALIZED``).  An operation whose operands bring more than
    ``limit`` sources reads its operands that have several through barriers instead."""
    for inner in _control_flow_blocks(block):
        sources = {}
        for operation in list(inner.operations):
            name = operation.name
            if name in _MATERIALIZED or name in ("func.return", "stablehlo.return"):
                continue  # each result its own source; returns are no kernels
            if name == "stablehlo.constant":
                reads = frozenset() if is_splat_constant(operation) else \
                    frozenset(operation.results)
            elif name in _UNFUSED_OPERANDS:
                reads = frozenset(x.maybe_downcast() for x in operation.operands)
            elif name in _MAYBE_MATERIALIZED:  # counted both ways (its consumers are limited)
                reads = _union_of_sources(sources, operation.operands).union(operation.results)
            else:
                reads = _union_of_sources(sources, operation.operands)
                if len(reads) > limit:
                    for k, operand in enumerate(list(operation.operands)):
                        if len(_sources(sources, operand)) > 1:
                            operation.operands[k] = _behind_barrier(
                                ctx, operand, ctx.ir.InsertionPoint(operation))
                    reads = _union_of_sources(sources, operation.operands)
            for result in operation.results:
                sources[result] = reads


def _sources(sources: dict, value) -> frozenset:
    value = value.maybe_downcast()
    found = sources.get(value)
    return found if found is not None else frozenset((value,))


def _union_of_sources(sources: dict, values) -> frozenset:
    return frozenset().union(*(_sources(sources, v) for v in values))


def is_splat_constant(operation) -> bool:
    """Whether a ``stablehlo.constant`` operation holds one value in every element."""
    try:
        return bool(getattr(operation.attributes["value"], "is_splat", False))
    except TypeError:  # the Python bindings cannot read complex constants: the text
        text = str(operation)
        return "dense<" in text and "dense<[" not in text
