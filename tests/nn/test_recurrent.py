"""GRUCell and LSTMCell against NumPy re-implementations of PyTorch's equations."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.test_util import check_grads

KEY = fg.random.key(0)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_gru(cell, x, h):
    p = {k: getattr(cell, k).numpy() for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    gi = x @ p["weight_ih"].T + p["bias_ih"]
    gh = h @ p["weight_hh"].T + p["bias_hh"]
    i_r, i_z, i_n = np.split(gi, 3, axis=-1)
    h_r, h_z, h_n = np.split(gh, 3, axis=-1)
    r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
    n = np.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


def np_lstm(cell, x, h, c):
    p = {k: getattr(cell, k).numpy() for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    gates = x @ p["weight_ih"].T + p["bias_ih"] + h @ p["weight_hh"].T + p["bias_hh"]
    i, f, g, o = np.split(gates, 4, axis=-1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


@pytest.mark.parametrize("batch", [(), (4,)])
def test_gru_cell_matches_numpy(batch):
    cell = nn.GRUCell(3, 5, key=KEY, dtype=fg.float64)
    assert cell.weight_ih.shape == (15, 3) and cell.weight_hh.shape == (15, 5)
    assert np.abs(cell.weight_hh.numpy()).max() <= 1 / np.sqrt(5)
    x, h = rand(*batch, 3), rand(*batch, 5, seed=1)
    np.testing.assert_allclose(cell(fg.tensor(x), fg.tensor(h)), np_gru(cell, x, h), rtol=1e-12)
    np.testing.assert_allclose(cell(fg.tensor(x)), np_gru(cell, x, np.zeros(batch + (5,))),
                               rtol=1e-12)


@pytest.mark.parametrize("batch", [(), (4,)])
def test_lstm_cell_matches_numpy(batch):
    cell = nn.LSTMCell(3, 5, key=KEY, dtype=fg.float64)
    assert cell.weight_ih.shape == (20, 3)
    x, h, c = rand(*batch, 3), rand(*batch, 5, seed=1), rand(*batch, 5, seed=2)
    got_h, got_c = cell(fg.tensor(x), (fg.tensor(h), fg.tensor(c)))
    want_h, want_c = np_lstm(cell, x, h, c)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-12)
    np.testing.assert_allclose(got_c, want_c, rtol=1e-12)


def test_cells_grads_vmap_and_scan():
    gru = nn.GRUCell(2, 3, key=KEY, dtype=fg.float64)
    lstm = nn.LSTMCell(2, 3, key=KEY, dtype=fg.float64)
    x, h, c = fg.tensor(rand(4, 2)), fg.tensor(rand(4, 3, seed=1)), fg.tensor(rand(4, 3, seed=2))
    check_grads(lambda m, x, h: m(x, h), (gru, x, h), order=2)
    check_grads(lambda m, x, h, c: m(x, (h, c)), (lstm, x, h, c), order=1)
    np.testing.assert_allclose(fg.vmap(gru)(x, h), gru(x, h), rtol=1e-12)
    np.testing.assert_allclose(fg.vmap(lambda x, h, c: lstm(x, (h, c))[0])(x, h, c),
                               lstm(x, (h, c))[0], rtol=1e-12)
    xs = fg.tensor(rand(6, 4, 2, seed=3))
    final, hs = fg.scan(lambda h, x: (gru(x, h), gru(x, h)), h, xs)
    want = h.numpy()
    for t in range(6):
        want = np_gru(gru, xs.numpy()[t], want)
    np.testing.assert_allclose(final, want, rtol=1e-10)
    assert hs.shape == (6, 4, 3)
    with pytest.raises(ValueError, match=r"GRUCell: expected hidden state of shape \(4, 3\)"):
        gru(x, fnp.zeros((3,)))


def test_cell_states_of_the_other_kind_are_clear_errors():
    gru = nn.GRUCell(2, 3, key=KEY)
    lstm = nn.LSTMCell(2, 3, key=KEY)
    # an LSTM-style (h, c) became one stacked (2, 3) tensor: "got shape (2, 3)"
    with pytest.raises(TypeError, match=r"GRUCell: .*got a tuple of 2.*LSTMCell takes"):
        gru(fnp.ones(2), (fnp.zeros(3), fnp.zeros(3)))
    with pytest.raises(TypeError, match="LSTMCell: the state must be a pair.*got a Tensor"):
        lstm(fnp.ones(2), fnp.zeros(3))
