"""Tests of funcgrad.tree: flatten/unflatten round trips, node types, registration."""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import tree

Point = collections.namedtuple("Point", ["x", "y"])

TREES = [
    1,
    None,
    (),
    [],
    {},
    (1, 2.0, "leaf"),
    [1, [2, [3, None]]],
    {"b": 1, "a": (2, 3), "c": {"z": 4, "y": None}},
    Point(1, (2, 3)),
    [Point(x={"k": 1}, y=None), (None, 5)],
]


@pytest.mark.parametrize("t", TREES, ids=repr)
def test_flatten_unflatten_round_trip(t):
    leaves, treedef = tree.flatten(t)
    assert tree.unflatten(treedef, leaves) == t
    assert tree.leaves(t) == leaves
    assert tree.structure(t) == treedef
    assert treedef.num_leaves == len(leaves)
    assert tree.map(lambda x: x, t) == t


def test_none_is_a_node_without_leaves():
    assert tree.leaves(None) == []
    assert tree.leaves([None, 1, (None,)]) == [1]
    assert tree.map(lambda x: x + 1, {"a": None, "b": 1}) == {"a": None, "b": 2}
    # None must match None: it is structure, not a leaf
    assert not tree.structure_equal([None], [1])
    # is_leaf can make None a leaf
    assert tree.leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]


def test_dict_leaves_in_sorted_key_order():
    d = {"b": 1, "a": 2, "c": 3}
    assert tree.leaves(d) == [2, 1, 3]
    leaves, treedef = tree.flatten(d)
    rebuilt = tree.unflatten(treedef, [20, 10, 30])
    assert rebuilt == {"a": 20, "b": 10, "c": 30}
    # two dicts with the same keys in another insertion order have one structure
    assert tree.structure({"a": 0, "b": 0}) == tree.structure({"b": 0, "a": 0})
    assert tree.map(lambda x, y: x - y, {"a": 5, "b": 7}, {"b": 1, "a": 2}) == {"a": 3, "b": 6}


def test_namedtuple_is_a_node():
    p = Point(1, (2, 3))
    assert tree.leaves(p) == [1, 2, 3]
    doubled = tree.map(lambda v: v * 2, p)
    assert isinstance(doubled, Point) and doubled == Point(2, (4, 6))
    assert not tree.structure_equal(Point(1, 2), (1, 2))


def test_tensors_are_leaves():
    params = {"w": fg.ones((2, 3)), "b": fg.zeros(3)}
    leaves = tree.leaves(params)
    assert len(leaves) == 2 and all(isinstance(x, fg.Tensor) for x in leaves)
    assert leaves[0].shape == (3,)  # "b" before "w"
    scaled = tree.map(lambda x: x * 2, params)
    np.testing.assert_array_equal(scaled["w"].numpy(), np.full((2, 3), 2.0))
    arrays = tree.map(np.asarray, (np.zeros(2), [np.ones(3)]))
    assert len(tree.leaves(arrays)) == 2


def test_map_several_trees_and_prefix_errors():
    assert tree.map(lambda a, b, c: a + b + c, (1, [2]), (10, [20]), (100, [200])) == (
        111, [222])
    with pytest.raises(ValueError):
        tree.map(lambda a, b: a + b, (1, 2), (1, 2, 3))


def test_paths():
    t = {"a": [5, 6], "b": Point(7, 8)}
    assert tree.leaves_with_path(t) == [(("a", 0), 5), (("a", 1), 6), (("b", 0), 7),
                                        (("b", 1), 8)]
    assert tree.map_with_path(lambda p, x: (p, x), {"k": 1}) == {"k": (("k",), 1)}
    pairs, treedef = tree.flatten_with_path([7, (8,)])
    assert pairs == [((0,), 7), ((1, 0), 8)]
    assert treedef == tree.structure([0, (0,)])


def test_unflatten_errors():
    treedef = tree.structure((0, 0))
    with pytest.raises(ValueError, match="2 leaves"):
        tree.unflatten(treedef, [1])
    with pytest.raises(TypeError, match="treedef"):
        tree.unflatten([1, 2], treedef)


class Pair:
    def __init__(self, first, second, label="pair"):
        self.first, self.second, self.label = first, second, label

    def __eq__(self, other):
        return (type(other) is Pair and (self.first, self.second, self.label)
                == (other.first, other.second, other.label))


tree.register_node(Pair, lambda p: ((p.first, p.second), p.label),
                   lambda label, children: Pair(*children, label=label))


