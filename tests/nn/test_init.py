"""nn.init: PyTorch's fans, gains and distributions."""

import math

import numpy as np
import pytest

import funcgrad as fg
from funcgrad.nn import init

KEY = fg.random.key(0)


def test_fans_and_gains():
    assert init.compute_fans((16, 3, 5, 5)) == (75, 400)
    assert init.compute_fans((10, 20)) == (20, 10)
    with pytest.raises(ValueError, match="fewer than 2"):
        init.compute_fans((5,))
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("leaky_relu") == math.sqrt(2 / (1 + 0.01 ** 2))
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == math.sqrt(1 / 3)
    assert init.calculate_gain("conv2d") == 1.0
    with pytest.raises(ValueError, match="nonlinearity"):
        init.calculate_gain("swish")


SHAPE = (400, 300)


@pytest.mark.parametrize("fn,kwargs,bound,std", [
    (init.kaiming_uniform, {}, math.sqrt(2) * math.sqrt(3 / 300), None),  # a=0: gain sqrt(2)
    (init.kaiming_uniform, {"a": math.sqrt(5)}, 1 / math.sqrt(300), None),
    (init.kaiming_uniform, {"mode": "fan_out", "nonlinearity": "relu"},
     math.sqrt(2) * math.sqrt(3 / 400), None),
    (init.xavier_uniform, {"gain": 2.0}, 2 * math.sqrt(6 / 700), None),
    (init.uniform, {"a": -0.5, "b": 1.5}, None, None),
    (init.kaiming_normal, {"nonlinearity": "relu"}, None, math.sqrt(2 / 300)),
    (init.xavier_normal, {}, None, math.sqrt(2 / 700)),
    (init.normal, {"mean": 1.0, "std": 0.02}, None, 0.02),
])
def test_distributions(fn, kwargs, bound, std):
    w = fn(KEY, SHAPE, **kwargs)
    assert w.shape == SHAPE and w.dtype == np.float32
    w = np.asarray(w, np.float64)
    if bound is not None:
        assert np.abs(w).max() <= bound * (1 + 1e-6)
        assert np.abs(w).max() > 0.99 * bound
        np.testing.assert_allclose(w.std(), bound / math.sqrt(3), rtol=0.02)
    if std is not None:
        np.testing.assert_allclose(w.std(), std, rtol=0.02)
    if fn is init.uniform:
        assert w.min() >= -0.5 and w.max() < 1.5
    if fn is init.normal:
        np.testing.assert_allclose(w.mean(), 1.0, atol=0.001)


def test_constants_dtype_and_determinism():
    np.testing.assert_array_equal(init.zeros(None, (2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(init.ones(KEY, (2,), fg.float64), np.ones(2))
    assert init.ones(KEY, (2,), fg.float64).dtype == np.float64
    assert init.normal(KEY, (3,), fg.float64).dtype == np.float64
    np.testing.assert_array_equal(init.kaiming_normal(KEY, (4, 4)),
                                  init.kaiming_normal(KEY, (4, 4)))
    with pytest.raises(ValueError, match="floating"):
        init.normal(KEY, (3,), fg.int32)
    with pytest.raises(ValueError, match="mode"):
        init.kaiming_uniform(KEY, (3, 3), mode="fan_avg")
