"""Transformations of whole IRs, the building blocks of higher-order primitives' rules.

A control-flow primitive carries its sub-programs (branches, loop bodies) as IRs; its
JVP, batching, partial-evaluation and transpose rules transform those IRs with these
functions and bind the primitive again with the results.  Each works by re-tracing
``eval_ir(ir)`` under the matching interpreter, so it reuses every primitive's rules.
"""

from __future__ import annotations

from funcgrad.core import interpreter as _interp
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.ir import IR, eval_ir
from funcgrad.core.primitive import UndefinedPrimal
from funcgrad.transforms.tracing import TraceInterpreter, hoist_consts, trace_to_ir


def _expand(flag, n):
    return [flag] * n if isinstance(flag, bool) else list(flag)


def trace_closed(fun, in_avals, name="make_ir"):
    """Trace ``fun`` and return (IR without constants, the hoisted constants)."""
    ir = trace_to_ir(fun, in_avals, name=name)
    return hoist_consts(ir)


def jvp_ir(ir: IR, nonzero, instantiate=True):
    """An IR computing (primal outs, tangent outs) from (primals, tangents of ``nonzero``
    inputs); returns (ir, which outputs have tangents)."""
    from funcgrad.transforms.ad import _jvp_flat, zeros_for

    nonzero = list(nonzero)
    n = len(ir.in_vars)
    tangent_avals = [v.aval.strip_weak() for v, nz in zip(ir.in_vars, nonzero, strict=False) if nz]
    out_nonzero = []
    instantiate = _expand(instantiate, len(ir.outputs))

    def fun(*args):
        primals, it = list(args[:n]), iter(args[n:])
        tangents = [next(it) if nz else None for nz in nonzero]
        outs, out_tangents = _jvp_flat(lambda *xs: eval_ir(ir, *xs), primals, tangents)
        out_nonzero[:] = [
            t is not None or inst for t, inst in zip(out_tangents, instantiate, strict=False)
        ]
        filled = [zeros_for(o.aval.strip_weak()) if t is None else t
                  for o, t, keep in zip(outs, out_tangents, out_nonzero, strict=False) if keep]
        return list(outs) + filled

    new_ir = trace_to_ir(fun, [v.aval for v in ir.in_vars] + tangent_avals, name="jvp")
    return new_ir, out_nonzero


def batch_ir(ir: IR, axis_size: int, batched, instantiate=True):
    """An IR of the batched computation: batched inputs/outputs carry the batch axis
    first; returns (ir, which outputs are batched)."""
    from funcgrad.core.prims.structural import broadcast_in_dim
    from funcgrad.transforms.batching import BatchInterpreter

    batched = list(batched)
    instantiate = _expand(instantiate, len(ir.outputs))
    out_batched = []
    in_avals = [ShapedArray((axis_size, *v.aval.shape), v.aval.dtype, v.aval.weak_type) if b
                else v.aval for v, b in zip(ir.in_vars, batched, strict=False)]

    def fun(*args):
        interp = BatchInterpreter(_interp.current(), axis_size)
        try:
            with _interp.using(interp):
                ins = [
                    interp.lift(a, 0 if b else None) for a, b in zip(args, batched, strict=False)
                ]
                outs = eval_ir(ir, *ins)
            pairs = [interp.unpack(o) for o in outs]
        finally:
            interp.active = False
        results = []
        out_batched[:] = []
        for (value, dim), inst in zip(pairs, instantiate, strict=False):
            if dim is None and inst:
                value = broadcast_in_dim(value, (axis_size, *value.shape),
                                         tuple(range(1, value.ndim + 1)))
                dim = 0
            elif dim is not None and dim != 0:
                from funcgrad.core.prims.structural import moveaxis

                value = moveaxis(value, dim, 0)
                dim = 0
            out_batched.append(dim is not None)
            results.append(value)
        return results

    new_ir = trace_to_ir(fun, in_avals, name="vmap")
    return new_ir, out_batched


