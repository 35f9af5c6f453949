"""Automatic differentiation: forward mode from JVP rules, reverse mode as linearize +
transpose.

``jvp`` runs the function under a ``JVPInterpreter`` whose tracers carry a primal and a
tangent; each primitive's JVP rule computes both.  ``linearize`` runs the same JVP with a
partial evaluator underneath: primal work happens now, tangent work is recorded as a
linear IR.  ``vjp`` transposes that IR (each linear primitive's transpose rule, walking
the equations backwards).  ``grad``, ``jacfwd``, ``jacrev`` and ``hessian`` are built on
those, so every combination with ``vmap`` and with themselves composes.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import optree

from funcgrad.core import dtypes
from funcgrad.core import interpreter as _interp
from funcgrad.core.abstract import ShapedArray, aval_of
from funcgrad.core.interpreter import Interpreter, Tracer
from funcgrad.core.ir import IR, Literal, eval_ir
from funcgrad.core.primitive import UndefinedPrimal
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims.structural import full
from funcgrad.core.tensor import Tensor
from funcgrad.transforms.tracing import TraceInterpreter, check_callable, check_not_leaked

_NS = "funcgrad"


def tree_flatten(tree):
    return optree.tree_flatten(tree, namespace=_NS)


def tree_unflatten(treedef, leaves):
    return optree.tree_unflatten(treedef, leaves)


def as_tensor(x) -> Tensor:
    """Arguments of transformed functions: Tensors pass, scalars and arrays convert."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float, complex)):
        dtype, weak = dtypes.dtype_and_weak(x)
        from funcgrad.core.tensor import wrap

        return wrap(np.asarray(x, dtype), weak)
    from funcgrad.core.tensor import tensor

    return tensor(x)


def is_differentiable(aval: ShapedArray) -> bool:
    return dtypes.is_inexact(aval.dtype)


def zeros_for(aval: ShapedArray):
    return full(aval.shape, 0, aval.dtype)


