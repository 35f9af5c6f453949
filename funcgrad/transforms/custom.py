"""Custom differentiation: stop_gradient, custom_jvp, custom_vjp and checkpoint (remat).

Each is a primitive whose rules call the user's functions: ``custom_jvp_call`` runs the
user's JVP rule; ``custom_vjp_call`` runs the forward function and emits a linear
``custom_lin`` whose transpose is the user's backward function; ``checkpoint`` makes
reverse mode recompute the function's intermediates instead of storing them.
"""

from __future__ import annotations

import functools
import inspect

from funcgrad.core import dtypes
from funcgrad.core import interpreter as _interp
from funcgrad.core.abstract import ShapedArray, aval_of
from funcgrad.core.ir import IR, Var, eval_ir
from funcgrad.core.primitive import Primitive, UndefinedPrimal
from funcgrad.core.prims.structural import broadcast_in_dim, moveaxis
from funcgrad.core.tensor import Tensor, wrap
from funcgrad.transforms.ad import JVPTracer, as_tensor, tree_flatten, tree_unflatten, zeros_for
from funcgrad.transforms.ir_transforms import batch_ir, jvp_ir, partial_eval_ir, transpose_ir
from funcgrad.transforms.tracing import check_callable, hoist_consts, trace_to_ir
from funcgrad.tree import keystr


def _eager_values(leaves) -> bool:
    return _interp.current() is _interp.EAGER and all(
        not isinstance(x, Tensor) or type(x) is Tensor for x in leaves)


def _impl_via_ir(*args, call, **_):
    outs = eval_ir(call, *[wrap(a) for a in args])
    return [o._buf for o in outs]


def _to_front(x, dim, axis_size):
    if dim is None:
        return broadcast_in_dim(x, (axis_size, *x.shape), tuple(range(1, x.ndim + 1)))
    return x if dim == 0 else moveaxis(x, dim, 0)


def _batched_aval(aval, axis_size):
    return ShapedArray((axis_size, *aval.shape), aval.dtype, aval.weak_type)


# --- stop_gradient ---------------------------------------------------------------------------

stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.impl = lambda x: x
stop_gradient_p.abstract_eval = lambda x: x
stop_gradient_p.jvp = lambda primals, tangents: (stop_gradient_p.bind(primals[0]), None)
stop_gradient_p.batch = lambda axis_size, args, dims: (stop_gradient_p.bind(args[0]), dims[0])


def stop_gradient(x):
    """The value of ``x`` (a pytree), treated as a constant by differentiation.

    >>> fg.grad(lambda x: x * fg.stop_gradient(x))(fg.tensor(3.0))
    tensor(3., dtype=float32)
    """

    def one(leaf):
        leaf = as_tensor(leaf)
        if not dtypes.is_inexact(leaf.dtype) or _eager_values([leaf]):
            return leaf
        return stop_gradient_p.bind(leaf)

    flat, tree = tree_flatten(x)
    return tree_unflatten(tree, [one(leaf) for leaf in flat])


# --- shared plumbing for the user-function primitives -----------------------------------------


def _function_name(fun) -> str:
    return getattr(fun, "__name__", repr(fun))


def _positional(kind, fun, args, kwargs):
    """``args`` and ``kwargs`` bound to ``fun``'s signature as positional arguments, defaults
    filled in (as JAX's ``resolve_kwargs``): a rule then sees defaulted arguments as primals.

    >>> _positional("custom_jvp", lambda a, scale=2.0: a, (1.0,), {})
    (1.0, 2.0)
    """
    if isinstance(fun, functools.partial):  # opaque signature, as in JAX
        return _positional(kind, _ANY_ARGUMENTS, args, kwargs)
    signature, simple = _signature(fun)
    if simple == len(args) and not kwargs:  # every parameter given by position
        return tuple(args)
    if signature is None:  # no signature to read (some builtins)
        if kwargs:
            raise TypeError(f"{kind} function {_function_name(fun)}: keyword arguments "
                            f"{sorted(kwargs)} cannot be resolved, as the function has no "
                            "readable signature; pass them positionally") from None
        return tuple(args)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{kind} function {_function_name(fun)}: the arguments could not be "
                        f"bound to its signature {signature}: {e}") from None
    bound.apply_defaults()
    passed_keyword_only = [k for k in bound.kwargs if k in kwargs]
    if passed_keyword_only:
        raise TypeError(f"{kind} function {_function_name(fun)}: keyword-only arguments "
                        f"{passed_keyword_only} cannot be resolved to positions; make them "
                        "positional-or-keyword parameters or close over them")
    return bound.args