def test_register_node():
    p = Pair(1, [2, 3], label="x")
    assert tree.leaves(p) == [1, 2, 3]
    leaves, treedef = tree.flatten(p)
    rebuilt = tree.unflatten(treedef, [10, 20, 30])
    assert rebuilt == Pair(10, [20, 30], label="x")
    # the aux data is part of the structure
    assert tree.structure(Pair(1, 2, "x")) != tree.structure(Pair(1, 2, "y"))
    assert tree.map(lambda v: v + 1, {"p": Pair(1, 2)}) == {"p": Pair(2, 3)}
    with pytest.raises(ValueError, match="Pair"):
        tree.register_node(Pair, lambda p: ((), None), lambda aux, c: Pair(0, 0))
    with pytest.raises(TypeError, match="class"):
        tree.register_node(Pair(1, 2), lambda p: ((), None), lambda aux, c: None)


def test_registered_node_is_registered_only_in_funcgrad_namespace():
    import optree

    assert optree.tree_leaves(Pair(1, 2)) == [Pair(1, 2)]  # the global registry is untouched
    assert optree.tree_leaves(Pair(1, 2), namespace=tree.NAMESPACE) == [1, 2]


@tree.register_dataclass
@dataclasses.dataclass(frozen=True)
class Linear:
    weight: object
    bias: object
    activation: str = dataclasses.field(default="relu", metadata={"static": True})


@dataclasses.dataclass
class Scaled:
    value: object
    scale: float
    name: str = "s"


tree.register_dataclass(Scaled, meta_fields=["scale", "name"])


@tree.register_dataclass(data_fields=["a"])
@dataclasses.dataclass
class OnlyA:
    a: object
    tag: str = "t"


def test_register_dataclass_default_fields():
    layer = Linear(fg.ones((2, 2)), fg.zeros(2))
    leaves, treedef = tree.flatten(layer)
    assert len(leaves) == 2 and leaves[0].shape == (2, 2)
    rebuilt = tree.unflatten(treedef, [1, 2])
    assert isinstance(rebuilt, Linear)
    assert (rebuilt.weight, rebuilt.bias, rebuilt.activation) == (1, 2, "relu")
    with pytest.raises(dataclasses.FrozenInstanceError):
        rebuilt.weight = 3  # still frozen
    # the static field is part of the structure
    assert tree.structure(Linear(1, 2)) != tree.structure(Linear(1, 2, activation="tanh"))
    assert tree.leaves_with_path(Linear(1, 2)) == [(("weight",), 1), (("bias",), 2)]


def test_register_dataclass_meta_and_data_fields():
    s = Scaled(value=(1, 2), scale=0.5)
    assert tree.leaves(s) == [1, 2]
    assert tree.map(lambda v: v * 10, s) == Scaled((10, 20), 0.5)
    assert tree.leaves(OnlyA(a=[3, 4])) == [3, 4]
    assert tree.map(lambda v: -v, OnlyA(a=1, tag="q")) == OnlyA(a=-1, tag="q")


def test_register_dataclass_errors():
    with pytest.raises(TypeError, match="not a dataclass"):
        tree.register_dataclass(Pair)

    @dataclasses.dataclass
    class Two:
        a: int
        b: int

    with pytest.raises(ValueError, match="no fields"):
        tree.register_dataclass(Two, data_fields=["a"], meta_fields=["c"])
    with pytest.raises(ValueError, match="both"):
        tree.register_dataclass(Two, data_fields=["a", "b"], meta_fields=["b"])
    with pytest.raises(ValueError, match="neither"):
        tree.register_dataclass(Two, data_fields=["a"], meta_fields=[])


def test_structure_equal_reduce_all_transpose_broadcast():
    assert tree.structure_equal({"a": 1}, {"a": 2.0}, {"a": "x"})
    assert not tree.structure_equal((1,), [1])
    assert tree.structure_equal()
    assert tree.reduce(lambda a, b: a + b, {"a": 1, "b": [2, 3]}, 0) == 6
    assert tree.reduce(max, [4, (9, 2)]) == 9
    assert tree.all({"a": True, "b": (1, None)})
    assert not tree.all([True, 0])
    assert tree.all([])
    outer = tree.structure([0, 0])
    inner = tree.structure({"a": 0, "b": 0})
    assert tree.transpose(outer, inner, [{"a": 1, "b": 2}, {"a": 3, "b": 4}]) == {
        "a": [1, 3], "b": [2, 4]}
    assert tree.broadcast((0, None), ([5, 6], {"a": 7}),
                          is_leaf=lambda x: x is None) == ([0, 0], {"a": None})
    assert tree.broadcast(1, {"x": (1, 2)}) == {"x": (1, 1)}
