"""vmap: vectorizing a function over a batch axis with each primitive's batching rule.

A ``BatchTracer`` holds a value with one extra axis (its ``batch_dim``); its abstract value
is the per-example one.  Values not carrying this interpreter's axis are unbatched; a
rule receives ``None`` as their dimension.  No rule ever falls back to a Python loop.
"""

from __future__ import annotations

import functools

import optree

from funcgrad.core import interpreter as _interp
from funcgrad.core.abstract import ShapedArray, aval_of
from funcgrad.core.interpreter import Interpreter, Tracer
from funcgrad.core.prims.structural import broadcast_in_dim, moveaxis
from funcgrad.transforms.ad import as_tensor, tree_flatten, tree_unflatten
from funcgrad.transforms.tracing import check_callable, check_not_leaked


class BatchTracer(Tracer):
    """A batched value inside ``vmap``: ``value`` has the batch axis at ``batch_dim``."""

    __slots__ = ("value", "batch_dim", "_aval")

    def __init__(self, interp, value, batch_dim: int):
        self._interp = interp
        self.value = value
        self.batch_dim = batch_dim
        full = aval_of(value)
        shape = full.shape[:batch_dim] + full.shape[batch_dim + 1:]
        self._aval = ShapedArray(shape, full.dtype, full.weak_type)

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    @property
    def device(self):
        return _interp.device_of(self.value)


class BatchInterpreter(Interpreter):
    """Applies each primitive's batching rule (see the module docstring)."""

    name = "vmap"

    def __init__(self, parent, axis_size: int):
        super().__init__(parent)
        self.axis_size = axis_size

    def process(self, prim, args, params):
        values, dims, own = [], [], False
        for a in args:
            if isinstance(a, BatchTracer) and a._interp is self:
                values.append(a.value)
                dims.append(a.batch_dim)
                own = True
            else:
                check_not_leaked(a)
                values.append(a)
                dims.append(None)
        if not own:
            return self.forward(prim, args, params)
        if prim.batch is None:
            raise NotImplementedError(f"batching rule for '{prim.name}' not implemented")
        with _interp.using(self.parent):
            out, out_dim = prim.batch(self.axis_size, values, dims, **params)
        if prim.multiple_results:
            return [self.lift(o, d) for o, d in zip(out, out_dim, strict=False)]
        return self.lift(out, out_dim)

    def lift(self, value, dim):
        return value if dim is None else BatchTracer(self, value, dim)

    def unpack(self, x):
        if isinstance(x, BatchTracer) and x._interp is self:
            return x.value, x.batch_dim
        check_not_leaked(x)
        return x, None


def _what(name) -> str:
    return "output" if name == "out_axes" else "argument"


def _broadcast_prefix(prefix, tree, name):
    """Expand an ``in_axes``/``out_axes`` prefix to one entry per leaf of ``tree``."""
    if prefix is None or isinstance(prefix, int):
        return [prefix] * len(tree_flatten(tree)[0])
    if optree.tree_is_leaf(prefix, namespace="funcgrad"):
        raise TypeError(f"vmap: {name} entries must be int or None, got {prefix!r}")
    if optree.tree_is_leaf(tree, namespace="funcgrad"):
        raise ValueError(f"vmap: {name} entry {prefix!r} is a container but the matching "
                         f"{_what(name)} is a leaf of type {type(tree).__name__}")
    p = optree.tree_flatten_one_level(prefix, namespace="funcgrad")
    t = optree.tree_flatten_one_level(tree, namespace="funcgrad")
    if type(prefix) is not type(tree) or len(p.children) != len(t.children) or \
            p.metadata != t.metadata:
        raise ValueError(f"vmap: {name} {prefix!r} is not a prefix of the {_what(name)} "
                         f"structure (a {type(tree).__name__} with {len(t.children)} entries)")
    out = []
    for sub_prefix, sub_tree in zip(p.children, t.children, strict=False):
        out += _broadcast_prefix(sub_prefix, sub_tree, name)
    return out


