"""nn.Module: frozen, dataclass-like layers that are pytrees (Tensor fields are leaves).

A module declares its fields as class annotations and assigns them in ``__init__``;
afterwards it is frozen.  Fields whose value holds Tensors (directly, in lists, tuples or
dicts, or inside sub-modules) are the pytree children; every other field (sizes, flags,
functions) is static metadata stored in the tree definition, so ``jit`` caches on it and
``grad``/``vmap`` never see it.

>>> import funcgrad as fg
>>> from funcgrad import nn
>>> class Affine(nn.Module):
...     scale: fg.Tensor
...     name: str
...     def __init__(self, n):
...         self.scale = fg.ones(n)
...         self.name = "affine"
...     def forward(self, x):
...         return x * self.scale
>>> m = Affine(3)
>>> m(fg.ones(3)), nn.parameters(m)
(tensor([1., 1., 1.], dtype=float32), [tensor([1., 1., 1.], dtype=float32)])
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

import numpy as np
import optree

from funcgrad.core.tensor import Tensor

__all__ = ["Identity", "Module", "Sequential", "parameters"]

_NS = "funcgrad"
_FROZEN = "_module_frozen"
_CHILDREN = "_module_children"
_AUX = "_module_aux"
_HIDDEN = (_FROZEN, _CHILDREN, _AUX)


# --- static values in the tree definition --------------------------------------------------


_CONTAINERS = (list, tuple, dict)  # and Module, added below its definition


def _static_equal(a, b) -> bool:
    """Whether two static field values are the same, leaf by leaf: a Module or container
    compared by its structure alone let jit reuse a program traced for other values (a
    static sub-module whose leaves are numbers), and lists of arrays or of modules never
    compared equal (every freshly built model retraced)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    if isinstance(a, _CONTAINERS):
        leaves_a, structure_a = optree.tree_flatten(a, namespace=_NS)
        leaves_b, structure_b = optree.tree_flatten(b, namespace=_NS)
        return structure_a == structure_b and all(
            _static_equal(x, y) for x, y in zip(leaves_a, leaves_b, strict=True))
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001  (an odd __eq__: treat as different)
        return False


