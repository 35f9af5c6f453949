"""Linear, Flatten, Embedding against NumPy (float64), with shapes, grads and vmap."""

import math

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import nn
from funcgrad.test_util import check_grads

KEY = fg.random.key(0)


def rand(*shape, seed=0):
    return fg.tensor(np.random.default_rng(seed).standard_normal(shape))


@pytest.mark.parametrize("shape", [(3,), (5, 3), (2, 4, 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_numpy(shape, bias):
    lin = nn.Linear(3, 4, bias=bias, key=KEY, dtype=fg.float64)
    x = rand(*shape)
    want = x.numpy() @ lin.weight.numpy().T + (lin.bias.numpy() if bias else 0.0)
    got = lin(x)
    assert got.shape == shape[:-1] + (4,) and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_linear_default_init_is_pytorchs():
    lin = nn.Linear(50, 200, key=KEY)
    assert lin.weight.shape == (200, 50) and lin.weight.dtype == np.float32
    bound = 1 / math.sqrt(50)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert np.abs(b).max() <= bound
    # uniform: variance bound^2 / 3
    assert abs(w.var() - bound ** 2 / 3) < 0.1 * bound ** 2 / 3
    assert not np.allclose(nn.Linear(50, 200, key=fg.random.key(1)).weight, w)


def test_linear_grads_and_vmap():
    lin = nn.Linear(3, 2, key=KEY, dtype=fg.float64)
    x = rand(4, 3)
    check_grads(lambda m, x: m(x), (lin, x), order=2)
    np.testing.assert_allclose(fg.vmap(lin)(x), lin(x), rtol=1e-12)


def test_linear_bad_input_names_layer_and_shapes():
    lin = nn.Linear(784, 10, key=KEY)
    with pytest.raises(ValueError, match=r"Linear: expected input with last dimension 784, "
                                         r"got shape \(3, 10\)"):
        lin(fg.ones((3, 10)))


@pytest.mark.parametrize("start,end,want", [(1, -1, (2, 60)), (0, -1, (120,)), (1, 2, (2, 12, 5)),
                                            (-2, -1, (2, 3, 20))])
def test_flatten(start, end, want):
    x = rand(2, 3, 4, 5)
    got = nn.Flatten(start, end)(x)
    np.testing.assert_array_equal(got, x.numpy().reshape(want))
    assert nn.Flatten()(rand(2, 3)).shape == (2, 3)


def test_embedding_lookup_padding_and_grad():
    emb = nn.Embedding(6, 3, padding_idx=2, key=KEY, dtype=fg.float64)
    w = emb.weight.numpy()
    np.testing.assert_array_equal(w[2], 0.0)
    idx = fg.tensor([[0, 2, 5], [5, 5, 1]])
    np.testing.assert_array_equal(emb(idx), w[idx.numpy()])
    grads = fg.grad(lambda m: m(idx).sum())(emb)
    want = np.zeros((6, 3))
    np.add.at(want, idx.numpy().ravel(), 1.0)
    want[2] = 0.0  # the padding row gets no gradient, as PyTorch
    np.testing.assert_allclose(grads.weight, want)
    assert abs(nn.Embedding(1000, 8, key=KEY).weight.numpy().std() - 1.0) < 0.05
    with pytest.raises(TypeError, match="integer"):
        emb(fg.ones(3))


@pytest.mark.parametrize("index", [-1, -6, 6, 7])
def test_embedding_rejects_out_of_range_indices(index):
    # PyTorch raises for negative indices rather than wrapping them as NumPy's take does.
    emb = nn.Embedding(6, 3, key=KEY)
    with pytest.raises(IndexError, match=f"index {index} is out of"):
        emb(fg.tensor([[0, index], [1, 2]]))