def _move_out(value, dim, out_axis, axis_size):
    if out_axis is None:
        if dim is not None:
            raise ValueError("vmap: out_axes=None, but the output depends on the mapped axis")
        return value
    value = as_tensor(value)
    ndim = value.ndim + (1 if dim is None else 0)
    if not -ndim <= out_axis < ndim:
        raise ValueError(f"vmap: out_axes {out_axis} out of range for an output of rank "
                         f"{ndim - 1}")
    out_axis %= ndim
    if dim is None:
        shape = list(value.shape)
        shape.insert(out_axis, axis_size)
        kept = tuple(i for i in range(ndim) if i != out_axis)
        return broadcast_in_dim(value, tuple(shape), kept)
    return moveaxis(value, dim, out_axis)


def vmap(fun, in_axes=0, out_axes=0, axis_size: int | None = None):
    """Vectorize ``fun`` over an axis of its inputs (``in_axes``) and outputs (``out_axes``).

    ``in_axes`` is an int, ``None`` (not mapped) or a pytree prefix of the positional
    arguments; keyword arguments are always mapped over their axis 0 (as JAX).

    >>> fg.vmap(lambda row: row.sum())(fg.ones((3, 4)))
    tensor([4., 4., 4.], dtype=float32)
    """
    check_callable("vmap", fun)
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    names = _parameter_names(fun)

    @functools.wraps(fun)
    def batched(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap: in_axes has {len(in_axes)} entries but the function got "
                             f"{len(args)} positional arguments")
        flat, in_tree = tree_flatten((args, kwargs))
        axes = _broadcast_prefix(in_axes, args, "in_axes")
        axes += [0] * (len(flat) - len(axes))  # keyword arguments: axis 0
        flat = [as_tensor(x) if a is not None else x for x, a in zip(flat, axes, strict=True)]
        sizes = {}
        paths = optree.tree_paths((args, kwargs), namespace="funcgrad")
        for i, (x, a) in enumerate(zip(flat, axes, strict=True)):
            if a is None:
                continue
            where = _describe(names, paths[i], x)
            if not isinstance(a, int):
                raise TypeError(f"vmap: in_axes entries must be int or None, got {a!r}")
            if not -x.ndim <= a < max(x.ndim, 0) or x.ndim == 0:
                hint = (" (keyword arguments are always mapped over axis 0, as in JAX; pass "
                        "an unmapped value positionally with in_axes=None, or close over "
                        "it)") if paths[i][0] == 1 else ""
                raise ValueError(f"vmap: in_axes={a} out of range for {where} (rank "
                                 f"{x.ndim}){hint}")
            axes[i] = a % x.ndim
            sizes[where] = x.shape[axes[i]]
        distinct = set(sizes.values())
        if axis_size is not None:
            distinct.add(axis_size)
        if len(distinct) > 1:
            listing = ", ".join(f"{where} has size {s} on the mapped axis"
                                for where, s in sizes.items())
            if axis_size is not None:
                listing += f", axis_size={axis_size}"
            raise ValueError(f"vmap got inconsistent sizes for the mapped axis: {listing}")
        if not distinct:
            raise ValueError("vmap: no argument is mapped (all in_axes are None); pass "
                             "axis_size=")
        size = distinct.pop()
        interp = BatchInterpreter(_interp.current(), size)
        try:
            with _interp.using(interp):
                ins = [interp.lift(x, a) for x, a in zip(flat, axes, strict=True)]
                call_args, call_kwargs = tree_unflatten(in_tree, ins)
                out = fun(*call_args, **call_kwargs)
            out_flat, out_tree = tree_flatten(out)
            unpacked = [interp.unpack(o) for o in out_flat]
        finally:
            interp.active = False
        out_axes_flat = _broadcast_prefix(out_axes, out, "out_axes")
        results = [_move_out(v, d, oa, size)
                   for (v, d), oa in zip(unpacked, out_axes_flat, strict=False)]
        return tree_unflatten(out_tree, results)

    return batched


def _parameter_names(fun) -> list | None:
    import inspect

    try:
        return [p.name for p in inspect.signature(fun).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None


def _describe(names, path, x) -> str:
    """``argument w of shape (3, 4)``: a leaf of vmap's (args, kwargs) by its name."""
    kind, key, *rest = path
    if kind == 1:
        name = str(key)
    elif names is not None and key < len(names):
        name = names[key]
    else:
        name = f"#{key}"
    inner = "".join(f"[{p!r}]" for p in rest)
    return f"argument {name}{inner} of shape {tuple(x.shape)}"


def _path(path) -> str:
    return "".join(f"[{p!r}]" for p in path) or "[0]"