def add_tangents(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


# --- forward mode --------------------------------------------------------------------------


class JVPTracer(Tracer):
    """A value with its tangent, inside ``jvp``."""

    __slots__ = ("primal", "tangent", "_aval")

    def __init__(self, interp, primal, tangent):
        self._interp = interp
        self.primal = primal
        self.tangent = tangent
        self._aval = aval_of(primal)

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    @property
    def device(self):
        return _interp.device_of(self.primal)  # where the (maybe traced) primal is


class JVPInterpreter(Interpreter):
    """Runs each primitive's JVP rule on (primal, tangent) pairs."""

    name = "jvp"

    def process(self, prim, args, params):
        primals, tangents, own = [], [], False
        for a in args:
            if isinstance(a, JVPTracer) and a._interp is self:
                primals.append(a.primal)
                tangents.append(a.tangent)
                own = True
            else:
                check_not_leaked(a)
                primals.append(a)
                tangents.append(None)
        if not own:
            return self.forward(prim, args, params)
        if prim.jvp is None:
            raise NotImplementedError(f"differentiation rule for '{prim.name}' not implemented")
        with _interp.using(self.parent):
            out, out_tangent = prim.jvp(primals, tangents, **params)
        if prim.multiple_results:
            return [self.lift(o, t) for o, t in zip(out, out_tangent, strict=False)]
        return self.lift(out, out_tangent)

    def lift(self, primal, tangent):
        return primal if tangent is None else JVPTracer(self, primal, tangent)

    def unpack(self, x):
        """(primal, tangent or None) of an output value."""
        if isinstance(x, JVPTracer) and x._interp is self:
            return x.primal, x.tangent
        check_not_leaked(x)
        return x, None


def _jvp_flat(fun, primals, tangents):
    """``fun`` on flat lists: returns (primal outs, tangent outs with None for zeros)."""
    interp = JVPInterpreter(_interp.current())
    try:
        with _interp.using(interp):
            ins = [interp.lift(p, t) for p, t in zip(primals, tangents, strict=False)]
            outs = fun(*ins)
        pairs = [interp.unpack(o) for o in outs]
    finally:
        interp.active = False
    return [p for p, _ in pairs], [t for _, t in pairs]


def _flatten_fun(fun, in_tree, has_aux=False):
    """Wrap a pytree function as flat-in/flat-out; the output tree lands in ``store``."""
    store = {}

    def flat_fun(*flat_args):
        out = fun(*tree_unflatten(in_tree, list(flat_args)))
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                got = f"a tensor of shape {out.shape}" if isinstance(out, Tensor) else \
                    f"a {type(out).__name__} of {len(out)}" if isinstance(out, tuple) else \
                    type(out).__name__
                raise TypeError("has_aux=True needs the function to return a pair "
                                f"(output, aux), got {got}")
            out, aux = out
            store["aux"] = _strip_tangents(aux)
        leaves, store["tree"] = tree_flatten(out)
        return [as_tensor(leaf) for leaf in leaves]

    return flat_fun, store


def _strip_tangents(aux):
    """Auxiliary outputs are not differentiated: drop the running JVP's tangents from them,
    so they leave the transformation as plain values (of the enclosing level)."""
    interp = _interp.current()
    if not isinstance(interp, JVPInterpreter):
        return aux
    return optree.tree_map(lambda x: interp.unpack(x)[0] if isinstance(x, Tracer) else x, aux,
                           namespace=_NS)


def jvp(fun, primals, tangents, has_aux: bool = False):
    """Forward-mode derivative: ``(fun(*primals), J(primals) @ tangents)``.

    ``primals`` and ``tangents`` are tuples of pytrees with matching structure.

    >>> fg.jvp(fnp.sin, (fg.tensor(0.0),), (fg.tensor(1.0),))
    (tensor(0., dtype=float32), tensor(1., dtype=float32))
    """
    check_callable("jvp", fun)
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples (one entry per argument)")
    flat_p, tree_p = tree_flatten(tuple(primals))
    flat_t, tree_t = tree_flatten(tuple(tangents))
    if tree_p != tree_t:
        raise ValueError(f"jvp: primals and tangents differ in structure: {tree_p} vs {tree_t}")
    flat_p = [as_tensor(p) for p in flat_p]
    checked = [_checked_like("jvp", "tangent", "primal", t, p.aval)
               for p, t in zip(flat_p, flat_t, strict=False)]
    flat_fun, store = _flatten_fun(fun, tree_p, has_aux)
    outs, out_tangents = _jvp_flat(flat_fun, flat_p, checked)
    out_tangents = [zeros_for(aval_of(o)) if t is None else t
                    for o, t in zip(outs, out_tangents, strict=False)]
    primal_out = tree_unflatten(store["tree"], outs)
    tangent_out = tree_unflatten(store["tree"], out_tangents)
    if has_aux:
        return primal_out, tangent_out, store["aux"]
    return primal_out, tangent_out


def _checked_like(name: str, what: str, of: str, value, aval):
    """A tangent or cotangent ``value`` for a value of ``aval``: the same shape and (for a
    differentiable value) the same dtype, as JAX asks (a weak Python scalar is converted);
    None for a non-differentiable (integer) value, whose derivative is always zero."""
    value = as_tensor(value)
    if value.shape != aval.shape:
        raise ValueError(f"{name}: {what} shape {value.shape} differs from {of} shape "
                         f"{aval.shape}")
    if not is_differentiable(aval):
        return None
    if value.dtype != aval.dtype and not value.weak_type:
        raise TypeError(f"{name}: {of} and {what} dtypes must be equal (as JAX): {of} "
                        f"{aval.dtype.name}{list(aval.shape)}, {what} "
                        f"{value.dtype.name}{list(value.shape)}; convert the {what} with "
                        f".astype({aval.dtype.name})")
    return value if value.dtype == aval.dtype else value.astype(aval.dtype)


# --- linearize and transpose ------------------------------------------------------------------


def _linearize_flat(fun, primals):
    """Primal outputs now, and the linear IR from input tangents to output tangents.

    Non-differentiable (integer) inputs get no tangent input in the IR.
    """
    parent = _interp.current()
    partial = TraceInterpreter(parent, stage_all=False, name="linearize")
    tangent_args = [partial.new_arg(p.aval.strip_weak()) if is_differentiable(p.aval) else None
                    for p in primals]
    jvp_interp = JVPInterpreter(partial)
    try:
        with _interp.using(jvp_interp):
            ins = [jvp_interp.lift(p, t) for p, t in zip(primals, tangent_args, strict=False)]
            outs = fun(*ins)
        pairs = [jvp_interp.unpack(o) for o in outs]
    except BaseException:
        partial.active = False
        raise
    finally:
        jvp_interp.active = False
    primal_outs = [p for p, _ in pairs]
    tangent_outs = [zeros_for(aval_of(p).strip_weak()) if t is None else t for p, t in pairs]
    linear_ir = partial.build([t for t in tangent_args if t is not None], tangent_outs)
    return primal_outs, linear_ir


def backward_pass(ir: IR, cotangents, inputs=None):
    """Transpose a linear IR: cotangents of its outputs -> cotangents of its inputs
    (``None`` where zero).

    ``inputs`` (optional) gives one entry per input: an ``UndefinedPrimal`` for the linear
    ones, a value for the others (residuals the linear map depends on).
    """
    if inputs is None:
        inputs = [UndefinedPrimal(v.aval) for v in ir.in_vars]
    linear = {v for v, x in zip(ir.in_vars, inputs, strict=False) if isinstance(x, UndefinedPrimal)}
    for eqn in ir.equations:
        if any(v in linear for v in eqn.inputs if not isinstance(v, Literal)):
            linear.update(eqn.outputs)
    env = dict(zip(ir.const_vars, ir.consts, strict=False))
    env.update(
        (v, x)
        for v, x in zip(ir.in_vars, inputs, strict=False)
        if not isinstance(x, UndefinedPrimal)
    )
    # forward-evaluate the non-linear equations (work on residuals only)
    for eqn in ir.equations:
        if not any(v in linear for v in eqn.inputs if not isinstance(v, Literal)):
            outs = eqn.prim.bind(*[_read(env, v) for v in eqn.inputs], **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
            env.update(zip(eqn.outputs, outs, strict=False))

    cts = {}
    for var, ct in zip(ir.outputs, cotangents, strict=False):
        if not isinstance(var, Literal) and var in linear and ct is not None:
            cts[var] = add_tangents(cts.get(var), ct)
    for eqn in reversed(ir.equations):
        if not any(v in linear for v in eqn.outputs):
            continue
        out_cts = [cts.pop(v, None) for v in eqn.outputs]
        if all(c is None for c in out_cts):
            continue
        args = [UndefinedPrimal(v.aval) if (not isinstance(v, Literal) and v in linear)
                else _read(env, v) for v in eqn.inputs]
        if eqn.prim.transpose is None:
            raise NotImplementedError(f"transpose rule for '{eqn.prim.name}' not implemented "
                                      "(reverse-mode differentiation through it)")
        ct_arg = out_cts if eqn.prim.multiple_results else out_cts[0]
        in_cts = eqn.prim.transpose(ct_arg, *args, **eqn.params)
        for var, arg, ct in zip(eqn.inputs, args, in_cts, strict=False):
            if ct is not None and isinstance(arg, UndefinedPrimal):
                cts[var] = add_tangents(cts.get(var), ct)
    return [cts.get(v) if v in linear else None for v in ir.in_vars]


def _read(env, v):
    if isinstance(v, Literal):
        from funcgrad.core.tensor import wrap

        return wrap(np.asarray(v.value))
    return env[v]


class NoReverseModeError(TypeError):
    """A primitive whose derivative cannot be split into a known and a linear part (a
    while_loop: its trip count is unknown in advance), so reverse mode cannot run it."""


def linearize(fun, *primals, has_aux: bool = False):
    """``fun(*primals)`` and its linear map ``tangents -> J @ tangents`` (as JAX); with
    ``has_aux`` ``fun`` returns ``(output, aux)`` and linearize ``(output, f_jvp, aux)``.

    >>> y, f_jvp = fg.linearize(fnp.sin, fg.tensor(0.0))
    >>> f_jvp(fg.tensor(2.0))
    tensor(2., dtype=float32)
    """
    check_callable("linearize", fun)
    flat, in_tree = tree_flatten(tuple(primals))
    flat = [as_tensor(p) for p in flat]
    flat_fun, store = _flatten_fun(fun, in_tree, has_aux)
    try:
        outs, linear_ir = _linearize_flat(flat_fun, flat)
    except NoReverseModeError:  # e.g. a while_loop: the linear map is a JVP each time
        return _linearize_by_jvp(fun, primals, has_aux)
    differentiable = [is_differentiable(p.aval) for p in flat]

    def f_jvp(*tangents):
        flat_t, tree_t = tree_flatten(tuple(tangents))
        if tree_t != in_tree:
            raise ValueError(f"linearize: tangents structure {tree_t} differs from the "
                             f"primals' {in_tree}")
        checked = [_checked_like("linearize", "tangent", "primal", t, p.aval)
                   for t, p in zip(flat_t, flat, strict=True)]
        ins = [t for t, d in zip(checked, differentiable, strict=True) if d]
        return tree_unflatten(store["tree"], eval_ir(linear_ir, *ins))

    if has_aux:
        return tree_unflatten(store["tree"], outs), f_jvp, store["aux"]
    return tree_unflatten(store["tree"], outs), f_jvp


def _linearize_by_jvp(fun, primals, has_aux):
    """linearize's result when the linear part cannot be staged out: the output now, and
    a linear map that runs the JVP of ``fun`` at ``primals`` on each call."""
    primal_fun = (lambda *args: fun(*args)[0]) if has_aux else fun
    out = fun(*primals)
    f_jvp = lambda *tangents: jvp(primal_fun, primals, tangents)[1]  # noqa: E731
    if has_aux:
        return out[0], f_jvp, out[1]
    return out, f_jvp


def _vjp_flat(flat_fun, flat_primals):
    outs, linear_ir = _linearize_flat(flat_fun, flat_primals)

    def vjp_flat(cts):
        in_cts = iter(backward_pass(linear_ir, cts))
        result = []
        for p in flat_primals:
            if is_differentiable(p.aval):
                ct = next(in_cts)
                ct = zeros_for(p.aval.strip_weak()) if ct is None else ct
                if p.aval.weak_type and ct.dtype == p.aval.dtype:
                    # a weakly typed primal (a Python number given to jit) has a weakly
                    # typed cotangent, as in JAX: it comes out of jit at the default width
                    ct = ew.convert_element_type(ct, ct.dtype, weak_type=True)
                result.append(ct)
            else:
                result.append(zeros_for(p.aval))
        return result

    return outs, vjp_flat


def vjp(fun, *primals, has_aux: bool = False):
    """Reverse-mode derivative: ``(fun(*primals), vjp_fn)`` with ``vjp_fn(ct)`` giving one
    cotangent per primal (a tuple), as JAX.

    >>> y, pullback = fg.vjp(lambda x: x * x, fg.tensor(3.0))
    >>> pullback(fg.tensor(1.0))
    (tensor(6., dtype=float32),)
    """
    check_callable("vjp", fun)
    flat, in_tree = tree_flatten(tuple(primals))
    flat = [as_tensor(p) for p in flat]
    flat_fun, store = _flatten_fun(fun, in_tree, has_aux)
    outs, vjp_flat = _vjp_flat(flat_fun, flat)
    out_tree = store["tree"]
    out_avals = [aval_of(o) for o in outs]

    def vjp_fn(cotangent):
        flat_ct, ct_tree = tree_flatten(cotangent)
        if ct_tree != out_tree:
            raise ValueError(f"vjp: cotangent structure {ct_tree} differs from the output's "
                             f"{out_tree}")
        cts = []
        for ct, aval in zip(flat_ct, out_avals, strict=False):
            ct = as_tensor(ct)
            if ct.shape != aval.shape:
                raise ValueError(f"vjp: cotangent shape {ct.shape} differs from output shape "
                                 f"{aval.shape}")
            if dtypes.is_complex(ct.dtype) and not dtypes.is_complex(aval.dtype):
                raise TypeError(f"vjp: a complex cotangent ({ct.dtype.name}) for the real "
                                f"output {aval.dtype.name}{list(aval.shape)} would lose its "
                                "imaginary part; pass a real cotangent")
            # other dtypes are converted (a NumPy float64 array for a float32 output)
            cts.append(ct.astype(aval.dtype) if ct.dtype != aval.dtype else ct)
        return tree_unflatten(in_tree, vjp_flat(cts))

    primal_out = tree_unflatten(out_tree, outs)
    if has_aux:
        return primal_out, vjp_fn, store["aux"]
    return primal_out, vjp_fn


# --- grad and friends ----------------------------------------------------------------------


def _argnums_tuple(argnums, nargs, name):
    single = isinstance(argnums, int)
    try:
        nums = (argnums,) if single else tuple(argnums)
    except TypeError:
        nums = None
    if nums is None or isinstance(argnums, str) or not all(isinstance(n, int) for n in nums):
        raise TypeError(f"{name}: argnums must be an int or a tuple of ints (positions of "
                        f"positional arguments), got {argnums!r}")
    for n in nums:
        if not -nargs <= n < nargs:
            raise ValueError(f"{name}: argnums {argnums} out of range for {nargs} positional "
                             "argument(s)")
    normalized = tuple(n % nargs for n in nums)
    if len(set(normalized)) != len(normalized):
        # differentiating twice with respect to one argument would silently drop one of them
        repeated = sorted({n for n in normalized if normalized.count(n) > 1})
        raise ValueError(f"{name}: argnums {argnums} name argument(s) {repeated} more than "
                         "once (negative numbers count from the end); each argument number "
                         "must appear once")
    return normalized, single


def _split_args(fun, args, kwargs, argnums):
    """A function of only the differentiated arguments, and those arguments."""

    def partial(*diff):
        full_args = list(args)
        for n, value in zip(argnums, diff, strict=False):
            full_args[n] = value
        return fun(*full_args, **kwargs)

    return partial, tuple(args[n] for n in argnums)


def _check_inexact_inputs(name, diff_args, allow_int=False):
    import optree

    paths, leaves, _ = optree.tree_flatten_with_path(diff_args, namespace="funcgrad")
    for path, leaf in zip(paths, leaves, strict=True):
        where = f"argument {path[0]}" + "".join(
            f".{p}" if isinstance(p, str) and p.isidentifier() else f"[{p!r}]"
            for p in path[1:])
        if isinstance(leaf, Tensor):
            leaf_dtype = leaf.dtype
        elif isinstance(leaf, (bool, int, float, complex, np.ndarray, np.generic)):
            leaf_dtype = dtypes.dtype_and_weak(leaf)[0]
        else:
            raise TypeError(f"{name}: {where} is a {type(leaf).__name__}, not an array or a "
                            "number; differentiate with respect to arrays only (exclude it "
                            "with argnums)")
        if not dtypes.is_inexact(leaf_dtype) and not allow_int:
            raise TypeError(f"{name} requires real- or complex-valued (floating) inputs, got "
                            f"{where} of dtype {leaf_dtype.name}; differentiate with respect "
                            "to float arguments only (pass integers as other arguments, or "
                            "keep integer tensors out of the module you differentiate, e.g. "
                            "as a static field), or pass allow_int=True for zero gradients "
                            "of integer inputs")


def value_and_grad(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False):
    """``fun`` and its gradient with respect to the arguments ``argnums``; with
    ``holomorphic=True`` the complex derivative of a holomorphic ``fun`` of complex inputs
    with a complex scalar output (as JAX). ``allow_int=True`` accepts integer and boolean
    inputs, whose gradients are zeros of their dtype (JAX's are float0).

    >>> fg.value_and_grad(lambda x: (x ** 2).sum())(fg.tensor([1.0, 2.0]))
    (tensor(5., dtype=float32), tensor([2., 4.], dtype=float32))
    """
    return _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, "value_and_grad")


def _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, name):
    check_callable(name, fun)
    @functools.wraps(fun)
    def value_and_grad_fun(*args, **kwargs):
        nums, single = _argnums_tuple(argnums, len(args), name)
        partial, diff_args = _split_args(fun, args, kwargs, nums)
        _check_inexact_inputs(name, diff_args, allow_int)
        if holomorphic:
            _check_complex(name, "input", tree_flatten(diff_args)[0])
        result = vjp(partial, *diff_args, has_aux=has_aux)
        out, pullback = result[0], result[1]
        if not isinstance(out, (Tensor, float, int)) or isinstance(out, bool):
            raise TypeError(f"{name} requires a function returning a single scalar tensor, got "
                            f"{type(out).__name__} (use has_aux=True to return more, or vjp "
                            "for pytree outputs)")
        scalar = as_tensor(out)
        if holomorphic:
            _check_complex(name, "output", [scalar])
        if (scalar.shape != () or not dtypes.is_inexact(scalar.dtype)
                or (dtypes.is_complex(scalar.dtype) and not holomorphic)):
            raise TypeError(f"{name} requires a real scalar float output (shape (), floating "
                            f"dtype); got shape {scalar.shape} and dtype {scalar.dtype.name}. "
                            "Use vjp or jacrev for non-scalar outputs, .sum() to reduce, and "
                            "fnp.real/fnp.abs for complex values (or holomorphic=True for "
                            "the complex derivative of a holomorphic function).")
        grads = pullback(full((), 1, scalar.dtype) if isinstance(out, Tensor) else
                         tree_unflatten(tree_flatten(out)[1], [full((), 1, scalar.dtype)]))
        grads = grads[0] if single else grads
        if has_aux:
            return (out, result[2]), grads
        return out, grads

    return value_and_grad_fun


