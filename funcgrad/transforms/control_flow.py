"""Control flow: cond/switch, while_loop, fori_loop and scan as primitives over sub-IRs.

Outside every transformation they simply run Python (the branch taken, the loop).  Under
a transformation the user's functions are traced to IRs (their captured values become
explicit operands) and carried by ``cond``, ``while_loop`` and ``scan`` primitives whose
JVP, batching, partial-evaluation (reverse mode) and transpose rules transform those IRs.
"""

from __future__ import annotations

import numpy as np
import optree

from funcgrad.core import dtypes
from funcgrad.core import interpreter as _interp
from funcgrad.core.abstract import ShapedArray, aval_of
from funcgrad.core.ir import IR, Var, eval_ir, subprograms
from funcgrad.core.primitive import Primitive, UndefinedPrimal
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims.reductions import reduce_or
from funcgrad.core.prims.structural import broadcast_in_dim, full, moveaxis
from funcgrad.core.tensor import Tensor, wrap
from funcgrad.transforms.ad import (
    NoReverseModeError,
    as_tensor,
    tree_flatten,
    tree_unflatten,
    zeros_for,
)
from funcgrad.transforms.ir_transforms import (
    batch_ir,
    jvp_ir,
    partial_eval_ir,
    transpose_ir,
)
from funcgrad.transforms.tracing import hoist_consts, trace_to_ir


def _eager() -> bool:
    return _interp.current() is _interp.EAGER


def _typestr(avals) -> str:
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _trace_fun(fun, in_tree, in_avals, name):
    """Trace a pytree function on flat avals: (IR with consts hoisted, consts, out tree)."""
    store = {}

    def flat_fun(*leaves):
        out = fun(*tree_unflatten(in_tree, list(leaves)))
        flat, store["tree"] = tree_flatten(out)
        return [as_tensor(x) for x in flat]

    ir = trace_to_ir(flat_fun, in_avals, name=name)
    closed, consts = hoist_consts(ir)
    return closed, consts, store["tree"]


def _signature_of(tree_value):
    """(tree structure, [(shape, dtype)]) of a pytree of values, for type checks."""
    flat, tree = tree_flatten(tree_value)
    return tree, [(tuple(a.shape), a.dtype) for a in (_strong(as_tensor(x).aval)
                                                      for x in flat)]


def _promoted_carry(init_avals, weak, got):
    """JAX's rule for loop carries: an initial value that is weakly typed (a Python number)
    takes the dtype the body gives it when that is what promotion would give.  Returns the
    new initial avals, or None when nothing can be promoted."""
    changed = False
    new = list(init_avals)
    for i, (a, w, b) in enumerate(zip(init_avals, weak, got, strict=True)):
        if w and a.shape == b.shape and a.dtype != b.dtype and \
                dtypes.promote_pairs(((a.dtype, True), (b.dtype, False)))[0] == b.dtype:
            new[i] = ShapedArray(a.shape, b.dtype)
            changed = True
    return new if changed else None


def _check_same_type(what, names, first, second):
    """Eager control flow checks what its traced form would (as JAX): two values that
    must have one structure, shapes and dtypes (branch outputs, a carry before/after)."""
    _check_signatures(what, names, first, _signature_of(second))


def _check_signatures(what, names, first, second_signature, promote=True):
    """``_check_same_type`` against the signature of the second side (a traced branch has
    avals, not values). ``promote``: a Python-number start may adopt the other side's
    dtype (loop carries); branches of a cond must match exactly."""
    (tree_a, types_a), (tree_b, types_b) = _signature_of(first), second_signature
    weak = [getattr(as_tensor(x), "weak_type", False) for x in tree_flatten(first)[0]]
    if promote and tree_a == tree_b and len(weak) == len(types_a):
        promoted = _promoted_carry([ShapedArray(sh, d) for sh, d in types_a], weak,
                                   [ShapedArray(sh, d) for sh, d in types_b])
        if promoted is not None:  # a Python-number start adopting the body's dtype
            types_a = [(a.shape, a.dtype) for a in promoted]
    if tree_a != tree_b:
        raise TypeError(f"{what}: {names[0]} has structure {tree_a} but {names[1]} has "
                        f"{tree_b}; they must match")
    if types_a != types_b:
        fmt = lambda ts: "(" + ", ".join(f"{np.dtype(d).name}{list(s)}" for s, d in ts) + ")"  # noqa: E731
        raise TypeError(f"{what}: {names[0]} is {fmt(types_a)} but {names[1]} is "
                        f"{fmt(types_b)}; they must have the same shapes and dtypes (it "
                        "would fail under jit)")


def _with_extra_inputs(ir: IR, before: list, after: list = ()) -> IR:
    """``ir`` taking extra, unused inputs of the given avals before/after its own."""
    return IR([Var(a) for a in before] + ir.in_vars + [Var(a) for a in after],
              ir.equations, ir.outputs, ir.const_vars, ir.consts)


def _permute_inputs(ir: IR, order) -> IR:
    return IR([ir.in_vars[i] for i in order], ir.equations, ir.outputs, ir.const_vars,
              ir.consts)


def _select_outputs(ir: IR, keep) -> IR:
    return IR(ir.in_vars, ir.equations, [o for o, k in zip(ir.outputs, keep, strict=False) if k],
              ir.const_vars, ir.consts)


def _to_front(x, dim, axis_size):
    if dim is None:
        return broadcast_in_dim(x, (axis_size, *x.shape), tuple(range(1, x.ndim + 1)))
    return x if dim == 0 else moveaxis(x, dim, 0)


def _instantiate(values, avals):
    return [
        zeros_for(a.strip_weak()) if v is None else v for v, a in zip(values, avals, strict=False)
    ]


def _strong(aval: ShapedArray) -> ShapedArray:
    return aval.strip_weak()


def _default_width(x: Tensor) -> Tensor:
    """A staged operand or carry at the width a Python number given to jit has eagerly
    (``ew.at_default_width``), since control flow traces its operands strongly typed: a
    float32 x scaled by such a carry stays float32, as eagerly and in JAX (it was float64,
    and fori_loop(0, n, body, (x, lr)) under jit refused its own carry)."""
    return ew.at_default_width(x)


# =========================================================================================
# cond / switch
# =========================================================================================

cond_p = Primitive("cond", multiple_results=True)


def switch(index, branches, *operands):
    """Apply ``branches[index](*operands)``; ``index`` is clamped into range.

    Under jit/vmap/grad every branch is traced and must return the same types.

    >>> fg.switch(1, [lambda x: x + 1, lambda x: x * 2], fg.tensor(3.0))
    tensor(6., dtype=float32)
    """
    branches = list(branches)
    if not branches:
        raise ValueError("switch: need at least one branch")
    if not all(callable(b) for b in branches):
        raise TypeError("switch: branches must be callables")
    if _eager() and (not isinstance(index, Tensor) or type(index) is Tensor):
        index_array = np.asarray(index)
        if index_array.dtype.kind not in "iub" or index_array.shape != ():
            raise TypeError(f"switch: the index must be an integer scalar, got "
                            f"{index_array.dtype.name} of shape {index_array.shape}")
        i = int(np.clip(int(index_array), 0, len(branches) - 1))
        operands = _as_tensors(operands)
        out = _as_tensors(branches[i](*operands))
        _check_other_branches("switch", branches, [f"branch {k}" for k in range(len(branches))],
                              i, operands, out)
        return out
    return _staged_switch(index, branches, operands,
                          [f"branch {k}" for k in range(len(branches))])


def _as_tensors(tree):
    """Array leaves as Tensors (Python numbers weakly typed), as the traced path gives."""
    return optree.tree_map(as_tensor, tree, namespace="funcgrad")


def _check_other_branches(what, branches, names, taken, operands, out):
    """The branches not run eagerly are traced (not run) and must return what the taken
    one did, as under jit."""
    flat_ops, in_tree = tree_flatten(operands)
    in_avals = [_strong(as_tensor(x).aval) for x in flat_ops]
    for k, branch in enumerate(branches):
        if k == taken:
            continue
        ir, _, tree = _trace_fun(branch, in_tree, in_avals, what)
        got = (tree, [(tuple(a.shape), a.dtype) for a in map(_strong, ir.out_avals)])
        _check_signatures(what, [names[taken], names[k]], out, got, promote=False)


def _staged_switch(index, branches, operands, names):
    """switch under a transformation: every branch traced, checked against the first
    (``names`` say which is which in errors), bound as one cond primitive."""
    index = as_tensor(index)
    if index.shape != ():
        raise TypeError(f"switch/cond: the index/predicate must be a scalar, got shape "
                        f"{index.shape}")
    if index.dtype == dtypes.bool_:
        index = ew.convert_element_type(index, dtypes.int32)
    elif not dtypes.is_integer(index.dtype):
        raise TypeError(f"switch: index must be an integer scalar, got {index.dtype.name}")
    else:
        index = ew.convert_element_type(index, dtypes.int32)
    index = ew.max(ew.min(index, wrap(np.int32(len(branches) - 1))), wrap(np.int32(0)))
    flat_ops, in_tree = tree_flatten(operands)
    flat_ops = [as_tensor(x) for x in flat_ops]
    flat_ops = [_default_width(x) for x in flat_ops]
    in_avals = [_strong(x.aval) for x in flat_ops]
    traced = [_trace_fun(b, in_tree, in_avals, "cond") for b in branches]
    out_tree = traced[0][2]
    for k, (ir, _, tree) in enumerate(traced[1:], 1):
        if tree != out_tree:
            raise TypeError(f"cond/switch: {names[0]} returns structure {out_tree} but "
                            f"{names[k]} returns {tree}; all branches must return the same "
                            "structure")
        a0 = [_strong(a) for a in traced[0][0].out_avals]
        ak = [_strong(a) for a in ir.out_avals]
        if [(a.shape, a.dtype) for a in a0] != [(a.shape, a.dtype) for a in ak]:
            raise TypeError(f"cond/switch: {names[0]} returns {_typestr(a0)} but {names[k]} "
                            f"returns {_typestr(ak)}; all branches must return the same "
                            "shapes and dtypes")
    # every branch takes every branch's captured constants, then the operands
    const_avals = [[aval_of(c) for c in consts] for _, consts, _ in traced]
    irs = []
    for k, (ir, consts, _) in enumerate(traced):
        before = [a for j in range(k) for a in const_avals[j]]
        after_consts = [a for j in range(k + 1, len(traced)) for a in const_avals[j]]
        n_own = len(consts)
        # layout: consts of branches < k, own consts, consts of branches > k, operands
        new = _with_extra_inputs(ir, before)
        own_and_ops = new.in_vars[len(before):]
        extra = [Var(a) for a in after_consts]
        new = IR(new.in_vars[:len(before)] + own_and_ops[:n_own] + extra + own_and_ops[n_own:],
                 new.equations, new.outputs)
        irs.append(new)
    all_consts = [c for _, consts, _ in traced for c in consts]
    outs = cond_p.bind(index, *all_consts, *flat_ops, branches=tuple(irs))
    return tree_unflatten(out_tree, outs)


