"""Debugging aids that work inside every transformation: ``fg.debug.print``."""

from __future__ import annotations

import builtins

import numpy as np

from funcgrad.core import interpreter as _interp
from funcgrad.core.primitive import Primitive
from funcgrad.core.tensor import Tensor, wrap

debug_print_p = Primitive("debug_print", multiple_results=True, differentiable=False,
                          effectful=True)


def print(fmt: str, *args, **kwargs) -> None:  # noqa: A001  (JAX's name)
    """Print runtime values with ``str.format``, also inside jit, vmap and grad.

    Under vmap each batch element prints on its own line.

    >>> fg.debug.print("x = {x}", x=fg.tensor([1.0, 2.0]))
    x = [1. 2.]
    """
    from funcgrad.transforms.ad import as_tensor, tree_flatten

    leaves, tree = tree_flatten((args, kwargs))
    leaves = [as_tensor(x) for x in leaves]
    if _interp.current() is _interp.EAGER and all(type(x) is Tensor for x in leaves):
        _emit(fmt, tree, [x._host() for x in leaves])
        return
    debug_print_p.bind(*leaves, fmt=fmt, tree=tree, batched=(0,) * len(leaves))


def _emit(fmt, tree, values):
    from funcgrad.transforms.ad import tree_unflatten

    args, kwargs = tree_unflatten(tree, [wrap(np.asarray(v)) for v in values])
    builtins.print(fmt.format(*args, **kwargs), flush=True)


def _debug_print_impl(*values, fmt, tree, batched):
    """``batched[i]``: how many leading axes of ``values[i]`` are vmap batch axes (the
    same for every batched value, outermost vmap first); one line per batch element."""
    levels = builtins.max(batched, default=0)
    if not levels:
        _emit(fmt, tree, values)
        return []
    grid = next(v.shape[:levels] for v, b in zip(values, batched, strict=True) if b)
    for index in np.ndindex(*grid):
        _emit(fmt, tree, [v[index] if b else v for v, b in zip(values, batched, strict=True)])
    return []


def _debug_print_batch(axis_size, args, dims, *, fmt, tree, batched):
    """Each vmap level puts its batch axis in front of every batched value (broadcasting
    values it does not batch, and values batched here only along the inner levels)."""
    from funcgrad.core.prims.structural import broadcast_in_dim, moveaxis

    levels = builtins.max(batched, default=0)
    inner = next((a.shape[:levels] for a, b in zip(args, batched, strict=True) if b), ())
    moved, new_batched = [], []
    for a, d, b in zip(args, dims, batched, strict=True):
        if d is None and not b:
            moved.append(a)
            new_batched.append(0)
            continue
        if d is None:
            a = broadcast_in_dim(a, (axis_size, *a.shape), tuple(range(1, a.ndim + 1)))
        else:
            a = a if d == 0 else moveaxis(a, d, 0)
            if not b and levels:  # batched only here: give it the inner levels too
                shape = (axis_size, *inner, *a.shape[1:])
                a = broadcast_in_dim(a, shape, (0, *range(levels + 1, len(shape))))
        moved.append(a)
        new_batched.append(levels + 1)
    debug_print_p.bind(*moved, fmt=fmt, tree=tree, batched=tuple(new_batched))
    return [], []


debug_print_p.impl = _debug_print_impl
debug_print_p.abstract_eval = lambda *args, **params: []
debug_print_p.jvp = lambda primals, tangents, **params: (debug_print_p.bind(*primals, **params),
                                                         [])
debug_print_p.batch = _debug_print_batch


# --- compiled: a runtime trace whose callback formats and prints ---------------------------------

_PRINT_KEYS: dict[str, tuple] = {}


def _print_key(fmt, tree, batched, in_avals) -> str:
    """The trace key of one print, the same in every process (a compiled module loaded
    from the disk cache names its prints by these keys), registered with its handler."""
    import hashlib

    from funcgrad.lowering import runtime

    spec = f"{fmt}|{tree}|{batched}|{[(a.dtype.name, a.shape) for a in in_avals]}"
    key = "funcgrad.debug.print." + hashlib.sha256(spec.encode()).hexdigest()[:20]
    _PRINT_KEYS[key] = (fmt, tree, batched)
    runtime.TRACE_HANDLERS[key] = _print_trace
    return key


def register_prints(program) -> None:
    """Register the handlers of every debug.print in ``program`` (sub-programs included),
    for a module whose compiled code came from the cache without lowering."""
    from funcgrad.core.ir import IR

    for eqn in program.equations:
        if eqn.prim is debug_print_p:
            _print_key(eqn.params["fmt"], eqn.params["tree"], eqn.params["batched"],
                       [v.aval for v in eqn.inputs])
        for value in eqn.params.values():
            for sub in (value if isinstance(value, tuple) else (value,)):
                if isinstance(sub, IR):
                    register_prints(sub)


def _lower_debug_print(ctx, args, in_avals, out_avals, *, fmt, tree, batched):
    key = _print_key(fmt, tree, batched, in_avals)
    if args:
        ctx.op("flow.tensor.trace", list(args), [], {
            "key": ctx.ir.StringAttr.get(key),
            "operandSegmentSizes": ctx.ir.DenseI32ArrayAttr.get([len(args), 0])})
    else:
        _emit(fmt, tree, [])
    return []


def _print_trace(key, arrays):
    fmt, tree, batched = _PRINT_KEYS[key]
    _debug_print_impl(*arrays, fmt=fmt, tree=tree, batched=batched)


debug_print_p.lower = _lower_debug_print