def _ANY_ARGUMENTS(*args, **kwargs):
    pass


@functools.lru_cache(maxsize=1024)
def _signature(fun):
    """``fun``'s signature (None when it has none to read), and its number of parameters
    when all are plain positional ones without defaults, else -1; once per function
    (``inspect.signature`` takes about 30 us, longer than an eager relu)."""
    try:
        signature = inspect.signature(fun)
    except (TypeError, ValueError):
        return None, -1
    params = signature.parameters.values()
    plain = all(p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty for p in params)
    return signature, len(params) if plain else -1


def _leaf_names(prefix, tree):
    """One readable name per leaf of ``tree``: ``prefix``, ``prefix[0]``, ``prefix['a']``."""
    return [prefix + keystr(path) for path in tree.paths()]


def _describe(aval) -> str:
    return f"shape {tuple(aval.shape)} and dtype {aval.dtype.name}"


def _split_nondiff(args, nondiff_argnums):
    nondiff = {i: args[i] for i in nondiff_argnums}
    diff = tuple(a for i, a in enumerate(args) if i not in nondiff)
    return nondiff, diff


def _merge_nondiff(nondiff, diff):
    diff_it = iter(diff)
    return tuple(nondiff[i] if i in nondiff else next(diff_it)
                 for i in range(len(nondiff) + len(diff)))


def _trace_closed(fun, diff_args):
    """Trace ``fun(*diff_args)``: (IR with consts hoisted, consts, flat args, out tree)."""
    flat, in_tree = tree_flatten(diff_args)
    flat = [as_tensor(x) for x in flat]
    store = {}

    def flat_fun(*leaves):
        out = fun(*tree_unflatten(in_tree, list(leaves)))
        out_flat, store["tree"] = tree_flatten(out)
        return [as_tensor(x) for x in out_flat]

    ir = trace_to_ir(flat_fun, [x.aval for x in flat], name="custom")
    closed, consts = hoist_consts(ir)
    return closed, consts, flat, in_tree, store["tree"]


def _trace_call(kind, wrapper, args, kwargs):
    """What custom_jvp and custom_vjp calls share: the arguments made positional and, unless
    every value is concrete (then the plain function just runs: returns None), the
    non-differentiated ones split off and the function traced on the others."""
    args = _positional(kind, wrapper.fun, args, kwargs)
    nondiff, diff = _split_nondiff(args, wrapper.nondiff_argnums)
    for i, value in nondiff.items():
        if any(isinstance(x, JVPTracer) for x in tree_flatten(value)[0]):
            raise TypeError(
                f"{kind} function {_function_name(wrapper.fun)}: argument {i} is in "
                "nondiff_argnums but depends on a value being differentiated (grad, jvp, "
                "...); such arguments have no derivative. Make it a regular argument (the "
                "rule then gives its derivative) or pass fg.stop_gradient of it")
    if _eager_values(tree_flatten(diff)[0]):
        return args, None
    fun = lambda *d: wrapper.fun(*_merge_nondiff(nondiff, d))
    return args, (nondiff, diff, *_trace_closed(fun, diff))


# --- custom_jvp ------------------------------------------------------------------------------

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)


