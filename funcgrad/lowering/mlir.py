"""IR -> MLIR: builds a StableHLO module in-process with the MLIR Python bindings.

Each primitive's ``lower`` rule receives a ``LoweringContext`` and the MLIR values of its
inputs and returns the values of its outputs; the context offers the few builders every
rule needs (``op``, ``constant``, types, attributes, regions).  Operations are created
inside the compiler session's own MLIR context with every dialect loaded, so nothing is
ever created unregistered (which would crash the compiler, see docs/design.md).
"""

from __future__ import annotations

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.ir import IR, Literal, live_equations

_ELEMENT_DTYPES = (dtypes.bool_, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64,
                   dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64, dtypes.float16,
                   dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.complex64,
                   dtypes.complex128)


class LoweringError(RuntimeError):
    """A primitive could not be lowered to MLIR; names the primitive and the reason."""


def _ir():
    from iree.compiler import ir

    return ir


class LoweringContext:
    """Builders shared by lowering rules, bound to one MLIR context and module."""

    def __init__(self, mlir_context, platform: str = "cpu", fuse_scans: bool = False,
                 isolate_reductions: bool = False):
        self.context = mlir_context
        self.platform = platform
        # every reduction's results behind a barrier (rules.isolate_reductions)
        self.isolate_reductions = isolate_reductions
        # scans run as one kernel where they can (funcgrad.lowering.fused_scan); how many
        self.fuse_scans = fuse_scans
        self.fused_scans = 0
        # primitive name -> rule used instead of the primitive's own (inside such kernels)
        self.rule_overrides = {}
        ir = _ir()
        self.ir = ir
        with mlir_context, ir.Location.unknown():
            self.module = ir.Module.create()
        self._func_count = 0
        # the imports of host calls made so far (funcgrad.lowering.host_calls.spec)
        self.host_calls = []

    # -- types and attributes -----------------------------------------------------------
    def element_type(self, dtype):
        ir = self.ir
        dtype = np.dtype(dtype)
        if dtype == dtypes.bfloat16:
            return ir.BF16Type.get()
        kind, bits = dtype.kind, dtype.itemsize * 8
        if kind == "f":
            return {16: ir.F16Type, 32: ir.F32Type, 64: ir.F64Type}[bits].get()
        if kind == "b":
            return ir.IntegerType.get_signless(1)
        if kind == "i":
            return ir.IntegerType.get_signless(bits)
        if kind == "u":
            return ir.IntegerType.get_unsigned(bits)
        if kind == "c":
            return ir.ComplexType.get(ir.F32Type.get() if bits == 64 else ir.F64Type.get())
        raise LoweringError(f"no MLIR element type for dtype {dtype.name}")

    def tensor_type(self, aval: ShapedArray):
        return self.ir.RankedTensorType.get(list(aval.shape), self.element_type(aval.dtype))

    def aval_of(self, value) -> ShapedArray:
        """The ShapedArray of the MLIR tensor ``value`` (the inverse of ``tensor_type``)."""
        tensor = self.ir.RankedTensorType(value.type)
        dtype = next(d for d in _ELEMENT_DTYPES if self.element_type(d) == tensor.element_type)
        return ShapedArray(tuple(tensor.shape), dtype)

    def i64_array(self, values):
        return self.ir.DenseI64ArrayAttr.get([int(v) for v in values])

    def attr(self, text: str):
        """An attribute from its textual form, e.g. ``#stablehlo<comparison_direction LT>``."""
        return self.ir.Attribute.parse(text)

    def bool_attr(self, value: bool):
        return self.ir.BoolAttr.get(bool(value))

    def i64_attr(self, value: int):
        return self.ir.IntegerAttr.get(self.ir.IntegerType.get_signless(64), int(value))

    # -- operations -------------------------------------------------------------------------
    def op(self, name: str, operands, result_avals, attributes=None, regions: int = 0):
        """Create operation ``name``; returns its results (a list), or the op itself when
        it has regions to fill (then ``.results`` gives them)."""
        ir = self.ir
        result_types = [self.tensor_type(a) for a in result_avals]
        operation = ir.Operation.create(name, results=result_types, operands=list(operands),
                                        attributes=attributes or {}, regions=regions)
        if regions:
            return operation
        return list(operation.results)

    def op1(self, name, operands, result_aval, attributes=None):
        return self.op(name, operands, [result_aval], attributes)[0]

    def linalg_zeros(self, aval: ShapedArray):
        """A tensor of zeros as a ``linalg.fill``: the init of a linalg contraction."""
        ir = self.ir
        element, result_type = self.element_type(aval.dtype), self.tensor_type(aval)
        empty = ir.Operation.create("tensor.empty", results=[result_type]).result
        zero = ir.Operation.create("arith.constant", results=[element], attributes={
            "value": ir.FloatAttr.get(element, 0.0)}).result
        fill = ir.Operation.create(
            "linalg.fill", results=[result_type], operands=[zero, empty],
            attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1])}, regions=1)
        with ir.InsertionPoint(fill.regions[0].blocks.append(element, element)):
            ir.Operation.create("linalg.yield", operands=[fill.regions[0].blocks[0]
                                                          .arguments[0]])
        return fill.result

    def linalg_multiply_add(self, lhs, rhs, init, aval: ShapedArray, attributes: dict):
        """A ``linalg.generic`` adding ``lhs * rhs`` into ``init`` (a contraction); its
        indexing maps, iterator types and any ``compilation_info`` are in ``attributes``."""
        ir = self.ir
        element = self.element_type(aval.dtype)
        attributes = dict(attributes, operandSegmentSizes=ir.DenseI32ArrayAttr.get([2, 1]))
        generic = ir.Operation.create("linalg.generic", results=[self.tensor_type(aval)],
                                      operands=[lhs, rhs, init], attributes=attributes,
                                      regions=1)
        block = generic.regions[0].blocks.append(element, element, element)
        with ir.InsertionPoint(block):
            a, b, acc = block.arguments
            product = ir.Operation.create("arith.mulf", results=[element],
                                          operands=[a, b]).result
            total = ir.Operation.create("arith.addf", results=[element],
                                        operands=[acc, product]).result
            ir.Operation.create("linalg.yield", operands=[total])
        return generic.result

    def constant(self, value, dtype=None):
        """A ``stablehlo.constant`` holding ``value`` (NumPy array or scalar)."""
        ir = self.ir
        array = np.asarray(value, dtype=dtype)
        aval = ShapedArray(array.shape, array.dtype)
        if array.dtype.kind == "c":
            # IREE 3.13's kernels cannot always hold a complex constant ("'arith.constant' op
            # attribute 'value' failed to satisfy constraint: TypedAttr instance": complex64
            # solve, inv, cholesky for CUDA; a loop carry of complex zeros updated in place,
            # on the CPU too): built from its real parts
            return self.op1("stablehlo.complex", [self.constant(array.real),
                                                  self.constant(array.imag)], aval)
        tensor_type = self.tensor_type(aval)
        if array.dtype == np.bool_:
            attr = (
                ir.DenseElementsAttr.get(np.ascontiguousarray(array), type=tensor_type)
                if array.size > 1
                else ir.DenseElementsAttr.get_splat(
                    tensor_type,
                    ir.BoolAttr.get(bool(array.reshape(-1)[0]) if array.size else False),
                )
            )
        elif array.dtype == dtypes.bfloat16:
            attr = ir.DenseElementsAttr.get(np.ascontiguousarray(array).view(np.uint16),
                                            type=tensor_type)
        else:
            attr = ir.DenseElementsAttr.get(np.ascontiguousarray(array), type=tensor_type)
        return self.op1("stablehlo.constant", [], aval, {"value": attr})

    def full(self, value, aval: ShapedArray):
        """A constant of ``aval``'s shape filled with ``value`` (a splat broadcast)."""
        if aval.dtype.kind == "c":
            # IREE 3.13 cannot splat a complex number into a buffer (complex128 becomes an
            # i128 fill, complex64 an arith.constant it rejects): build it from real parts
            value = complex(value)
            part = ShapedArray(aval.shape, dtypes.real_dtype(aval.dtype))
            return self.op1("stablehlo.complex", [self.full(value.real, part),
                                                  self.full(value.imag, part)], aval)
        scalar = self.constant(np.asarray(value, dtype=aval.dtype))
        if aval.shape == ():
            return scalar
        return self.op1("stablehlo.broadcast_in_dim", [scalar], aval,
                        {"broadcast_dimensions": self.i64_array([])})

    def block(self, region, arg_avals):
        """Append a block with arguments of the given avals to ``region``."""
        return region.blocks.append(*[self.tensor_type(a) for a in arg_avals])

    def scalar_body(self, region, dtype, combine):
        """Fill a reduction/scatter region: two scalars of ``dtype`` -> ``combine(a, b)``."""
        ir = self.ir
        scalar = ShapedArray((), dtype)
        block = self.block(region, [scalar, scalar])
        with ir.InsertionPoint(block):
            result = combine(*block.arguments)
            self.op("stablehlo.return", [result], [])
        return block

    def host_call(self, prim_name: str, params: dict, args, in_avals, out_avals):
        """Call the host kernel running primitive ``prim_name`` (its eager implementation)
        on ``args``: a ``func.call`` of a new import, recorded for the run-time
        (``funcgrad.lowering.host_calls``)."""
        from iree.compiler.dialects import func

        from funcgrad.lowering import host_calls

        ir = self.ir
        in_avals = [a.strip_weak() for a in in_avals]
        out_avals = [a.strip_weak() for a in out_avals]
        name = f"{prim_name}_{len(self.host_calls)}"
        self.host_calls.append(host_calls.spec(name, prim_name, params, in_avals, out_avals))
        symbol = f"{host_calls.MODULE}.{name}"
        in_types = [self.tensor_type(a) for a in in_avals]
        out_types = [self.tensor_type(a) for a in out_avals]
        with ir.InsertionPoint.at_block_begin(self.module.body):
            declaration = func.FuncOp(symbol, ir.FunctionType.get(in_types, out_types))
            declaration.attributes["sym_visibility"] = ir.StringAttr.get("private")
        call = ir.Operation.create(
            "func.call", results=out_types, operands=list(args),
            attributes={"callee": ir.FlatSymbolRefAttr.get(symbol)})
        return list(call.results)

    # -- lowering an IR ---------------------------------------------------------------------
    def lower_ir(self, program: IR, args, consts=None):
        """Emit ``program``'s equations at the current insertion point; returns outputs."""
        env = {}
        const_values = consts if consts is not None else [self.constant(np.asarray(c))
                                                          for c in program.consts]
        env.update(zip(program.const_vars, const_values, strict=False))
        env.update(zip(program.in_vars, args, strict=False))

        folded = {}  # var -> NumPy value of a small result computed from constants only

        def read(x):
            if isinstance(x, Literal):
                return self.constant(np.asarray(x.value))
            found = env.get(x)
            if found is None:
                found = env[x] = self.constant(folded[x])
            return found

        # equations nothing reads are left out: IREE 3.13 crashed converting a nested
        # stablehlo.while whose results went unused (and would have run it)
        for eqn in live_equations(program):
            value = None if eqn.prim.name in self.rule_overrides else _fold(eqn, folded)
            if value is not None:
                folded[eqn.outputs[0]] = value
                continue
            rule = self.rule_overrides.get(eqn.prim.name) or eqn.prim.lower
            if rule is None:
                raise LoweringError(f"no MLIR lowering rule for primitive '{eqn.prim.name}'")
            in_avals = [x.aval for x in eqn.inputs]
            out_avals = [v.aval for v in eqn.outputs]
            try:
                outs = rule(self, [read(x) for x in eqn.inputs], in_avals, out_avals,
                            **eqn.params)
            except LoweringError:
                raise
            except Exception as err:  # a rule's bug or an unsupported case: name it
                raise LoweringError(f"lowering '{eqn.prim.name}' (inputs "
                                    f"{[a.str_short() for a in in_avals]}) failed: "
                                    f"{type(err).__name__}: {err}") from err
            outs = outs if isinstance(outs, (list, tuple)) else [outs]
            if len(outs) != len(eqn.outputs):
                raise LoweringError(f"lowering rule of '{eqn.prim.name}' returned {len(outs)} "
                                    f"values, expected {len(eqn.outputs)}")
            env.update(zip(eqn.outputs, outs, strict=False))
        return [read(x) for x in program.outputs]

    def region_from_ir(self, region, program: IR, arg_avals=None):
        """Fill ``region`` with one block running ``program`` and returning its outputs."""
        ir = self.ir
        avals = program.in_avals if arg_avals is None else arg_avals
        block = self.block(region, avals)
        with ir.InsertionPoint(block):
            outs = self.lower_ir(program, list(block.arguments))
            self.op("stablehlo.return", outs, [])
        return block

    def add_function(self, program: IR, name: str, arg_avals, public: bool = True,
                     output_storage=(), inline_consts: bool = False):
        """Add ``func.func @name`` computing ``program`` (its consts become leading args,
        or with ``inline_consts`` constants in the function's body).

        ``output_storage`` lists results whose memory the caller passes in, as trailing
        arguments marked ``iree.abi.output`` (IREE writes the result there)."""
        ir = self.ir
        from iree.compiler.dialects import func

        with self.context, ir.Location.unknown(), ir.InsertionPoint(self.module.body):
            out_types = [self.tensor_type(v.aval.strip_weak()) for v in program.outputs]
            in_types = [self.tensor_type(a) for a in arg_avals]
            in_types += [out_types[i] for i in output_storage]
            fn = func.FuncOp(name, ir.FunctionType.get(in_types, out_types))
            if not public:
                fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
            if output_storage:
                index = ir.IndexType.get()
                attrs = [ir.DictAttr.get({})] * len(arg_avals) + [
                    ir.DictAttr.get({"iree.abi.output": ir.IntegerAttr.get(index, i)})
                    for i in output_storage]
                fn.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
            block = fn.add_entry_block()
            with ir.InsertionPoint(block):
                n_const = 0 if inline_consts else len(program.const_vars)
                args = list(block.arguments)[:len(arg_avals)]
                outs = self.lower_ir(program, args[n_const:],
                                     consts=None if inline_consts else args[:n_const])
                func.ReturnOp(self._owning_results(outs))
            from funcgrad.lowering import rules

            rules.isolate_reads_of_updated_values(self, block)
            rules.copy_updated_values_read_elsewhere(self, block)
            if self.isolate_reductions:
                rules.isolate_reductions(self, block)
            if self.platform == "cuda":
                rules.limit_kernel_inputs(self, block)
        return fn


    def _owning_results(self, values):
        """``values`` to return, a slice of an argument (through reshapes and broadcasts,
        no arithmetic) replaced by a copy: IREE 3.13 folds such a result, a slice down to a
        scalar then expanded (x[4] as a 1 x 1 residual of grad), into an invalid
        rank-increasing tensor.extract_slice ("expected rank to be smaller or equal")."""
        from funcgrad.lowering import rules

        return [rules.fresh_copy(self, v, self.aval_of(v), tag=k)
                if self._slices_an_argument(v) else v for k, v in enumerate(values)]

    def _slices_an_argument(self, value, depth: int = 16) -> bool:
        sliced = False
        for _ in range(depth):
            value = value.maybe_downcast()
            if isinstance(value, self.ir.BlockArgument):
                return sliced
            name = value.owner.name
            if name not in ("stablehlo.slice", "stablehlo.reshape", "stablehlo.broadcast_in_dim"):
                return False
            sliced = sliced or name == "stablehlo.slice"
            value = value.owner.operands[0]
        return False