def partial_eval_ir(ir: IR, unknowns, instantiate=False):
    """Split ``ir`` into the part computable from its known inputs and the rest.

    Returns ``(known_ir, unknown_ir, out_unknowns, residual_sources)``: ``known_ir`` maps
    the known inputs to (known outputs, residuals); ``unknown_ir`` maps (residuals, unknown
    inputs) to the unknown outputs.  ``residual_sources[i]`` is the index of the known
    input a residual merely forwards, else None (so callers can avoid storing it).
    Both IRs come with constants hoisted: (IR, consts) pairs.
    """
    unknowns = list(unknowns)
    instantiate = _expand(instantiate, len(ir.outputs))
    known_tracer = TraceInterpreter(_interp.current(), name="partial_eval")
    known_args = [
        known_tracer.new_arg(v.aval) for v, u in zip(ir.in_vars, unknowns, strict=False) if not u
    ]
    unknown_tracer = TraceInterpreter(known_tracer, stage_all=False, name="partial_eval")
    unknown_args = [
        unknown_tracer.new_arg(v.aval) for v, u in zip(ir.in_vars, unknowns, strict=False) if u
    ]
    known_it, unknown_it = iter(known_args), iter(unknown_args)
    merged = [next(unknown_it) if u else next(known_it) for u in unknowns]
    try:
        with _interp.using(unknown_tracer):
            outs = eval_ir(ir, *merged)
    except BaseException:
        known_tracer.active = unknown_tracer.active = False
        raise
    out_unknowns = [
        unknown_tracer.is_own(o) or inst for o, inst in zip(outs, instantiate, strict=False)
    ]
    unknown_ir = unknown_tracer.build(
        unknown_args, [o for o, u in zip(outs, out_unknowns, strict=False) if u]
    )
    residuals = list(unknown_ir.consts)
    unknown_ir = IR(unknown_ir.const_vars + unknown_ir.in_vars, unknown_ir.equations,
                    unknown_ir.outputs)
    known_outs = [o for o, u in zip(outs, out_unknowns, strict=False) if not u]
    sources = []
    for r in residuals:
        match = next((i for i, a in enumerate(known_args) if a is r), None)
        sources.append(match)
    known_ir = known_tracer.build(known_args, known_outs + residuals)
    return hoist_consts(known_ir), unknown_ir, out_unknowns, sources


def transpose_ir(ir: IR, linear, recompute: bool = False):
    """An IR mapping (non-linear inputs, output cotangents) to the cotangents of the
    ``linear`` inputs (zeros where none flows).

    With ``recompute`` the IR may also compute non-linear values from its non-linear inputs
    (a checkpointed JVP recomputes its primal part): it is split by partial evaluation
    first, the non-linear part runs forward and only the linear rest is transposed.
    Without that, a multiple-result equation mixing both (a loop whose carry holds a
    primal and its tangent) would have its primal outputs taken for linear ones.
    """
    from funcgrad.transforms.ad import backward_pass, zeros_for

    linear = list(linear)
    nonlinear_avals = [v.aval for v, lin in zip(ir.in_vars, linear, strict=False) if not lin]
    ct_avals = [v.aval.strip_weak() for v in ir.outputs]

    def fun(*args):
        res, cts = list(args[:len(nonlinear_avals)]), list(args[len(nonlinear_avals):])
        if recompute:
            in_cts = _transpose_linear_part(ir, linear, res, cts)
        else:
            it = iter(res)
            inputs = [
                UndefinedPrimal(v.aval) if lin else next(it)
                for v, lin in zip(ir.in_vars, linear, strict=False)
            ]
            in_cts = [ct for ct, lin in zip(backward_pass(ir, cts, inputs), linear,
                                            strict=False) if lin]
        linear_avals = [v.aval for v, lin in zip(ir.in_vars, linear, strict=False) if lin]
        return [zeros_for(a.strip_weak()) if ct is None else ct
                for a, ct in zip(linear_avals, in_cts, strict=False)]

    return trace_to_ir(fun, nonlinear_avals + ct_avals, name="transpose")


def _transpose_linear_part(ir: IR, linear, nonlinear_inputs, cts):
    """The cotangents of ``ir``'s ``linear`` inputs (None where zero): the part computable
    from ``nonlinear_inputs`` runs now, the rest is transposed with ``backward_pass``."""
    from funcgrad.transforms.ad import backward_pass

    (known_ir, known_consts), unknown_ir, out_unknowns, _ = partial_eval_ir(ir, linear)
    known_outs = eval_ir(known_ir, *known_consts, *nonlinear_inputs)
    residuals = list(known_outs[out_unknowns.count(False):])
    linear_inputs = [UndefinedPrimal(v.aval) for v, lin in zip(ir.in_vars, linear, strict=False)
                     if lin]
    # cotangents of outputs that do not depend on the linear inputs flow nowhere
    unknown_cts = [ct for ct, u in zip(cts, out_unknowns, strict=False) if u]
    in_cts = backward_pass(unknown_ir, unknown_cts, residuals + linear_inputs)
    return in_cts[len(residuals):]