def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``.

    ``pred`` is a scalar; under vmap a batched predicate evaluates both branches and selects.

    >>> fg.cond(fg.tensor(True), lambda x: x + 1, lambda x: x - 1, fg.tensor(1.0))
    tensor(2., dtype=float32)
    """
    if _eager() and (not isinstance(pred, Tensor) or type(pred) is Tensor):
        pred_array = np.asarray(pred)
        if pred_array.shape != ():
            raise TypeError(f"cond: the predicate must be a scalar, got shape {pred_array.shape}")
        taken = bool(pred_array)
        operands = _as_tensors(operands)
        out = _as_tensors((true_fun if taken else false_fun)(*operands))
        _check_other_branches("cond", [false_fun, true_fun], ["false_fun", "true_fun"],
                              int(taken), operands, out)
        return out
    pred = as_tensor(pred)
    if pred.shape != ():
        raise TypeError(f"cond: the predicate must be a scalar, got shape {pred.shape}")
    if pred.dtype != dtypes.bool_:
        pred = ew.ne(pred, wrap(np.zeros((), pred.dtype)))
    return _staged_switch(pred, [false_fun, true_fun], operands, ["false_fun", "true_fun"])


def _cond_impl(index, *args, branches):
    i = int(np.clip(int(index), 0, len(branches) - 1))
    outs = eval_ir(branches[i], *[wrap(a) for a in args])
    return [o._buf for o in outs]


def _cond_abstract_eval(index, *args, branches):
    return [_strong(a) for a in branches[0].out_avals]


def _cond_jvp(primals, tangents, *, branches):
    index, args = primals[0], primals[1:]
    arg_tangents = tangents[1:]
    nonzero = [t is not None and dtypes.is_inexact(aval_of(a).dtype)
               for a, t in zip(args, arg_tangents, strict=False)]
    if not any(nonzero):
        return cond_p.bind(index, *args, branches=branches), [None] * len(branches[0].outputs)
    instantiate = [dtypes.is_inexact(a.dtype) for a in branches[0].out_avals]
    new = [jvp_ir(b, nonzero, instantiate) for b in branches]
    out_nonzero = new[0][1]
    n_out = len(branches[0].outputs)
    outs = cond_p.bind(
        index,
        *args,
        *[t for t, nz in zip(arg_tangents, nonzero, strict=False) if nz],
        branches=tuple(ir for ir, _ in new),
    )
    it = iter(outs[n_out:])
    return outs[:n_out], [next(it) if nz else None for nz in out_nonzero]


def _cond_batch(axis_size, args, dims, *, branches):
    index, index_dim = args[0], dims[0]
    ops = [
        _to_front(a, d, axis_size) if d is not None else a
        for a, d in zip(args[1:], dims[1:], strict=False)
    ]
    batched = [d is not None for d in dims[1:]]
    if index_dim is None:
        first = [batch_ir(b, axis_size, batched, instantiate=False)[1] for b in branches]
        out_batched = [any(col) for col in zip(*first, strict=False)]
        new = [batch_ir(b, axis_size, batched, instantiate=out_batched)[0] for b in branches]
        outs = cond_p.bind(index, *ops, branches=tuple(new))
        return outs, [0 if b else None for b in out_batched]
    # a batched predicate: run every branch on the batch and select per element
    index = _to_front(index, index_dim, axis_size)
    inexact = [dtypes.is_inexact(aval_of(x).dtype) for x in ops]
    ops = [_to_front(x, None, axis_size) if f and not b else x
           for x, f, b in zip(ops, inexact, batched, strict=True)]
    now_batched = [b or f for b, f in zip(batched, inexact, strict=True)]
    results = []
    for k, branch in enumerate(branches):
        ir, _ = batch_ir(branch, axis_size, now_batched, instantiate=True)
        results.append(eval_ir(ir, *_where_taken(index, k, ops, inexact)))
    outs = []
    for per_branch in zip(*results, strict=False):
        shape = per_branch[0].shape
        which = broadcast_in_dim(index, shape, (0,))
        outs.append(ew.select_n(which, *per_branch))
    return outs, [0] * len(outs)


def _where_taken(index, k, ops, inexact):
    """Branch ``k``'s operands under a batched predicate ``index``: the float ones hold
    their gradient only in the batch elements taking branch ``k`` (stop_gradient
    elsewhere), as JAX.  Otherwise a branch's infinite derivative where it is not taken
    (log at 0) meets the zero cotangent of the select: 0 * inf gave NaN gradients."""
    from funcgrad.transforms.custom import stop_gradient

    taken = ew.eq(index, full(index.shape, k, index.dtype))
    guarded = []
    for x, f in zip(ops, inexact, strict=True):
        if f:
            which = broadcast_in_dim(taken, x.shape, (0,))
            x = ew.select_n(which, stop_gradient(x), x)
        guarded.append(x)
    return guarded


def _cond_partial_eval(trace, args, params):
    branches = params["branches"]
    index, ops = args[0], list(args[1:])
    out_avals = _cond_abstract_eval(*[aval_of(a) for a in args], **params)
    if trace.is_own(index):
        return trace.stage(cond_p, args, params, out_avals)
    unknowns = [trace.is_own(o) for o in ops]
    first = [partial_eval_ir(b, unknowns)[2] for b in branches]
    out_unknowns = [any(col) for col in zip(*first, strict=False)]
    splits = [partial_eval_ir(b, unknowns, instantiate=out_unknowns) for b in branches]
    res_avals = [_residual_avals(s) for s in splits]
    known_ops = [o for o, u in zip(ops, unknowns, strict=False) if not u]
    unknown_ops = [o for o, u in zip(ops, unknowns, strict=False) if u]
    n_known_out = out_unknowns.count(False)

    known_branches = []
    for k, ((known_ir, known_consts), _, _, _) in enumerate(splits):
        def known_fun(*xs, known_ir=known_ir, known_consts=known_consts, k=k):
            outs = eval_ir(known_ir, *known_consts, *xs)
            own_res = outs[n_known_out:]
            result = list(outs[:n_known_out])
            for j, avals in enumerate(res_avals):
                result += own_res if j == k else [zeros_for(a) for a in avals]
            return result

        known_branches.append(trace_to_ir(known_fun, [aval_of(o) for o in known_ops],
                                          name="cond"))
    with _interp.using(trace.parent):
        known_results = cond_p.bind(index, *known_ops, branches=tuple(known_branches))
    known_outs, residuals = known_results[:n_known_out], known_results[n_known_out:]

    unknown_branches = []
    for k, (_, unknown_ir, _, _) in enumerate(splits):
        before = [a for j in range(k) for a in res_avals[j]]
        after = [a for j in range(k + 1, len(splits)) for a in res_avals[j]]
        n_own = len(res_avals[k])
        padded = IR([Var(a) for a in before] + unknown_ir.in_vars[:n_own]
                    + [Var(a) for a in after] + unknown_ir.in_vars[n_own:],
                    unknown_ir.equations, unknown_ir.outputs)
        unknown_branches.append(padded)
    unknown_avals = [a for a, u in zip(out_avals, out_unknowns, strict=False) if u]
    unknown_outs = trace.stage(cond_p, [index, *residuals, *unknown_ops],
                               dict(branches=tuple(unknown_branches)), unknown_avals)
    known_it, unknown_it = iter(known_outs), iter(unknown_outs)
    return [next(unknown_it) if u else next(known_it) for u in out_unknowns]


def _residual_avals(split):
    """The avals of the residuals a partial_eval_ir split passes to its unknown part."""
    (known_ir, _), _, _, sources = split
    outs = known_ir.out_avals
    return outs[len(outs) - len(sources):]


def _cond_transpose(cts, index, *args, branches):
    if isinstance(index, UndefinedPrimal):
        raise TypeError("cond: the branch index is not linear")
    linear = [isinstance(a, UndefinedPrimal) for a in args]
    out_avals = branches[0].out_avals
    cts = _instantiate(cts, out_avals)
    new = tuple(transpose_ir(b, linear) for b in branches)
    res = [a for a in args if not isinstance(a, UndefinedPrimal)]
    outs = iter(cond_p.bind(index, *res, *cts, branches=new))
    return [None] + [next(outs) if lin else None for lin in linear]


cond_p.impl = _cond_impl
cond_p.abstract_eval = _cond_abstract_eval
cond_p.jvp = _cond_jvp
cond_p.batch = _cond_batch
cond_p.partial_eval = _cond_partial_eval
cond_p.transpose = _cond_transpose
cond_p.linear = True


# =========================================================================================
# scan
# =========================================================================================

scan_p = Primitive("scan", multiple_results=True)


def _leading_length(xs_flat, length):
    lengths = {int(x.shape[0]) for x in xs_flat if x.ndim}
    if any(x.ndim == 0 for x in xs_flat):
        raise ValueError("scan: every leaf of xs needs a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) > 1:
        raise ValueError(f"scan: inconsistent lengths: xs leading axes and length give "
                         f"{sorted(lengths)}")
    if not lengths:
        raise ValueError("scan: pass xs with a leading axis or length=")
    return lengths.pop()


def scan(f, init, xs=None, length=None, reverse: bool = False, unroll: int = 1):
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns
    ``(final carry, stacked ys)`` as ``jax.lax.scan``.  ``unroll`` is accepted as in JAX;
    under ``jit`` the compiler picks the unrolling (small bodies several steps at a time).

    >>> def step(total, x):
    ...     return total + x, total
    >>> fg.scan(step, fg.tensor(0.0), fg.tensor([1.0, 2.0, 3.0]))
    (tensor(6., dtype=float32), tensor([0., 1., 3.], dtype=float32))
    """
    carry_flat, carry_tree = tree_flatten(init)
    carry_flat = [as_tensor(c) for c in carry_flat]
    xs_flat, xs_tree = tree_flatten(xs)
    xs_flat = [as_tensor(x) for x in xs_flat]
    n = _leading_length(xs_flat, length)
    if _eager() and all(type(v) is Tensor for v in carry_flat + xs_flat):
        # (the carry as tensors: a Python int init comes back as a tensor, as in JAX)
        return _scan_python(f, tree_unflatten(carry_tree, carry_flat), xs, xs_flat, xs_tree,
                            n, reverse)

    carry_flat = [_default_width(c) for c in carry_flat]
    carry_avals = [_strong(c.aval) for c in carry_flat]
    x_avals = [ShapedArray(x.shape[1:], x.dtype) for x in xs_flat]
    store = {}

    def body(*leaves):
        carry = tree_unflatten(carry_tree, list(leaves[:len(carry_avals)]))
        x = tree_unflatten(xs_tree, list(leaves[len(carry_avals):]))
        out = f(carry, x)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError("scan: the body must return a pair (carry, y)")
        new_carry, y = out
        new_flat, new_tree = tree_flatten(new_carry)
        if new_tree != carry_tree:
            raise TypeError(f"scan: the body's carry output structure {new_tree} differs from "
                            f"the input carry's {carry_tree}")
        new_flat = [as_tensor(c) for c in new_flat]
        got = [_strong(c.aval) for c in new_flat]
        if [(a.shape, a.dtype) for a in got] != [(a.shape, a.dtype) for a in carry_avals]:
            raise _CarryTypeError(f"scan: the body's carry output types {_typestr(got)} "
                                  f"differ from the input carry types "
                                  f"{_typestr(carry_avals)}", got)
        y_flat, store["y_tree"] = tree_flatten(y)
        return new_flat + [as_tensor(v) for v in y_flat]

    if any(c.weak_type for c in carry_flat):
        # a Python-number start traced weakly first, to see the dtype the body gives it (a
        # strong float32 0.0 plus float16 xs stays float32, so it never promoted; eagerly,
        # and in JAX, the carry becomes float16)
        try:
            trace_to_ir(body, [c.aval if c.weak_type else a
                               for c, a in zip(carry_flat, carry_avals, strict=True)] + x_avals,
                        name="scan")
        except _CarryTypeError as err:
            carry_avals = _promoted_carry(carry_avals, [c.weak_type for c in carry_flat],
                                          err.got) or carry_avals
    try:
        ir = trace_to_ir(body, carry_avals + x_avals, name="scan")
    except _CarryTypeError as err:
        promoted = _promoted_carry(carry_avals, [c.weak_type for c in carry_flat], err.got)
        if promoted is None:
            raise TypeError(str(err)) from None
        carry_avals = promoted  # as JAX: Python-number starts take the body's dtype
        ir = trace_to_ir(body, carry_avals + x_avals, name="scan")
    closed, consts = hoist_consts(ir)
    init_vals = [ew.convert_element_type(c, a.dtype) if c.weak_type else c
                 for c, a in zip(carry_flat, carry_avals, strict=False)]
    outs = scan_p.bind(*consts, *init_vals, *xs_flat, body=closed, num_consts=len(consts),
                       num_carry=len(carry_avals), length=n, reverse=bool(reverse))
    carry_out = tree_unflatten(carry_tree, outs[:len(carry_avals)])
    return carry_out, tree_unflatten(store["y_tree"], outs[len(carry_avals):])