def grad(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False):
    """The gradient of scalar-valued ``fun`` with respect to argument(s) ``argnums``
    (``holomorphic=True``: the complex derivative of a holomorphic ``fun``, as JAX;
    ``allow_int=True``: zero gradients for integer inputs instead of an error).

    >>> fg.grad(lambda x: fnp.sin(x).sum())(fg.tensor([0.0, 1.0]))
    tensor([1.       , 0.5403023], dtype=float32)
    >>> fg.grad(lambda z: z * z, holomorphic=True)(fg.tensor(1.0 + 2.0j))
    tensor(2.+4.j, dtype=complex64)
    """
    vg = _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, "grad")

    @functools.wraps(fun)
    def grad_fun(*args, **kwargs):
        (out_and_aux, grads) = vg(*args, **kwargs)
        return (grads, out_and_aux[1]) if has_aux else grads

    return grad_fun


def _std_basis(flat):
    """Identity rows split per leaf: a list of (N, *leaf.shape) tensors, N = total size."""
    from funcgrad.numpy import eye, reshape

    sizes = [math.prod(p.shape) for p in flat]
    total = sum(sizes)
    dtype = dtypes.result_type(*[p.dtype for p in flat]) if flat else dtypes.float32
    basis = eye(total, dtype=dtype)
    out, offset = [], 0
    for p, n in zip(flat, sizes, strict=False):
        out.append(reshape(basis[:, offset:offset + n], (total, *p.shape)).astype(p.dtype))
        offset += n
    return out, sizes


