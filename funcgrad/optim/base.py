"""The gradient-transformation protocol (Optax's): ``init``/``update`` pairs, ``chain``,
``apply_updates``, and the small tree helpers the transformations share.

A ``GradientTransformation`` is a pair of pure functions:
``state = init(params)`` and ``updates, state = update(updates, state, params=None,
**extra_args)``.  States are pytrees of Tensors (step counts are int32 scalars), so an
``update`` can be jitted, and ``chain`` composes transformations into one.

>>> from funcgrad import optim
>>> opt = optim.chain(optim.clip_by_global_norm(1.0), optim.sgd(0.1))
>>> params = {"w": fg.ones(3)}
>>> state = opt.init(params)
>>> updates, state = opt.update({"w": fg.ones(3)}, state, params)
>>> params = optim.apply_updates(params, updates)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import tree
from funcgrad.core import dtypes
from funcgrad.core.tensor import Tensor, tensor
from funcgrad.numpy._creation import full_like  # (fnp.full_like is the primitive)

__all__ = [
    "EmptyState", "GradientTransformation", "Schedule", "apply_updates", "chain",
    "identity", "set_to_zero",
]

Schedule = Callable[[Any], Any]
"""A function from the step count (an int32 scalar) to a value such as a learning rate."""


class GradientTransformation(NamedTuple):
    """A pure gradient transformation: ``init(params) -> state`` and
    ``update(updates, state, params=None, **extra_args) -> (updates, state)``.

    >>> opt = optim.sgd(0.1)
    >>> state = opt.init({"w": fg.ones(2)})
    """

    init: Callable
    update: Callable


class EmptyState(NamedTuple):
    """The state of a stateless transformation (a pytree without leaves)."""


def identity() -> GradientTransformation:
    """The transformation that returns the updates unchanged.

    >>> optim.identity().update({"w": fg.ones(2)}, optim.EmptyState())[0]["w"].shape
    (2,)
    """

    def init_fn(params):
        return EmptyState()

    def update_fn(updates, state, params=None, **extra_args):
        return updates, state

    return GradientTransformation(init_fn, update_fn)


def set_to_zero() -> GradientTransformation:
    """The transformation that replaces every update by zeros (freezes parameters).

    >>> optim.set_to_zero().update({"w": fg.ones(2)}, optim.EmptyState())[0]["w"]
    tensor([0., 0.], dtype=float32)
    """

    def init_fn(params):
        return EmptyState()

    def update_fn(updates, state, params=None, **extra_args):
        return tree.map(fnp.zeros_like, updates), state

    return GradientTransformation(init_fn, update_fn)


def _accepts_extra_args(fn: Callable) -> bool:
    """Whether ``fn`` takes ``**kwargs`` (transformations written without extra-argument
    support get none, so ``chain`` can mix them with the line search's ``value_fn``)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Apply ``transforms`` one after the other; the state is the tuple of their states.

    Extra keyword arguments of ``update`` (``value``, ``grad``, ``value_fn`` for a line
    search) reach every transformation that accepts ``**extra_args``.

    Arguments:
        transforms: the transformations, applied left to right.

    >>> opt = optim.chain(optim.clip_by_global_norm(1.0), optim.scale_by_adam(),
    ...                   optim.scale_by_learning_rate(1e-3))
    >>> state = opt.init({"w": fg.ones(2)})
    """
    for i, t in enumerate(transforms):
        if not (callable(getattr(t, "init", None)) and callable(getattr(t, "update", None))):
            raise TypeError(f"chain: argument {i} is a {type(t).__name__}, not a gradient "
                            "transformation (an object with init and update)")
    passes_extra = [_accepts_extra_args(t.update) for t in transforms]

    def init_fn(params):
        return tuple(t.init(params) for t in transforms)

    def update_fn(updates, state, params=None, **extra_args):
        if len(state) != len(transforms):
            raise ValueError(f"chain: the state has {len(state)} entries but the chain has "
                             f"{len(transforms)} transformations; was it made by this "
                             "optimizer's init?")
        if params is not None:
            check_matching("update", "updates", updates, "params", params)
        new_state = []
        for i, (t, s, extra) in enumerate(zip(transforms, state, passes_extra, strict=True)):
            try:
                updates, s = t.update(updates, s, params, **(extra_args if extra else {}))
            except AttributeError as err:
                # another optimizer's state: "'EmptyState' object has no attribute 'mu'"
                if f"'{type(s).__name__}' object has no attribute" not in str(err):
                    raise
                raise ValueError(f"update: transformation {i} of the chain cannot use the "
                                 f"state it was given ({type(s).__name__}); was the state "
                                 "made by this optimizer's init?") from err
            new_state.append(s)
        return updates, tuple(new_state)

    return GradientTransformation(init_fn, update_fn)


def apply_updates(params: Any, updates: Any) -> Any:
    """``params + updates`` leaf by leaf, keeping each parameter's dtype.

    Arguments:
        params: a pytree of Tensors (dicts, tuples, nn.Modules, ...).
        updates: a pytree of the same structure (``None`` leaves keep the parameter).

    >>> optim.apply_updates({"w": fg.ones(2)}, {"w": fg.tensor([0.5, -1.0])})
    {'w': tensor([1.5, 0. ], dtype=float32)}
    """

    def apply(p, u):
        if u is None:
            return p
        p = fnp.asarray(p)
        return fnp.add(p, u).astype(p.dtype)

    check_matching("apply_updates", "updates", updates, "params", params)
    return tree.map(apply, params, updates, is_leaf=lambda x: x is None)


def check_matching(name: str, what: str, values: Any, against_name: str, against: Any) -> None:
    """Raise a ValueError naming the first leaf where the pytree ``values`` does not match
    ``against`` in structure or shape (the arithmetic's own error named neither the leaf
    nor the argument: "add: shapes (4,) and (3,) cannot be broadcast together")."""
    def is_leaf(x):
        return x is None

    pairs, structure = tree.flatten_with_path(values, is_leaf=is_leaf)
    others, other_structure = tree.flatten(against, is_leaf=is_leaf)
    if structure != other_structure:
        raise ValueError(f"{name}: {what} and {against_name} have different tree "
                         f"structures: {structure} against {other_structure}")
    for (path, v), a in zip(pairs, others, strict=True):
        if v is None or a is None:
            continue
        if np.shape(v) != np.shape(a):
            where = tree.keystr(path) or "(the root)"
            raise ValueError(f"{name}: {what}{where} has shape {tuple(np.shape(v))} but "
                             f"{against_name}{where} has shape {tuple(np.shape(a))}")


# --- tree helpers shared by the transformations -----------------------------------------------


def _require_params(name: str, params) -> None:
    if params is None:
        raise ValueError(f"{name}: this transformation needs the parameters; call "
                         "update(updates, state, params)")


def _full_like(p, value, dtype=None, shape=None):
    """``fnp.full_like(p, value, dtype, shape)``, except that a concrete result gets its own
    writeable buffer.  (``fnp.zeros_like`` gives read-only broadcast buffers, and the jit
    runtime's zero-copy import refuses a read-only 0-d buffer that happens to be 64-byte
    aligned with a BufferError, so states holding one could not be passed to jit.)"""
    if not isinstance(p, Tensor):
        p = fnp.asarray(p)
    dtype = p.dtype if dtype is None else dtype
    shape = p.shape if shape is None else shape
    if type(p) is Tensor:  # concrete, not traced
        return tensor(np.full(shape, value, dtype=dtype), device=p.device)
    return full_like(p, value, dtype=dtype, shape=shape)


def _tree_zeros_like(params, dtype=None):
    return tree.map(lambda p: _full_like(p, 0, dtype), params)


def _tree_cast(updates, dtype):
    if dtype is None:
        return updates
    return tree.map(lambda u: fnp.asarray(u).astype(dtype), updates)


def _tree_vdot(a, b):
    """``sum_leaves sum(a * b)`` (the inner product of two pytrees), a scalar Tensor."""
    parts = [fnp.sum(fnp.multiply(x, y)) for x, y in
             zip(tree.leaves(a), tree.leaves(b), strict=True)]
    if not parts:
        return fnp.zeros((), dtype=dtypes.float32)
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total


def _tree_sum_of_squares(t):
    return _tree_vdot(t, t)


def _scalar_dtype(params):
    """float64 when a leaf is float64, else float32: the dtype of reductions over ``params``."""
    for leaf in tree.leaves(params):
        dtype = leaf.dtype if isinstance(leaf, Tensor) else fnp.asarray(leaf).dtype
        if dtype == dtypes.float64:
            return dtypes.float64
    return dtypes.float32


def _safe_increment(count):
    """``count + 1`` without wrapping around at the int32 maximum."""
    limit = int(dtypes.iinfo(dtypes.int32).max)
    return fnp.where(count < limit, count + 1, count)


def _zero_count():
    return tensor(0, dtype=dtypes.int32)