class _CarryTypeError(TypeError):
    def __init__(self, message, got):
        super().__init__(message)
        self.got = got


def _scan_python(f, init, xs, xs_flat, xs_tree, n, reverse, name="scan"):
    from funcgrad.numpy import stack

    carry = init
    ys = []
    steps = range(n - 1, -1, -1) if reverse else range(n)
    for i in steps:
        x = tree_unflatten(xs_tree, [v[i] for v in xs_flat])
        out = f(carry, x)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError("scan: the body must return a pair (carry, y)")
        if not ys:
            _check_same_type(name, ["the initial carry", "the carry the body returns"],
                             carry, out[0])
        carry, y = out
        ys.append(y)
    if reverse:
        ys.reverse()
    if not ys:
        # trace once for the output structure of an empty scan
        return _scan_empty(f, init, xs_flat, xs_tree)
    y_leaves = [tree_flatten(y)[0] for y in ys]
    y_tree = tree_flatten(ys[0])[1]
    stacked = [stack([as_tensor(v) for v in column]) for column in zip(*y_leaves, strict=False)]
    return carry, tree_unflatten(y_tree, stacked)


def _scan_empty(f, init, xs_flat, xs_tree):
    carry_flat, carry_tree = tree_flatten(init)
    x_avals = [ShapedArray(x.shape[1:], x.dtype) for x in xs_flat]
    store = {}

    def body(*leaves):
        out = f(tree_unflatten(carry_tree, list(leaves[:len(carry_flat)])),
                tree_unflatten(xs_tree, list(leaves[len(carry_flat):])))
        y_flat, store["tree"] = tree_flatten(out[1])
        return [as_tensor(v) for v in y_flat]

    ir = trace_to_ir(body, [as_tensor(c).aval for c in carry_flat] + x_avals, name="scan")
    ys = [zeros_for(ShapedArray((0, *a.shape), a.dtype)) for a in ir.out_avals]
    return init, tree_unflatten(store["tree"], ys)


def _split3(seq, a, b):
    return list(seq[:a]), list(seq[a:a + b]), list(seq[a + b:])


def _scan_impl(*args, body, num_consts, num_carry, length, reverse):
    consts, carry, xs = _split3([wrap(a) for a in args], num_consts, num_carry)
    ys_steps = []
    steps = range(length - 1, -1, -1) if reverse else range(length)
    for i in steps:
        outs = eval_ir(body, *consts, *carry, *[wrap(x._buf[i]) for x in xs])
        carry, y = outs[:num_carry], outs[num_carry:]
        ys_steps.append([v._buf for v in y])
    if reverse:
        ys_steps.reverse()
    y_avals = body.out_avals[num_carry:]
    ys = [
        np.stack(col) if ys_steps else np.zeros((0, *a.shape), a.dtype)
        for col, a in zip(
            zip(*ys_steps, strict=False) if ys_steps else [()] * len(y_avals), y_avals, strict=False
        )
    ]
    return [c._buf for c in carry] + ys


def _scan_abstract_eval(*args, body, num_consts, num_carry, length, reverse):
    outs = [_strong(a) for a in body.out_avals]
    return outs[:num_carry] + [ShapedArray((length, *a.shape), a.dtype) for a in outs[num_carry:]]


def _scan_jvp(primals, tangents, *, body, num_consts, num_carry, length, reverse):
    consts_nz, carry_nz, xs_nz = _split3([t is not None for t in tangents], num_consts,
                                         num_carry)
    n_y = len(body.outputs) - num_carry
    carry_avals = body.in_avals[num_consts:num_consts + num_carry]
    carry_nz = [
        nz and dtypes.is_inexact(a.dtype) for nz, a in zip(carry_nz, carry_avals, strict=False)
    ]
    while True:
        _, out_nz = jvp_ir(body, consts_nz + carry_nz + xs_nz,
                           instantiate=carry_nz + [False] * n_y)
        new = [a or b for a, b in zip(carry_nz, out_nz[:num_carry], strict=False)]
        if new == carry_nz:
            break
        carry_nz = new
    body_jvp, out_nz = jvp_ir(body, consts_nz + carry_nz + xs_nz,
                              instantiate=carry_nz + [False] * n_y)
    ys_nz = out_nz[num_carry:]
    # body_jvp inputs: consts, carry, xs, then tangents of the nonzero ones in that order
    n_in = len(body.in_vars)
    nz_all = consts_nz + carry_nz + xs_nz
    tangent_pos = [i for i, nz in enumerate(nz_all) if nz]
    where = {p: n_in + k for k, p in enumerate(tangent_pos)}
    order = (list(range(num_consts)) + [where[i] for i in range(num_consts) if nz_all[i]]
             + list(range(num_consts, num_consts + num_carry))
             + [where[i] for i in range(num_consts, num_consts + num_carry) if nz_all[i]]
             + list(range(num_consts + num_carry, n_in))
             + [where[i] for i in range(num_consts + num_carry, n_in) if nz_all[i]])
    new_body = _permute_inputs(body_jvp, order)
    # body_jvp outputs: carry, ys, carry tangents, ys tangents -> carry+tangents, ys+tangents
    n_ct = sum(carry_nz)
    outs_order = (list(range(num_carry)) + list(range(num_carry + n_y, num_carry + n_y + n_ct))
                  + list(range(num_carry, num_carry + n_y))
                  + list(range(num_carry + n_y + n_ct, len(new_body.outputs))))
    new_body = IR(new_body.in_vars, new_body.equations, [new_body.outputs[i] for i in outs_order])
    consts, carry, xs = _split3(list(primals), num_consts, num_carry)
    c_t, carry_t, xs_t = _split3(list(tangents), num_consts, num_carry)
    carry_t = [zeros_for(_strong(aval_of(c))) if t is None else t
               for c, t, nz in zip(carry, carry_t, carry_nz, strict=False) if nz]
    outs = scan_p.bind(*consts, *[t for t in c_t if t is not None], *carry, *carry_t,
                       *xs, *[t for t in xs_t if t is not None], body=new_body,
                       num_consts=num_consts + sum(consts_nz), num_carry=num_carry + n_ct,
                       length=length, reverse=reverse)
    carry_out, carry_t_out = outs[:num_carry], outs[num_carry:num_carry + n_ct]
    ys, ys_t = outs[num_carry + n_ct:num_carry + n_ct + n_y], outs[num_carry + n_ct + n_y:]
    it_c, it_y = iter(carry_t_out), iter(ys_t)
    return (carry_out + ys, [next(it_c) if nz else None for nz in carry_nz]
            + [next(it_y) if nz else None for nz in ys_nz])