# shape-only primitives folded besides the elementwise ones, and the reductions whose
# result does not depend on the order of summation (the in-bounds and duplicate-index
# masks of an indexed update at constant positions: a select on such a mask, folded by
# IREE 3.13 after dispatch formation, left a slice of an argument that it reshaped into an
# invalid rank-increasing tensor.extract_slice)
_FOLDABLE_STRUCTURAL = frozenset({"broadcast_in_dim", "reshape", "convert_element_type",
                                  "iota", "slice", "transpose", "concatenate", "rev", "pad",
                                  "reduce_and", "reduce_or", "reduce_max", "reduce_min",
                                  "argmax", "argmin"})
# small results only: a large constant is better computed by the kernel that reads it
_FOLD_MAX_ELEMENTS = 64


def _fold(eqn, folded) -> np.ndarray | None:
    """The value of a small equation whose operands are all constants (the -1/n of a
    mean's gradient, a scatter position from an iota), computed now: IREE would otherwise
    hoist it into an initializer, a kernel of its own to compile (const-eval is off, see
    compiler.py), and IREE 3.13 crashed on a program returning a slice of an iota."""
    prim = eqn.prim
    if len(eqn.outputs) != 1 or eqn.outputs[0].aval.size > _FOLD_MAX_ELEMENTS or not (
            hasattr(prim, "arity") or prim.name in _FOLDABLE_STRUCTURAL):
        return None
    if eqn.outputs[0].aval.dtype == np.complex128:  # IREE 3.13 cannot hold it as a constant
        return None
    values = []
    for x in eqn.inputs:
        if isinstance(x, Literal):
            values.append(np.asarray(x.value, dtype=x.aval.dtype))
        elif x in folded:
            values.append(folded[x])
        else:
            return None
    aval = eqn.outputs[0].aval
    try:
        with np.errstate(all="ignore"):
            out = prim.impl(*values, **eqn.params)
        return np.asarray(out).astype(aval.dtype, copy=False).reshape(aval.shape)
    except Exception:  # not foldable here: the lowering rule builds it
        return None


