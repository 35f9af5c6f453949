"""nn.Module: pytree behaviour, freezing, replace, parameters, Sequential plumbing."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn.functional as F
import funcgrad.numpy as fnp
from funcgrad import nn, tree


class Affine(nn.Module):
    scale: fg.Tensor
    shift: fg.Tensor
    name: str

    def __init__(self, n, name="affine"):
        self.scale = fg.ones(n)
        self.shift = fg.zeros(n)
        self.name = name

    def forward(self, x):
        return x * self.scale + self.shift


class Nested(nn.Module):
    blocks: list
    table: dict
    act: object
    sizes: list

    def __init__(self):
        self.blocks = [Affine(2), Affine(2, "second")]
        self.table = {"b": fg.ones(3), "a": fg.zeros(1)}
        self.act = F.relu
        self.sizes = [1, 2]

    def forward(self, x):
        for block in self.blocks:
            x = self.act(block(x))
        return x


def test_leaves_are_tensor_fields_in_order():
    m = Affine(3)
    leaves = tree.leaves(m)
    assert len(leaves) == 2
    np.testing.assert_array_equal(leaves[0], np.ones(3))
    assert all(a is b for a, b in zip(nn.parameters(m), leaves, strict=True))
    paths = [p for p, _ in tree.leaves_with_path(m)]
    assert paths == [("scale",), ("shift",)]


def test_nested_containers_and_static_fields():
    m = Nested()
    # blocks (2 x 2 tensors) then table in sorted key order; act and sizes are static
    assert [p.shape for p in nn.parameters(m)] == [(2,), (2,), (2,), (2,), (1,), (3,)]
    doubled = tree.map(lambda x: x * 2, m)
    assert isinstance(doubled, Nested) and isinstance(doubled.blocks[1], Affine)
    assert doubled.act is F.relu and doubled.sizes == [1, 2]
    assert doubled.blocks[1].name == "second"
    np.testing.assert_array_equal(doubled.table["b"], 2 * np.ones(3))
    assert tree.structure(m) == tree.structure(Nested())  # unhashable static list is fine
    hash(tree.structure(m))


def test_static_field_changes_structure():
    assert tree.structure(Affine(2, "a")) != tree.structure(Affine(2, "b"))
    assert tree.structure(Affine(2)) == tree.structure(Affine(2))


def test_frozen_after_init_names_replace():
    m = Affine(2)
    with pytest.raises(AttributeError, match="replace"):
        m.scale = fg.zeros(2)
    with pytest.raises(AttributeError, match="replace"):
        del m.scale
    # a name that is not a field: the error says to declare it (and, as API.md asks of
    # every attribute set after __init__, names replace for declared fields)
    with pytest.raises(AttributeError, match="no field 'extra'.*annotated field.*replace"):
        m.extra = 1


def test_undeclared_and_unset_fields():
    class Bad(nn.Module):
        a: fg.Tensor

        def __init__(self):
            self.a = fg.ones(1)
            self.b = 2

    with pytest.raises(AttributeError, match="declare"):
        Bad()

    class Unset(nn.Module):
        a: fg.Tensor

        def __init__(self):
            pass

    with pytest.raises(TypeError, match="did not set"):
        Unset()


def test_replace_returns_a_copy():
    m = Affine(2)
    m2 = m.replace(shift=fg.ones(2), name="moved")
    np.testing.assert_array_equal(m.shift, np.zeros(2))
    np.testing.assert_array_equal(m2(fg.zeros(2)), np.ones(2))
    assert m2.name == "moved" and m.name == "affine"
    with pytest.raises(TypeError, match="no fields"):
        m.replace(nope=1)
    # replacing a tensor by None makes the field static
    assert len(tree.leaves(m.replace(shift=None))) == 1


def test_grad_returns_model_shaped_gradient():
    m = Nested()
    x = fg.tensor([1.0, -2.0])
    grads = fg.grad(lambda model, x: model(x).sum())(m, x)
    assert isinstance(grads, Nested)
    np.testing.assert_allclose(grads.blocks[0].shift, [1.0, 0.0])
    np.testing.assert_allclose(grads.blocks[0].scale, [1.0, 0.0])
    np.testing.assert_allclose(grads.table["b"], np.zeros(3))


def test_vmap_over_inputs_and_over_models():
    m = Affine(3)
    xs = fg.tensor(np.arange(12.0).reshape(4, 3), dtype=fg.float32)
    np.testing.assert_allclose(fg.vmap(m)(xs), m(xs))
    # a stack of models (ensembling): vmap over the leaves of the model too
    stacked = tree.map(lambda p: fnp.stack([p, p * 2]), m)
    out = fg.vmap(lambda model, x: model(x), in_axes=(0, None))(stacked, xs[0])
    np.testing.assert_allclose(out, [xs[0].numpy(), 2 * xs[0].numpy()])


def test_mixed_field_with_functions():
    k1, k2 = fg.random.split(fg.random.key(0))
    model = nn.Sequential(nn.Linear(3, 4, key=k1), fnp.tanh, nn.Linear(4, 1, key=k2))
    assert len(nn.parameters(model)) == 4
    rebuilt = tree.unflatten(tree.structure(model), tree.leaves(model))
    assert rebuilt.layers[1] is fnp.tanh
    grads = fg.grad(lambda m: m(fg.ones((2, 3))).sum())(model)
    assert isinstance(grads.layers[0], nn.Linear) and grads.layers[1] is fnp.tanh


class _CountsKey(nn.Module):
    def forward(self, x, *, key=None):
        return x + (0.0 if key is None else fg.random.uniform(key, x.shape))


class _CountsInference(nn.Module):
    def forward(self, x, *, inference=False):
        return x * (2.0 if inference else 1.0)


def test_sequential_splits_key_and_passes_inference():
    key = fg.random.key(3)
    model = nn.Sequential(_CountsKey(), nn.ReLU(), _CountsKey(), _CountsInference())
    x = fg.zeros(4)
    out = model(x, key=key)
    k1, k2 = fg.random.split(key)
    want = fg.random.uniform(k1, (4,)) + fg.random.uniform(k2, (4,))
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_allclose(model(x, key=key, inference=True), 2 * want.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(model(x), np.zeros(4))
    assert len(model) == 4 and isinstance(model[1], nn.ReLU)
    assert isinstance(model[:2], nn.Sequential)


def test_sequential_dropout_needs_key_in_training():
    model = nn.Sequential(nn.Identity(), nn.Dropout(0.5))
    with pytest.raises(ValueError, match="key"):
        model(fg.ones(3))
    np.testing.assert_array_equal(model(fg.ones(3), inference=True), np.ones(3))
    with pytest.raises(TypeError, match="BatchNorm"):
        nn.Sequential(nn.BatchNorm(3))


def test_jit_caches_on_static_fields():
    traces = []

    @fg.jit
    def apply(model, x):
        traces.append(1)
        return F.layer_norm(x, (3,), model.weight, model.bias, model.eps)

    ln = nn.LayerNorm(3)
    x = fg.tensor([[1.0, 2.0, 4.0]])
    a = apply(ln, x)
    apply(ln.replace(weight=fg.full((3,), 2.0)), x)   # same structure: cached
    assert len(traces) == 1
    b = apply(ln.replace(eps=0.5), x)                  # a static field changed: retrace
    assert len(traces) == 2
    np.testing.assert_allclose(a, ln(x), rtol=1e-5)
    np.testing.assert_allclose(b, ln.replace(eps=0.5)(x), rtol=1e-5)


def test_repr():
    assert repr(nn.Linear(3, 2, key=fg.random.key(0))) == \
        "Linear(weight=float32[2, 3], bias=float32[2], in_features=3, out_features=2)"


def test_call_keywords_detection():
    from funcgrad.nn.module import call_keywords

    key = fg.random.key(0)
    assert call_keywords(nn.Dropout(0.1)) == {"key", "inference"}
    assert call_keywords(nn.Linear(2, 2, key=key)) == set()
    # its `key` is a tensor; `inference` turns its dropout off
    assert call_keywords(nn.MultiheadAttention(4, 2, key=key)) == {"inference"}
    assert call_keywords(lambda x, key=None: x) == {"key"}
    assert call_keywords(F.relu) == set()


def test_builtin_layers_hold_float_leaves_only():
    """grad needs float leaves: no layer keeps integer state (BatchNorm returns it)."""
    key = fg.random.key(0)
    layers = [nn.Linear(2, 3, key=key), nn.Conv1d(2, 2, 3, key=key), nn.Conv2d(2, 2, 3, key=key),
              nn.ConvTranspose2d(2, 2, 3, key=key), nn.Embedding(4, 2, key=key),
              nn.LayerNorm(3), nn.RMSNorm(3), nn.BatchNorm(3),
              nn.MultiheadAttention(4, 2, key=key), nn.GRUCell(2, 3, key=key),
              nn.LSTMCell(2, 3, key=key), nn.MaxPool2d(2), nn.Dropout(0.5), nn.Flatten()]
    for layer in layers:
        for leaf in tree.leaves(layer):
            assert leaf.dtype == np.float32, type(layer).__name__
    grads = fg.grad(lambda ls: sum(p.sum() for p in nn.parameters(ls)))(layers)
    assert len(nn.parameters(grads)) == len(nn.parameters(layers))


class _Scale(nn.Module):
    w: fg.Tensor

    def __init__(self):
        self.w = fg.ones(3)


class _WithConfig(nn.Module):
    w: fg.Tensor
    cfg: object

    def __init__(self, cfg):
        self.w = fg.ones(3)
        self.cfg = cfg

    def forward(self, x):
        return x * self.w * self.cfg.w


def test_static_fields_compare_leaf_by_leaf_for_jit():
    # a static sub-module whose leaves are numbers compared by structure alone: jit ran
    # the program traced for cfg.w = 2 on cfg.w = 5 (stale results)
    two, five = (fg.tree.map(lambda a, v=v: v, _Scale()) for v in (2.0, 5.0))
    assert fg.tree.structure(_WithConfig(two)) != fg.tree.structure(_WithConfig(five))
    traces = []
    f = fg.jit(lambda m, x: (traces.append(1), m(x))[1])
    assert f(_WithConfig(two), fg.ones(3)).tolist() == [2.0] * 3
    assert f(_WithConfig(five), fg.ones(3)).tolist() == [5.0] * 3
    for _ in range(2):  # a fresh model of the same config: no retrace
        f(_WithConfig(two), fg.ones(3))
    assert len(traces) == 2
    # equal lists of arrays or of modules are equal (every fresh model retraced)
    first = fg.tree.structure(_WithConfig([np.arange(3), nn.ReLU()]))
    assert first == fg.tree.structure(_WithConfig([np.arange(3), nn.ReLU()]))
    assert hash(first) == hash(fg.tree.structure(_WithConfig([np.arange(3), nn.ReLU()])))
    assert first != fg.tree.structure(_WithConfig([np.arange(4), nn.ReLU()]))


def test_a_field_mixing_layers_and_functions_keeps_the_layers_paths():
    # such a field was flattened to one flat tuple: layers[0]'s bias had the path
    # ('layers', 1), the place of F.relu, and fg.save wrote 'layers.1'
    k0, k1 = fg.random.split(fg.random.key(0))
    seq = nn.Sequential(nn.Linear(2, 3, key=k0), nn.functional.relu, nn.Linear(3, 1, key=k1))
    assert [path for path, _ in tree.leaves_with_path(seq)] == [
        ("layers", 0, "weight"), ("layers", 0, "bias"), ("layers", 2, "weight"),
        ("layers", 2, "bias")]
    doubled = tree.map(lambda a: a * 2, seq)
    assert doubled.layers[1] is nn.functional.relu
    np.testing.assert_allclose(doubled.layers[2].weight.numpy(), 2 * seq.layers[2].weight.numpy())
    x = fg.ones((4, 2))
    np.testing.assert_allclose(fg.jit(lambda m, x: m(x))(seq, x).numpy(), seq(x).numpy(),
                               rtol=1e-6)


def test_replace_keeps_the_kind_of_the_fields_it_does_not_replace():
    # a module whose leaves tree.map made numbers (a mask, say) lost them as leaves on
    # replace(): they became static fields and the structure changed
    lin = nn.Linear(2, 3, key=fg.random.key(0))
    mask = tree.map(lambda a: a.ndim > 1, lin)
    assert tree.leaves(mask.replace()) == [True, False]
    assert tree.structure(mask.replace()) == tree.structure(mask)
    assert tree.leaves(mask.replace(bias=fg.zeros(3)))[1].tolist() == [0.0] * 3