def _scan_batch(axis_size, args, dims, *, body, num_consts, num_carry, length, reverse):
    consts_d, carry_d, xs_d = _split3(list(dims), num_consts, num_carry)
    consts_b = [d is not None for d in consts_d]
    xs_b = [d is not None for d in xs_d]
    carry_b = [d is not None for d in carry_d]
    n_y = len(body.outputs) - num_carry
    while True:
        _, out_b = batch_ir(body, axis_size, consts_b + carry_b + xs_b,
                            instantiate=carry_b + [False] * n_y)
        new = [a or b for a, b in zip(carry_b, out_b[:num_carry], strict=False)]
        if new == carry_b:
            break
        carry_b = new
    new_body, out_b = batch_ir(body, axis_size, consts_b + carry_b + xs_b,
                               instantiate=carry_b + [False] * n_y)
    consts, carry, xs = _split3(list(args), num_consts, num_carry)
    consts = [
        _to_front(c, d, axis_size) if d is not None else c
        for c, d in zip(consts, consts_d, strict=False)
    ]
    carry = [
        _to_front(c, d, axis_size) if b else c
        for c, d, b in zip(carry, carry_d, carry_b, strict=False)
    ]
    xs = [
        (x if d == 1 else moveaxis(x, d, 1)) if d is not None else x
        for x, d in zip(xs, xs_d, strict=False)
    ]
    outs = scan_p.bind(*consts, *carry, *xs, body=new_body, num_consts=num_consts,
                       num_carry=num_carry, length=length, reverse=reverse)
    out_dims = [0 if b else None for b in carry_b] + [1 if b else None for b in out_b[num_carry:]]
    return outs, out_dims


def _scan_partial_eval(trace, args, params):
    body = params["body"]
    num_consts, num_carry = params["num_consts"], params["num_carry"]
    length, reverse = params["length"], params["reverse"]
    out_avals = _scan_abstract_eval(*[aval_of(a) for a in args], **params)
    consts_uk, carry_uk, xs_uk = _split3([trace.is_own(a) for a in args], num_consts, num_carry)
    n_y = len(body.outputs) - num_carry
    while True:
        out_uk = partial_eval_ir(body, consts_uk + carry_uk + xs_uk,
                                 instantiate=carry_uk + [False] * n_y)[2]
        new = [a or b for a, b in zip(carry_uk, out_uk[:num_carry], strict=False)]
        if new == carry_uk:
            break
        carry_uk = new
    (known_ir, known_consts), unknown_ir, out_uk, sources = partial_eval_ir(
        body, consts_uk + carry_uk + xs_uk, instantiate=carry_uk + [False] * n_y)
    ys_uk = out_uk[num_carry:]
    consts, carry, xs = _split3(list(args), num_consts, num_carry)
    known_c = [c for c, u in zip(consts, consts_uk, strict=False) if not u]
    known_carry = [c for c, u in zip(carry, carry_uk, strict=False) if not u]
    known_xs = [x for x, u in zip(xs, xs_uk, strict=False) if not u]
    n_kc = len(known_c)
    # a residual that is just a known loop-invariant input is passed as a constant
    forwarded = [s is not None and s < n_kc for s in sources]
    n_known_carry, n_known_y = carry_uk.count(False), ys_uk.count(False)
    keep = [True] * (n_known_carry + n_known_y) + [not f for f in forwarded]
    known_body = _select_outputs(known_ir, keep)
    with _interp.using(trace.parent):
        known_outs = scan_p.bind(*known_consts, *known_c, *known_carry, *known_xs,
                                 body=known_body, num_consts=len(known_consts) + n_kc,
                                 num_carry=n_known_carry, length=length, reverse=reverse)
    known_carry_out = known_outs[:n_known_carry]
    known_ys = known_outs[n_known_carry:n_known_carry + n_known_y]
    stacked_res = known_outs[n_known_carry + n_known_y:]
    fwd_res = [known_c[s] for s, f in zip(sources, forwarded, strict=False) if f]
    # unknown body inputs: residuals (in order), unknown consts, unknown carry, unknown xs;
    # as a scan: consts = forwarded residuals + unknown consts, carry, xs = stacked + xs
    n_res = len(sources)
    res_fwd_idx = [i for i, f in enumerate(forwarded) if f]
    res_stack_idx = [i for i, f in enumerate(forwarded) if not f]
    n_uc, n_ucarry = consts_uk.count(True), carry_uk.count(True)
    order = (res_fwd_idx + list(range(n_res, n_res + n_uc))
             + list(range(n_res + n_uc, n_res + n_uc + n_ucarry))
             + res_stack_idx + list(range(n_res + n_uc + n_ucarry, len(unknown_ir.in_vars))))
    unknown_body = _permute_inputs(unknown_ir, order)
    unknown_c = [c for c, u in zip(consts, consts_uk, strict=False) if u]
    unknown_carry = [c for c, u in zip(carry, carry_uk, strict=False) if u]
    unknown_xs = [x for x, u in zip(xs, xs_uk, strict=False) if u]
    unknown_avals = ([a for a, u in zip(out_avals[:num_carry], carry_uk, strict=False) if u]
                     + [a for a, u in zip(out_avals[num_carry:], ys_uk, strict=False) if u])
    unknown_outs = trace.stage(
        scan_p, [*fwd_res, *unknown_c, *unknown_carry, *stacked_res, *unknown_xs],
        dict(body=unknown_body, num_consts=len(fwd_res) + n_uc, num_carry=n_ucarry,
             length=length, reverse=reverse), unknown_avals)
    uk_carry_out, uk_ys = unknown_outs[:n_ucarry], unknown_outs[n_ucarry:]
    kc, uc, ky, uy = iter(known_carry_out), iter(uk_carry_out), iter(known_ys), iter(uk_ys)
    return ([next(uc) if u else next(kc) for u in carry_uk]
            + [next(uy) if u else next(ky) for u in ys_uk])


def _aval(x):
    return x.aval if isinstance(x, UndefinedPrimal) else aval_of(x)


def _scan_transpose(cts, *args, body, num_consts, num_carry, length, reverse):
    consts, carry, xs = _split3(list(args), num_consts, num_carry)
    # A carry given as a known value in a linear program is a tangent that starts as an
    # instantiated zero (partial evaluation made it unknown only through the body), so it
    # is transposed as linear and gets no cotangent of its own.
    known_init = [not isinstance(c, UndefinedPrimal) for c in carry]
    lin_consts = [isinstance(c, UndefinedPrimal) for c in consts]
    lin_xs = [isinstance(x, UndefinedPrimal) for x in xs]
    out_avals = _scan_abstract_eval(*[_aval(a) for a in args], body=body, num_consts=num_consts,
                                    num_carry=num_carry, length=length, reverse=reverse)
    cts = _instantiate(cts, out_avals)
    ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
    body_t = transpose_ir(body, lin_consts + [True] * num_carry + lin_xs)
    res_consts = [c for c, lin in zip(consts, lin_consts, strict=False) if not lin]
    res_xs = [x for x, lin in zip(xs, lin_xs, strict=False) if not lin]
    lin_const_avals = [c.aval for c in consts if isinstance(c, UndefinedPrimal)]
    n_rc, n_lc, n_rx = len(res_consts), len(lin_const_avals), len(res_xs)
    carry_avals = body.in_avals[num_consts:num_consts + num_carry]
    y_avals = [_strong(a) for a in body.out_avals[num_carry:]]
    x_res_avals = [ShapedArray(x.shape[1:], x.dtype) for x in res_xs]

    def transposed_body(*a):
        rc = list(a[:n_rc])
        acc = list(a[n_rc:n_rc + n_lc])
        ct_c = list(a[n_rc + n_lc:n_rc + n_lc + num_carry])
        rx = list(a[n_rc + n_lc + num_carry:n_rc + n_lc + num_carry + n_rx])
        ct_y = list(a[n_rc + n_lc + num_carry + n_rx:])
        outs = eval_ir(body_t, *rc, *rx, *ct_c, *ct_y)
        ct_lc, ct_prev, ct_lx = _split3(outs, n_lc, num_carry)
        return [s + c for s, c in zip(acc, ct_lc, strict=False)] + ct_prev + ct_lx

    t_ir = trace_to_ir(transposed_body,
                       [aval_of(c) for c in res_consts] + lin_const_avals
                       + [_strong(a) for a in carry_avals] + x_res_avals + y_avals,
                       name="scan_transpose")
    t_closed, t_consts = hoist_consts(t_ir)
    zeros = [zeros_for(a) for a in lin_const_avals]
    outs = scan_p.bind(*t_consts, *res_consts, *zeros, *ct_carry, *res_xs, *ct_ys,
                       body=t_closed, num_consts=len(t_consts) + n_rc, num_carry=n_lc + num_carry,
                       length=length, reverse=not reverse)
    ct_lc, ct_init, ct_lx = _split3(outs, n_lc, num_carry)
    it_c, it_x = iter(ct_lc), iter(ct_lx)
    return ([next(it_c) if lin else None for lin in lin_consts]
            + [None if known else ct for ct, known in zip(ct_init, known_init, strict=False)]
            + [next(it_x) if lin else None for lin in lin_xs])