def _check_complex(name: str, what: str, leaves) -> None:
    """holomorphic=True differentiates complex functions of complex values only (as JAX)."""
    for leaf in leaves:
        dtype = as_tensor(leaf).dtype
        if not dtypes.is_complex(dtype):
            raise TypeError(f"{name} with holomorphic=True requires complex {what}s, got an "
                            f"{what} of dtype {dtype.name}; convert it with "
                            f".astype(fg.complex64) or drop holomorphic=True")


def _jacobian_inputs(name, fun, argnums, has_aux, holomorphic, args, kwargs,
                     allow_int=False):
    """What jacfwd and jacrev share: the differentiated arguments as flat tensors (complex
    ones with ``holomorphic``) and ``fun`` as a flat function of them (its output tree lands
    in ``store``)."""
    nums, single = _argnums_tuple(argnums, len(args), name)
    partial, diff_args = _split_args(fun, args, kwargs, nums)
    _check_inexact_inputs(name, diff_args, allow_int)
    flat_in, in_tree = tree_flatten(diff_args)
    flat_in = [as_tensor(x) for x in flat_in]
    if holomorphic:
        _check_complex(name, "input", flat_in)
    flat_fun, store = _flatten_fun(partial, in_tree, has_aux)
    return single, flat_in, in_tree, flat_fun, store