class _Static:
    """Wraps a static field value so the treedef can be hashed and compared even when the
    value is unhashable (a list, a NumPy array): equal values hash alike by type."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        if not isinstance(other, _Static):
            return NotImplemented
        return _static_equal(self.value, other.value)

    def __hash__(self):
        value = self.value
        try:
            if isinstance(value, _CONTAINERS):  # leaves left out: equal ones hash alike
                return hash((type(value), optree.tree_structure(value, namespace=_NS)))
            return hash(value)
        except TypeError:
            return hash(type(value))

    def __repr__(self):
        return repr(self.value)


# --- the pytree representation --------------------------------------------------------------


def _field_kind(value) -> str:
    """'dynamic' (only Tensor leaves), 'static' (no Tensor leaves) or 'mixed'."""
    if isinstance(value, Tensor):
        return "dynamic"
    leaves = optree.tree_leaves(value, namespace=_NS)
    tensors = [isinstance(leaf, Tensor) for leaf in leaves]
    if not any(tensors):
        return "static"
    return "dynamic" if all(tensors) else "mixed"


def _build_representation(obj, kinds=None) -> tuple[tuple, tuple]:
    """(children, aux) of a module from its field values.

    Children are the dynamic field values, and for a mixed field (say a tuple of layers and
    plain functions) the tuple of its Tensor leaves; aux holds the names, the static values
    and, for mixed fields, the structure and non-Tensor leaves needed to rebuild them.
    """
    names, children, static, mixed = [], [], [], []
    values = obj.__dict__
    for name in type(obj)._module_fields:
        value = values[name]
        kind = (kinds or {}).get(name) or _field_kind(value)
        if kind == "static":
            static.append((name, _Static(value)))
            continue
        names.append(name)
        if kind == "dynamic":
            children.append(value)
        else:
            # the field's own structure with None (no leaves) for its non-Tensor leaves:
            # the Tensors keep their paths ('layers', 2, 'weight'); a flat tuple of them
            # numbered them 0, 1, 2... whatever the field held (save keys included)
            leaves, spec = optree.tree_flatten(value, none_is_leaf=True, namespace=_NS)
            mask = tuple(isinstance(leaf, Tensor) for leaf in leaves)
            children.append(optree.tree_unflatten(
                spec, [leaf if m else None for leaf, m in zip(leaves, mask, strict=True)]))
            others = tuple(_Static(leaf) for leaf, m in zip(leaves, mask, strict=True) if not m)
            mixed.append((name, spec, mask, others))
    return tuple(children), (tuple(names), tuple(static), tuple(mixed))


def _freeze(obj, children, aux):
    object.__setattr__(obj, _CHILDREN, children)
    object.__setattr__(obj, _AUX, aux)
    object.__setattr__(obj, _FROZEN, True)


def _flatten_module(obj):
    names = obj.__dict__[_AUX][0]
    return obj.__dict__[_CHILDREN], obj.__dict__[_AUX], names


def _unflatten_module(cls, aux, children):
    names, static, mixed = aux
    obj = object.__new__(cls)
    values = obj.__dict__
    for name, holder in static:
        values[name] = holder.value
    mixed_by_name = {m[0]: m[1:] for m in mixed}
    for name, child in zip(names, children, strict=True):
        if name in mixed_by_name:
            spec, mask, others = mixed_by_name[name]
            tensors = optree.tree_leaves(child, none_is_leaf=True, namespace=_NS)
            rest = iter(others)
            leaves = [t if m else next(rest).value for t, m in zip(tensors, mask, strict=True)]
            child = optree.tree_unflatten(spec, leaves)
        values[name] = child
    # keep the fields in declaration order (repr, replace)
    ordered = {name: values[name] for name in cls._module_fields}
    values.clear()
    values.update(ordered)
    _freeze(obj, tuple(children), aux)
    return obj


# --- Module -----------------------------------------------------------------------------------


def _declared_fields(cls) -> tuple[str, ...]:
    fields: dict[str, None] = {}
    for klass in reversed(cls.__mro__):
        annotations = klass.__dict__.get("__annotations__", {})
        for name, annotation in annotations.items():
            text = annotation if isinstance(annotation, str) else repr(annotation)
            if "ClassVar" in text or annotation is typing.ClassVar:
                continue
            fields[name] = None
    return tuple(fields)


class _ModuleMeta(type):
    """Runs ``__init__`` and then freezes the instance and checks every field was set."""

    def __call__(cls, *args, **kwargs):
        obj = cls.__new__(cls)
        obj.__init__(*args, **kwargs)
        values = obj.__dict__
        for name in cls._module_fields:
            if name not in values:
                default = getattr(cls, name, _MISSING)
                if default is _MISSING:
                    raise TypeError(f"{cls.__name__}.__init__ did not set the field {name!r}; "
                                    "assign every declared field (None is fine)")
                values[name] = default
        ordered = {name: values[name] for name in cls._module_fields}
        values.clear()
        values.update(ordered)
        children, aux = _build_representation(obj)
        _freeze(obj, children, aux)
        return obj


_MISSING = object()


class Module(metaclass=_ModuleMeta):
    """Base class of layers and models: a frozen pytree whose leaves are its Tensors.

    Subclass it, declare the fields as annotations, assign them in ``__init__`` and define
    ``forward``; ``model(x)`` calls ``model.forward(x)``.  After ``__init__`` the instance is
    frozen: use :meth:`replace` for a modified copy.  Tensor-valued fields (also inside
    lists, tuples, dicts and sub-modules) are the pytree leaves, so ``fg.grad(loss)(model,
    x)`` returns a model-shaped gradient; other fields are static and part of the treedef
    (``fg.jit`` retraces when they change).

    Keep integer state (counters, indices) out of modules that you differentiate: ``grad``
    accepts float leaves only.  Stateful layers (``BatchNorm``) return their state instead.

    Example:
        >>> class MLP(nn.Module):
        ...     layers: tuple
        ...     def __init__(self, *, key):
        ...         k1, k2 = fg.random.split(key)
        ...         self.layers = (nn.Linear(2, 8, key=k1), nn.Linear(8, 1, key=k2))
        ...     def forward(self, x):
        ...         return self.layers[1](F.relu(self.layers[0](x)))
        >>> model = MLP(key=fg.random.key(0))
        >>> grads = fg.grad(lambda m, x: m(x).sum())(model, fg.ones((4, 2)))
    """

    _module_fields = ()  # the declared field names, set per subclass (not a field itself)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._module_fields = _declared_fields(cls)
        optree.register_pytree_node(
            cls, _flatten_module, lambda aux, children, cls=cls: _unflatten_module(cls, aux,
                                                                                   children),
            path_entry_type=optree.GetAttrEntry, namespace=_NS)

    def __setattr__(self, name, value):
        if self.__dict__.get(_FROZEN, False):
            if name not in type(self)._module_fields:
                raise AttributeError(
                    f"{type(self).__name__} is frozen and has no field {name!r}: declare it "
                    f"as an annotated field in the class body (e.g. `{name}: fg.Tensor`) and "
                    "assign it in __init__; model.replace(field=...) gives a modified copy")
            raise AttributeError(
                f"{type(self).__name__} is frozen: cannot set {name!r} after __init__; use "
                f"model.replace({name}=...) to get a modified copy")
        if name not in type(self)._module_fields:
            raise AttributeError(
                f"{type(self).__name__} has no field {name!r}; declare it as an annotated "
                f"field in the class body (e.g. `{name}: fg.Tensor`)")
        self.__dict__[name] = value

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {name!r}; use "
                             "model.replace(...) to get a modified copy")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        """The computation of the module (override it)."""
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def replace(self, **fields) -> Module:
        """A copy with the given fields replaced (the module itself is unchanged).

        >>> lin = nn.Linear(2, 3, key=fg.random.key(0))
        >>> lin.replace(bias=fg.zeros(3)).bias
        tensor([0., 0., 0.], dtype=float32)
        """
        cls = type(self)
        unknown = sorted(set(fields) - set(cls._module_fields))
        if unknown:
            raise TypeError(f"{cls.__name__}.replace: no fields {unknown}; the fields are "
                            f"{list(cls._module_fields)}")
        obj = object.__new__(cls)
        values = {name: fields.get(name, self.__dict__[name]) for name in cls._module_fields}
        obj.__dict__.update(values)
        # the fields not replaced keep their kind: a module whose leaves tree.map made
        # numbers had them turned into static fields (its structure changed)
        names, static, mixed = self.__dict__[_AUX]
        kinds = {name: "dynamic" for name in names}
        kinds.update({name: "static" for name, _ in static})
        kinds.update({m[0]: "mixed" for m in mixed})
        for name in fields:
            kinds.pop(name, None)
        children, aux = _build_representation(obj, kinds)
        _freeze(obj, children, aux)
        return obj

    def __repr__(self):
        parts = []
        for name in type(self)._module_fields:
            value = self.__dict__.get(name)
            parts.append(f"{name}={_short(value)}")
        return f"{type(self).__name__}({', '.join(parts)})"


def _short(value) -> str:
    if isinstance(value, Tensor):
        return f"{value.dtype.name}{list(value.shape)}"
    if isinstance(value, (list, tuple)) and any(isinstance(v, (Tensor, Module)) for v in value):
        inner = ", ".join(_short(v) for v in value)
        if isinstance(value, list):
            return f"[{inner}]"
        return f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, dict) and any(isinstance(v, (Tensor, Module)) for v in value.values()):
        return "{" + ", ".join(f"{k!r}: {_short(v)}" for k, v in value.items()) + "}"
    if callable(value) and not isinstance(value, Module) and hasattr(value, "__name__"):
        return value.__name__
    return repr(value)


def parameters(model) -> list[Tensor]:
    """The Tensor leaves of ``model`` (any pytree) in tree order.

    >>> [p.shape for p in nn.parameters(nn.Linear(3, 2, key=fg.random.key(0)))]
    [(2, 3), (2,)]
    """
    return [leaf for leaf in optree.tree_leaves(model, namespace=_NS)
            if isinstance(leaf, Tensor)]


# --- plumbing of key= / inference= -------------------------------------------------------------


_ACCEPTS: dict[Any, frozenset] = {}


def call_keywords(layer) -> frozenset:
    """Which of ``key`` and ``inference`` the layer's call accepts (cached per type)."""
    target = layer.forward if isinstance(layer, Module) else layer
    cache_key = type(layer) if isinstance(layer, Module) else target
    try:
        return _ACCEPTS[cache_key]
    except (KeyError, TypeError):
        pass
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        accepted = frozenset()
    else:
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            accepted = frozenset(("key", "inference"))
        else:
            # keyword-only, or optional: MultiheadAttention's required positional `key` is
            # its key *tensor*, not a random key
            accepted = frozenset(
                n for n in ("key", "inference") if n in params and (
                    params[n].kind is inspect.Parameter.KEYWORD_ONLY
                    or params[n].default is not inspect.Parameter.empty))
    try:
        _ACCEPTS[cache_key] = accepted
    except TypeError:
        pass
    return accepted