scan_p.impl = _scan_impl
scan_p.abstract_eval = _scan_abstract_eval
scan_p.jvp = _scan_jvp
scan_p.batch = _scan_batch
scan_p.partial_eval = _scan_partial_eval
scan_p.transpose = _scan_transpose
scan_p.linear = True


# =========================================================================================
# while_loop and fori_loop
# =========================================================================================

while_p = Primitive("while_loop", multiple_results=True)


def while_loop(cond_fun, body_fun, init_val):
    """``while cond_fun(val): val = body_fun(val)``; returns the final ``val``.

    Forward-mode differentiable and batchable; reverse mode needs a static trip count
    (use ``fori_loop`` with Python-int bounds, or ``scan``).

    >>> fg.while_loop(lambda x: x < 10, lambda x: x * 2, fg.tensor(1))
    tensor(16, dtype=int32)
    """
    flat, tree = tree_flatten(init_val)
    flat = [as_tensor(x) for x in flat]
    if _eager() and all(type(x) is Tensor for x in flat):
        val = tree_unflatten(tree, flat)  # Python numbers become tensors, as in JAX
        first = True
        while True:
            pred = as_tensor(cond_fun(val))
            if pred.shape != () or pred.dtype != dtypes.bool_:
                raise TypeError(f"while_loop: cond_fun must return a scalar bool, got "
                                f"{pred.dtype.name}{list(pred.shape)}")
            if not bool(pred):
                return val
            new = body_fun(val)
            if first:
                _check_same_type("while_loop", ["init_val", "what body_fun returns"], val, new)
                first = False
            val = new
    flat = [_default_width(x) for x in flat]
    avals = [_strong(x.aval) for x in flat]
    args_tree = tree_flatten((init_val,))[1]
    if any(x.weak_type for x in flat):  # Python-number starts: see scan
        weak_ir, _, _ = _trace_fun(body_fun, args_tree, [x.aval for x in flat], "while_body")
        if len(weak_ir.out_avals) == len(avals):
            avals = _promoted_carry(avals, [x.weak_type for x in flat],
                                    [_strong(a) for a in weak_ir.out_avals]) or avals
    cond_ir, cond_consts, _ = _trace_fun(cond_fun, args_tree, avals, "while_cond")
    (pred_aval,) = cond_ir.out_avals if len(cond_ir.out_avals) == 1 else (None,)
    if pred_aval is None or pred_aval.shape != () or pred_aval.dtype != dtypes.bool_:
        raise TypeError(f"while_loop: cond_fun must return a scalar bool, got "
                        f"{_typestr(cond_ir.out_avals)}")
    body_ir, body_consts, body_tree = _trace_fun(body_fun, args_tree, avals, "while_body")
    if body_tree != tree:
        raise TypeError(f"while_loop: body_fun returns structure {body_tree}, but the loop "
                        f"value has structure {tree}")
    got = [_strong(a) for a in body_ir.out_avals]
    if [(a.shape, a.dtype) for a in got] != [(a.shape, a.dtype) for a in avals]:
        promoted = _promoted_carry(avals, [x.weak_type for x in flat], got)
        if promoted is not None:  # as JAX: Python-number starts take the body's dtype
            avals = promoted
            cond_ir, cond_consts, _ = _trace_fun(cond_fun, args_tree, avals, "while_cond")
            body_ir, body_consts, _ = _trace_fun(body_fun, args_tree, avals, "while_body")
            got = [_strong(a) for a in body_ir.out_avals]
    if [(a.shape, a.dtype) for a in got] != [(a.shape, a.dtype) for a in avals]:
        raise TypeError(f"while_loop: body_fun returns {_typestr(got)} but the loop value has "
                        f"types {_typestr(avals)}")
    init = [
        ew.convert_element_type(x, a.dtype) if x.weak_type else x
        for x, a in zip(flat, avals, strict=False)
    ]
    outs = while_p.bind(*cond_consts, *body_consts, *init, cond_ir=cond_ir, body_ir=body_ir,
                        cond_nconsts=len(cond_consts), body_nconsts=len(body_consts))
    return tree_unflatten(tree, outs)


def _while_impl(*args, cond_ir, body_ir, cond_nconsts, body_nconsts):
    vals = [wrap(a) for a in args]
    cc, bc, carry = _split3(vals, cond_nconsts, body_nconsts)
    while bool(eval_ir(cond_ir, *cc, *carry)[0]):
        carry = eval_ir(body_ir, *bc, *carry)
    return [c._buf for c in carry]


def _while_abstract_eval(*args, cond_ir, body_ir, cond_nconsts, body_nconsts):
    return [_strong(a) for a in body_ir.out_avals]


def _while_jvp(primals, tangents, *, cond_ir, body_ir, cond_nconsts, body_nconsts):
    cc, bc, carry = _split3(list(primals), cond_nconsts, body_nconsts)
    _, bc_t, carry_t = _split3(list(tangents), cond_nconsts, body_nconsts)
    bc_nz = [t is not None for t in bc_t]
    carry_avals = body_ir.out_avals
    carry_nz = [
        t is not None and dtypes.is_inexact(a.dtype)
        for t, a in zip(carry_t, carry_avals, strict=False)
    ]
    while True:
        _, out_nz = jvp_ir(body_ir, bc_nz + carry_nz, instantiate=carry_nz)
        new = [a or b for a, b in zip(carry_nz, out_nz, strict=False)]
        if new == carry_nz:
            break
        carry_nz = new
    body_jvp, _ = jvp_ir(body_ir, bc_nz + carry_nz, instantiate=carry_nz)
    nb, nc = len(bc), len(carry)
    n_bt, n_ct = sum(bc_nz), sum(carry_nz)
    # reorder inputs to (body consts + their tangents, carry + its tangents)
    order = (list(range(nb)) + list(range(nb + nc, nb + nc + n_bt)) + list(range(nb, nb + nc))
             + list(range(nb + nc + n_bt, nb + nc + n_bt + n_ct)))
    new_body = _permute_inputs(body_jvp, order)
    tangent_avals = [_strong(a) for a, nz in zip(carry_avals, carry_nz, strict=False) if nz]
    new_cond = _with_extra_inputs(cond_ir, [], tangent_avals)
    carry_t = [zeros_for(_strong(aval_of(c))) if t is None else t
               for c, t, nz in zip(carry, carry_t, carry_nz, strict=False) if nz]
    outs = while_p.bind(*cc, *bc, *[t for t in bc_t if t is not None], *carry, *carry_t,
                        cond_ir=new_cond, body_ir=new_body, cond_nconsts=cond_nconsts,
                        body_nconsts=nb + n_bt)
    it = iter(outs[nc:])
    return outs[:nc], [next(it) if nz else None for nz in carry_nz]


def _while_batch(axis_size, args, dims, *, cond_ir, body_ir, cond_nconsts, body_nconsts):
    cc_d, bc_d, carry_d = _split3(list(dims), cond_nconsts, body_nconsts)
    cc, bc, carry = _split3(list(args), cond_nconsts, body_nconsts)
    cc_b, bc_b = [d is not None for d in cc_d], [d is not None for d in bc_d]
    carry_b = [d is not None for d in carry_d]
    while True:
        _, out_b = batch_ir(body_ir, axis_size, bc_b + carry_b, instantiate=carry_b)
        _, (pred_b,) = batch_ir(cond_ir, axis_size, cc_b + carry_b, instantiate=False)
        new = [a or b for a, b in zip(carry_b, out_b, strict=False)]
        if pred_b:
            new = [True] * len(new)
        if new == carry_b:
            break
        carry_b = new
    new_body, _ = batch_ir(body_ir, axis_size, bc_b + carry_b, instantiate=carry_b)
    new_cond, (pred_b,) = batch_ir(cond_ir, axis_size, cc_b + carry_b, instantiate=False)
    cc = [
        _to_front(c, d, axis_size) if d is not None else c for c, d in zip(cc, cc_d, strict=False)
    ]
    bc = [
        _to_front(c, d, axis_size) if d is not None else c for c, d in zip(bc, bc_d, strict=False)
    ]
    carry = [
        _to_front(c, d, axis_size) if b else c
        for c, d, b in zip(carry, carry_d, carry_b, strict=False)
    ]
    if not pred_b:
        outs = while_p.bind(*cc, *bc, *carry, cond_ir=new_cond, body_ir=new_body,
                            cond_nconsts=len(cc), body_nconsts=len(bc))
        return outs, [0 if b else None for b in carry_b]
    # lanes finish at different times: loop while any lane runs, freeze finished lanes
    n_cc, n_bc = len(cc), len(bc)
    carry_avals = [aval_of(c) for c in carry]

    def any_lane(*a):
        return [reduce_or(eval_ir(new_cond, *a)[0], (0,))]

    def step(*a):
        c_consts, b_consts, vals = list(a[:n_cc]), list(a[n_cc:n_cc + n_bc]), list(a[n_cc + n_bc:])
        running = eval_ir(new_cond, *c_consts, *vals)[0]
        new_vals = eval_ir(new_body, *b_consts, *vals)
        return [ew.select_n(broadcast_in_dim(running, v.shape, (0,)), v, nv)
                for v, nv in zip(vals, new_vals, strict=False)]

    cond2, cond2_consts = hoist_consts(trace_to_ir(any_lane, [aval_of(c) for c in cc]
                                                   + carry_avals, name="while_cond"))
    body2, body2_consts = hoist_consts(trace_to_ir(step, [aval_of(c) for c in cc]
                                                   + [aval_of(c) for c in bc] + carry_avals,
                                                   name="while_body"))
    outs = while_p.bind(*cond2_consts, *cc, *body2_consts, *cc, *bc, *carry, cond_ir=cond2,
                        body_ir=body2, cond_nconsts=len(cond2_consts) + n_cc,
                        body_nconsts=len(body2_consts) + n_cc + n_bc)
    return outs, [0] * len(outs)


