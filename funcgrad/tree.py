"""funcgrad.tree: pytrees (nested containers of tensors), backed by optree.

A pytree is a nest of containers whose non-container contents are its *leaves*.
Tuples, lists, dicts, namedtuples and ``None`` are containers ("nodes"); ``None`` is a
node with no children, so it has no leaves (as in JAX).  Tensors, arrays, numbers and
any type not registered as a node are leaves.  Dict entries are visited in sorted key
order, so ``{"b": x, "a": y}`` has the leaves ``[y, x]``.

Every function here works in optree's ``"funcgrad"`` namespace: types registered with
:func:`register_node` or :func:`register_dataclass` are nodes for funcgrad (and for
``jit``/``grad``/``vmap``), without touching other libraries' optree registries.

>>> from funcgrad import tree
>>> tree.map(lambda x: x * 2, {"w": 1, "b": (2, None)})
{'w': 2, 'b': (4, None)}
>>> tree.leaves({"w": 1, "b": (2, None)})
[2, 1]
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import optree

NAMESPACE = "funcgrad"

_MISSING = object()

PyTreeDef = optree.PyTreeSpec
"""The structure of a pytree (what :func:`structure` and :func:`flatten` return)."""

__all__ = [
    "NAMESPACE", "PyTreeDef", "all", "broadcast", "flatten", "flatten_with_path", "keystr",
    "leaves", "leaves_with_path", "map", "map_with_path", "reduce", "register_dataclass",
    "register_node", "structure", "structure_equal", "transpose", "unflatten",
]


def map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None):  # noqa: A001
    """Apply ``f`` to every leaf of ``tree`` (and the matching leaves of ``rest``).

    Arguments:
        f: called as ``f(leaf, *matching_leaves_of_rest)``.
        tree: the pytree whose structure the result has.
        rest: pytrees with the same structure as ``tree`` (or with ``tree`` as a prefix).
        is_leaf: optional predicate; a subtree for which it returns True is a leaf.

    >>> fg.tree.map(lambda x, y: x + y, (1, [2]), (10, [20]))
    (11, [22])
    """
    return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, namespace=NAMESPACE)


def map_with_path(f: Callable, tree: Any, *rest: Any,
                  is_leaf: Callable[[Any], bool] | None = None):
    """Like :func:`map`, but ``f(path, leaf, *rest_leaves)`` also gets the leaf's path.

    A path is a tuple of keys: positions for sequences and namedtuples, keys for dicts,
    and the entries a registered node declares (field names for dataclasses).

    >>> fg.tree.map_with_path(lambda p, x: p, {"a": [5, 6]})
    {'a': [('a', 0), ('a', 1)]}
    """
    return optree.tree_map_with_path(f, tree, *rest, is_leaf=is_leaf, namespace=NAMESPACE)


def leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of ``tree`` in order (dicts in sorted key order; ``None`` has none).

    >>> fg.tree.leaves([1, {"b": 2, "a": 3}, None])
    [1, 3, 2]
    """
    return optree.tree_leaves(tree, is_leaf=is_leaf, namespace=NAMESPACE)


def leaves_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """``(path, leaf)`` pairs of ``tree`` in leaf order.

    >>> fg.tree.leaves_with_path({"a": (1, 2)})
    [(('a', 0), 1), (('a', 1), 2)]
    """
    paths, values, _ = optree.tree_flatten_with_path(tree, is_leaf=is_leaf,
                                                     namespace=NAMESPACE)
    return list(zip(paths, values, strict=True))


def keystr(path: tuple) -> str:
    """A leaf's path as indexing text (``""`` for the root), as ``jax.tree_util.keystr``.

    >>> fg.tree.keystr(("a", 0))
    "['a'][0]"
    """
    return "".join(f"[{key!r}]" for key in path)


def structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The structure (treedef) of ``tree``: everything but the leaves.

    >>> fg.tree.structure({"a": 1, "b": (2, 3)})
    PyTreeSpec({'a': *, 'b': (*, *)})
    """
    return optree.tree_structure(tree, is_leaf=is_leaf, namespace=NAMESPACE)


def flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, PyTreeDef]:
    """``(leaves, treedef)`` of ``tree``; :func:`unflatten` inverts it.

    >>> leaves, treedef = fg.tree.flatten({"a": 1, "b": (2, 3)})
    >>> leaves
    [1, 2, 3]
    >>> fg.tree.unflatten(treedef, [x * 10 for x in leaves])
    {'a': 10, 'b': (20, 30)}
    """
    return optree.tree_flatten(tree, is_leaf=is_leaf, namespace=NAMESPACE)


def flatten_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                      ) -> tuple[list, PyTreeDef]:
    """``([(path, leaf), ...], treedef)`` of ``tree``.

    >>> fg.tree.flatten_with_path([7, 8])[0]
    [((0,), 7), ((1,), 8)]
    """
    paths, values, treedef = optree.tree_flatten_with_path(tree, is_leaf=is_leaf,
                                                           namespace=NAMESPACE)
    return list(zip(paths, values, strict=True)), treedef


def unflatten(treedef: PyTreeDef, leaves: Iterable) -> Any:
    """Rebuild a pytree of structure ``treedef`` from ``leaves`` (in leaf order).

    >>> fg.tree.unflatten(fg.tree.structure((0, [0])), [1, 2])
    (1, [2])
    """
    if not isinstance(treedef, PyTreeDef):
        raise TypeError(f"tree.unflatten: expected a treedef from tree.structure or "
                        f"tree.flatten as the first argument, got {type(treedef).__name__} "
                        "(the signature is unflatten(treedef, leaves))")
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree.unflatten: the treedef {treedef} has {treedef.num_leaves} "
                         f"leaves, but {len(leaves)} were given")
    return optree.tree_unflatten(treedef, leaves)


def structure_equal(*trees: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True when all ``trees`` have the same structure (their leaves may differ).

    >>> fg.tree.structure_equal({"a": 1}, {"a": 2.0}), fg.tree.structure_equal((1,), [1])
    (True, False)
    """
    if not trees:
        return True
    first = structure(trees[0], is_leaf)
    return builtins.all(structure(t, is_leaf) == first for t in trees[1:])