def lower_module(program: IR, mlir_context, name: str = "main", platform: str = "cpu",
                 output_storage=(), fuse_scans: bool = False, inline_consts: bool = False,
                 isolate_reductions: bool = False):
    """(module, number of fused scans): a module with one public function running
    ``program``; consts are leading args (``inline_consts``: constants in its body), then
    the inputs, then storage for the results listed in ``output_storage``.

    ``fuse_scans``: scans that fit run as one IREE kernel (``fused_scan``); the module
    then holds IREE-specific ``flow`` operations.  ``isolate_reductions``: every
    reduction's results go behind a barrier (for aggressive fusion, rules.isolate_reductions)."""
    ctx = LoweringContext(mlir_context, platform, fuse_scans=fuse_scans,
                          isolate_reductions=isolate_reductions)
    params = program.in_vars if inline_consts else program.const_vars + program.in_vars
    arg_avals = [v.aval.strip_weak() for v in params]
    fn = ctx.add_function(program, name, arg_avals, output_storage=output_storage,
                          inline_consts=inline_consts)
    if ctx.host_calls:  # read back by the run-time (funcgrad.lowering.host_calls)
        import json

        from funcgrad.lowering import host_calls

        ir = ctx.ir
        with mlir_context:
            fn.attributes["iree.reflection"] = ir.DictAttr.get({
                host_calls.REFLECTION_KEY: ir.StringAttr.get(json.dumps(ctx.host_calls))})
    return ctx.module, ctx.fused_scans