def jacfwd(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """The Jacobian of ``fun`` by forward mode (one JVP per input element, vmapped).

    Output blocks have shape ``out.shape + in.shape``.  Inputs are real, unless
    ``holomorphic=True`` (complex inputs and outputs, the complex derivative), as JAX.

    >>> fg.jacfwd(fnp.sin)(fg.tensor([0.0, 1.0])).shape
    (2, 2)
    """
    from funcgrad.numpy import moveaxis, reshape
    from funcgrad.transforms.batching import vmap

    check_callable("jacfwd", fun)

    def jacfun(*args, **kwargs):
        single, flat_in, in_tree, flat_fun, store = _jacobian_inputs(
            "jacfwd", fun, argnums, has_aux, holomorphic, args, kwargs)
        if not holomorphic:
            for x in flat_in:  # a real basis would give the derivative along the reals only
                if dtypes.is_complex(x.dtype):
                    raise TypeError(f"jacfwd requires real inputs (as JAX), got one of dtype "
                                    f"{x.dtype.name}; for a holomorphic function pass "
                                    "holomorphic=True, otherwise use jacrev, or split the "
                                    "input into real and imaginary parts")
        basis, sizes = _std_basis(flat_in)

        def push(*tangent_leaves):
            outs, tangents = _jvp_flat(flat_fun, flat_in, list(tangent_leaves))
            return outs, [zeros_for(aval_of(o).strip_weak()) if t is None else t
                          for o, t in zip(outs, tangents, strict=False)]

        outs, tangents = vmap(push, out_axes=(None, 0))(*basis)
        if holomorphic:
            _check_complex("jacfwd", "output", outs)
        blocks = []
        for out, tan in zip(outs, tangents, strict=False):
            row, offset = [], 0
            for inp, n in zip(flat_in, sizes, strict=False):
                part = tan[offset:offset + n]
                part = moveaxis(part, 0, -1)
                row.append(reshape(part, (*aval_of(out).shape, *inp.shape)))
                offset += n
            blocks.append(tree_unflatten(in_tree, row))
        blocks = [b[0] if single else b for b in blocks]
        jac = tree_unflatten(store["tree"], blocks)
        return (jac, store["aux"]) if has_aux else jac

    return jacfun


def jacrev(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
    """The Jacobian of ``fun`` by reverse mode (one VJP per output element, vmapped).
    Outputs are real, unless ``holomorphic=True`` (complex inputs and outputs, the complex
    derivative), as JAX; ``allow_int=True`` gives zero blocks for integer inputs.

    >>> fg.jacrev(fnp.sin)(fg.tensor([0.0, 1.0])).shape
    (2, 2)
    """
    from funcgrad.numpy import reshape
    from funcgrad.transforms.batching import vmap

    check_callable("jacrev", fun)

    def jacfun(*args, **kwargs):
        single, flat_in, in_tree, flat_fun, store = _jacobian_inputs(
            "jacrev", fun, argnums, has_aux, holomorphic, args, kwargs, allow_int)
        outs, pullback = _vjp_flat(flat_fun, flat_in)
        if holomorphic:
            _check_complex("jacrev", "output", outs)
        for out in outs:
            if not dtypes.is_inexact(out.dtype) or (dtypes.is_complex(out.dtype)
                                                     and not holomorphic):
                raise TypeError(f"jacrev requires real floating outputs (as JAX), got an "
                                f"output of dtype {out.dtype.name} and shape {out.shape}; "
                                "take fnp.real/fnp.imag of complex outputs (or pass "
                                "holomorphic=True for a holomorphic function), and use "
                                "jacfwd or stop_gradient for integer or boolean ones")
        basis, sizes = _std_basis(outs)
        rows = vmap(lambda *cts: pullback(list(cts)))(*basis)

        blocks = []
        offset = 0
        for out, n in zip(outs, sizes, strict=False):
            row = [reshape(r[offset:offset + n], (*out.shape, *inp.shape))
                   for r, inp in zip(rows, flat_in, strict=False)]
            blocks.append(tree_unflatten(in_tree, row))
            offset += n
        blocks = [b[0] if single else b for b in blocks]
        jac = tree_unflatten(store["tree"], blocks)
        return (jac, store["aux"]) if has_aux else jac

    return jacfun


def hessian(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """The Hessian of scalar ``fun``: ``jacfwd(jacrev(fun))`` (``holomorphic`` passed to
    both).

    >>> fg.hessian(lambda x: (x ** 3).sum())(fg.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]], dtype=float32)
    """
    check_callable("hessian", fun)
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)