def reduce(function: Callable, tree: Any, initializer: Any = _MISSING,
           is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Fold ``function(accumulated, leaf)`` over the leaves, like ``functools.reduce``.

    >>> fg.tree.reduce(lambda a, b: a + b, {"a": 1, "b": [2, 3]}, 0)
    6
    """
    if initializer is _MISSING:
        return optree.tree_reduce(function, tree, is_leaf=is_leaf, namespace=NAMESPACE)
    return optree.tree_reduce(function, tree, initializer, is_leaf=is_leaf,
                              namespace=NAMESPACE)


def all(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:  # noqa: A001
    """True when every leaf is truthy (True for a tree without leaves).

    >>> fg.tree.all({"a": True, "b": (1, None)})
    True
    """
    return builtins.all(leaves(tree, is_leaf))


def transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef, tree: Any) -> Any:
    """Swap the outer and inner levels of a tree-of-trees.

    ``tree`` has structure ``outer_treedef`` with, at each of its leaves, a tree of
    structure ``inner_treedef``; the result is an inner tree of outer trees.

    >>> outer = fg.tree.structure([0, 0])
    >>> inner = fg.tree.structure({"a": 0, "b": 0})
    >>> fg.tree.transpose(outer, inner, [{"a": 1, "b": 2}, {"a": 3, "b": 4}])
    {'a': [1, 3], 'b': [2, 4]}
    """
    return optree.tree_transpose(outer_treedef, inner_treedef, tree)


def broadcast(prefix_tree: Any, full_tree: Any,
              is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Repeat each leaf of ``prefix_tree`` over the subtree it covers in ``full_tree``.

    Used to expand a pytree *prefix* (as ``vmap``'s ``in_axes``) to the full structure.

    >>> fg.tree.broadcast((0, 1), ([5, 6], {"a": 7}))
    ([0, 0], {'a': 1})
    """
    return optree.tree_broadcast_prefix(prefix_tree, full_tree, is_leaf=is_leaf,
                                        namespace=NAMESPACE)


# --- registration ------------------------------------------------------------------------


def register_node(cls: type, flatten: Callable, unflatten: Callable) -> type:
    """Make ``cls`` a pytree node for funcgrad.

    Arguments:
        cls: the class to register.
        flatten: ``flatten(obj) -> (children, aux)``; ``children`` is a sequence of
            subtrees, ``aux`` hashable static data that rebuilding needs.
        unflatten: ``unflatten(aux, children) -> obj``.

    Returns ``cls``.

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> _ = fg.tree.register_node(Pair, lambda p: ((p.a, p.b), None),
    ...                           lambda aux, children: Pair(*children))
    >>> fg.tree.leaves(Pair(1, (2, 3)))
    [1, 2, 3]
    """
    if not isinstance(cls, type):
        raise TypeError(f"tree.register_node: expected a class, got {cls!r}")

    def flatten_func(obj):
        children, aux = flatten(obj)
        return tuple(children), aux

    def unflatten_func(aux, children):
        return unflatten(aux, children)

    try:
        optree.register_pytree_node(cls, flatten_func, unflatten_func, namespace=NAMESPACE)
    except ValueError as err:
        raise ValueError(f"tree.register_node: {cls.__qualname__} cannot be registered: "
                         f"{err}") from None
    return cls


def register_dataclass(cls: type | None = None, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None):
    """Make a dataclass a pytree node: data fields are children, meta fields static.

    Usable as a decorator (``@tree.register_dataclass``, or with arguments
    ``@tree.register_dataclass(meta_fields=["activation"])``) or called directly.

    Arguments:
        cls: a dataclass (decorate with ``@dataclasses.dataclass`` first).
        data_fields: names of the fields that are subtrees (leaves are tensors).
        meta_fields: names of the fields kept as static, hashable metadata in the treedef.
            By default every field is a data field except those declared with
            ``dataclasses.field(metadata={"static": True})``; give one list and the other
            is every remaining field.

    Rebuilding sets the fields directly (``__init__`` and ``__post_init__`` are not run),
    so frozen dataclasses work and transformations may put any value in a leaf.

    >>> @fg.tree.register_dataclass
    ... @dataclasses.dataclass(frozen=True)
    ... class Linear:
    ...     weight: object
    ...     bias: object
    ...     name: str = dataclasses.field(default="lin", metadata={"static": True})
    >>> fg.tree.leaves(Linear(1.0, 2.0))
    [1.0, 2.0]
    """
    if cls is None:
        return functools.partial(register_dataclass, data_fields=data_fields,
                                 meta_fields=meta_fields)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"tree.register_dataclass: {cls!r} is not a dataclass; decorate it "
                        "with @dataclasses.dataclass first (below @tree.register_dataclass)")
    names = [f.name for f in dataclasses.fields(cls)]
    if data_fields is None and meta_fields is None:
        meta = [f.name for f in dataclasses.fields(cls) if f.metadata.get("static", False)]
        data = [n for n in names if n not in meta]
    elif data_fields is None:
        meta = list(meta_fields)
        data = [n for n in names if n not in meta]
    elif meta_fields is None:
        data = list(data_fields)
        meta = [n for n in names if n not in data]
    else:
        data, meta = list(data_fields), list(meta_fields)
    unknown = [n for n in data + meta if n not in names]
    if unknown:
        raise ValueError(f"tree.register_dataclass: {cls.__qualname__} has no fields "
                         f"{unknown}; its fields are {names}")
    both = sorted(set(data) & set(meta))
    if both:
        raise ValueError(f"tree.register_dataclass: fields {both} are listed both as data "
                         "and as meta fields")
    missing = [n for n in names if n not in data and n not in meta]
    if missing:
        raise ValueError(f"tree.register_dataclass: fields {missing} of {cls.__qualname__} "
                         "are neither data nor meta fields; list every field")
    data, meta = tuple(data), tuple(meta)

    def flatten_func(obj):
        return (tuple(getattr(obj, n) for n in data),
                tuple(getattr(obj, n) for n in meta), data)

    def unflatten_func(aux, children):
        obj = object.__new__(cls)
        for name, value in zip(data, children, strict=True):
            object.__setattr__(obj, name, value)
        for name, value in zip(meta, aux, strict=True):
            object.__setattr__(obj, name, value)
        return obj

    optree.register_pytree_node(cls, flatten_func, unflatten_func,
                                path_entry_type=optree.GetAttrEntry, namespace=NAMESPACE)
    return cls