def _check_jvp_rule_outputs(name, out_tree, fun_avals, primals_out, tangents_out):
    """Raise ``TypeError`` unless the rule's primal outputs have the function's shapes and
    dtypes and each floating tangent output its primal's (as JAX checks)."""
    for where, want, got in zip(_leaf_names("output", out_tree), fun_avals, primals_out,
                                strict=True):
        if (tuple(got.shape), got.dtype) != (tuple(want.shape), want.dtype):
            raise TypeError(f"custom_jvp function {name}: the JVP rule's primal {where} has "
                            f"{_describe(got)}, but the function's {where} has "
                            f"{_describe(want)}; the rule must return the function's value "
                            "as its primal output")
    for where, primal, tangent in zip(_leaf_names("output", out_tree), primals_out,
                                      tangents_out, strict=True):
        if not dtypes.is_inexact(primal.dtype):  # integer outputs have no tangent
            continue
        if (tuple(tangent.shape), tangent.dtype) != (tuple(primal.shape), primal.dtype):
            raise TypeError(f"custom_jvp function {name}: the JVP rule's tangent {where} has "
                            f"{_describe(tangent)}, but primal {where} has "
                            f"{_describe(primal)}; the tangent must have the primal's shape "
                            "and dtype (cast it with .astype, broadcast or reshape it)")


class custom_jvp:  # noqa: N801  (JAX's name)
    """A function with a user-defined JVP rule (as ``jax.custom_jvp``).

    >>> @fg.custom_jvp
    ... def log1pexp(x):
    ...     return fnp.log1p(fnp.exp(x))
    >>> @log1pexp.defjvp
    ... def log1pexp_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return log1pexp(x), t / (1 + fnp.exp(-x))
    """

    def __init__(self, fun, nondiff_argnums=()):
        check_callable("custom_jvp", fun)
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None

    def defjvp(self, jvp, symbolic_zeros: bool = False):
        """Set the rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``."""
        self.jvp = jvp
        return jvp

    def defjvps(self, *partials):
        """Set the JVP from one rule per argument: ``rule(t, primal_out, *primals)``."""

        def jvp(primals, tangents):
            out = self.fun(*primals)
            out_leaves, out_tree = tree_flatten(out)
            total = None  # the tangent's leaves, summed leaf by leaf (outputs may be pytrees)
            for rule, t in zip(partials, tangents, strict=False):
                if rule is None:
                    continue
                term = tree_flatten(rule(t, out, *primals))[0]
                total = term if total is None else [a + b for a, b in zip(total, term,
                                                                          strict=True)]
            if total is None:
                total = [zeros_for(aval_of(as_tensor(leaf))) for leaf in out_leaves]
            return out, tree_unflatten(out_tree, total)

        self.jvp = jvp

    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(f"no JVP rule defined for custom_jvp function "
                                 f"{getattr(self.fun, '__name__', self.fun)}; use .defjvp")
        args, traced = _trace_call("custom_jvp", self, args, kwargs)
        if traced is None:
            return self.fun(*args)
        nondiff, diff, ir, consts, flat, in_tree, out_tree = traced
        user_jvp, nondiff_values = self.jvp, [nondiff[i] for i in sorted(nondiff)]
        name, out_avals = _function_name(self.fun), list(ir.out_avals)

        def jvp_flat(primals, tangents):
            p = tree_unflatten(in_tree, list(primals))
            t = tree_unflatten(in_tree, list(tangents))
            pair = user_jvp(*nondiff_values, p, t) if nondiff_values else user_jvp(p, t)
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"custom_jvp function {name}: the JVP rule must return a pair "
                                f"(primal_out, tangent_out), got {pair!r:.80}")
            out, out_t = pair
            out_flat, tree = tree_flatten(out)
            t_flat, t_tree = tree_flatten(out_t)
            if tree != out_tree or t_tree != out_tree:
                raise TypeError(f"custom_jvp function {name}: the JVP rule must return "
                                f"(primal_out, tangent_out) with the function's output "
                                f"structure {out_tree}; got {tree} and {t_tree}")
            out_flat = [as_tensor(o) for o in out_flat]
            t_flat = [as_tensor(o) for o in t_flat]
            _check_jvp_rule_outputs(name, out_tree, out_avals, out_flat, t_flat)
            return out_flat, t_flat

        outs = custom_jvp_call_p.bind(*consts, *flat, call=ir, jvp=jvp_flat,
                                      num_consts=len(consts))
        return tree_unflatten(out_tree, outs)