def _while_partial_eval(trace, args, params):
    cond_n, body_n = params["cond_nconsts"], params["body_nconsts"]
    _, bc, carry = _split3(list(args), cond_n, body_n)
    bc_uk = [trace.is_own(c) for c in bc]
    carry_uk = [trace.is_own(c) for c in carry]
    body_ir = params["body_ir"]
    while True:
        out_uk = partial_eval_ir(body_ir, bc_uk + carry_uk, instantiate=carry_uk)[2]
        new = [a or b for a, b in zip(carry_uk, out_uk, strict=False)]
        if new == carry_uk:
            break
        carry_uk = new
    if any(carry_uk) or any(trace.is_own(c) for c in args[:cond_n]):
        raise NoReverseModeError(
            "Reverse-mode differentiation does not work for fg.while_loop: its trip count is "
            "not known in advance. Use fg.fori_loop with Python-int bounds or fg.scan (which "
            "support grad), or forward mode (jvp/jacfwd).")
    with _interp.using(trace.parent):
        return while_p.bind(*args, **params)


while_p.impl = _while_impl
while_p.abstract_eval = _while_abstract_eval
while_p.jvp = _while_jvp
while_p.batch = _while_batch
while_p.partial_eval = _while_partial_eval


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """``for i in range(lower, upper): val = body_fun(i, val)``; returns ``val``.

    With Python-int bounds it is a ``scan`` (reverse-mode differentiable); with traced
    bounds a ``while_loop``.  ``unroll`` is accepted as in JAX and, as ``scan``'s, left to
    the compiler, which unrolls small loop bodies by itself.

    >>> fg.fori_loop(0, 5, lambda i, total: total + i, fg.tensor(0))
    tensor(10, dtype=int32)
    """
    static = all(isinstance(b, (int, np.integer)) or (type(b) is Tensor and b.ndim == 0)
                 for b in (lower, upper))
    # the index has the bounds' promoted dtype, as JAX: int32 for Python ints, int64 for
    # int64 bounds (an int64 carry set from i was refused against an int32 index)
    index_dtype = dtypes.result_type(lower, upper)
    if not dtypes.is_integer(index_dtype) or index_dtype == dtypes.bool_:
        raise TypeError(f"fori_loop: lower and upper must be integers, got "
                        f"{index_dtype.name}")
    if static:
        lo, hi = int(lower), int(upper)
        init_flat, init_tree = tree_flatten(init_val)
        init_flat = [as_tensor(x) for x in init_flat]
        if _eager() and all(type(x) is Tensor for x in init_flat):
            val = tree_unflatten(init_tree, init_flat)  # Python numbers become tensors
            for i in range(lo, hi):
                new = body_fun(wrap(np.asarray(i, index_dtype)), val)
                if i == lo:
                    _check_same_type("fori_loop", ["init_val", "what body_fun returns"], val,
                                     new)
                val = new
            return val

        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None

        (_, val), _ = scan(step, (wrap(np.asarray(lo, index_dtype)), init_val), None,
                           length=max(hi - lo, 0))
        return val
    lower_t = ew.convert_element_type(as_tensor(lower), index_dtype)
    upper_t = ew.convert_element_type(as_tensor(upper), index_dtype)

    def cond_fun(carry):
        return carry[0] < carry[1]

    def body(carry):
        i, hi, val = carry
        return i + 1, hi, body_fun(i, val)

    return while_loop(cond_fun, body, (lower_t, upper_t, init_val))[2]


# =========================================================================================
# MLIR lowering: stablehlo.case and stablehlo.while
# =========================================================================================


# branches whose every operation writes at most this many elements are lowered by
# evaluating all of them and selecting (see _lower_cond)
_SELECT_BRANCH_WORK = 1 << 16
def _selectable(branches) -> bool:
    """Whether cond branches are small straight-line code: no loops, conds, calls or
    effects, no operation larger than _SELECT_BRANCH_WORK elements."""
    for branch in branches:
        for eqn in branch.equations:
            if subprograms(eqn) or eqn.prim.effectful:
                return False
            if any(o.aval.size > _SELECT_BRANCH_WORK for o in eqn.outputs):
                return False
    return True


def _lower_cond(ctx, args, in_avals, out_avals, *, branches):
    """Small straight-line branches: all are evaluated and the results selected by index.
    IREE 3.13 mis-schedules the buffers of stablehlo.case in loops (a branch returning a
    carried value or a constant fails at run time with "indirect buffer reference ... out
    of range", or the loop never ends, as jit(grad) of a scan holding a cond did), and a
    select of a few small values costs less than a case anyway.

    Other branches: a stablehlo.case, each branch returning its values through an
    optimization barrier (without it the same mis-scheduling hit the zoom line search of
    funcgrad/optim/lbfgs.py outside loops: "ref is null" in hal.buffer_view.create)."""
    from funcgrad.lowering import rules

    index, operands = args[0], args[1:]
    if _selectable(branches):
        return _select_branches(ctx, index, in_avals[0], list(operands), branches,
                                out_avals)
    op = ctx.op("stablehlo.case", [index], out_avals, regions=len(branches))
    result_avals = [a.strip_weak() for a in out_avals]
    for region, branch in zip(op.regions, branches, strict=False):
        block = region.blocks.append()
        with ctx.ir.InsertionPoint(block):
            outs = ctx.lower_ir(branch, list(operands))
            for k in _repeated(ctx, outs):  # IREE 3.13: one buffer for both (OUT_OF_RANGE)
                outs[k] = rules.fresh_copy(ctx, outs[k], result_avals[k], tag=k)
            if outs:
                outs = ctx.op("stablehlo.optimization_barrier", outs, result_avals)
            ctx.op("stablehlo.return", outs, [])
    return list(op.results)


def _repeated(ctx, values) -> list[int]:
    """The positions of ``values`` equal to (or CSE-mergeable with) an earlier one, however
    deep the computation they repeat (the double-double cos of a custom_jvp applied twice
    to one operand: a branch returned its two residuals in one buffer, "ref is null")."""
    from funcgrad.lowering import rules

    return [k for k, value in enumerate(values)
            if any(rules.same_value(ctx, value, other, depth=None) for other in values[:k])]


def _select_branches(ctx, index, index_aval, operands, branches, out_avals):
    from funcgrad.lowering import rules

    results = ctx.lower_ir(branches[0], operands)
    for k, branch in enumerate(branches[1:], 1):
        outs = ctx.lower_ir(branch, operands)
        chosen = rules.compare(ctx, index, ctx.full(k, index_aval), index_aval, "EQ")
        # rules.select: a branch returning what the others do is no select (IREE folds
        # it, and the loop rules must see the carry handed on: random-program seed 10267)
        results = [rules.select(ctx, chosen, new, old, aval.strip_weak())
                   for new, old, aval in zip(outs, results, out_avals, strict=True)]
    if results:
        # a fusion boundary: IREE 3.13 otherwise fuses a chain of many selected conds
        # into one dispatch with more buffer bindings than its limit of 32
        results = ctx.op("stablehlo.optimization_barrier", results,
                         [a.strip_weak() for a in out_avals])
    return results


def _aliased_yields(ctx, outs, body_block) -> list[tuple[int, bool]]:
    """(position, loop-invariant) where a loop body hands on a value that another carry
    also gets (or one IREE's CSE would merge with it), another carry's argument, or a
    loop-invariant value (IREE 3.13 fails to compile these: "'scf.while' op ... region
    branch point has N operands, but region successor needs N+2 inputs").  Of a value
    several carries get, the carry whose buffer it updates in place keeps it."""
    from funcgrad.lowering import rules

    invariant = _loop_invariant(ctx, body_block, outs)
    found = []
    for k, value in enumerate(outs):
        behind = rules.argument_behind(ctx, value, body_block)
        if behind == k:
            continue  # handed on unchanged
        if value in invariant:
            found.append((k, True))
            continue
        if behind is not None:
            found.append((k, False))
            continue
        group = [j for j, other in enumerate(outs)
                 if j == k or rules.same_value(ctx, value, other)]
        if len(group) > 1:
            keeper = next((j for j in group
                           if rules.updated_argument(ctx, outs[j], body_block) == j), group[0])
            if k != keeper:
                found.append((k, False))
    return found


def _varying(ctx, value, argument, aval):
    """``value`` made to look loop-varying: selected over the carry's ``argument`` by a
    true that optimization cannot see through (a copy of a loop-invariant value would be
    hoisted out of the loop, and IREE would fold the carry again)."""
    (true,) = ctx.op("stablehlo.optimization_barrier", [ctx.constant(np.bool_(True))],
                     [ShapedArray((), dtypes.bool_)])
    if aval.shape:
        true = ctx.op1("stablehlo.broadcast_in_dim", [true], aval.update(dtype=dtypes.bool_),
                       {"broadcast_dimensions": ctx.i64_array([])})
    return ctx.op1("stablehlo.select", [true, value, argument], aval)