class Sequential(Module):
    """Layers applied one after another; ``key=`` is split among the layers that take one
    and ``inference=`` is passed on to those that accept it.

    Arguments:
        *layers: modules or plain functions of one argument (e.g. ``F.relu``).

    Example:
        >>> k1, k2 = fg.random.split(fg.random.key(0))
        >>> model = nn.Sequential(nn.Linear(4, 8, key=k1), nn.ReLU(), nn.Dropout(0.1),
        ...                       nn.Linear(8, 2, key=k2))
        >>> model(fg.ones((3, 4)), key=fg.random.key(1)).shape
        (3, 2)
        >>> model(fg.ones((3, 4)), inference=True).shape
        (3, 2)
    """

    layers: tuple

    def __init__(self, *layers):
        for i, layer in enumerate(layers):
            if not callable(layer):
                raise TypeError(f"Sequential: layer {i} ({layer!r}) is not callable")
            if type(layer).__name__ == "BatchNorm":
                raise TypeError("Sequential: BatchNorm returns (y, state) and needs its state "
                                "passed in; call it explicitly in a Module's forward instead")
        self.layers = tuple(layers)

    def forward(self, x, *, key=None, inference: bool | None = None):
        from funcgrad import random

        takes_key = [("key" in call_keywords(layer)) for layer in self.layers]
        keys: list = [None] * len(self.layers)
        if key is not None and any(takes_key):
            split = random.split(key, sum(takes_key))
            it = iter(range(sum(takes_key)))
            keys = [split[next(it)] if takes else None for takes in takes_key]
        for layer, layer_key, takes in zip(self.layers, keys, takes_key, strict=True):
            kwargs = {}
            accepted = call_keywords(layer)
            if takes and layer_key is not None:
                kwargs["key"] = layer_key
            if inference is not None and "inference" in accepted:
                kwargs["inference"] = inference
            x = layer(x, **kwargs)
        return x

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(*self.layers[index])
        return self.layers[index]

    def __len__(self):
        return len(self.layers)

    def __iter__(self):
        return iter(self.layers)


class Identity(Module):
    """Returns its input unchanged (constructor arguments are ignored, as PyTorch's).

    Example:
        >>> nn.Identity()(fg.ones(2))
        tensor([1., 1.], dtype=float32)
    """

    def __init__(self, *args, **kwargs):
        pass

    def forward(self, x):
        return x


_CONTAINERS = (*_CONTAINERS, Module)  # static sub-modules compare leaf by leaf too