def _custom_jvp_call_jvp(primals, tangents, *, call, jvp, num_consts):
    args = list(primals[num_consts:])
    arg_tangents = [zeros_for(aval_of(a).strip_weak()) if t is None else t
                    for a, t in zip(args, tangents[num_consts:], strict=False)]
    outs, out_tangents = jvp(args, arg_tangents)
    return outs, [t if dtypes.is_inexact(aval_of(o).dtype) else None
                  for o, t in zip(outs, out_tangents, strict=False)]


def _custom_jvp_call_batch(axis_size, args, dims, *, call, jvp, num_consts):
    from funcgrad.transforms.batching import vmap

    moved = [
        _to_front(a, d, axis_size) if d is not None else a for a, d in zip(args, dims, strict=False)
    ]
    batched = [d is not None for d in dims]
    new_call, _ = batch_ir(call, axis_size, batched, instantiate=True)
    arg_axes = [0 if b else None for b in batched[num_consts:]]

    def batched_jvp(primals, tangents):
        def one(p, t):
            outs, out_t = jvp(list(p), list(t))
            return list(outs), list(out_t)

        return vmap(one, in_axes=(arg_axes, arg_axes))(list(primals), list(tangents))

    outs = custom_jvp_call_p.bind(*moved, call=new_call, jvp=batched_jvp, num_consts=num_consts)
    return outs, [0] * len(outs)


custom_jvp_call_p.impl = _impl_via_ir
custom_jvp_call_p.abstract_eval = lambda *args, call, **_: [a.strip_weak() for a in call.out_avals]
custom_jvp_call_p.jvp = _custom_jvp_call_jvp
custom_jvp_call_p.batch = _custom_jvp_call_batch


# --- custom_vjp ------------------------------------------------------------------------------

custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_lin_p = Primitive("custom_lin", multiple_results=True, linear=True)


def _checked_cotangent(name, where, position, aval, ct):
    """``ct`` as a tensor (None: zero), or ``ValueError`` unless it has the shape of the
    argument leaf ``aval``. As in JAX, another floating dtype is let through and integer
    arguments get no cotangent."""
    if ct is None or not dtypes.is_inexact(aval.dtype):
        return None
    ct = as_tensor(ct)
    if tuple(ct.shape) != tuple(aval.shape):
        raise ValueError(f"custom_vjp function {name}: bwd {where} has {_describe(ct)}, but "
                         f"it is the cotangent of argument {position}, which has "
                         f"{_describe(aval)}; bwd must return one cotangent per argument with "
                         "that argument's shape and dtype (or None for zero)")
    return ct