def _loop_invariant(ctx, body_block, outs) -> set:
    """The values of the loop body ``body_block`` (results of its operations, and the
    arguments of carries handed on unchanged) that are the same in every iteration; values
    defined outside the loop are tested by _outside instead."""
    from funcgrad.lowering import rules

    invariant = {arg for k, arg in enumerate(body_block.arguments)
                 if rules.argument_behind(ctx, outs[k], body_block) == k}

    def fixed(value):
        v = value.maybe_downcast()
        if isinstance(v, ctx.ir.BlockArgument):
            return v in invariant
        return value in invariant or _outside(ctx, v, body_block)

    for operation in body_block.operations:
        if operation.name == "stablehlo.optimization_barrier":  # position by position
            invariant.update(r for x, r in zip(operation.operands, operation.results,
                                               strict=True) if fixed(x))
        elif not len(operation.regions) and all(fixed(x) for x in operation.operands):
            invariant.update(operation.results)
    return invariant | {value for value in outs
                        if not isinstance(value.maybe_downcast(), ctx.ir.BlockArgument)
                        and not _inside(value.owner, body_block)}


def _outside(ctx, value, block) -> bool:
    """Whether ``value`` is defined outside ``block`` and the regions nested there (an
    operation's result, or an argument of another block)."""
    value = value.maybe_downcast()
    if isinstance(value, ctx.ir.BlockArgument):
        return value.owner != block and not _inside(value.owner.owner, block)
    return not _inside(value.owner, block)


def _inside(operation, block) -> bool:
    """Whether ``operation`` is in ``block`` (also in regions nested there)."""
    operation = operation.operation
    while operation is not None:
        if operation.block == block:
            return True
        # .parent, not .block.owner: a module's .block is not None, and its owner loops
        parent = operation.parent
        operation = parent.operation if parent is not None else None
    return False


def _read_arguments(ctx, body_block, outs) -> set:
    """The arguments of the loop body ``body_block`` that its yields ``outs`` (or an
    operation with effects) depend on.  An argument read only by dead operations counts as
    ignored: IREE drops those first (``where(p, c, c)`` of a carry's predicate ``p =
    sum(c3) > 0``: the select folds, the sum is dead, and IREE crashed converting the
    loop; random-program sweep seed 9478)."""
    live_ops, pending = set(), list(outs)
    for operation in body_block.operations:
        if not len(operation.results) or operation.name in _EFFECT_OPS:
            pending.extend(operation.operands)
            live_ops.add(operation)
    read = set()
    while pending:
        value = pending.pop().maybe_downcast()
        if isinstance(value, ctx.ir.BlockArgument):
            read.add(value)
            continue
        operation = value.owner
        if operation in live_ops:
            continue
        live_ops.add(operation)
        pending.extend(_operands_within(operation))  # with what nested regions read
    return read


def _operands_within(operation) -> list:
    """The operands of ``operation`` and of every operation nested in its regions."""
    found = list(operation.operands)
    for region in operation.regions:
        for block in region.blocks:
            for nested in block.operations:
                found.extend(_operands_within(nested))
    return found


# operations kept for their effects although nothing reads their results
_EFFECT_OPS = frozenset({"stablehlo.custom_call", "func.call", "stablehlo.outfeed"})


def _counted(cond_block) -> bool:
    """Whether a loop's condition reads one carry at most (a counter: fori_loop, scan).
    Such loops need no select for a yield that is another carry's unchanging argument
    (a closed-over x the loop carries): with it, IREE 3.13 failed at run time ("indirect
    buffer reference ... out of range": a scan handing x to two carries, test_a_scan_
    handing_a_closed_over_value_to_two_carries); a loop with a data-dependent condition
    fails to compile without it, and a counted loop whose carry takes a value computed
    from loop-invariant ones (a cond of constants) failed at run time without it (test_a_
    scan_resetting_its_carry_to_a_cond_of_constants)."""
    return sum(1 for argument in cond_block.arguments if any(True for _ in argument.uses)) <= 1


def _while_loop_op(ctx, init, init_avals, cond_fn, body_fn):
    """A stablehlo.while over ``init``; ``cond_fn(values) -> pred``, ``body_fn(values) ->
    new values`` emit their ops inside the regions.  Around IREE 3.13's bugs with loop
    carries: values the body hands to several carries or that do not change are copied
    (_aliased_yields), slices read from in-place-updated carries are materialized
    (rules.isolate_reads), updates of unchanging carries work on copies
    (rules.copy_before_updates) and in-place-updated carries start from buffers of their
    own (below).
    """
    op = ctx.op("stablehlo.while", init, init_avals, regions=2)
    cond_block = ctx.block(op.regions[0], init_avals)
    with ctx.ir.InsertionPoint(cond_block):
        ctx.op("stablehlo.return", [cond_fn(list(cond_block.arguments))], [])
    from funcgrad.lowering import rules

    body_block = ctx.block(op.regions[1], init_avals)
    with ctx.ir.InsertionPoint(body_block):
        outs = body_fn(list(body_block.arguments))
        selected = set()  # carries whose yield is selected over their argument (_varying)
        copied = set()  # carries whose yield is a copy of another carry's value
        counted = _counted(cond_block)
        for k, invariant in _aliased_yields(ctx, outs, body_block):
            if invariant and counted and \
                    rules.argument_behind(ctx, outs[k], body_block) is not None:
                continue  # another carry's unchanging argument: no select (_counted)
            (selected if invariant else copied).add(k)
            outs[k] = _varying(ctx, outs[k], body_block.arguments[k], init_avals[k]) \
                if invariant else rules.fresh_copy(ctx, outs[k], init_avals[k], tag=k)
        # IREE 3.13 also miscompiles a body that ignores a carried value (the zoom line
        # search of optim.lbfgs: "region branch point has 26 operands, but region successor
        # needs 28 inputs"): each such value is made to count
        read = _read_arguments(ctx, body_block, outs)
        for k, argument in enumerate(body_block.arguments):
            if argument not in read and rules.argument_behind(ctx, outs[k], body_block) != k:
                outs[k] = _varying(ctx, outs[k], argument, init_avals[k])
                selected.add(k)
        ctx.op("stablehlo.return", outs, [])
    handed_on = {k for k, value in enumerate(outs)
                 if rules.argument_behind(ctx, value, body_block) == k}
    invariant = _loop_invariant(ctx, body_block, outs)

    rules.copy_before_updates(  # before updates of values the same in every iteration
        ctx, body_block, handed_on,
        lambda value: value.maybe_downcast() in invariant or _outside(ctx, value, body_block))

    # A carry starts from a copy of its own when its initial value
    # - is a function argument's buffer and the carry is updated in place (IREE would
    #   update the caller's memory: rules.may_alias_argument), or its yield is replaced by
    #   a select or a copy (_aliased_yields): jvp(jit) of a while_loop resetting carries
    #   that start from x and its tangent failed at run time ("indirect buffer reference
    #   ... out of range", test_jvp_of_a_loop_resetting_carries_that_start_from_the_
    #   arguments);
    # - is (or IREE's CSE would make it) the initial value of another carry: IREE 3.13 then
    #   shares one buffer between them.  jit(grad) of a scan of xs=a with carry a[0], or of
    #   a fori_loop carrying (a, a), gave wrong gradients (two zero-filled outputs); loops
    #   swapping carries that start alike, or reading a closed-over x next to carries
    #   starting from x, failed at run time ("indirect buffer reference ... out of range");
    #   two recomputed carries starting from x failed to compile ("'!stream.resource<
    #   constant>' should match '<external>'").  Carries recomputed every step get such
    #   a copy only in loops at the function's top level, constant starts included
    #   unless 0-d: two cotangent carries of a reverse scan starting from one zero constant
    #   failed at run time (test_jit_grad_of_a_reverse_scan_holding_a_fori_loop), and so
    #   did a copied loop counter starting from 0 like another integer carry (test_jit_
    #   grad_of_a_one_step_fori_loop_scattering_into_a_carry).  In the sixteenth session's
    #   code test_grad_of_nested_scans_around_a_fori_loop_of_a_closed_over_value passes
    #   with these copies (copying constant starts once broke its compile); copying the
    #   start of carries handed on unchanged made grad(jit) of a reverse scan holding a
    #   fori_loop fail at run time.  Copies padded like a scatter's operand once made
    #   this rule give wrong gradients (test_grad_of_a_loop_resetting_a_carry_it_scatters_
    #   into; fresh_copy pads by 2 + tag since).
    updated = rules.updated_in_place(ctx, body_block)
    rules.isolate_reads(ctx, body_block, updated)
    rules.isolate_constant_updates(ctx, body_block, updated)
    with ctx.ir.InsertionPoint(op):
        copies = 0
        marked = updated | selected | copied
        nested = op.operation.parent.name != "func.func"
        for k in range(len(init)):
            if k not in marked and (k in handed_on or nested or (
                    not init_avals[k].shape and rules.from_constant(init[k]))):
                continue
            shared = any(rules.same_value(ctx, init[k], op.operands[j])
                         for j in range(len(init)) if j != k)
            if shared or (k in marked and rules.may_alias_argument(ctx, init[k])):
                op.operands[k] = rules.fresh_copy(ctx, init[k], init_avals[k], tag=copies)
                copies += 1
        # A carry handed on unchanged whose start other operations outside also use goes
        # behind a barrier: IREE 3.13 forwards the start into the loop, merges an
        # operation on it inside (-k) with the same one outside and then fails to compile
        # the loop ("failed to legalize operation 'stablehlo.multiply'": jit(grad) of a
        # scan of [y[1], -k * y[0]] with k = a[0])
        for k in handed_on:
            start = op.operands[k]
            if any(use.owner != op.operation for use in start.uses):
                (op.operands[k],) = ctx.op("stablehlo.optimization_barrier", [start],
                                           [init_avals[k]])
    return list(op.results)


def _lower_while(ctx, args, in_avals, out_avals, *, cond_ir, body_ir, cond_nconsts,
                 body_nconsts):
    n_consts = cond_nconsts + body_nconsts

    def cond_fn(values):
        cc, carry = values[:cond_nconsts], values[n_consts:]
        return ctx.lower_ir(cond_ir, cc + carry)[0]

    def body_fn(values):
        bc, carry = values[cond_nconsts:n_consts], values[n_consts:]
        return values[:n_consts] + ctx.lower_ir(body_ir, bc + carry)

    outs = _while_loop_op(ctx, list(args), [a.strip_weak() for a in in_avals], cond_fn, body_fn)
    return outs[n_consts:]


# IREE runs a while loop on the host, paying a dispatch and buffer allocations per
# iteration (DESIGN.md: about 3.4 us); doing several scan steps per iteration divides that.
# Small bodies are unrolled more, within a budget of inlined operations per iteration.
_SCAN_MAX_UNROLL = 64
_SCAN_UNROLL_BUDGET = 512


def _inlined_size(program: IR) -> int:
    """Operations ``program`` puts in one loop iteration: a cond lowered as a select
    (``_selectable``) inlines every branch.  Counting it as one operation unrolled the
    20-step zoom line search of optim.lbfgs 20 times (2,000 selects, 22 s to compile)."""
    size = 0
    for eqn in program.equations:
        branches = eqn.params.get("branches") if eqn.prim is cond_p else None
        if branches is not None and _selectable(branches):
            size += sum(_inlined_size(branch) for branch in branches)
        else:
            size += 1
    return size


def _unroll_factor(length: int, body: IR, emitted: int) -> int:
    """Scan steps per loop iteration; ``emitted``: the MLIR operations one step lowered to
    (a float64 sin is one equation but a hundred operations: counted as one, 50 unrolled
    steps of a scan of sin took a minute to compile)."""
    if any(eqn.prim is cond_p and not _selectable(eqn.params["branches"])
           for eqn in body.equations):
        # IREE 3.13 fails to compile (stream "failed to solve for usage analysis") or to
        # run a long chain of stablehlo.case ops in one loop iteration: one step each
        # (small conds are selects, see _lower_cond, and unroll like any operation)
        return 1
    size = max(_inlined_size(body), emitted // _OPERATIONS_PER_EQUATION, 1)
    limit = max(1, min(_SCAN_MAX_UNROLL, _SCAN_UNROLL_BUDGET // size, max(length, 1)))
    return max(u for u in range(1, limit + 1) if length % u == 0)


# a typical equation lowers to a few MLIR operations (its constants, broadcasts)
_OPERATIONS_PER_EQUATION = 4


def _operation_count(operations) -> int:
    """The operations in ``operations`` and in their regions."""
    return sum(1 + sum(_operation_count(block.operations) for region in op.regions
                       for block in region.blocks)
               for op in operations)


def _lower_scan(ctx, args, in_avals, out_avals, *, body, num_consts, num_carry, length,
                reverse):
    from funcgrad.lowering import fused_scan, rules

    if length == 0:  # no step runs: the carry as it came, per-step outputs of no rows
        return list(args[num_consts:num_consts + num_carry]) + [
            ctx.full(0, a.strip_weak()) for a in out_avals[num_carry:]]
    scan_plan = fused_scan.plan(ctx, body, num_consts, num_carry, length, in_avals, out_avals)
    if scan_plan is not None:
        return fused_scan.lower(ctx, args, in_avals, out_avals, body=body,
                                num_consts=num_consts, num_carry=num_carry, length=length,
                                reverse=reverse, scan_plan=scan_plan)

    i32 = ShapedArray((), dtypes.int32)
    consts, carry, xs = _split3(list(args), num_consts, num_carry)
    x_avals = [a.strip_weak() for a in in_avals[num_consts + num_carry:]]
    # per-step outputs that depend on neither the carry nor xs (constants, residuals of
    # constants saved by differentiation) are computed once and broadcast: less work, and
    # IREE 3.13 miscompiles a reverse loop writing a constant into its rows (an invalid
    # stream.async.fill range)
    fixed = _fixed_inputs(body, num_consts, num_carry)
    invariant = _invariant_outputs(body, fixed, range(num_carry, len(body.outputs)))
    invariant_ys = {}
    if invariant:
        hoisted = ctx.lower_ir(_needed_for(body, [body.outputs[j] for j in invariant], fixed),
                               [args[i] for i in fixed])
        for j, value in zip(invariant, hoisted, strict=True):
            a = out_avals[j]
            invariant_ys[j] = ctx.op1("stablehlo.broadcast_in_dim", [value], a, {
                "broadcast_dimensions": ctx.i64_array(range(1, a.ndim))})
    varying = [j for j in range(num_carry, len(body.outputs)) if j not in invariant_ys]
    y_avals = [out_avals[j] for j in varying]
    ys = [ctx.full(0, a) for a in y_avals]
    init = [ctx.constant(np.int32(0))] + consts + carry + xs + ys
    init_avals = ([i32] + [a.strip_weak() for a in in_avals] + list(y_avals))
    n_c, n_x = num_consts + num_carry, len(xs)

    def step_index(i, k):
        # time step of the k-th unrolled step of the iteration starting at step i
        t = ctx.op1("stablehlo.add", [i, ctx.constant(np.int32(k))], i32) if k else i
        if not reverse:
            return t
        return ctx.op1("stablehlo.subtract", [ctx.constant(np.int32(length - 1)), t], i32)

    def cond_fn(values):
        return rules.compare(ctx, values[0], ctx.constant(np.int32(length)), i32, "LT")

    def body_fn(values):
        i = values[0]
        c, carry_v = values[1:1 + num_consts], values[1 + num_consts:1 + n_c]
        xs_v = values[1 + n_c:1 + n_c + n_x]
        ys_v = values[1 + n_c + n_x:]
        zero = ctx.constant(np.int32(0))
        block = ctx.ir.InsertionPoint.current.block
        before = _operation_count(block.operations)
        k, unroll = 0, 1
        while k < unroll:
            t = step_index(i, k)
            x_t = []
            for x, a in zip(xs_v, x_avals, strict=False):
                piece = ctx.op1("stablehlo.dynamic_slice", [x, t] + [zero] * (a.ndim - 1),
                                ShapedArray((1, *a.shape[1:]), a.dtype),
                                {"slice_sizes": ctx.i64_array((1, *a.shape[1:]))})
                x_t.append(ctx.op1("stablehlo.reshape", [piece],
                                   ShapedArray(a.shape[1:], a.dtype)))
            outs = ctx.lower_ir(body, c + carry_v + x_t)
            carry_v, y_t = outs[:num_carry], [outs[j] for j in varying]
            new_ys = []
            for acc, y, a in zip(ys_v, y_t, y_avals, strict=False):
                y1 = ctx.op1("stablehlo.reshape", [y], ShapedArray((1, *a.shape[1:]), a.dtype))
                new_ys.append(ctx.op1("stablehlo.dynamic_update_slice",
                                      [acc, y1, t] + [zero] * (a.ndim - 1), a))
            ys_v = new_ys
            if k == 0:  # one step lowered: how many fit in an iteration
                unroll = _unroll_factor(length, body,
                                        _operation_count(block.operations) - before)
            k += 1
        step = ctx.constant(np.int32(unroll))
        return [ctx.op1("stablehlo.add", [i, step], i32)] + c + carry_v + xs_v + ys_v

    outs = _while_loop_op(ctx, init, init_avals, cond_fn, body_fn)
    loop_ys = dict(zip(varying, outs[1 + n_c + n_x:], strict=True))
    return outs[1 + num_consts:1 + n_c] + [
        invariant_ys[j] if j in invariant_ys else loop_ys[j]
        for j in range(num_carry, len(body.outputs))]


def _fixed_inputs(body: IR, num_consts: int, num_carry: int) -> list[int]:
    """The positions of the scan body's inputs that are the same at every step: the
    constants, and carries the body passes on unchanged (the backward scan of an additive
    step carries its cotangent through)."""
    passed_on = [num_consts + j for j in range(num_carry)
                 if body.outputs[j] is body.in_vars[num_consts + j]]
    return list(range(num_consts)) + passed_on


def _invariant_outputs(body: IR, fixed, positions) -> list[int]:
    """The output positions among ``positions`` whose values depend only on the body's
    inputs at ``fixed`` positions and literals."""
    kept = {body.in_vars[i] for i in fixed}
    varying = {v for v in body.in_vars if v not in kept}
    for eqn in body.equations:
        if any(isinstance(x, Var) and x in varying for x in eqn.inputs):
            varying.update(eqn.outputs)
    return [j for j in positions
            if not (isinstance(body.outputs[j], Var) and body.outputs[j] in varying)]


def _needed_for(body: IR, outputs, fixed) -> IR:
    """``body`` cut down to the equations ``outputs`` need, taking only the inputs at
    ``fixed`` positions."""
    needed = {o for o in outputs if isinstance(o, Var)}
    kept = []
    for eqn in reversed(body.equations):
        if any(v in needed for v in eqn.outputs):
            kept.append(eqn)
            needed.update(x for x in eqn.inputs if isinstance(x, Var))
    return IR([body.in_vars[i] for i in fixed], kept[::-1], outputs, body.const_vars,
              body.consts)


cond_p.lower = _lower_cond
while_p.lower = _lower_while
scan_p.lower = _lower_scan