class custom_vjp:  # noqa: N801  (JAX's name)
    """A function with a user-defined VJP (as ``jax.custom_vjp``): ``fwd(*args) ->
    (out, residuals)`` and ``bwd(residuals, cotangent) -> tuple of input cotangents``.

    >>> @fg.custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (fnp.clip(g, -1, 1),))
    """

    def __init__(self, fun, nondiff_argnums=()):
        check_callable("custom_vjp", fun)
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd):
        """Set the forward (``fwd(*args) -> (out, res)``) and backward
        (``bwd(res, ct) -> tuple``) functions."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(f"no VJP defined for custom_vjp function "
                                 f"{getattr(self.fun, '__name__', self.fun)}; use .defvjp")
        args, traced = _trace_call("custom_vjp", self, args, kwargs)
        if traced is None:
            return self.fun(*args)
        nondiff, diff, ir, consts, flat, in_tree, out_tree = traced
        nondiff_values = [nondiff[i] for i in sorted(nondiff)]
        user_fwd, user_bwd = self.fwd, self.bwd

        def fwd_flat(primals):
            pair = user_fwd(*_merge_nondiff(nondiff, tree_unflatten(in_tree, list(primals))))
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise TypeError(f"custom_vjp function {name}: fwd must return a pair (output, "
                                f"residuals), got {type(pair).__name__} {pair!r:.80}")
            out, res = pair
            out_flat, tree = tree_flatten(out)
            if tree != out_tree:
                raise TypeError(f"custom_vjp fwd must return (out, residuals) with out of "
                                f"structure {out_tree}, got {tree}")
            res_flat, res_tree = tree_flatten(res)
            return [as_tensor(o) for o in out_flat], [as_tensor(r) for r in res_flat], res_tree

        name = _function_name(self.fun)
        diff_positions = [i for i in range(len(args)) if i not in nondiff]
        arg_avals = tree_unflatten(in_tree, [x.aval for x in flat])

        def bwd_flat(res_tree, res, cts):
            ct = tree_unflatten(out_tree, list(cts))
            residuals = tree_unflatten(res_tree, list(res))
            in_cts = (user_bwd(*nondiff_values, residuals, ct) if nondiff_values
                      else user_bwd(residuals, ct))
            if isinstance(in_cts, list):  # JAX accepts a list too
                in_cts = tuple(in_cts)
            if not isinstance(in_cts, tuple) or len(in_cts) != len(diff):
                raise TypeError(f"custom_vjp function {name}: bwd must return a tuple with one "
                                f"cotangent per differentiable argument ({len(diff)}), got "
                                f"{in_cts!r:.80}")
            flat_cts = []
            for index, (position, avals, ct_arg) in enumerate(
                    zip(diff_positions, arg_avals, in_cts, strict=True)):
                aval_leaves, arg_tree = tree_flatten(avals)
                if ct_arg is None:
                    flat_cts += [None] * len(aval_leaves)
                    continue
                # a None where the argument has a leaf is a zero cotangent (as in JAX)
                try:
                    ct_leaves = arg_tree.flatten_up_to(ct_arg)
                except (ValueError, TypeError):
                    raise TypeError(f"custom_vjp function {name}: bwd returned a cotangent of "
                                    f"structure {tree_flatten(ct_arg)[1]} for argument "
                                    f"{position} of structure {arg_tree}") from None
                names = _leaf_names(f"output[{index}]", arg_tree)
                flat_cts += [_checked_cotangent(name, where, position, aval, c)
                             for where, aval, c in zip(names, aval_leaves, ct_leaves,
                                                       strict=True)]
            return flat_cts

        outs = custom_vjp_call_p.bind(*consts, *flat, call=ir, fwd=fwd_flat, bwd=bwd_flat,
                                      num_consts=len(consts))
        return tree_unflatten(out_tree, outs)


def _custom_vjp_call_jvp(primals, tangents, *, call, fwd, bwd, num_consts):
    args = list(primals[num_consts:])
    outs, res, res_tree = fwd(args)
    arg_tangents = [zeros_for(aval_of(a).strip_weak()) if t is None else t
                    for a, t in zip(args, tangents[num_consts:], strict=False)]
    out_avals = tuple(aval_of(o).strip_weak() for o in outs)
    lin = custom_lin_p.bind(*res, *arg_tangents, num_res=len(res), bwd=bwd, res_tree=res_tree,
                            out_avals=out_avals)
    return outs, [
        t if dtypes.is_inexact(a.dtype) else None for t, a in zip(lin, out_avals, strict=False)
    ]


def _custom_vjp_call_batch(axis_size, args, dims, *, call, fwd, bwd, num_consts):
    from funcgrad.transforms.batching import vmap

    moved = [_to_front(a, d, axis_size) for a, d in zip(args, dims, strict=False)]
    new_call, _ = batch_ir(call, axis_size, [True] * len(args), instantiate=True)
    store = {}

    def batched_fwd(primals):
        def one(p):
            outs, res, store["tree"] = fwd(list(p))
            return list(outs), list(res)

        outs, res = vmap(one)(list(primals))
        return outs, res, store["tree"]

    def batched_bwd(res_tree, res, cts):
        return vmap(lambda r, c: bwd(res_tree, list(r), list(c)))(list(res), list(cts))

    outs = custom_vjp_call_p.bind(*moved, call=new_call, fwd=batched_fwd, bwd=batched_bwd,
                                  num_consts=num_consts)
    return outs, [0] * len(outs)


custom_vjp_call_p.impl = _impl_via_ir
custom_vjp_call_p.abstract_eval = lambda *args, call, **_: [a.strip_weak() for a in call.out_avals]
custom_vjp_call_p.jvp = _custom_vjp_call_jvp
custom_vjp_call_p.batch = _custom_vjp_call_batch


def _custom_lin_impl(*args, **params):
    raise TypeError("forward-mode differentiation (jvp, jacfwd, linearize's tangent map) of a "
                    "custom_vjp function is not supported; use grad, vjp or jacrev")


def _custom_lin_transpose(cts, *args, num_res, bwd, res_tree, out_avals):
    res = list(args[:num_res])
    cts = [zeros_for(a) if c is None else c for c, a in zip(cts, out_avals, strict=False)]
    in_cts = bwd(res_tree, res, cts)
    return [None] * num_res + list(in_cts)


def _custom_lin_batch(axis_size, args, dims, *, num_res, bwd, res_tree, out_avals):
    from funcgrad.transforms.batching import vmap

    moved = [_to_front(a, d, axis_size) for a, d in zip(args, dims, strict=False)]

    def batched_bwd(tree, res, cts):
        return vmap(lambda r, c: bwd(tree, list(r), list(c)))(list(res), list(cts))

    outs = custom_lin_p.bind(*moved, num_res=num_res, bwd=batched_bwd, res_tree=res_tree,
                             out_avals=tuple(_batched_aval(a, axis_size) for a in out_avals))
    return outs, [0] * len(outs)


custom_lin_p.impl = _custom_lin_impl
custom_lin_p.abstract_eval = lambda *args, out_avals, **_: list(out_avals)
custom_lin_p.jvp = lambda primals, tangents, **p: (
    custom_lin_p.bind(*primals, **p),
    custom_lin_p.bind(
        *[
            zeros_for(aval_of(x)) if t is None else t
            for x, t in zip(primals, tangents, strict=False)
        ],
        **p,
    ),
)
custom_lin_p.transpose = _custom_lin_transpose
custom_lin_p.batch = _custom_lin_batch


# --- checkpoint (rematerialization) -------------------------------------------------------------

checkpoint_p = Primitive("checkpoint", multiple_results=True)


class checkpoint_policies:  # noqa: N801  (JAX's name)
    """JAX's save policies for ``checkpoint(fun, policy=...)``: which intermediates of
    ``fun`` the backward pass keeps instead of recomputing.  Each is a predicate on an
    equation of the traced ``fun`` (those computable from its inputs alone)."""

    @staticmethod
    def nothing_saveable(eqn) -> bool:
        """Recompute everything (the default)."""
        return False

    @staticmethod
    def everything_saveable(eqn) -> bool:
        """Keep every intermediate (as without checkpoint)."""
        return True

    @staticmethod
    def dots_saveable(eqn) -> bool:
        """Keep the results of matrix products (dot_general); recompute the rest."""
        return eqn.prim.name == "dot_general"

    @staticmethod
    def dots_with_no_batch_dims_saveable(eqn) -> bool:
        """Keep the results of matrix products without batch dimensions."""
        return eqn.prim.name == "dot_general" and not eqn.params["dimension_numbers"][1][0]

    checkpoint_dots = dots_saveable
    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable


_POLICY_NAMES = ("nothing_saveable", "everything_saveable", "dots_saveable",
                 "dots_with_no_batch_dims_saveable")


def _policy_name(policy) -> str:
    """The name a checkpoint_p equation carries for ``policy`` (a name keeps jit's cache
    keys stable across processes)."""
    if policy is None:
        return "nothing_saveable"
    name = getattr(policy, "__name__", policy)
    ours = name in _POLICY_NAMES and (policy == name or
                                      getattr(checkpoint_policies, name) is policy)
    if not ours:
        raise NotImplementedError(
            f"checkpoint: policy {policy!r} is not supported; use one of "
            f"fg.checkpoint_policies.{{{', '.join(_POLICY_NAMES)}}}")
    return name


def checkpoint(fun, prevent_cse: bool = True, policy=None, static_argnums=()):
    """``fun`` whose intermediates reverse mode recomputes instead of storing (remat);
    arguments at ``static_argnums`` are Python values (not traced), as in JAX.
    ``policy`` (``fg.checkpoint_policies.dots_saveable``, ...) names intermediates to keep.

    >>> f = fg.checkpoint(lambda x: fnp.sin(fnp.sin(x)))
    >>> fg.grad(f)(fg.tensor(1.0))
    tensor(0.36003..., dtype=float32)
    """
    check_callable("checkpoint", fun)
    policy = _policy_name(policy)

    static = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        outside = sorted(i for i in static if not -len(args) <= i < len(args))
        if outside:
            raise ValueError(f"checkpoint: static_argnums {outside} out of range for a call "
                             f"with {len(args)} positional argument(s)")
        fixed = {i % len(args) for i in static}
        dynamic = tuple(a for i, a in enumerate(args) if i not in fixed)

        def call(*dyn):
            it = iter(dyn)
            return fun(*[args[i] if i in fixed else next(it) for i in range(len(args))],
                       **kwargs)

        flat_in = tree_flatten((dynamic, kwargs))[0]
        if _eager_values(flat_in):
            return fun(*args, **kwargs)
        ir, consts, flat, in_tree, out_tree = _trace_closed(call, dynamic)
        outs = checkpoint_p.bind(*consts, *flat, call=ir, policy=policy)
        return tree_unflatten(out_tree, outs)

    return wrapped


remat = checkpoint


def _checkpoint_jvp(primals, tangents, *, call, policy):
    nonzero = [t is not None for t in tangents]
    new, out_nonzero = jvp_ir(call, nonzero, instantiate=False)
    n_out = len(call.outputs)
    outs = checkpoint_p.bind(*primals, *[t for t in tangents if t is not None], call=new,
                             policy=policy)
    it = iter(outs[n_out:])
    return outs[:n_out], [next(it) if nz else None for nz in out_nonzero]


def _checkpoint_batch(axis_size, args, dims, *, call, policy):
    moved = [
        _to_front(a, d, axis_size) if d is not None else a for a, d in zip(args, dims, strict=False)
    ]
    new, out_batched = batch_ir(call, axis_size, [d is not None for d in dims],
                                instantiate=False)
    outs = checkpoint_p.bind(*moved, call=new, policy=policy)
    return outs, [0 if b else None for b in out_batched]


def _checkpoint_partial_eval(trace, args, params):
    call, policy = params["call"], params["policy"]
    unknowns = [trace.is_own(a) for a in args]
    saved = _saved_by_policy(call, unknowns, getattr(checkpoint_policies, policy))
    n_out = len(call.outputs)
    # the kept intermediates become extra (known) outputs of the call
    extended = IR(call.in_vars, call.equations, call.outputs + saved, call.const_vars,
                  call.consts)
    (known_ir, known_consts), _, out_unknowns, sources = partial_eval_ir(extended, unknowns)
    n_known = out_unknowns.count(False)
    known_args = [a for a, u in zip(args, unknowns, strict=False) if not u]
    with _interp.using(trace.parent):
        known_outs = eval_ir(known_ir, *known_consts, *known_args)[:n_known]
    if any(out_unknowns[n_out:]):  # not all computable now after all: keep nothing
        return _checkpoint_partial_eval(trace, args, dict(params, policy="nothing_saveable"))
    kept = known_outs[n_known - len(saved):]
    known_outs = known_outs[:n_known - len(saved)]
    out_unknowns = out_unknowns[:n_out]
    # the recorded part recomputes from the inputs what the policy did not keep
    from funcgrad.transforms.control_flow import _select_outputs

    recompute = _select_outputs(_reading_saved(call, saved), out_unknowns)
    unknown_avals = [
        a.strip_weak() for a, u in zip(call.out_avals, out_unknowns, strict=False) if u
    ]
    unknown_outs = trace.stage(checkpoint_p, list(args) + list(kept),
                               dict(call=recompute, policy=policy), unknown_avals)
    known_it, unknown_it = iter(known_outs), iter(unknown_outs)
    return [next(unknown_it) if u else next(known_it) for u in out_unknowns]


def _saved_by_policy(call: IR, unknowns, policy) -> list:
    """The outputs of ``call``'s top-level equations that ``policy`` keeps, among those
    computable from its known inputs (the primal part of a JVP)."""
    unknown_vars = {v for v, u in zip(call.in_vars, unknowns, strict=True) if u}
    saved = []
    for eqn in call.equations:
        if any(isinstance(v, Var) and v in unknown_vars for v in eqn.inputs):
            unknown_vars.update(eqn.outputs)
        elif policy(eqn):
            saved.extend(v for v in eqn.outputs if v not in saved)
    return saved


def _reading_saved(call: IR, saved) -> IR:
    """``call`` taking the ``saved`` values as extra last inputs instead of computing them."""
    if not saved:
        return call
    kept = set(saved)
    equations = [e for e in call.equations if not any(v in kept for v in e.outputs)]
    return IR(call.in_vars + list(saved), equations, call.outputs, call.const_vars,
              call.consts)


def _checkpoint_transpose(cts, *args, call, policy):
    linear = [isinstance(a, UndefinedPrimal) for a in args]
    cts = [
        zeros_for(a.strip_weak()) if c is None else c
        for c, a in zip(cts, call.out_avals, strict=False)
    ]
    # the call is a JVP that recomputes its primal part: split that off before transposing
    t_ir = transpose_ir(call, linear, recompute=True)
    res = [a for a in args if not isinstance(a, UndefinedPrimal)]
    outs = iter(eval_ir(t_ir, *res, *cts))
    return [next(outs) if lin else None for lin in linear]


checkpoint_p.impl = _impl_via_ir
checkpoint_p.abstract_eval = lambda *args, call, policy: [
    a.strip_weak() for a in call.out_avals]
checkpoint_p.jvp = _checkpoint_jvp
checkpoint_p.batch = _checkpoint_batch
checkpoint_p.partial_eval = _checkpoint_partial_eval
checkpoint_p.transpose = _checkpoint_transpose
checkpoint_p.linear = True


# --- MLIR lowering: the custom rules only matter to differentiation; compiled code runs the
# function itself ---------------------------------------------------------------------------


def _lower_call(ctx, args, in_avals, out_avals, *, call, **params):
    return ctx.lower_ir(call, list(args))


def _lower_custom_lin(ctx, args, in_avals, out_avals, **params):
    from funcgrad.lowering.mlir import LoweringError

    raise LoweringError("custom_lin: forward-mode differentiation of a custom_vjp function "
                        "cannot be compiled (nor run); use grad, vjp or jacrev")


custom_jvp_call_p.lower = _lower_call
custom_vjp_call_p.lower = _lower_call
checkpoint_p.lower = _lower_call
custom_lin_p.lower = _lower_custom_lin
stop_gradient_p.lower = lambda ctx, args, in_avals, out_avals: list(args)
